//! What a benchmark phase reports: db_bench's output line, latency percentiles from an HDR
//! histogram, cairn's own I/O metrics, and the JSON record that `compare` reads back.

use cairn::BlockKind;
use cairn::DbStats;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// Per-operation latencies in nanoseconds, of every operation or of one in `every` (each
/// timed one then stands for `every`: two clock reads cost ~5% of a cached lookup, and
/// RocksDB's db_bench reads no clock per operation unless asked for a histogram).
#[derive(Debug, Clone)]
pub struct Latencies {
    h: Histogram<u64>,
    every: u64,
    tick: u64,
}

impl Default for Latencies {
    fn default() -> Self {
        Self::sampled(1)
    }
}

impl Latencies {
    /// Times one operation in `every` (at least 1).
    pub fn sampled(every: u64) -> Self {
        // 1 ns .. 1 hour at 3 significant digits; values above the top are clamped.
        let h = Histogram::new_with_bounds(1, 3_600_000_000_000, 3);
        Latencies {
            h: h.unwrap_or_else(|e| unreachable!("constant histogram bounds are valid: {e}")),
            every: every.max(1),
            tick: 0,
        }
    }

    /// Runs `f` and, if it is a sampled operation, records how long it took.
    pub fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        self.tick += 1;
        if self.tick % self.every != 0 {
            return f();
        }
        let t = Instant::now();
        let r = f();
        self.record_n(t.elapsed().as_nanos() as u64, self.every);
        r
    }

    /// Records `n` operations of `ns` nanoseconds each.
    pub fn record_n(&mut self, ns: u64, n: u64) {
        self.h.saturating_record_n(ns.max(1), n);
    }

    /// Adds another thread's latencies.
    pub fn merge(&mut self, other: &Latencies) {
        // Same bounds on both sides, so adding cannot fail; saturate if it ever did.
        if self.h.add(&other.h).is_err() {
            for v in other.h.iter_recorded() {
                self.h.saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }

    /// Summary in microseconds.
    pub fn summary(&self) -> LatencySummary {
        let us = |ns: u64| ns as f64 / 1000.0;
        let h = &self.h;
        LatencySummary {
            count: h.len(),
            mean_us: h.mean() / 1000.0,
            stddev_us: h.stdev() / 1000.0,
            min_us: us(h.min()),
            p50_us: us(h.value_at_quantile(0.50)),
            p75_us: us(h.value_at_quantile(0.75)),
            p95_us: us(h.value_at_quantile(0.95)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            p9999_us: us(h.value_at_quantile(0.9999)),
            max_us: us(h.max()),
        }
    }
}

/// Latency percentiles of one phase, in microseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[allow(
    missing_docs,
    reason = "the field names say what they are (count, mean, percentiles in µs)"
)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub stddev_us: f64,
    pub min_us: f64,
    pub p50_us: f64,
    pub p75_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    pub max_us: f64,
}

impl LatencySummary {
    /// db_bench's `--histogram=1` block.
    pub fn print_db_bench(&self, what: &str) {
        println!("Microseconds per {what}:");
        println!(
            "Count: {} Average: {:.4}  StdDev: {:.2}",
            self.count, self.mean_us, self.stddev_us
        );
        println!(
            "Min: {:.0}  Median: {:.4}  Max: {:.0}",
            self.min_us, self.p50_us, self.max_us
        );
        println!(
            "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
            self.p50_us, self.p75_us, self.p99_us, self.p999_us, self.p9999_us
        );
    }
}

