//! Engine counters (DESIGN §7) and the per-file access records (§6.2): exact counters per file,
//! in a side table keyed by file number (never inside file metadata).

use super::DbInner;
use crate::sst::GetOutcome;
use crate::stats::{BlockKind, IoSnapshot};
use parking_lot::RwLock;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

#[derive(Debug, Default)]
struct LevelCounters {
    probes: AtomicU64,
    filter_negatives: AtomicU64,
    filter_false_positives: AtomicU64,
    found: AtomicU64,
    data_reads: AtomicU64,
    data_cache_hits: AtomicU64,
    unnecessary_data_reads: AtomicU64,
    compaction_read: AtomicU64,
    compaction_written: AtomicU64,
    moves: AtomicU64,
}

#[derive(Debug)]
struct TreeCounters {
    gets: AtomicU64,
    memtable_hits: AtomicU64,
    flush_bytes: AtomicU64,
    levels: Vec<LevelCounters>,
}

#[derive(Debug, Default)]
struct FileAccess {
    probes: AtomicU64,
    filter_negatives: AtomicU64,
    found: AtomicU64,
    data_reads: AtomicU64,
}

/// Engine-wide counters.
#[derive(Debug)]
pub(crate) struct Stats {
    trees: RwLock<Vec<TreeCounters>>,
    files: RwLock<HashMap<u64, FileAccess>>,
    user_bytes: AtomicU64,
    wal_bytes: AtomicU64,
    slowdowns: AtomicU64,
    stops: AtomicU64,
    stall_micros: AtomicU64,
}

fn tree_counters(levels: usize) -> TreeCounters {
    TreeCounters {
        gets: AtomicU64::new(0),
        memtable_hits: AtomicU64::new(0),
        flush_bytes: AtomicU64::new(0),
        levels: (0..levels).map(|_| LevelCounters::default()).collect(),
    }
}

impl Stats {
    pub fn new(trees: usize, levels: usize) -> Self {
        Stats {
            trees: RwLock::new((0..trees).map(|_| tree_counters(levels)).collect()),
            files: RwLock::new(HashMap::new()),
            user_bytes: AtomicU64::new(0),
            wal_bytes: AtomicU64::new(0),
            slowdowns: AtomicU64::new(0),
            stops: AtomicU64::new(0),
            stall_micros: AtomicU64::new(0),
        }
    }

    pub fn add_tree(&self, levels: usize) {
        self.trees.write().push(tree_counters(levels));
    }

    /// Runs `f` on tree `t`'s counters under the read lock (no clone on the read path).
    fn with_tree(&self, t: usize, f: impl FnOnce(&TreeCounters)) {
        if let Some(tc) = self.trees.read().get(t) {
            f(tc);
        }
    }

    fn level(&self, t: usize, level: usize, f: impl FnOnce(&LevelCounters)) {
        self.with_tree(t, |tc| {
            if let Some(l) = tc.levels.get(level) {
                f(l);
            }
        });
    }

    pub fn record_get(&self, t: usize) {
        self.with_tree(t, |tc| {
            tc.gets.fetch_add(1, Relaxed);
        });
    }

    pub fn record_memtable_hit(&self, t: usize) {
        self.with_tree(t, |tc| {
            tc.memtable_hits.fetch_add(1, Relaxed);
        });
    }

    /// One point-lookup probe of one table.
    pub fn record_probe(&self, t: usize, level: usize, file: u64, out: &GetOutcome) {
        let found = out.found.is_some();
        let unnecessary = out.data_block_read && !found;
        self.level(t, level, |l| {
            l.probes.fetch_add(1, Relaxed);
            if out.filter_negative {
                l.filter_negatives.fetch_add(1, Relaxed);
            }
            if out.units_probed > 0 && !out.filter_negative && !found {
                l.filter_false_positives.fetch_add(1, Relaxed);
            }
            if found {
                l.found.fetch_add(1, Relaxed);
            }
            if out.data_block_read {
                if out.data_block_cached {
                    l.data_cache_hits.fetch_add(1, Relaxed);
                } else {
                    l.data_reads.fetch_add(1, Relaxed);
                }
            }
            if unnecessary {
                l.unnecessary_data_reads.fetch_add(1, Relaxed);
            }
        });
        let update = |rec: &FileAccess| {
            rec.probes.fetch_add(1, Relaxed);
            if out.filter_negative {
                rec.filter_negatives.fetch_add(1, Relaxed);
            }
            if found {
                rec.found.fetch_add(1, Relaxed);
            }
            if out.data_block_read {
                rec.data_reads.fetch_add(1, Relaxed);
            }
        };
        if let Some(rec) = self.files.read().get(&file) {
            return update(rec);
        }
        update(self.files.write().entry(file).or_default());
    }

    pub fn forget_file(&self, file: u64) {
        self.files.write().remove(&file);
    }

    pub fn record_user_write(&self, user_bytes: u64, wal_bytes: u64) {
        self.user_bytes.fetch_add(user_bytes, Relaxed);
        self.wal_bytes.fetch_add(wal_bytes, Relaxed);
    }

