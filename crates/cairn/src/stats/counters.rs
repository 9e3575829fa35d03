//! Engine counters (docs/design.md §5): per tree and level, and engine-wide write and stall counters.
//! Relaxed atomics, each level's group on its own cache line and striped per thread
//! (`stats/stripe.rs`), so concurrent readers never write a shared line. A tree's counters are
//! created with the tree and never dropped, so a super-version carries an `Arc` to them and the
//! read path records without any lock.

use super::stripe::{Stripe, Striped};
use crate::filter::projection::END_POSITIONS;
use crate::filter::rosetta::{ProbeCounts, HEIGHTS};
use crate::filter::rosetta::{size_bucket, SIZE_BUCKETS};
use crate::tuning::readahead;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// What one point-lookup probe of a table did, as the counters record it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Probe {
    /// The table held a version of the key visible to the lookup (a put or a tombstone).
    pub found: bool,
    /// A filter unit ruled the key out.
    pub filter_negative: bool,
    /// Filter units probed.
    pub units_probed: u32,
    /// A data block was read (from cache or storage).
    pub data_block_read: bool,
    /// ... and it came from the block cache.
    pub data_block_cached: bool,
    /// The segment whose filter units (and data) the lookup consulted.
    pub segment: Option<usize>,
}

#[derive(Debug, Default)]
#[repr(align(64))]
struct LevelCounters {
    probes: AtomicU64,
    filter_units_probed: AtomicU64,
    filter_negatives: AtomicU64,
    filter_false_positives: AtomicU64,
    found: AtomicU64,
    data_reads: AtomicU64,
    data_cache_hits: AtomicU64,
    unnecessary_data_reads: AtomicU64,
    compactions: AtomicU64,
    compaction_read: AtomicU64,
    compaction_upper_read: AtomicU64,
    compaction_written: AtomicU64,
    moves: AtomicU64,
    range_probes: AtomicU64,
    range_negatives: AtomicU64,
    range_false_positives: AtomicU64,
    /// Forward seeks by how many blocks they went on to read in file order
    /// (`tuning::readahead::bucket`).
    seek_runs: [AtomicU64; readahead::BUCKETS],
}

#[derive(Debug)]
#[repr(align(64))]
struct ReadCounters {
    gets: AtomicU64,
    /// Range reads (iterators) opened.
    ranges: AtomicU64,
    memtable_hits: AtomicU64,
    /// Bounded range reads by size in projection values (`filter::rosetta::size_bucket`):
    /// what the range filters of new tables are laid out for.
    range_sizes: [AtomicU64; SIZE_BUCKETS],
    /// What range reads did ([`ScanStats`]'s fields in order: seeks, entries, memtables, L0
    /// runs, levels, tables).
    scans: [AtomicU64; 6],
}