/// cairn's own counters over one phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CairnMetrics {
    /// The elastic filter adjuster's state at the end (cairn's elastic policies).
    #[serde(default)]
    pub elastic: Option<Elastic>,
    /// Data blocks read from storage per lookup.
    pub data_reads_per_lookup: f64,
    /// Data blocks read that did not hold the key, per lookup.
    pub unnecessary_data_reads_per_lookup: f64,
    /// Filter false positives / (false positives + true negatives).
    pub filter_fpr: f64,
    /// Cache hit rate per block kind (hits / (hits + storage reads)).
    pub cache_hit_rate: BTreeMap<String, f64>,
    /// Storage reads per block kind during the phase.
    pub storage_reads: BTreeMap<String, u64>,
    /// Write amplification since open ((WAL + flush + compaction bytes) / user bytes).
    pub write_amp: f64,
    /// Blocks read from storage during the phase, by users and by compactions (the memory
    /// tuner's read cost).
    #[serde(default)]
    pub blocks_read: u64,
    /// 4 KiB pages written by flushes and compactions during the phase (its write cost).
    #[serde(default)]
    pub pages_written: u64,
    /// Files and bytes per level of the default tree after the phase.
    pub levels: Vec<(usize, u64)>,
    /// Levels added and removed at L1 during the phase, over all trees
    /// (`--level_targets=write-memory`).
    #[serde(default)]
    pub levels_added: u64,
    /// ... removed.
    #[serde(default)]
    pub levels_removed: u64,
    /// Merlin's estimated empty lookups per file against the exact counts after the phase:
    /// Euclidean distance and cosine similarity (the paper's metrics).
    #[serde(default)]
    pub merlin_distance: f64,
    /// ... cosine similarity.
    #[serde(default)]
    pub merlin_cosine: f64,
    /// Every live file's filter after the phase, with its lookups.
    #[serde(default)]
    pub files: Vec<FileFilter>,
    /// Merlin's estimates against every lookup so far replayed on the tree after the phase
    /// (`--merlin_truth`): Euclidean distance.
    #[serde(default)]
    pub replayed_distance: Option<f64>,
    /// ... cosine similarity.
    #[serde(default)]
    pub replayed_cosine: Option<f64>,
    /// Memory merges of partitioned memory components during the phase, and their time.
    #[serde(default)]
    pub memory_merges: u64,
    /// ... µs.
    #[serde(default)]
    pub memory_merge_micros: u64,
    /// Range-filter probes (tables whose range filter a range read consulted).
    #[serde(default)]
    pub range_filter_probes: u64,
    /// ... that ruled their table out.
    #[serde(default)]
    pub range_filter_negatives: u64,
    /// ... that answered "maybe" for a range read that returned nothing.
    #[serde(default)]
    pub range_filter_false_positives: u64,
    /// Range filters built during the phase for tables written before the reads.
    #[serde(default)]
    pub range_filters_built: u64,
    /// ... bytes those builds read from storage.
    #[serde(default)]
    pub range_filter_build_bytes: u64,
    /// The range filters' average bits per key at the phase's end (grown by empty reads).
    #[serde(default)]
    pub range_filter_bits_per_key: f64,
}

/// One file's filter and the lookups it saw (for the allocation chart).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FileFilter {
    /// Level.
    pub level: usize,
    /// Entries.
    pub entries: u64,
    /// Filter bits per key.
    pub bpk: f64,
    /// Exact probes since the file was written.
    pub probes: u64,
    /// Exact empty lookups (with what the file inherited).
    pub exact_empty: f64,
    /// Merlin's estimated empty lookups.
    pub estimated_empty: f64,
}

