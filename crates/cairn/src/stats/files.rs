//! Per-file and per-segment access statistics ([`FileStats`]): exact counters (per file and per
//! segment) and Merlin's estimator (`stats/merlin.rs`). Each live file's handle (`db/
//! live_files.rs`) holds one; a compaction output starts from the statistics it inherits from
//! its inputs (a [`Seed`] left in the [`FileRegistry`] by the job before the file is installed).
//!
//! Recording a probe is a few relaxed atomic adds on the file's own cache line for the reader's
//! CPU (the counters are striped, `stats/stripe.rs`). Merlin's windows are written by one thread
//! at a time, the *recorder* ([`FileRegistry::recorder`]), which numbers the lookups it records
//! with the global counter G.

use super::merlin::{Estimate, Merlin};
use super::stripe::{Stripe, Striped, StripedArray};
use super::counters::Probe;
use crate::version::FileMeta;
use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A table's number (`NNNNNN.sst`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileNumber(pub u64);

/// Exact point-lookup counters of one file, on their own cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct AccessCounters {
    probes: AtomicU64,
    filter_negatives: AtomicU64,
    found: AtomicU64,
    data_reads: AtomicU64,
}

/// What a new file starts from: the statistics its job's inputs pass on to it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Seed {
    /// Merlin's inherited lookups and hits (its `q'` and `x'`).
    pub merlin: Estimate,
    /// The same inheritance applied to the inputs' exact counts (the ground truth the oracle
    /// and the accuracy metrics use).
    pub exact: Estimate,
    /// Empty range reads inherited from the inputs (the same rule over their key ranges).
    pub range_empty: f64,
}

/// Range-read counters of one file, on their own cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct RangeCounters {
    /// Bounded range reads that asked this file (its range filter, or whether it has one).
    probes: AtomicU64,
    /// ... for which it held no key: its filter said so, or the read returned nothing.
    empty: AtomicU64,
}

/// Segments per file whose probes are counted (a 64 MiB table of 4 MiB segments has 16).
const MAX_COUNTED_SEGMENTS: u64 = 1 << 16;

/// The access statistics of one live table.
#[derive(Debug)]
pub struct FileStats {
    number: FileNumber,
    tree: u32,
    entries: u64,
    access: Striped<AccessCounters>,
    /// Point-lookup probes per segment (the granularity of filter units).
    segment_probes: StripedArray,
    merlin: Merlin,
    inherited_exact: Estimate,
    range: Striped<RangeCounters>,
    inherited_range_empty: f64,
    /// The file's filter bits per key (from its metadata).
    bpk: f64,
}

impl FileStats {
    fn new(tree: u32, f: &FileMeta, window: usize, seed: Seed) -> Self {
        FileStats {
            number: FileNumber(f.number),
            tree,
            entries: f.entries,
            access: Striped::default(),
            segment_probes: StripedArray::new(counted_segments(f)),
            merlin: Merlin::new(window, seed.merlin),
            inherited_exact: seed.exact,
            range: Striped::default(),
            inherited_range_empty: seed.range_empty,
            bpk: f.filter_bpk,
        }
    }

    /// Merlin's estimate of this file's lookups and hits when `g` lookups were recorded.
    pub fn estimate(&self, g: u64) -> Estimate {
        self.merlin.estimate(g)
    }

    /// Point-lookup probes of segment `i` so far.
    pub fn segment_probe_count(&self, i: usize) -> u64 {
        self.segment_probes.get(i)
    }

    /// Records one probe in Merlin's window (by the recorder thread, with its lookup number).
    #[inline]
    pub fn record_merlin(&self, g: u64, out: &Probe) {
        self.merlin.record(g, out.found);
    }

    /// Records one point-lookup probe of this file.
    #[inline]
    pub fn record_probe(&self, s: Stripe, out: &Probe) {
        let a = self.access.at(s);
        s.add(&a.probes, 1);
        if out.filter_negative {
            s.add(&a.filter_negatives, 1);
        }
        if out.found {
            s.add(&a.found, 1);
        }
        if out.data_block_read {
            s.add(&a.data_reads, 1);
        }
        if let Some(i) = out.segment {
            self.segment_probes.incr(s, i);
        }
    }

    /// A bounded range read asked this file; `empty`: it is known to hold no key in the range.
    #[inline]
    pub fn record_range_probe(&self, s: Stripe, empty: bool) {
        let r = self.range.at(s);
        s.add(&r.probes, 1);
        if empty {
            s.add(&r.empty, 1);
        }
    }

    /// A range read that asked this file (and was not told "empty") returned nothing.
    #[inline]
    pub fn record_range_empty(&self, s: Stripe) {
        s.add(&self.range.at(s).empty, 1);
    }

    /// Range reads for which the file held no key, with what it inherited.
    pub fn range_empty(&self) -> f64 {
        self.inherited_range_empty + self.range_empty_here()
    }

