//! Merlin (Mnemosyne §4.2): per-file estimates of the point lookups a file receives (q_i), of
//! those that find their key there (x_i), and so of the empty ones its filter can save (z_i =
//! q_i − x_i), counted from one common starting point for every file.
//!
//! A global counter G numbers the lookups that reach the tables. Each file keeps a FIFO window
//! of the last `w` values of G at which it was probed and whether each probe found the key
//! (a 64-bit mask: all 64 bits are counted — the authors' code counts 32), plus `q'` and `x'`,
//! the probes and hits older than the window (inherited at compaction, or evicted from the
//! window). The access interval is estimated as
//! `Δ = β·(D_1 − D_w)/(w − 1) + (1 − β)·D_w/(q' + 1)` (β = 0.5; the recent window and the older
//! history), `q = G/Δ` clamped to `[observed, G]`, and
//! `x = (β·popcount/w + (1 − β)·x'/q')·q`.
//!
//! **Concurrency.** The window is behind a flag taken with one atomic swap and given back with
//! a plain release store (a mutex's unlock would be a second locked instruction on every probe:
//! a mutex's try-lock and unlock were 40% of a lookup's probe work): a probe that finds it
//! taken is not recorded in the window (its exact counters still count it). Together with the
//! recorder rule of the read path (one thread records at a time, handing over with small
//! probability) the flag is almost never contended, and the read path never waits; `estimate`,
//! off the read path, waits for it. Sampling scales every file's q alike, which changes no
//! allocation (the solver is scale-free in z). The state sits on cache lines of its own, so
//! the recorder's writes do not evict the read-mostly fields beside it in the file's state
//! from other readers' caches.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

/// The largest window (the hit mask is 64 bits).
pub const MAX_WINDOW: usize = 64;

/// The weight of the recent window against the older history (the paper's β).
pub const BETA: f64 = 0.5;

/// Merlin's estimates for one file at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    /// Point lookups that probed the file (q_i).
    pub q: f64,
    /// ... that found the key (x_i).
    pub x: f64,
}

impl Estimate {
    /// Empty lookups (z_i = q_i − x_i), the ones a filter saves reads on.
    pub fn z(&self) -> f64 {
        (self.q - self.x).max(0.0)
    }
}

#[derive(Debug)]
struct Window {
    /// G at each recorded probe, a ring of `len` entries ending at `head − 1` (newest).
    d: [u64; MAX_WINDOW],
    head: usize,
    len: usize,
    /// Bit `i` set: the probe in slot `i` found the key.
    hits: u64,
    /// Probes and hits before the window (inherited, or evicted from it).
    q_old: f64,
    x_old: f64,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            d: [0; MAX_WINDOW],
            head: 0,
            len: 0,
            hits: 0,
            q_old: 0.0,
            x_old: 0.0,
        }
    }
}

/// Merlin's state for one file.
#[derive(Debug)]
#[repr(align(128))]
pub struct Merlin {
    /// Set while a thread reads or writes `window`.
    busy: AtomicBool,
    window: UnsafeCell<Window>,
    size: usize,
}

// SAFETY: `window` is only touched by the thread that swapped `busy` from false to true, until
// it stores false again (`WindowGuard`).
unsafe impl Sync for Merlin {}

/// Exclusive access to a window while `busy` is held; gives it back on drop.
struct WindowGuard<'a>(&'a Merlin);

impl std::ops::Deref for WindowGuard<'_> {
    type Target = Window;
    fn deref(&self) -> &Window {
        // SAFETY: this guard holds `busy`, so no other reference to the window exists.
        unsafe { &*self.0.window.get() }
    }
}

impl std::ops::DerefMut for WindowGuard<'_> {
    fn deref_mut(&mut self) -> &mut Window {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference.
        unsafe { &mut *self.0.window.get() }
    }
}

impl Drop for WindowGuard<'_> {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

impl Merlin {
    /// A file starting with `q'` = `inherited.q` and `x'` = `inherited.x`, its window holding
    /// the last `size` probes (1..=64).
    pub fn new(size: usize, inherited: Estimate) -> Self {
        Merlin {
            busy: AtomicBool::new(false),
            window: UnsafeCell::new(Window {
                q_old: inherited.q,
                x_old: inherited.x,
                ..Window::default()
            }),
            size: size.clamp(2, MAX_WINDOW),
        }
    }

    /// The window, if no other thread holds it.
    #[inline]
    fn try_window(&self) -> Option<WindowGuard<'_>> {
        // `then`, not `then_some`: a guard built and dropped on failure would release the flag
        // another thread holds.
        (!self.busy.swap(true, Ordering::Acquire)).then(|| WindowGuard(self))
    }

    /// The window, waiting for another thread's probe to finish (off the read path).
    fn window(&self) -> WindowGuard<'_> {
        loop {
            if let Some(w) = self.try_window() {
                return w;
            }
            std::thread::yield_now();
        }
    }

    /// Records a probe at global count `g`, unless another thread is recording this file.
    #[inline]
    pub fn record(&self, g: u64, found: bool) {
        let Some(mut w) = self.try_window() else {
            return;
        };
        // No division here: this runs on every probe of the recording thread.
        let slot = w.head;
        if w.len == self.size {
            // Evict the oldest, which a full window holds at its head: it joins the older
            // history.
            w.q_old += 1.0;
            if w.hits >> slot & 1 == 1 {
                w.x_old += 1.0;
            }
        } else {
            w.len += 1;
        }
        w.d[slot] = g;
        if found {
            w.hits |= 1 << slot;
        } else {
            w.hits &= !(1 << slot);
        }
        w.head = if slot + 1 == self.size { 0 } else { slot + 1 };
    }

    /// The estimates when `g` lookups have reached the tables.
    pub fn estimate(&self, g: u64) -> Estimate {
        let w = self.window();
        let n = w.len;
        let observed = w.q_old + n as f64;
        if n == 0 {
            return Estimate { q: w.q_old, x: w.x_old };
        }
        let newest = w.d[(w.head + self.size - 1) % self.size];
        let oldest = w.d[(w.head + self.size - n) % self.size];
        let old_interval = oldest as f64 / (w.q_old + 1.0);
        let interval = if n >= 2 {
            let recent = newest.saturating_sub(oldest) as f64 / (n - 1) as f64;
            BETA * recent + (1.0 - BETA) * old_interval
        } else {
            old_interval
        };
        let q = if interval > 0.0 {
            (g as f64 / interval).clamp(observed, (g as f64).max(observed))
        } else {
            observed.max(g as f64)
        };
        // Slots never written have clear bits, so the mask counts exactly the window's hits.
        let recent_hit_rate = f64::from(w.hits.count_ones()) / n as f64;
        let hit_rate = if w.q_old > 0.0 {
            BETA * recent_hit_rate + (1.0 - BETA) * (w.x_old / w.q_old).min(1.0)
        } else {
            recent_hit_rate
        };
        Estimate { q, x: hit_rate * q }
    }
}