impl CairnMetrics {
    /// Metrics between two stats snapshots, `lookups` being the phase's point lookups.
    pub fn between(before: &DbStats, after: &DbStats, lookups: u64, db: &cairn::Db) -> Self {
        let d = after.io - before.io;
        let per = |x: u64| x as f64 / lookups.max(1) as f64;
        let delta = |f: fn(&cairn::LevelStats) -> u64| after.total(f) - before.total(f);
        let negatives = delta(|l| l.filter_negatives);
        let fps = delta(|l| l.filter_false_positives);
        let mut cache_hit_rate = BTreeMap::new();
        let mut storage_reads = BTreeMap::new();
        for k in BlockKind::ALL {
            let s = d.kind(k);
            if s.reads + s.cache_hits > 0 {
                cache_hit_rate.insert(
                    k.name().to_string(),
                    s.cache_hits as f64 / (s.reads + s.cache_hits) as f64,
                );
                storage_reads.insert(k.name().to_string(), s.reads);
            }
        }
        let acc = after.merlin_accuracy();
        let merges = |s: &DbStats, f: fn(&cairn::TreeStatsSnapshot) -> u64| s.trees.iter().map(f).sum::<u64>();
        CairnMetrics {
            memory_merges: merges(after, |t| t.memory_merges) - merges(before, |t| t.memory_merges),
            memory_merge_micros: merges(after, |t| t.memory_merge_micros) - merges(before, |t| t.memory_merge_micros),
            range_filter_probes: delta(|l| l.range_probes),
            range_filter_negatives: delta(|l| l.range_negatives),
            range_filter_false_positives: delta(|l| l.range_false_positives),
            range_filters_built: after.range_builds.built - before.range_builds.built,
            range_filter_build_bytes: after.range_builds.read_bytes - before.range_builds.read_bytes,
            range_filter_bits_per_key: after.range_builds.bits_per_key,
            replayed_distance: None,
            replayed_cosine: None,
            merlin_distance: acc.distance,
            merlin_cosine: acc.cosine,
            files: after
                .files
                .iter()
                .map(|f| FileFilter {
                    level: f.level,
                    entries: f.entries,
                    bpk: f.filter_bpk,
                    probes: f.probes,
                    exact_empty: f.exact_empty,
                    estimated_empty: f.estimated_empty,
                })
                .collect(),
            blocks_read: d.total_reads() + (after.compaction_io - before.compaction_io).total_reads(),
            pages_written: (after.flush_bytes_written + after.compaction_bytes_written
                - before.flush_bytes_written
                - before.compaction_bytes_written)
                / 4096,
            data_reads_per_lookup: per(d.kind(BlockKind::Data).reads),
            unnecessary_data_reads_per_lookup: per(delta(|l| l.unnecessary_data_reads)),
            filter_fpr: fps as f64 / (negatives + fps).max(1) as f64,
            cache_hit_rate,
            storage_reads,
            write_amp: after.write_amplification(),
            levels_added: after.trees.iter().map(|t| t.levels_added).sum::<u64>()
                - before.trees.iter().map(|t| t.levels_added).sum::<u64>(),
            levels_removed: after.trees.iter().map(|t| t.levels_removed).sum::<u64>()
                - before.trees.iter().map(|t| t.levels_removed).sum::<u64>(),
            elastic: (after.elastic.rounds > 0).then(|| {
                let e = &after.elastic;
                Elastic {
                    budget: e.budget,
                    usage: e.usage,
                    loads: e.loads - before.elastic.loads,
                    unloads: e.unloads - before.elastic.unloads,
                    rounds: e.rounds - before.elastic.rounds,
                    solves: e.solves - before.elastic.solves,
                    loaded_per_level: e.loaded_per_level.clone(),
                }
            }),
            levels: db
                .levels()
                .first()
                .map(|t| t.levels.iter().map(|l| (l.files, l.bytes)).collect())
                .unwrap_or_default(),
        }
    }

