//! Counters striped per CPU: the read path adds to the copy of the CPU it runs on, so two
//! readers on two cores never write one cache line; readers of the statistics sum the copies.
//! (RocksDB's `CoreLocalArray` does the same.) The CPU comes from `sched_getcpu`, which glibc
//! answers from the thread's rseq area without a system call.

use std::sync::OnceLock;

/// At most this many copies of each counter group (memory grows with it: per live file, one
/// 64-byte line per copy and group).
pub const MAX_STRIPES: usize = 8;

/// The copies every striped group has: the machine's CPUs rounded up to a power of two,
/// at most [`MAX_STRIPES`].
pub fn stripes() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .next_power_of_two()
            .min(MAX_STRIPES)
    })
}

/// Which copy the calling thread writes: its CPU's, taken once per operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stripe(usize);

impl Stripe {
    /// The stripe of the CPU the thread runs on now.
    #[inline]
    pub fn current() -> Stripe {
        // SAFETY: `sched_getcpu` takes no arguments and only reads thread state.
        let cpu = unsafe { libc::sched_getcpu() };
        Stripe(usize::try_from(cpu).unwrap_or(0) & (stripes() - 1))
    }

    /// Stripe 0 (for writers off the read path, and tests).
    pub const FIRST: Stripe = Stripe(0);
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
struct Line([std::sync::atomic::AtomicU64; 8]);

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
                l.0[i % 8].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

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
