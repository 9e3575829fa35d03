//! Counters striped per thread: the read path adds to a copy its thread owns, so two readers
//! never write one cache line, and — since no other thread writes that copy — it adds with a
//! plain load and store instead of a locked read-modify-write (which on x86 also drains the
//! store buffer and stalls the lookup's independent loads). Readers of the statistics sum the
//! copies. A thread claims a copy on first use and returns it when it exits; copy 0 is never
//! owned: threads past the owned copies, background threads (`Stripe::background`) and
//! writers off the read path (`Stripe::FIRST`) add to it atomically. (RocksDB's
//! `CoreLocalArray` stripes per CPU; so did we, and then every add needed a locked
//! instruction.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// At most this many copies of each counter group (memory grows with it: per live file, one
/// 64-byte line per copy and group).
pub const MAX_STRIPES: usize = 16;

/// The copies every striped group has: one shared, and owned ones for about twice the
/// machine's CPUs in reader threads (the total rounded up to a power of two, 4 to
/// [`MAX_STRIPES`]).
pub fn stripes() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        (2 * cpus).next_power_of_two().clamp(4, MAX_STRIPES)
    })
}

/// Copies owned by live threads, one bit each; bit 0 (the shared copy) is always set.
static OWNED: AtomicU64 = AtomicU64::new(1);

/// The copy the current thread owns (0: none), returned when the thread exits.
struct Owner(usize);

impl Owner {
    fn claim() -> Owner {
        Owner(claim_from(&OWNED, stripes()))
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        release_to(&OWNED, self.0);
    }
}

/// Claims the lowest free copy of `n` in `owned` (a bit per copy), or 0 when all are taken.
fn claim_from(owned: &AtomicU64, n: usize) -> usize {
    let all = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    let mut taken = owned.load(Ordering::Acquire);
    loop {
        let free = !taken & all & !1;
        if free == 0 {
            return 0;
        }
        let bit = free.trailing_zeros();
        // Acquire: the previous owner's plain stores to this copy happen before ours.
        match owned.compare_exchange_weak(taken, taken | 1 << bit, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return bit as usize,
            Err(now) => taken = now,
        }
    }
}

/// Returns copy `i` (nothing for the shared copy 0).
fn release_to(owned: &AtomicU64, i: usize) {
    if i != 0 {
        // Release: our stores to the copy happen before the next owner's.
        owned.fetch_and(!(1u64 << i), Ordering::Release);
    }
}

thread_local! {
    static OWNER: std::cell::OnceCell<Owner> = const { std::cell::OnceCell::new() };
}

/// Which copy the calling thread writes, taken once per operation. Never pass it to another
/// thread: an owned copy's adds are plain stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stripe(usize);

impl Stripe {
    /// The calling thread's copy, claimed on its first call (the shared one if none is free).
    #[inline]
    pub fn current() -> Stripe {
        Stripe(OWNER.try_with(|o| o.get_or_init(Owner::claim).0).unwrap_or(0))
    }

    /// Makes the calling thread write the shared copy from now on: background threads
    /// (flushes, compactions, tuners) call it first, so the owned copies go to readers.
    pub fn background() {
        let _ = OWNER.try_with(|o| o.set(Owner(0)));
    }

    /// The shared copy (for writers off the read path, and tests).
    pub const FIRST: Stripe = Stripe(0);

    /// Adds `n` to `c`, a counter in this stripe's copy.
    #[inline]
    pub fn add(self, c: &AtomicU64, n: u64) {
        if self.0 == 0 {
            c.fetch_add(n, Ordering::Relaxed);
        } else {
            // Only this thread writes an owned copy; readers may see either value.
            c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
        }
    }
}

/// One copy of `T` per stripe. `T` should be cache-line aligned (`#[repr(align(64))]`) so the
/// copies never share a line.
#[derive(Debug)]
pub struct Striped<T>(Box<[T]>);

impl<T: Default> Default for Striped<T> {
    fn default() -> Self {
        Striped((0..stripes()).map(|_| T::default()).collect())
    }
}

impl<T> Striped<T> {
    /// The copy `s` writes.
    #[inline]
    pub fn at(&self, s: Stripe) -> &T {
        // `s` is masked by `stripes()`, the length; the fallback never runs.
        self.0.get(s.0).unwrap_or(&self.0[0])
    }