    /// One text line under db_bench's line.
    pub fn print(&self) {
        let hits: Vec<String> = self
            .cache_hit_rate
            .iter()
            .map(|(k, v)| format!("{k} {:.1}%", v * 100.0))
            .collect();
        println!(
            "  cairn: data blocks from storage/lookup {:.3}, unnecessary {:.4}, filter FPR {:.4}, cache hits [{}], write-amp {:.2}, levels {:?}",
            self.data_reads_per_lookup,
            self.unnecessary_data_reads_per_lookup,
            self.filter_fpr,
            hits.join(", "),
            self.write_amp,
            self.levels.iter().map(|(f, b)| format!("{f}/{}MB", b >> 20)).collect::<Vec<_>>()
        );
        if let Some(e) = &self.elastic {
            println!(
                "  cairn: elastic filter memory {}/{} bytes, {} loads, {} unloads, {} rounds, {} solves, units loaded per level {:?}",
                e.usage, e.budget, e.loads, e.unloads, e.rounds, e.solves, e.loaded_per_level
            );
        }
        if self.range_filter_probes > 0 {
            println!(
                "  cairn: range filter probes {}, negatives {}, false positives on empty ranges {}",
                self.range_filter_probes, self.range_filter_negatives, self.range_filter_false_positives
            );
        }
        if self.range_filters_built > 0 {
            println!(
                "  cairn: range filters built for tables already written {}, {} MB read for them; {:.1} bits per key on average",
                self.range_filters_built,
                self.range_filter_build_bytes >> 20,
                self.range_filter_bits_per_key
            );
        }
    }
}

/// What cairn's elastic filter adjuster did in a phase (loads, unloads, rounds, solves) and
/// holds at its end.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Elastic {
    /// Filter memory and loaded bytes.
    pub budget: u64,
    /// ...
    pub usage: u64,
    /// Units loaded and unloaded in the phase.
    pub loads: u64,
    /// ...
    pub unloads: u64,
    /// Adjustment rounds and combined-mode solves in the phase.
    pub rounds: u64,
    /// ...
    pub solves: u64,
    /// Units loaded per level at the end.
    pub loaded_per_level: Vec<u64>,
}

/// One phase (a db_bench benchmark, or a YCSB load/run).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Phase {
    /// Benchmark name.
    pub name: String,
    /// Operations done (all threads).
    pub ops: u64,
    /// Wall-clock seconds.
    pub secs: f64,
    /// Operations per second.
    pub ops_per_sec: f64,
    /// Microseconds per operation (per thread, as db_bench reports it).
    pub micros_per_op: f64,
    /// Latency percentiles over all operations.
    pub latency: Option<LatencySummary>,
    /// Per-operation-kind latencies (YCSB).
    #[serde(default)]
    pub by_op: BTreeMap<String, LatencySummary>,
    /// Lookups that found their key, when the phase does lookups.
    pub found: Option<u64>,
    /// Transaction attempts the engine refused (conflicts, deadlocks, lock timeouts), for the
    /// transaction benchmarks; each was retried until it committed.
    #[serde(default)]
    pub aborts: Option<u64>,
    /// Transactions committed, for the transaction benchmarks.
    #[serde(default)]
    pub transactions: Option<u64>,
    /// cairn's counters, when the engine is cairn.
    pub cairn: Option<CairnMetrics>,
    /// Filter false positives (unnecessary data-block reads) per lookup, for engines other
    /// than cairn that count them (cairn's are in `cairn`).
    #[serde(default)]
    pub false_positives_per_lookup: Option<f64>,
    /// The engine's compaction debt when the phase ended (engines that report it).
    #[serde(default)]
    pub debt_after: Option<crate::engine::Debt>,
    /// Blocks read from storage per lookup, by kind (engines that count them).
    #[serde(default)]
    pub block_reads_per_lookup: Option<ReadsPerLookup>,
    /// Per window of `--window` lookups: what the lookups cost (our flag; empty without it).
    #[serde(default)]
    pub windows: Vec<Window>,
    /// Bytes the process wrote to storage during the phase, any engine (`/proc/self/io`;
    /// WAL, flushes and compactions together).
    #[serde(default)]
    pub device_write_bytes: Option<u64>,
    /// CPU seconds the process used during the phase (all threads).
    #[serde(default)]
    pub cpu_secs: Option<f64>,
    /// Where the engine's read memory went when a lookup phase ended (engines that say).
    #[serde(default)]
    pub cache: Option<crate::engine::CacheAccounting>,
    /// What the phase's range reads did, per seek (phases of range reads, engines that count).
    #[serde(default)]
    pub scans: Option<PerSeek>,
}