/// The statistics a compaction output inherits (Mnemosyne Eq. 13 with its corner case): from
/// each input of the shallower level its hits `x` (its misses went on to the deeper level and
/// are counted there) — but at least `q_upper − Σ q_deeper`, the lookups the deeper inputs did
/// not see — and from each input of the deeper level its lookups `q`; each weighted by `α`, the
/// share of the input's entries that went into this output. Hits `x` are inherited by `α`
/// from every input.
pub fn inherit(upper: &[(f64, Estimate)], deeper: &[(f64, Estimate)]) -> Estimate {
    let q_deeper: f64 = deeper.iter().map(|(_, e)| e.q).sum();
    let q = upper.iter().map(|(a, e)| a * (e.q - q_deeper).max(e.x)).sum::<f64>()
        + deeper.iter().map(|(a, e)| a * e.q).sum::<f64>();
    let x = upper.iter().chain(deeper).map(|(a, e)| a * e.x).sum();
    Estimate { q, x }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_rate_is_estimated_from_the_window() {
        // Probed every 10th lookup since the start, half of them hits.
        let m = Merlin::new(16, Estimate::default());
        for i in 1..=100u64 {
            m.record(i * 10, i % 2 == 0);
        }
        let e = m.estimate(1000);
        // 100 probes of 1000 lookups.
        assert!((e.q - 100.0).abs() < 15.0, "{e:?}");
        assert!((e.x / e.q - 0.5).abs() < 0.05, "{e:?}");
        assert!((e.z() - 50.0).abs() < 10.0, "{e:?}");
    }

    #[test]
    fn inherited_history_counts_before_the_first_probe() {
        let m = Merlin::new(8, Estimate { q: 50.0, x: 10.0 });
        assert_eq!(m.estimate(1000), Estimate { q: 50.0, x: 10.0 });
        m.record(1000, false);
        let e = m.estimate(1000);
        assert!(e.q >= 51.0 && e.q <= 1000.0, "{e:?}");
    }

    /// Three recorders and an estimator on one window at once: every estimate stays sane and
    /// the window ends full (recorders skip one another's probes; nothing is torn).
    #[test]
    fn concurrent_recorders_and_estimates_stay_consistent() {
        let m = Merlin::new(64, Estimate::default());
        std::thread::scope(|s| {
            for t in 0..3u64 {
                let m = &m;
                s.spawn(move || {
                    for i in 1..=20_000u64 {
                        m.record(i * 3 + t, i % 2 == 0);
                    }
                });
            }
            let m = &m;
            s.spawn(move || {
                for _ in 0..2_000 {
                    let e = m.estimate(60_003);
                    assert!(e.q.is_finite() && e.x >= 0.0 && e.x <= e.q + 1e-9, "{e:?}");
                }
            });
        });
        let e = m.estimate(60_003);
        assert!(e.q >= 64.0 && e.q <= 60_003.0, "{e:?}");
    }

    #[test]
    fn a_contended_window_skips_instead_of_waiting() {
        let m = Merlin::new(8, Estimate::default());
        let held = m.window();
        m.record(5, true); // returns at once
        drop(held);
        assert_eq!(m.estimate(5), Estimate::default());
    }

    #[test]
    fn inheritance_takes_hits_from_above_and_lookups_from_below() {
        // An upper file seen by 100 lookups (20 hits) merges with one deeper file seen by 90.
        let upper = [(1.0, Estimate { q: 100.0, x: 20.0 })];
        let deeper = [(1.0, Estimate { q: 90.0, x: 30.0 })];
        let e = inherit(&upper, &deeper);
        // x from both; q: the deeper q plus the upper hits (the upper misses are in the deeper
        // q already), at least the upper lookups the deeper file did not see (100 − 90 = 10).
        assert_eq!(e.x, 50.0);
        assert_eq!(e.q, 90.0 + 20.0);
        // The corner case: the deeper file saw few of the upper file's lookups.
        let deeper = [(1.0, Estimate { q: 10.0, x: 5.0 })];
        let e = inherit(&upper, &deeper);
        assert_eq!(e.q, 10.0 + 90.0);
        // Half of each input went into this output.
        let e = inherit(&[(0.5, Estimate { q: 100.0, x: 20.0 })], &[(0.5, Estimate { q: 90.0, x: 30.0 })]);
        assert_eq!((e.q, e.x), (55.0, 25.0));
    }
}
