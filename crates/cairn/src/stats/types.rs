//! The report types: what `Db::stats`, `Db::levels` and `Db::tuner_history` return. Plain
//! data; `db/stats.rs` assembles them from the engine, `report.rs` prints them.

use super::counters::{LevelStats, TreeStatsSnapshot};
use super::io::IoSnapshot;

/// Access record of one live table (exact counts since it was created or the DB opened).
#[derive(Clone, Default, PartialEq)]
pub struct FileAccessStats {
    /// Tree id.
    pub tree: u32,
    /// Level.
    pub level: usize,
    /// File number.
    pub file: u64,
    /// Entries.
    pub entries: u64,
    /// Filter bits per key.
    pub filter_bpk: f64,
    /// The filter allocation policy that decided them.
    pub filter_policy: String,
    /// Point-lookup probes.
    pub probes: u64,
    /// Probes the filter ruled out.
    pub filter_negatives: u64,
    /// Probes that found the key.
    pub found: u64,
    /// Probes that read a data block.
    pub data_reads: u64,
    /// Merlin's estimate of the lookups that probed the file since the common start (in
    /// recorded lookups), of those that found their key, and of the empty ones (q, x, z).
    pub estimated_lookups: f64,
    /// Merlin's estimate of the lookups that found their key (x).
    pub estimated_hits: f64,
    /// Merlin's estimate of the empty lookups (z).
    pub estimated_empty: f64,
    /// The exact counts since the file was written plus what it inherited (q, x, z): the
    /// ground truth for the estimates.
    pub exact_lookups: f64,
    /// The exact lookups that found their key (x).
    pub exact_hits: f64,
    /// The exact empty lookups (z).
    pub exact_empty: f64,
    /// Bounded range reads that asked the file.
    pub range_probes: u64,
    /// Range reads it held no key for (and what it inherited): what sizes its share of the
    /// range-filter bits.
    pub range_empty: f64,
    /// Elastic filter units loaded now (over its segments).
    pub loaded_units: u64,
}

/// How close Merlin's estimated empty lookups per file are to the exact ones (the paper's
/// metrics, over the live files).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MerlinAccuracy {
    /// Euclidean distance between the two vectors.
    pub distance: f64,
    /// Cosine similarity of the two vectors (1: the same direction; what the solver needs).
    pub cosine: f64,
}

impl MerlinAccuracy {
    /// The accuracy of `files`' estimates.
    pub fn of(files: &[FileAccessStats]) -> Self {
        let dot: f64 = files.iter().map(|f| f.estimated_empty * f.exact_empty).sum();
        let ne: f64 = files.iter().map(|f| f.estimated_empty.powi(2)).sum::<f64>().sqrt();
        let nx: f64 = files.iter().map(|f| f.exact_empty.powi(2)).sum::<f64>().sqrt();
        MerlinAccuracy {
            distance: files
                .iter()
                .map(|f| (f.estimated_empty - f.exact_empty).powi(2))
                .sum::<f64>()
                .sqrt(),
            cosine: if ne > 0.0 && nx > 0.0 { dot / (ne * nx) } else { 0.0 },
        }
    }
}