    pub fn record_flush(&self, t: usize, bytes: u64) {
        self.with_tree(t, |tc| {
            tc.flush_bytes.fetch_add(bytes, Relaxed);
        });
    }

    pub fn record_compaction(&self, t: usize, output_level: usize, read: u64, written: u64) {
        self.level(t, output_level, |l| {
            l.compaction_read.fetch_add(read, Relaxed);
            l.compaction_written.fetch_add(written, Relaxed);
        });
    }

    pub fn record_move(&self, t: usize, from: usize) {
        self.level(t, from + 1, |l| {
            l.moves.fetch_add(1, Relaxed);
        });
    }

    pub fn record_slowdown(&self) {
        self.slowdowns.fetch_add(1, Relaxed);
    }

    pub fn record_stop(&self) {
        self.stops.fetch_add(1, Relaxed);
    }

    pub fn record_stall_micros(&self, us: u64) {
        self.stall_micros.fetch_add(us, Relaxed);
    }
}

/// Counters of one level of one tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Point-lookup probes of tables in this level.
    pub probes: u64,
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
    /// Bytes read by compactions into this level.
    pub compaction_bytes_read: u64,
    /// Bytes written by compactions into this level.
    pub compaction_bytes_written: u64,
    /// Trivial moves into this level.
    pub moves: u64,
}

/// Counters of one tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeStatsSnapshot {
    /// Tree name.
    pub name: String,
    /// Point lookups.
    pub gets: u64,
    /// Lookups answered by a memtable.
    pub memtable_hits: u64,
    /// Bytes written by flushes.
    pub flush_bytes: u64,
    /// Per level.
    pub levels: Vec<LevelStats>,
}

/// Access record of one live table (exact counts since it was created or the DB opened).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileAccessStats {
    /// Tree id.
    pub tree: u32,
    /// Level.
    pub level: usize,
    /// File number.
    pub file: u64,
    /// Entries.
    pub entries: u64,
    /// Filter bits per key and the policy that decided them.
    pub filter_bpk: f64,
    /// ... the policy.
    pub filter_policy: String,
    /// Point-lookup probes.
    pub probes: u64,
    /// Probes the filter ruled out.
    pub filter_negatives: u64,
    /// Probes that found the key.
    pub found: u64,
    /// Probes that read a data block.
    pub data_reads: u64,
}

/// Everything `Db::stats` reports.
#[derive(Debug, Clone, Default)]
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
    /// Key and value bytes written by users.
    pub user_bytes_written: u64,
    /// Bytes appended to WALs.
    pub wal_bytes_written: u64,
    /// Bytes written by flushes.
    pub flush_bytes_written: u64,
    /// Bytes written by compactions.
    pub compaction_bytes_written: u64,
    /// Write slowdowns (1 ms delays) and stops.
    pub stall_slowdowns: u64,
    /// Writes that waited for compaction or flush.
    pub stall_stops: u64,
    /// Microseconds writers spent stalled.
    pub stall_micros: u64,
    /// Bytes held by memtables.
    pub memtable_bytes: u64,
    /// Block cache usage and capacity in bytes.
    pub cache_usage: u64,
    /// ... capacity.
    pub cache_capacity: u64,
}

impl DbStats {
    /// (flush + compaction bytes written) / user bytes written.
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        (self.flush_bytes_written + self.compaction_bytes_written) as f64 / self.user_bytes_written as f64
    }

    /// Sum of one level counter over every tree and level.
    pub fn total(&self, f: impl Fn(&LevelStats) -> u64) -> u64 {
        self.trees.iter().flat_map(|t| t.levels.iter()).map(f).sum()
    }
}