    /// Range reads for which the file itself held no key (without what it inherited).
    pub fn range_empty_here(&self) -> f64 {
        self.range.sum(|r| r.empty.load(Relaxed)) as f64
    }

    /// The file's number.
    pub fn number(&self) -> FileNumber {
        self.number
    }

    /// A copy of the counters, at `level`, with Merlin's estimates when `g` recorded lookups
    /// have reached the tables and the file's `loaded_units` (ElasticBF's, kept by its handle).
    pub fn snapshot(&self, level: usize, g: u64, loaded_units: u64) -> FileStatsSnapshot {
        let a = &self.access;
        let (probes, found) = (a.sum(|c| c.probes.load(Relaxed)), a.sum(|c| c.found.load(Relaxed)));
        FileStatsSnapshot {
            number: self.number,
            tree: self.tree,
            level,
            entries: self.entries,
            probes,
            filter_negatives: a.sum(|c| c.filter_negatives.load(Relaxed)),
            found,
            data_reads: a.sum(|c| c.data_reads.load(Relaxed)),
            segment_probes: (0..self.segment_probes.counters()).map(|i| self.segment_probes.get(i)).collect(),
            bpk: self.bpk,
            estimate: self.estimate(g),
            exact: Estimate {
                q: self.inherited_exact.q + probes as f64,
                x: self.inherited_exact.x + found as f64,
            },
            range_probes: self.range.sum(|r| r.probes.load(Relaxed)),
            range_empty: self.range_empty(),
            loaded_units,
        }
    }
}

/// Counters of one file at one moment (what pure deciders read).
#[derive(Debug, Clone, PartialEq)]
pub struct FileStatsSnapshot {
    /// File number.
    pub number: FileNumber,
    /// Tree id.
    pub tree: u32,
    /// Level the file was in when the snapshot was taken.
    pub level: usize,
    /// Entries.
    pub entries: u64,
    /// Point-lookup probes.
    pub probes: u64,
    /// Probes a filter unit ruled out.
    pub filter_negatives: u64,
    /// Probes that found the key (a put or a tombstone).
    pub found: u64,
    /// Probes that read a data block.
    pub data_reads: u64,
    /// Probes per segment.
    pub segment_probes: Vec<u64>,
    /// The file's filter bits per key.
    pub bpk: f64,
    /// Merlin's estimate of the file's lookups and hits since the common start (in recorded
    /// lookups: a constant fraction of all when several threads read).
    pub estimate: Estimate,
    /// The exact lookups and hits since the file was written, plus what it inherited (by the
    /// same rule) from its job's inputs' exact counts: the ground truth Merlin is compared with
    /// and the oracle allocator uses.
    pub exact: Estimate,
    /// Bounded range reads that asked this file since it was written.
    pub range_probes: u64,
    /// Range reads for which it held no key (counted when its filter said so or the read
    /// returned nothing), plus what it inherited: what its range-filter bits are sized by.
    pub range_empty: f64,
    /// Elastic filter units loaded now, over its segments.
    pub loaded_units: u64,
}

/// Every live file's counters at one moment, and the lookups that reached the tables.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatsSnapshot {
    /// Per live file, in tree, level, key order.
    pub files: Vec<FileStatsSnapshot>,
    /// Recorded lookups that reached the tables (Merlin's G).
    pub lookups: u64,
}

/// Segments of `f` whose probes are counted: the manifest's count, bounded, since it sizes an
/// allocation (segments past the bound are not counted).
pub fn counted_segments(f: &FileMeta) -> usize {
    f.segments.clamp(1, MAX_COUNTED_SEGMENTS) as usize
}

/// Where new files' statistics start: the seeds jobs leave for their outputs, Merlin's window
/// size, and the lookup counter G with its recorder.
#[derive(Debug)]
pub struct FileRegistry {
    /// Statistics waiting for files a running job is writing.
    seeds: Mutex<HashMap<FileNumber, Seed>>,
    window: usize,
    /// Merlin's G: lookups that reached the tables, counted by the recorder thread only (so
    /// no two readers write it at once).
    lookups: Padded,
    /// The thread that records Merlin's windows (a thread number; 0: none yet).
    recorder: Padded,
}

#[derive(Debug, Default)]
#[repr(align(64))]
struct Padded(AtomicU64);

/// One in this many lookups by a thread that is not the recorder makes it the recorder
/// (Mnemosyne's implementation switches with about 0.5% probability).
const HANDOVER: u64 = 200;

thread_local! {
    static THREAD: u64 = {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Relaxed)
    };
    static RNG: Cell<u64> = Cell::new(THREAD.with(|t| t.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1));
}

impl FileRegistry {
    /// An empty registry whose files keep Merlin windows of `window` probes.
    pub fn new(window: usize) -> Self {
        FileRegistry {
            seeds: Mutex::new(HashMap::new()),
            window,
            lookups: Padded::default(),
            recorder: Padded::default(),
        }
    }