impl Default for ReadCounters {
    fn default() -> Self {
        ReadCounters {
            gets: AtomicU64::new(0),
            ranges: AtomicU64::new(0),
            memtable_hits: AtomicU64::new(0),
            range_sizes: std::array::from_fn(|_| AtomicU64::new(0)),
            scans: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// What a tree's range reads did, summed over them (divide by `seeks` for one seek's share):
/// the sorted runs each end merged and the tables it opened. The blocks they read are in the
/// I/O counters (`IoSnapshot`: data and index blocks, readahead).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Ends of range reads positioned: one per forward or backward read, two for a read from
    /// both ends; reads a range filter settled without an iterator are not counted.
    pub seeks: u64,
    /// Entries returned.
    pub entries: u64,
    /// Memtables merged, summed over the seeks.
    pub memtables: u64,
    /// L0 sorted runs merged (those overlapping the read's bounds), summed over the seeks.
    pub l0_runs: u64,
    /// Levels below L0 merged (those overlapping the bounds), summed over the seeks.
    pub levels: u64,
    /// Tables reached (opened, unless a range filter then ruled them out): a seek reaches
    /// one per run whose bounds overlap its own, a scan one more at each table boundary it
    /// crosses.
    pub tables: u64,
}

impl std::ops::Sub for ScanStats {
    type Output = ScanStats;
    fn sub(self, o: ScanStats) -> ScanStats {
        ScanStats {
            seeks: self.seeks.saturating_sub(o.seeks),
            entries: self.entries.saturating_sub(o.entries),
            memtables: self.memtables.saturating_sub(o.memtables),
            l0_runs: self.l0_runs.saturating_sub(o.l0_runs),
            levels: self.levels.saturating_sub(o.levels),
            tables: self.tables.saturating_sub(o.tables),
        }
    }
}

/// Flushes of one kind: how many, and the bytes they wrote.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushCount {
    /// Flushes.
    pub count: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// A tree's flushes by kind (Luo & Carey's partitioned component has the last three).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Flushes {
    /// A whole memtable (the monolithic component, and memory-triggered flushes).
    pub whole: FlushCount,
    /// A partitioned component's oldest run and what it overlaps.
    pub partial: FlushCount,
    /// Flushes for the log (the WALs passed `wal.max_size`).
    pub log: FlushCount,
    /// A partitioned component's whole memory.
    pub full: FlushCount,
}

impl Flushes {
    /// Each kind with its name, in the order above.
    pub fn by_kind(&self) -> [(&'static str, FlushCount); 4] {
        [("whole", self.whole), ("partial", self.partial), ("log", self.log), ("full", self.full)]
    }
}

/// Counters of one tree.
#[derive(Debug)]
pub struct TreeCounters {
    reads: Striped<ReadCounters>,
    /// Flushes by kind (whole, partial, log, full, in that order): count and bytes written.
    flushes: [[AtomicU64; 2]; 4],
    /// Memtable bytes switched (to be flushed) because write memory was full, and because the
    /// WALs were (the memory tuner's flush causes).
    switched_for_memory: AtomicU64,
    switched_for_log: AtomicU64,
    /// ... and by an explicit flush.
    switched_manually: AtomicU64,
    /// Levels added and removed at L1 (level targets that follow write memory).
    levels_added: AtomicU64,
    levels_removed: AtomicU64,
    /// Expired values flushes and compactions turned into tombstones; values the compaction
    /// filter removed; values it changed.
    rewritten: [AtomicU64; 3],
    /// Memory merges of a partitioned component: count, bytes in and out, and time spent.
    memory_merges: [AtomicU64; 4],
    levels: Box<[Striped<LevelCounters>]>,
    /// Range-filter probes per height, from sampled range reads.
    range_height_probes: [AtomicU64; HEIGHTS],
    /// Sampled bounded range reads by where their bounds first differ, plus one
    /// (`filter::projection::range_end`).
    range_ends: Box<[AtomicU64]>,
    /// Not a counter: per level, the bytes a forward seek reads ahead of its block, as the
    /// readahead controller last decided from `seek_runs` (the read path loads it here, in the
    /// `Arc` it holds already).
    seek_ahead: Box<[AtomicU64]>,
}

impl TreeCounters {
    fn new(levels: usize) -> Self {
        TreeCounters {
            reads: Striped::default(),
            flushes: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            switched_for_memory: AtomicU64::new(0),
            switched_for_log: AtomicU64::new(0),
            switched_manually: AtomicU64::new(0),
            levels_added: AtomicU64::new(0),
            levels_removed: AtomicU64::new(0),
            rewritten: std::array::from_fn(|_| AtomicU64::new(0)),
            memory_merges: std::array::from_fn(|_| AtomicU64::new(0)),
            levels: (0..levels).map(|_| Striped::default()).collect(),
            range_height_probes: std::array::from_fn(|_| AtomicU64::new(0)),
            range_ends: (0..END_POSITIONS).map(|_| AtomicU64::new(0)).collect(),
            seek_ahead: (0..levels).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// A forward seek in `level` went on to read `run` further blocks in file order.
    #[inline]
    pub fn record_seek_run(&self, s: Stripe, level: usize, run: u32) {
        self.level(s, level, |l| s.add(&l.seek_runs[readahead::bucket(u64::from(run))], 1));
    }

    /// `level`'s forward seeks so far, per run bucket.
    pub fn seek_runs(&self, level: usize) -> [u64; readahead::BUCKETS] {
        match self.levels.get(level) {
            Some(l) => std::array::from_fn(|i| l.sum(|c| c.seek_runs[i].load(Relaxed))),
            None => [0; readahead::BUCKETS],
        }
    }

    /// The bytes a forward seek in `level` reads ahead of its block.
    #[inline]
    pub fn seek_ahead(&self, level: usize) -> usize {
        self.seek_ahead.get(level).map_or(0, |a| a.load(Relaxed) as usize)
    }

    /// Publishes `level`'s seek readahead (written only when it changes: readers share the line).
    pub fn set_seek_ahead(&self, level: usize, bytes: u64) {
        if let Some(a) = self.seek_ahead.get(level) {
            if a.load(Relaxed) != bytes {
                a.store(bytes, Relaxed);
            }
        }
    }

    /// Levels counted.
    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// A bounded range read over projections `[a, b]`.
    #[inline]
    pub fn record_range_size(&self, s: Stripe, a: u64, b: u64) {
        s.add(&self.reads.at(s).range_sizes[size_bucket(a, b)], 1);
    }

    /// Range-filter probes per height of one sampled range read.
    pub fn record_height_probes(&self, c: &ProbeCounts) {
        for (a, &n) in self.range_height_probes.iter().zip(&c.per_height) {
            if n > 0 {
                a.fetch_add(u64::from(n), Relaxed);
            }
        }
    }

    /// A sampled bounded range read whose bounds first differ at `end − 1`.
    pub fn record_range_end(&self, end: usize) {
        if let Some(a) = self.range_ends.get(end) {
            a.fetch_add(1, Relaxed);
        }
    }

    /// The sampled range reads by [`record_range_end`](Self::record_range_end).
    pub fn range_ends(&self) -> Vec<u64> {
        self.range_ends.iter().map(|a| a.load(Relaxed)).collect()
    }

    /// Range-filter probes per height from the sampled range reads.
    pub fn range_height_probes(&self) -> [u64; HEIGHTS] {
        std::array::from_fn(|i| self.range_height_probes[i].load(Relaxed))
    }

    /// The range-read size histogram.
    pub fn range_sizes(&self) -> [u64; SIZE_BUCKETS] {
        std::array::from_fn(|i| self.reads.sum(|r| r.range_sizes[i].load(Relaxed)))
    }

    /// A table's range filter in `level` was consulted by a range read; `negative`: it ruled
    /// the table out.
    #[inline]
    pub fn record_range_probe(&self, s: Stripe, level: usize, negative: bool) {
        self.level(s, level, |l| {
            s.add(&l.range_probes, 1);
            if negative {
                s.add(&l.range_negatives, 1);
            }
        });
    }

    /// Range filters in `level` that answered "maybe" for a range read that found nothing.
    pub fn record_range_false_positives(&self, s: Stripe, level: usize, n: u64) {
        self.level(s, level, |l| {
            s.add(&l.range_false_positives, n);
        });
    }

    #[inline]
    fn level(&self, s: Stripe, level: usize, f: impl FnOnce(&LevelCounters)) {
        if let Some(l) = self.levels.get(level) {
            f(l.at(s));
        }
    }

    /// One point lookup of the tree.
    #[inline]
    pub fn record_get(&self, s: Stripe) {
        s.add(&self.reads.at(s).gets, 1);
    }

    /// Point lookups so far.
    pub fn gets(&self) -> u64 {
        self.reads.sum(|r| r.gets.load(Relaxed))
    }

    /// Range reads so far.
    pub fn ranges(&self) -> u64 {
        self.reads.sum(|r| r.ranges.load(Relaxed))
    }

    /// One range read (iterator) of the tree.
    #[inline]
    pub fn record_range(&self, s: Stripe) {
        s.add(&self.reads.at(s).ranges, 1);
    }

    /// One end of a range read positioned (a seek): its merging iterator over `memtables`
    /// memtables, `l0_runs` L0 runs and `levels` deeper levels.
    #[inline]
    pub fn record_scan_seek(&self, s: Stripe, memtables: usize, l0_runs: usize, levels: usize) {
        let c = &self.reads.at(s).scans;
        s.add(&c[0], 1);
        s.add(&c[2], memtables as u64);
        s.add(&c[3], l0_runs as u64);
        s.add(&c[4], levels as u64);
    }

    /// A table a range read opened (its index block positioned).
    #[inline]
    pub fn record_scan_table(&self, s: Stripe) {
        s.add(&self.reads.at(s).scans[5], 1);
    }

    /// Entries a range read returned (counted when it ends).
    #[inline]
    pub fn record_scan_entries(&self, s: Stripe, n: u64) {
        s.add(&self.reads.at(s).scans[1], n);
    }

    /// A lookup answered by a memtable.
    #[inline]
    pub fn record_memtable_hit(&self, s: Stripe) {
        s.add(&self.reads.at(s).memtable_hits, 1);
    }

    /// One point-lookup probe of one table in `level`.
    #[inline]
    pub fn record_probe(&self, s: Stripe, level: usize, out: &Probe) {
        let found = out.found;
        self.level(s, level, |l| {
            s.add(&l.probes, 1);
            if out.units_probed > 0 {
                s.add(&l.filter_units_probed, u64::from(out.units_probed));
            }
            if out.filter_negative {
                s.add(&l.filter_negatives, 1);
            }
            if out.units_probed > 0 && !out.filter_negative && !found {
                s.add(&l.filter_false_positives, 1);
            }
            if found {
                s.add(&l.found, 1);
            }
            if out.data_block_read {
                if out.data_block_cached {
                    s.add(&l.data_cache_hits, 1);
                } else {
                    s.add(&l.data_reads, 1);
                }
                if !found {
                    s.add(&l.unnecessary_data_reads, 1);
                }
            }
        });
    }

    /// Bytes written by one flush of kind `kind` (the order of [`Flushes`]' fields).
    pub fn record_flush(&self, kind: usize, bytes: u64) {
        if let Some([n, b]) = self.flushes.get(kind) {
            n.fetch_add(1, Relaxed);
            b.fetch_add(bytes, Relaxed);
        }
    }

    /// Bytes written by flushes of every kind.
    fn flush_bytes(&self) -> u64 {
        self.flushes.iter().map(|[_, b]| b.load(Relaxed)).sum()
    }

    /// What a byte of this tree's write memory became on disk so far: bytes flushed per
    /// memtable byte switched, in `[0.05, 1]`; `None` before the first switch. Below 1 when
    /// updates overwrite keys within a memtable (its arena holds every version, a flush only
    /// the newest) and by the arena's per-entry overhead.
    pub fn flushed_per_switched(&self) -> Option<f64> {
        let switched = self.switched_for_memory.load(Relaxed)
            + self.switched_for_log.load(Relaxed)
            + self.switched_manually.load(Relaxed);
        let flushed = self.flush_bytes();
        (switched > 0 && flushed > 0).then(|| (flushed as f64 / switched as f64).clamp(0.05, 1.0))
    }

    /// A memtable of `bytes` switched by an explicit flush.
    pub fn record_manual_switch(&self, bytes: u64) {
        self.switched_manually.fetch_add(bytes, Relaxed);
    }

    /// A memory merge read `input` bytes of runs and built `output` bytes in `nanos` of CPU.
    pub fn record_memory_merge(&self, input: u64, output: u64, nanos: u64) {
        for (c, v) in self.memory_merges.iter().zip([1, input, output, nanos]) {
            c.fetch_add(v, Relaxed);
        }
    }

    /// A memtable of `bytes` switched by the write controller, for the log or for memory.
    pub fn record_switch(&self, bytes: u64, for_log: bool) {
        let c = if for_log { &self.switched_for_log } else { &self.switched_for_memory };
        c.fetch_add(bytes, Relaxed);
    }

    /// Bytes read (`upper` of them from the level above) and written by one compaction into
    /// `output_level`.
    pub fn record_compaction(&self, output_level: usize, read: u64, upper: u64, written: u64) {
        self.level(Stripe::FIRST, output_level, |l| {
            Stripe::FIRST.add(&l.compactions, 1);
            Stripe::FIRST.add(&l.compaction_read, read);
            Stripe::FIRST.add(&l.compaction_upper_read, upper);
            Stripe::FIRST.add(&l.compaction_written, written);
        });
    }

    /// A trivial move out of `from`.
    pub fn record_move(&self, from: usize) {
        self.level(Stripe::FIRST, from + 1, |l| {
            Stripe::FIRST.add(&l.moves, 1);
        });
    }

    /// What a flush or compaction rewrote: expired values, and the compaction filter's
    /// removals and changes.
    pub fn record_rewritten(&self, r: Rewritten) {
        for (c, n) in self.rewritten.iter().zip([r.expired, r.removed, r.changed]) {
            c.fetch_add(n, Relaxed);
        }
    }

    /// A level added (`add`) or removed at L1.
    pub fn record_reshape(&self, add: bool) {
        match add {
            true => &self.levels_added,
            false => &self.levels_removed,
        }
        .fetch_add(1, Relaxed);
    }

    /// A copy of the counters (`name` is the tree's).
    pub fn snapshot(&self, name: &str) -> TreeStatsSnapshot {
        TreeStatsSnapshot {
            name: name.to_string(),
            gets: self.reads.sum(|r| r.gets.load(Relaxed)),
            ranges: self.reads.sum(|r| r.ranges.load(Relaxed)),
            memtable_hits: self.reads.sum(|r| r.memtable_hits.load(Relaxed)),
            scans: {
                let n = |i: usize| self.reads.sum(|r| r.scans[i].load(Relaxed));
                ScanStats {
                    seeks: n(0),
                    entries: n(1),
                    memtables: n(2),
                    l0_runs: n(3),
                    levels: n(4),
                    tables: n(5),
                }
            },
            flush_bytes: self.flush_bytes(),
            flushes: {
                let [whole, partial, log, full] = self
                    .flushes
                    .each_ref()
                    .map(|[n, b]| FlushCount { count: n.load(Relaxed), bytes: b.load(Relaxed) });
                Flushes { whole, partial, log, full }
            },
            switched_for_memory: self.switched_for_memory.load(Relaxed),
            switched_for_log: self.switched_for_log.load(Relaxed),
            levels_added: self.levels_added.load(Relaxed),
            levels_removed: self.levels_removed.load(Relaxed),
            expired: self.rewritten[0].load(Relaxed),
            filter_removed: self.rewritten[1].load(Relaxed),
            filter_changed: self.rewritten[2].load(Relaxed),
            memory_merges: self.memory_merges[0].load(Relaxed),
            memory_merge_bytes_in: self.memory_merges[1].load(Relaxed),
            memory_merge_bytes_out: self.memory_merges[2].load(Relaxed),
            memory_merge_micros: self.memory_merges[3].load(Relaxed) / 1000,
            levels: self
                .levels
                .iter()
                .map(|l| LevelStats {
                    probes: l.sum(|c| c.probes.load(Relaxed)),
                    filter_units_probed: l.sum(|c| c.filter_units_probed.load(Relaxed)),
                    filter_negatives: l.sum(|c| c.filter_negatives.load(Relaxed)),
                    filter_false_positives: l.sum(|c| c.filter_false_positives.load(Relaxed)),
                    found: l.sum(|c| c.found.load(Relaxed)),
                    data_reads: l.sum(|c| c.data_reads.load(Relaxed)),
                    data_cache_hits: l.sum(|c| c.data_cache_hits.load(Relaxed)),
                    unnecessary_data_reads: l.sum(|c| c.unnecessary_data_reads.load(Relaxed)),
                    compactions: l.sum(|c| c.compactions.load(Relaxed)),
                    compaction_bytes_read: l.sum(|c| c.compaction_read.load(Relaxed)),
                    compaction_upper_bytes_read: l.sum(|c| c.compaction_upper_read.load(Relaxed)),
                    compaction_bytes_written: l.sum(|c| c.compaction_written.load(Relaxed)),
                    moves: l.sum(|c| c.moves.load(Relaxed)),
                    range_probes: l.sum(|c| c.range_probes.load(Relaxed)),
                    range_negatives: l.sum(|c| c.range_negatives.load(Relaxed)),
                    range_false_positives: l.sum(|c| c.range_false_positives.load(Relaxed)),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Default)]
#[repr(align(64))]
struct WriteCounters {
    user_bytes: AtomicU64,
    /// Puts and deletes written.
    user_ops: AtomicU64,
    wal_bytes: AtomicU64,
    slowdowns: AtomicU64,
    stops: AtomicU64,
    stall_micros: AtomicU64,
    delay_micros: AtomicU64,
    /// The delayed write rate in force; 0 when writes are not delayed.
    delayed_rate: AtomicU64,
}

/// Engine-wide counters.
#[derive(Debug)]
pub struct EngineCounters {
    levels: usize,
    trees: RwLock<Vec<Arc<TreeCounters>>>,
    writes: WriteCounters,
}

/// Engine-wide write and stall counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Puts and deletes written by users.
    pub user_ops: u64,
    /// Key and value bytes written by users.
    pub user_bytes: u64,
    /// Bytes appended to WALs.
    pub wal_bytes: u64,
    /// Write groups delayed.
    pub slowdowns: u64,
    /// Write groups stopped.
    pub stops: u64,
    /// Microseconds writers spent stopped.
    pub stall_micros: u64,
    /// Microseconds writers spent delayed.
    pub delay_micros: u64,
    /// The delayed write rate in force (bytes per second), if writes are being delayed.
    pub delayed_write_rate: Option<u64>,
}

impl EngineCounters {
    /// Counters for `trees` trees of `levels` levels.
    pub fn new(trees: usize, levels: usize) -> Self {
        EngineCounters {
            levels,
            trees: RwLock::new((0..trees).map(|_| Arc::new(TreeCounters::new(levels))).collect()),
            writes: WriteCounters::default(),
        }
    }

    /// Counters of tree `t`, created (with every tree before it) if missing.
    pub fn tree(&self, t: usize) -> Arc<TreeCounters> {
        if let Some(c) = self.trees.read().get(t) {
            return c.clone();
        }
        let mut trees = self.trees.write();
        while trees.len() <= t {
            trees.push(Arc::new(TreeCounters::new(self.levels)));
        }
        trees[t].clone()
    }

    /// Every tree's counters, by id.
    pub fn trees(&self) -> Vec<Arc<TreeCounters>> {
        self.trees.read().clone()
    }

    /// A write group: user bytes and WAL bytes.
    pub fn record_user_write(&self, ops: u64, user_bytes: u64, wal_bytes: u64) {
        self.writes.user_ops.fetch_add(ops, Relaxed);
        self.writes.user_bytes.fetch_add(user_bytes, Relaxed);
        self.writes.wal_bytes.fetch_add(wal_bytes, Relaxed);
    }

    /// A write group slowed down.
    pub fn record_slowdown(&self) {
        self.writes.slowdowns.fetch_add(1, Relaxed);
    }

    /// A write group stopped.
    pub fn record_stop(&self) {
        self.writes.stops.fetch_add(1, Relaxed);
    }

    /// Time a writer spent stalled.
    pub fn record_stall_micros(&self, us: u64) {
        self.writes.stall_micros.fetch_add(us, Relaxed);
    }

    /// Time a writer spent delayed.
    pub fn record_delay_micros(&self, us: u64) {
        self.writes.delay_micros.fetch_add(us, Relaxed);
    }

    /// The delayed write rate now in force (`None`: writes are not delayed).
    pub fn set_delayed_rate(&self, rate: Option<u64>) {
        self.writes.delayed_rate.store(rate.unwrap_or(0), Relaxed);
    }

    /// The write counters.
    pub fn writes(&self) -> WriteStats {
        let w = &self.writes;
        WriteStats {
            user_ops: w.user_ops.load(Relaxed),
            user_bytes: w.user_bytes.load(Relaxed),
            wal_bytes: w.wal_bytes.load(Relaxed),
            slowdowns: w.slowdowns.load(Relaxed),
            stops: w.stops.load(Relaxed),
            stall_micros: w.stall_micros.load(Relaxed),
            delay_micros: w.delay_micros.load(Relaxed),
            delayed_write_rate: Some(w.delayed_rate.load(Relaxed)).filter(|&r| r > 0),
        }
    }
}

/// Counters of one level of one tree.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Point-lookup probes of tables in this level.
    pub probes: u64,
    /// Filter units consulted by those probes (pinned, cached or read).
    pub filter_units_probed: u64,
    /// Probes a filter unit answered "absent".
    pub filter_negatives: u64,
    /// Probes the filter passed but the table did not hold the key.
    pub filter_false_positives: u64,
    /// Probes that found the key (a put or a tombstone).
    pub found: u64,
    /// Data blocks read from storage for point lookups.
    pub data_reads: u64,
    /// Data blocks served by the cache for point lookups.
    pub data_cache_hits: u64,
    /// Data blocks read (storage or cache) for a key the table did not hold.
    pub unnecessary_data_reads: u64,
    /// Compactions into this level (trivial moves apart).
    pub compactions: u64,
    /// Bytes read by compactions into this level.
    pub compaction_bytes_read: u64,
    /// Of `compaction_bytes_read`, the bytes from the level above (the rest: this level's overlapping files).
    pub compaction_upper_bytes_read: u64,
    /// Bytes written by compactions into this level.
    pub compaction_bytes_written: u64,
    /// Trivial moves into this level.
    pub moves: u64,
    /// Range reads that consulted a table's range filter in this level.
    pub range_probes: u64,
    /// Of `range_probes`, those the range filter ruled the table out for.
    pub range_negatives: u64,
    /// Of `range_probes`, those the range filter answered "maybe" for a range read that
    /// returned nothing (false positives are counted on empty results only: a "maybe" next to
    /// another table's hit is not counted).
    pub range_false_positives: u64,
}

/// Counters of one tree.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TreeStatsSnapshot {
    /// Tree name.
    pub name: String,
    /// Point lookups.
    pub gets: u64,
    /// Range reads (iterators) opened.
    pub ranges: u64,
    /// Lookups answered by a memtable.
    pub memtable_hits: u64,
    /// What range reads did.
    pub scans: ScanStats,
    /// Bytes written by flushes.
    pub flush_bytes: u64,
    /// Flushes by kind, each with its count and bytes written.
    pub flushes: Flushes,
    /// Memtable bytes switched for flushing because write memory was full.
    pub switched_for_memory: u64,
    /// Memtable bytes switched for flushing because the WALs passed `wal.max_size` (log truncation).
    pub switched_for_log: u64,
    /// Levels added at L1 because the tree's write memory shrank or its data grew
    /// (`level_targets = write-memory`).
    pub levels_added: u64,
    /// L1s removed because write memory grew (`level_targets = write-memory`).
    pub levels_removed: u64,
    /// Expired values (time to live) that flushes and compactions turned into tombstones.
    pub expired: u64,
    /// Values the compaction filter removed.
    pub filter_removed: u64,
    /// Values the compaction filter changed.
    pub filter_changed: u64,
    /// Memory merges of a partitioned memory component.
    pub memory_merges: u64,
    /// Bytes of runs the memory merges read.
    pub memory_merge_bytes_in: u64,
    /// Bytes of runs the memory merges built.
    pub memory_merge_bytes_out: u64,
    /// The CPU time of the thread that ran the memory merges (not wall time: on a busy machine a
    /// merge step also waits for a core).
    pub memory_merge_micros: u64,
    /// Per level.
    pub levels: Vec<LevelStats>,
}

/// Counts of what was rewritten.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Rewritten {
    /// Expired values turned into tombstones.
    pub expired: u64,
    /// Values the compaction filter removed.
    pub removed: u64,
    /// Values the compaction filter changed.
    pub changed: u64,
}