pub(super) fn snapshot(inner: &Arc<DbInner>) -> DbStats {
    let s = &inner.stats;
    let (names, version, mem) = {
        let st = inner.state.lock();
        (
            st.tree_names.clone(),
            st.version.clone(),
            st.mems.iter().map(|m| m.bytes() as u64).sum(),
        )
    };
    let trees: Vec<TreeStatsSnapshot> = s
        .trees
        .read()
        .iter()
        .enumerate()
        .map(|(i, t)| TreeStatsSnapshot {
            name: names.get(i).cloned().unwrap_or_default(),
            gets: t.gets.load(Relaxed),
            memtable_hits: t.memtable_hits.load(Relaxed),
            flush_bytes: t.flush_bytes.load(Relaxed),
            levels: t
                .levels
                .iter()
                .map(|l| LevelStats {
                    probes: l.probes.load(Relaxed),
                    filter_negatives: l.filter_negatives.load(Relaxed),
                    filter_false_positives: l.filter_false_positives.load(Relaxed),
                    found: l.found.load(Relaxed),
                    data_reads: l.data_reads.load(Relaxed),
                    data_cache_hits: l.data_cache_hits.load(Relaxed),
                    unnecessary_data_reads: l.unnecessary_data_reads.load(Relaxed),
                    compaction_bytes_read: l.compaction_read.load(Relaxed),
                    compaction_bytes_written: l.compaction_written.load(Relaxed),
                    moves: l.moves.load(Relaxed),
                })
                .collect(),
        })
        .collect();
    let files_map = s.files.read();
    let mut files = Vec::new();
    for (t, tv) in version.trees.iter().enumerate() {
        for (level, fs) in tv.levels.iter().enumerate() {
            for f in fs {
                let a = files_map.get(&f.number);
                let get = |g: fn(&FileAccess) -> &AtomicU64| a.map_or(0, |a| g(a).load(Relaxed));
                files.push(FileAccessStats {
                    tree: t as u32,
                    level,
                    file: f.number,
                    entries: f.entries,
                    filter_bpk: f.filter_bpk,
                    filter_policy: f.filter_policy.clone(),
                    probes: get(|a| &a.probes),
                    filter_negatives: get(|a| &a.filter_negatives),
                    found: get(|a| &a.found),
                    data_reads: get(|a| &a.data_reads),
                });
            }
        }
    }
    let flush_bytes_written = trees.iter().map(|t| t.flush_bytes).sum();
    let compaction_bytes_written = trees
        .iter()
        .flat_map(|t| &t.levels)
        .map(|l| l.compaction_bytes_written)
        .sum();
    DbStats {
        io: inner.io.snapshot(),
        compaction_io: inner.compaction_io.snapshot(),
        trees,
        files,
        user_bytes_written: s.user_bytes.load(Relaxed),
        wal_bytes_written: s.wal_bytes.load(Relaxed),
        flush_bytes_written,
        compaction_bytes_written,
        stall_slowdowns: s.slowdowns.load(Relaxed),
        stall_stops: s.stops.load(Relaxed),
        stall_micros: s.stall_micros.load(Relaxed),
        memtable_bytes: mem,
        cache_usage: inner.cache.usage() as u64,
        cache_capacity: inner.cache.capacity() as u64,
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

pub(super) fn levels(inner: &Arc<DbInner>) -> Vec<TreeLevels> {
    let st = inner.state.lock();
    st.version
        .trees
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut levels: Vec<LevelInfo> = t
                .levels
                .iter()
                .map(|fs| LevelInfo {
                    files: fs.len(),
                    bytes: fs.iter().map(|f| f.size).sum(),
                    entries: fs.iter().map(|f| f.entries).sum(),
                })
                .collect();
            while levels.last().is_some_and(|l| l.files == 0) {
                levels.pop();
            }
            TreeLevels {
                name: st.tree_names.get(i).cloned().unwrap_or_default(),
                levels,
                deepest: t.deepest,
            }
        })
        .collect()
}

pub(super) fn text(inner: &Arc<DbInner>) -> String {
    let s = snapshot(inner);
    let mut o = String::new();
    let _ = writeln!(o, "** cairn stats **");
    let _ = writeln!(
        o,
        "user bytes {}  wal {}  flush {}  compaction {}  write-amp {:.2}",
        s.user_bytes_written,
        s.wal_bytes_written,
        s.flush_bytes_written,
        s.compaction_bytes_written,
        s.write_amplification()
    );
    let _ = writeln!(
        o,
        "stalls: {} slowdowns, {} stops, {} us",
        s.stall_slowdowns, s.stall_stops, s.stall_micros
    );
    let _ = writeln!(
        o,
        "memory: memtables {} B, block cache {}/{} B",
        s.memtable_bytes, s.cache_usage, s.cache_capacity
    );
    let _ = writeln!(o, "block I/O (storage reads / bytes / cache hits):");
    for k in BlockKind::ALL {
        let c = s.io.kind(k);
        let _ = writeln!(
            o,
            "  {:<12} {:>10} {:>14} {:>10}",
            k.name(),
            c.reads,
            c.bytes,
            c.cache_hits
        );
    }
    let shapes = levels(inner);
    for (t, shape) in s.trees.iter().zip(shapes.iter()) {
        let _ = writeln!(
            o,
            "tree {:?}: gets {} memtable hits {} deepest L{}",
            t.name, t.gets, t.memtable_hits, shape.deepest
        );
        let _ = writeln!(
            o,
            "  level files bytes entries | probes filt-neg filt-fp found data-rd data-hit unneeded | comp-read comp-write moves"
        );
        for (i, l) in t.levels.iter().enumerate() {
            let info = shape.levels.get(i).cloned().unwrap_or_default();
            if info.files == 0 && l.probes == 0 && l.compaction_bytes_written == 0 {
                continue;
            }
            let _ = writeln!(
                o,
                "  L{i} {} {} {} | {} {} {} {} {} {} {} | {} {} {}",
                info.files,
                info.bytes,
                info.entries,
                l.probes,
                l.filter_negatives,
                l.filter_false_positives,
                l.found,
                l.data_reads,
                l.data_cache_hits,
                l.unnecessary_data_reads,
                l.compaction_bytes_read,
                l.compaction_bytes_written,
                l.moves
            );
        }
    }
    o
}