    /// Called once per lookup that reaches the tables: `Some(g)`, the lookup's number, when this
    /// thread records Merlin's windows (it then records every file it probes). Other threads
    /// take over with probability 1/200 per lookup, so one thread records at a time and the
    /// counters it writes stay on one core's cache.
    #[inline]
    pub fn recorder(&self) -> Option<u64> {
        let me = THREAD.with(|t| *t);
        let current = self.recorder.0.load(Relaxed);
        if current != me {
            let take = current == 0
                || RNG.with(|r| {
                    // xorshift64
                    let mut x = r.get();
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    r.set(x);
                    x % HANDOVER == 0
                });
            if !take {
                return None;
            }
            self.recorder.0.store(me, Relaxed);
        }
        // Only the recorder counts, so a load and a store do (no locked instruction per
        // lookup); at a handover two threads may briefly count at once and lose a count,
        // which the estimates (rates over many lookups) do not notice.
        let g = self.lookups.0.load(Relaxed) + 1;
        self.lookups.0.store(g, Relaxed);
        Some(g)
    }

    /// Recorded lookups so far (G).
    pub fn lookups(&self) -> u64 {
        self.lookups.0.load(Relaxed)
    }

    /// Leaves the statistics file `n` starts from when it is registered.
    pub fn seed(&self, n: FileNumber, seed: Seed) {
        self.seeds.lock().insert(n, seed);
    }

    /// The statistics of `f` (of `tree`), a file seen for the first time: they start from its
    /// seed, if its job left one.
    pub fn start(&self, tree: u32, f: &FileMeta) -> FileStats {
        let seed = self.seeds.lock().remove(&FileNumber(f.number)).unwrap_or_default();
        FileStats::new(tree, f, self.window, seed)
    }

    /// Drops the seed of a deleted file (a job's output that never became live).
    pub fn forget(&self, n: FileNumber) {
        self.seeds.lock().remove(&n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(number: u64, segments: u64) -> FileMeta {
        FileMeta {
            number,
            size: 100,
            entries: 10,
            filter_policy: "uniform".into(),
            filter_bpk: 10.0,
            segments,
            ..FileMeta::default()
        }
    }

    #[test]
    fn probes_are_counted_per_file_and_segment() {
        let f = FileRegistry::new(64).start(0, &meta(7, 3));
        f.record_probe(Stripe::current(), &Probe {
            filter_negative: true,
            units_probed: 1,
            segment: Some(2),
            ..Default::default()
        });
        f.record_probe(Stripe::current(), &Probe {
            found: true,
            data_block_read: true,
            segment: Some(0),
            ..Default::default()
        });
        let s = f.snapshot(3, 0, 5);
        assert_eq!((s.probes, s.filter_negatives, s.found, s.data_reads), (2, 1, 1, 1));
        assert_eq!(s.segment_probes, vec![1, 0, 1]);
        assert_eq!((s.level, s.loaded_units), (3, 5));
        assert_eq!(s.exact, Estimate { q: 2.0, x: 1.0 });
    }

    #[test]
    fn seeds_start_new_files_and_one_thread_records() {
        let r = FileRegistry::new(8);
        let seed = Seed {
            merlin: Estimate { q: 40.0, x: 10.0 },
            exact: Estimate { q: 50.0, x: 5.0 },
            range_empty: 7.0,
        };
        r.seed(FileNumber(9), seed);
        r.seed(FileNumber(10), seed);
        r.forget(FileNumber(10));
        assert_eq!(r.start(0, &meta(10, 1)).snapshot(0, 0, 0).exact, Estimate::default(), "forgotten");
        let f = r.start(0, &meta(9, 1));
        f.record_range_probe(Stripe::FIRST, true);
        f.record_range_probe(Stripe::current(), false);
        f.record_range_empty(Stripe::current());
        let s = f.snapshot(1, 0, 0);
        assert_eq!(s.estimate, seed.merlin);
        assert_eq!((s.range_probes, s.range_empty), (2, 9.0), "inherited plus its own");
        assert_eq!(s.exact, seed.exact);
        assert_eq!(r.start(0, &meta(9, 1)).snapshot(1, 0, 0).exact, Estimate::default(), "a seed is used once");
        // This thread becomes the recorder at once (nobody was) and numbers its lookups.
        assert_eq!(r.recorder(), Some(1));
        assert_eq!(r.recorder(), Some(2));
        // Another thread does not record until it takes over (now and then), and then keeps
        // recording while nobody else reads: its answers are None…None Some…Some.
        let r = std::sync::Arc::new(r);
        let r2 = r.clone();
        let seen: Vec<bool> = std::thread::spawn(move || (0..2000).map(|_| r2.recorder().is_some()).collect())
            .join()
            .unwrap();
        let first = seen.iter().position(|&b| b).unwrap_or(seen.len());
        assert!(seen[first..].iter().all(|&b| b), "recording stopped without a rival");
        assert_eq!(r.lookups() as usize, 2 + seen.len() - first);
    }
}