/// Everything `Db::stats` reports. `Display` prints it as tables for people; `Debug` (here and
/// in the other report types) lists only the fields that are not zero, with `..` for the rest.
#[derive(Clone, Default)]
pub struct DbStats {
    /// Block I/O by kind (storage reads, bytes, cache hits), bytes written, syncs — everything
    /// except compaction reads.
    pub io: IoSnapshot,
    /// Block reads by compactions.
    pub compaction_io: IoSnapshot,
    /// Per tree and level.
    pub trees: Vec<TreeStatsSnapshot>,
    /// Per live table.
    pub files: Vec<FileAccessStats>,
    /// Puts and deletes written by users.
    pub user_write_ops: u64,
    /// Key and value bytes written by users.
    pub user_bytes_written: u64,
    /// Bytes appended to WALs.
    pub wal_bytes_written: u64,
    /// Bytes written by flushes.
    pub flush_bytes_written: u64,
    /// Bytes written by compactions.
    pub compaction_bytes_written: u64,
    /// Write groups delayed at the delayed write rate.
    pub stall_slowdowns: u64,
    /// Write groups stopped until compaction or flush caught up.
    pub stall_stops: u64,
    /// Microseconds writers spent stopped.
    pub stall_micros: u64,
    /// Microseconds writers spent delayed.
    pub delay_micros: u64,
    /// The delayed write rate in force (bytes per second), if writes are being delayed.
    pub delayed_write_rate: Option<u64>,
    /// Estimated bytes compaction still has to move (over every tree), now.
    pub pending_compaction_bytes: u64,
    /// Files in level 0 of the tree that has the most, now.
    pub l0_files: u64,
    /// Sorted runs (groups) in level 0 of the tree that has the most, now: what reads probe
    /// and the stall triggers count.
    pub l0_groups: u64,
    /// Bytes held by memtables.
    pub memtable_bytes: u64,
    /// Block cache usage in bytes.
    pub cache_usage: u64,
    /// Block cache capacity in bytes.
    pub cache_capacity: u64,
    /// Elastic filter units (zero unless `bpk_policy` is elastic).
    pub elastic: ElasticStats,
    /// The key-value cache (zero when there is none).
    pub kv_cache: KvCacheStats,
    /// Range filters built for tables already written (`range_filter.build_rate`).
    pub range_builds: RangeBuildStats,
    /// Transactions' outcomes.
    pub transactions: TransactionStats,
}

/// Transactions' outcomes since the open.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct TransactionStats {
    /// Commits that applied their writes (or had none).
    pub commits: u64,
    /// Commits refused because something the transaction read or wrote had changed.
    pub conflicts: u64,
    /// Transactions rolled back, dropped without a commit, or whose commit failed otherwise.
    pub rollbacks: u64,
    /// Lock requests of pessimistic transactions that had to wait.
    pub lock_waits: u64,
    /// Lock waits that timed out.
    pub lock_timeouts: u64,
    /// Lock requests refused because they would have closed a cycle of waiters.
    pub deadlocks: u64,
}

/// Range filters built at run time for tables already written.
#[derive(Clone, Copy, Default, PartialEq)]
pub struct RangeBuildStats {
    /// The range filters' average bits per key now: `range_filter.bits_per_key`, or more where
    /// empty range reads grew it (`range_filter.max_bits_per_key`).
    pub bits_per_key: f64,
    /// Filters built and pinned.
    pub built: u64,
    /// Their bytes when built (some may have been unloaded since).
    pub filter_bytes: u64,
    /// Builds that failed (a table that could not be read).
    pub failed: u64,
    /// Builds whose filter came out larger than the room planned for it, and was dropped
    /// (later rounds plan for that much more).
    pub misfits: u64,
    /// Bytes the builds read from storage (outside the block cache).
    pub read_bytes: u64,
}

/// What the key-value cache holds and answered.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct KvCacheStats {
    /// Capacity in bytes.
    pub capacity: u64,
    /// Bytes charged now (entries and their overhead).
    pub usage: u64,
    /// Entries held now.
    pub entries: u64,
    /// Lookups it answered with a value.
    pub hits: u64,
    /// Lookups it answered "not found" (the tables hold a deletion of the key).
    pub negative_hits: u64,
    /// Lookups past the memtables it could not answer.
    pub misses: u64,
    /// Answers it took from the tables.
    pub fills: u64,
    /// Answers refused because a flush or compaction changed the key meanwhile.
    pub refused: u64,
}

/// What the elastic filter adjuster did and holds (ElasticBF).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ElasticStats {
    /// Filter memory in bytes.
    pub budget: u64,
    /// Bytes of loaded units.
    pub usage: u64,
    /// Units loaded so far (each one read of a filter-unit block).
    pub loads: u64,
    /// Units unloaded so far.
    pub unloads: u64,
    /// Units that could not be read (left unloaded).
    pub load_errors: u64,
    /// Adjustment rounds.
    pub rounds: u64,
    /// Solves of mnemosyne-elastic's optimum.
    pub solves: u64,
    /// Units loaded now, per level (summed over trees).
    pub loaded_per_level: Vec<u64>,
}