/// A phase's range reads per seek (the engine's [`ScanCounters`](crate::engine::ScanCounters)
/// over the phase, divided by its seeks; what an engine does not count is 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PerSeek {
    /// Seeks in the phase.
    pub seeks: u64,
    /// Entries stepped over.
    pub entries: f64,
    /// Memtables, L0 runs and deeper levels merged.
    pub memtables: f64,
    /// L0 runs merged.
    pub l0_runs: f64,
    /// Levels below L0 merged.
    pub levels: f64,
    /// Tables reached.
    pub tables: f64,
    /// Data blocks read from storage.
    pub data_reads: f64,
    /// Data blocks served by the cache.
    pub data_hits: f64,
    /// Index blocks read from storage.
    pub index_reads: f64,
    /// Index blocks served by the cache.
    pub index_hits: f64,
    /// Readahead chunks.
    pub readahead_chunks: f64,
    /// Bytes read ahead.
    pub readahead_bytes: f64,
    /// Bytes read ahead and never served.
    pub readahead_wasted: f64,
}

impl PerSeek {
    /// The counts between `before` and `after`, per seek (`None` without seeks).
    pub fn between(before: crate::engine::ScanCounters, after: crate::engine::ScanCounters) -> Option<Self> {
        let d = after.since(before);
        if d.seeks == 0 {
            return None;
        }
        let per = |n: u64| n as f64 / d.seeks as f64;
        Some(PerSeek {
            seeks: d.seeks,
            entries: per(d.entries),
            memtables: per(d.memtables),
            l0_runs: per(d.l0_runs),
            levels: per(d.levels),
            tables: per(d.tables),
            data_reads: per(d.data_reads),
            data_hits: per(d.data_hits),
            index_reads: per(d.index_reads),
            index_hits: per(d.index_hits),
            readahead_chunks: per(d.readahead_chunks),
            readahead_bytes: per(d.readahead_bytes),
            readahead_wasted: per(d.readahead_wasted),
        })
    }

    /// One line for people.
    pub fn line(&self) -> String {
        format!(
            "per seek ({} seeks): {:.1} entries; runs {:.1} memtables, {:.1} L0, {:.1} levels; {:.2} tables; \
             data blocks {:.2} read + {:.2} cached, index {:.3} read + {:.2} cached; readahead {:.2} chunks, \
             {:.1} KiB, {:.1} KiB unused",
            self.seeks,
            self.entries,
            self.memtables,
            self.l0_runs,
            self.levels,
            self.tables,
            self.data_reads,
            self.data_hits,
            self.index_reads,
            self.index_hits,
            self.readahead_chunks,
            self.readahead_bytes / 1024.0,
            self.readahead_wasted / 1024.0
        )
    }
}

/// Blocks read from storage per lookup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadsPerLookup {
    /// Data blocks.
    pub data: f64,
    /// Filter blocks (cairn: units, elastic loads included).
    pub filter: f64,
    /// Index blocks.
    pub index: f64,
}

impl ReadsPerLookup {
    /// The difference `after − before` over `lookups` lookups.
    pub fn between(before: crate::engine::BlockReads, after: crate::engine::BlockReads, lookups: u64) -> Self {
        let d = after.since(before);
        let per = |n: u64| n as f64 / lookups.max(1) as f64;
        ReadsPerLookup {
            data: per(d.data),
            filter: per(d.filter),
            index: per(d.index),
        }
    }

    /// Every block read per lookup.
    pub fn total(&self) -> f64 {
        self.data + self.filter + self.index
    }
}

/// One window of lookups within a phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Lookups of the phase when the window ended.
    pub lookups: u64,
    /// Seconds since the phase started.
    pub secs: f64,
    /// Data blocks read for keys the table did not hold (filter false positives), in the
    /// window.
    pub unnecessary: Option<u64>,
    /// Blocks read from storage in the window.
    pub reads: Option<crate::engine::BlockReads>,
}