    /// Sums `f` over the copies.
    pub fn sum(&self, f: impl Fn(&T) -> u64) -> u64 {
        self.0.iter().map(f).sum()
    }
}

/// `n` striped counters (say, per segment of a file): each stripe's row padded to whole cache
/// lines.
#[derive(Debug)]
pub struct StripedArray {
    lines: Box<[Line]>,
    /// Lines per stripe.
    row: usize,
    n: usize,
}

#[derive(Debug, Default)]
#[repr(align(64))]
struct Line([AtomicU64; 8]);

impl StripedArray {
    /// `n` counters at zero.
    pub fn new(n: usize) -> Self {
        let row = n.div_ceil(8);
        StripedArray {
            lines: (0..row * stripes()).map(|_| Line::default()).collect(),
            row,
            n,
        }
    }

    /// Adds 1 to counter `i` in stripe `s` (nothing if `i` is out of range).
    #[inline]
    pub fn incr(&self, s: Stripe, i: usize) {
        if i < self.n {
            if let Some(l) = self.lines.get(s.0 * self.row + i / 8) {
                s.add(&l.0[i % 8], 1);
            }
        }
    }

    /// Counter `i` summed over the stripes.
    pub fn get(&self, i: usize) -> u64 {
        if i >= self.n {
            return 0;
        }
        (0..stripes())
            .filter_map(|s| self.lines.get(s * self.row + i / 8))
            .map(|l| l.0[i % 8].load(std::sync::atomic::Ordering::Relaxed))
            .sum()
    }

    /// How many counters it holds.
    pub fn counters(&self) -> usize {
        self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn copies_are_claimed_once_and_returned() {
        let owned = AtomicU64::new(1);
        assert_eq!((claim_from(&owned, 4), claim_from(&owned, 4), claim_from(&owned, 4)), (1, 2, 3));
        assert_eq!(claim_from(&owned, 4), 0, "all owned: the shared copy");
        release_to(&owned, 2);
        release_to(&owned, 0);
        assert_eq!(claim_from(&owned, 4), 2);
        assert_eq!(owned.load(Relaxed), 0b1111);
    }

    /// More threads than owned copies, each adding through its own stripe (owned: plain
    /// stores; the rest: atomic adds to the shared copy), some exiting and handing their copy
    /// on: the sum is exact.
    #[test]
    fn adds_from_many_threads_sum_exactly() {
        let c: Striped<AtomicU64> = Striped::default();
        for _ in 0..3 {
            std::thread::scope(|sc| {
                for _ in 0..2 * stripes() {
                    sc.spawn(|| {
                        for _ in 0..10_000 {
                            let s = Stripe::current();
                            s.add(c.at(s), 1);
                        }
                    });
                }
            });
        }
        assert_eq!(c.sum(|a| a.load(Relaxed)), 3 * 2 * stripes() as u64 * 10_000);
    }

    #[test]
    fn copies_sum_across_stripes() {
        let c: Striped<AtomicU64> = Striped::default();
        let n = stripes();
        for s in 0..n {
            c.at(Stripe(s)).fetch_add(s as u64 + 1, Relaxed);
        }
        c.at(Stripe::current()).fetch_add(100, Relaxed);
        assert_eq!(c.sum(|a| a.load(Relaxed)), (n * (n + 1) / 2) as u64 + 100);
    }

    #[test]
    fn arrays_keep_counters_apart_and_ignore_out_of_range() {
        let a = StripedArray::new(11);
        for s in 0..stripes() {
            a.incr(Stripe(s), 0);
            a.incr(Stripe(s), 10);
            a.incr(Stripe(s), 8);
        }
        a.incr(Stripe::current(), 10);
        a.incr(Stripe::current(), 11);
        let n = stripes() as u64;
        assert_eq!((a.get(0), a.get(8), a.get(10), a.get(1), a.get(11)), (n, n, n + 1, 0, 0));
        assert_eq!(a.counters(), 11);
    }

    #[test]
    fn threads_on_any_cpu_count_exactly() {
        let c: Arc<Striped<AtomicU64>> = Arc::new(Striped::default());
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        c.at(Stripe::current()).fetch_add(1, Relaxed);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(c.sum(|a| a.load(Relaxed)), 40_000);
    }
    use std::sync::Arc;
}