impl DbStats {
    /// Table bytes written per user byte: (flush + compaction bytes) / user bytes (the WAL
    /// excluded, as RocksDB's "Sum W-Amp").
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        (self.flush_bytes_written + self.compaction_bytes_written) as f64 / self.user_bytes_written as f64
    }

    /// Every byte written per user byte: (WAL + flush + compaction bytes) / user bytes.
    pub fn total_write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        (self.wal_bytes_written + self.flush_bytes_written + self.compaction_bytes_written) as f64
            / self.user_bytes_written as f64
    }

    /// How close Merlin's estimates are to the exact counts over the live files.
    pub fn merlin_accuracy(&self) -> MerlinAccuracy {
        MerlinAccuracy::of(&self.files)
    }

    /// Sum of one level counter over every tree and level.
    pub fn total(&self, f: impl Fn(&LevelStats) -> u64) -> u64 {
        self.trees.iter().flat_map(|t| t.levels.iter()).map(f).sum()
    }
}

/// One level's shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelInfo {
    /// Files.
    pub files: usize,
    /// Bytes.
    pub bytes: u64,
    /// Entries.
    pub entries: u64,
    /// Range tombstones (one per fragment and sequence number, `Db::delete_range`).
    pub range_deletions: u64,
}

/// One tree's shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeLevels {
    /// Tree name.
    pub name: String,
    /// Levels 0..; trailing empty levels omitted.
    pub levels: Vec<LevelInfo>,
    /// Deepest level in use (Garnering's L).
    pub deepest: u32,
}

/// One tuning cycle as recorded in the tuner's history.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TunerRecord {
    /// Milliseconds since the database opened.
    pub at_ms: u64,
    /// Operations (puts, deletes, point lookups, range reads) in the cycle.
    pub ops: u64,
    /// The cycle's weighted page I/O per operation (ω · writes + γ · reads).
    pub cost: f64,
    /// `write'(x)`: the change of write I/O per operation per byte more write memory (pages;
    /// negative: more write memory saves writes).
    pub write_derivative: f64,
    /// `read'(x)`: the change of read I/O per operation per byte moved from the block cache into
    /// write memory (pages; the cache's lost hits, from the ghost cache, and compaction reads).
    pub read_derivative: f64,
    /// `cost'(x)`: the two weighted; the tuner moves memory toward write memory when negative.
    pub cost_derivative: f64,
    /// Bytes moved into write memory (negative: out of it).
    pub write_step: i64,
    /// Three-way tuning: the filter region's derivative (0 without a filter region).
    pub filter_derivative: f64,
    /// Bytes moved into filter memory (negative: out of it; 0 without a filter region).
    pub filter_step: i64,
    /// Why the write step is what it is.
    pub rule: TunerRule,
    /// Write memory after the step, in bytes.
    pub write: u64,
    /// Block cache capacity after the step, in bytes.
    pub cache: u64,
    /// Filter memory after the step, in bytes (0 without a filter region).
    pub filter: u64,
    /// Four-way tuning: the key-value cache's derivative (I/O per operation per byte moved
    /// from it to the block cache; 0 without a key-value cache).
    pub kv_derivative: f64,
    /// Bytes moved into the key-value cache (negative: out of it).
    pub kv_step: i64,
    /// The key-value cache's capacity after the step, in bytes (0 without one).
    pub kv: u64,
}

/// Why a tuning step moved memory or did not (`TunerRecord::rule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunerRule {
    /// Newton–Raphson's root of the fitted line.
    Newton,
    /// The fixed step.
    Fallback,
    /// The step was below the minimum.
    SmallStep,
    /// The expected gain was below the minimum.
    SmallGain,
    /// Nothing to decide from (no derivative).
    NoData,
    /// ★ No write in the cycle: write memory above the floor went to the other side at once.
    Idle,
}

impl TunerRule {
    /// A short name for machine-readable output (`newton`, `fallback`, `small-step`,
    /// `small-gain`, `no-data`, `idle`).
    pub fn name(self) -> &'static str {
        match self {
            TunerRule::Newton => "newton",
            TunerRule::Fallback => "fallback",
            TunerRule::SmallStep => "small-step",
            TunerRule::SmallGain => "small-gain",
            TunerRule::NoData => "no-data",
            TunerRule::Idle => "idle",
        }
    }
}