impl Phase {
    /// A phase from its counts; `threads` converts wall time into db_bench's per-thread µs/op.
    pub fn new(name: &str, ops: u64, secs: f64, threads: usize) -> Self {
        Phase {
            name: name.to_string(),
            ops,
            secs,
            ops_per_sec: ops as f64 / secs.max(1e-9),
            micros_per_op: secs * 1e6 * threads.max(1) as f64 / ops.max(1) as f64,
            ..Phase::default()
        }
    }

    /// db_bench's result line.
    pub fn print_db_bench(&self, bytes: u64, extra: &str) {
        let mbs = bytes as f64 / 1048576.0 / self.secs.max(1e-9);
        println!(
            "{:<12} : {:>11.3} micros/op {:.0} ops/sec {:.3} seconds {} operations; {mbs:>6.1} MB/s{extra}",
            self.name, self.micros_per_op, self.ops_per_sec, self.secs, self.ops
        );
    }
}

/// Everything one runner invocation measured; what `--json FILE` writes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunReport {
    /// db_bench | ycsb
    pub tool: String,
    /// Engine adapter name.
    pub engine: String,
    /// The command line.
    pub command: Vec<String>,
    /// Phases in order.
    pub phases: Vec<Phase>,
    /// Peak resident set size of the process.
    pub peak_rss_bytes: u64,
    /// Resident set size before the engine opened (the program and its libraries).
    #[serde(default)]
    pub start_rss_bytes: u64,
    /// Compaction debt sampled over the whole run.
    #[serde(default)]
    pub timeline: Vec<crate::timeline::Sample>,
    /// cairn's memory-tuner cycles over the run (`--memory_tuner=1`).
    #[serde(default)]
    pub tuner: Vec<TunerPoint>,
}

/// One memory-tuner cycle (cairn's `TunerRecord`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TunerPoint {
    /// Seconds since the database opened.
    pub t_secs: f64,
    /// Operations in the cycle.
    pub ops: u64,
    /// Weighted page I/O per operation in the cycle.
    pub cost: f64,
    /// write'(x), read'(x), cost'(x).
    pub write_derivative: f64,
    /// ...
    pub read_derivative: f64,
    /// ...
    pub cost_derivative: f64,
    /// Bytes moved into write memory.
    pub write_step: i64,
    /// Three-way: the filter coordinate's derivative and step.
    pub filter_derivative: f64,
    /// ...
    pub filter_step: i64,
    /// Why the step is what it is.
    pub rule: String,
    /// Region sizes after the step, bytes.
    pub write: u64,
    /// ...
    pub cache: u64,
    /// ...
    pub filter: u64,
    /// Four-way: the key-value cache's size after the step, and the step.
    #[serde(default)]
    pub kv: u64,
    /// ...
    #[serde(default)]
    pub kv_step: i64,
    /// ...
    #[serde(default)]
    pub kv_derivative: f64,
}

impl From<&cairn::TunerRecord> for TunerPoint {
    fn from(r: &cairn::TunerRecord) -> Self {
        TunerPoint {
            t_secs: r.at_ms as f64 / 1000.0,
            ops: r.ops,
            cost: r.cost,
            write_derivative: r.write_derivative,
            read_derivative: r.read_derivative,
            cost_derivative: r.cost_derivative,
            write_step: r.write_step,
            filter_derivative: r.filter_derivative,
            filter_step: r.filter_step,
            rule: r.rule.name().to_string(),
            write: r.write,
            cache: r.cache,
            filter: r.filter,
            kv: r.kv,
            kv_step: r.kv_step,
            kv_derivative: r.kv_derivative,
        }
    }
}

impl RunReport {
    /// Writes the report as pretty JSON.
    pub fn write(&self, path: &std::path::Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(path, text)
    }
}
