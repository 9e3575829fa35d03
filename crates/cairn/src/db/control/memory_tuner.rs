//! The memory tuner's state and cycle (Luo & Carey §5): one cycle's statistics, from the
//! counters at its start and end and the engine's shape, become the pure decider's
//! (`tuning/memory.rs`) input; its step becomes new region sizes and a record in the history.
//! The engine gathers the inputs and applies the sizes (`db/regions.rs`); nothing here
//! imports the rest of `db/`.

use crate::memory::MemoryLimits;
use crate::options::{MemoryComponent, Options};
use crate::stats::{BlockKind, IoSnapshot, KindSnapshot, TunerRecord};
use crate::tuning::memory::{Config, Cycle, Sizes, TreeCycle, Tuner};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// The page the tuner counts I/O in (the paper's P).
const PAGE: f64 = 4096.0;

/// Counters at the start (and end) of a cycle.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mark {
    pub at: Option<Instant>,
    pub wal_bytes: u64,
    pub user_writes: u64,
    pub ops: u64,
    pub io: IoSnapshot,
    pub compaction_io: IoSnapshot,
    pub flush_bytes: u64,
    pub compaction_written: u64,
    pub probes: u64,
    /// Data blocks point lookups read from storage.
    pub point_reads: u64,
    /// The key-value cache's misses that found a version in the tables (its fills, taken or
    /// refused) and its ghost's hits (0 without one).
    pub kv_found: u64,
    pub kv_ghost_hits: u64,
    /// Per tree: compaction bytes written, switched for memory, switched for log.
    pub trees: Vec<(u64, u64, u64)>,
}

/// The engine's shape at the end of a cycle.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shape {
    /// Bytes in each tree's memtables.
    pub mems: Vec<f64>,
    /// Bytes in each tree's deepest non-empty level.
    pub last_levels: Vec<f64>,
    /// Filter bytes of the tables (cached beside the data unless elastic).
    pub filter_bytes: f64,
    /// Cache bytes reserved for what table readers pin (index blocks and properties, or with
    /// `index_in_block_cache` fences and properties).
    pub cache_reserved: f64,
    /// Index blocks cached beside the data (`index_in_block_cache`; 0 when they are pinned
    /// and their bytes are in `cache_reserved`).
    pub cached_index: f64,
    /// The ghost cache's capacity (0 without one).
    pub sim_bytes: f64,
    /// ElasticBF's marginals after its last round: (gain of one more byte, loss of the last).
    pub elastic_marginals: (f64, f64),
    /// The key-value cache's ghost's capacity (0: no key-value cache priced).
    pub kv_sim_bytes: f64,
}

/// The tuner's state (present only with `memory.tuner`).
#[derive(Debug)]
pub(crate) struct MemoryTuner {
    /// The tuner's options, its floor resolved.
    params: crate::options::Tuner,
    state: Mutex<(Tuner, Mark, Vec<TunerRecord>)>,
    opened: Instant,
    /// The last cycle's read' as `f64` bits (`u64::MAX`: none yet).
    read_derivative: AtomicU64,
}

impl MemoryTuner {
    pub(crate) fn new(params: &crate::options::Tuner) -> Self {
        let config = Config {
            floor: params.floor as u64,
            write_weight: params.write_weight,
            ..Config::default()
        };
        MemoryTuner {
            params: params.clone(),
            state: Mutex::new((Tuner::new(config), Mark::default(), Vec::new())),
            opened: Instant::now(),
            read_derivative: AtomicU64::new(u64::MAX),
        }
    }

    /// Time between timer cycles (`memory.tuner_period_ms`).
    pub(crate) fn period(&self) -> Duration {
        Duration::from_millis(self.params.period_ms)
    }

    /// The block cache's marginal of the last cycle (`TunerRecord::read_derivative`), read
    /// without the tuner's lock: a cycle's step resizes the cache, whose round asks for it.
    pub(crate) fn cache_marginal(&self) -> Option<f64> {
        match self.read_derivative.load(Relaxed) {
            u64::MAX => None,
            bits => Some(f64::from_bits(bits)),
        }
    }

    pub(crate) fn history(&self) -> Vec<TunerRecord> {
        self.state.lock().2.clone()
    }

    /// Whether a cycle is due: `max_wal` bytes of log since its start, or its period.
    pub(crate) fn due(&self, wal_bytes: u64, max_wal: u64) -> bool {
        let period = self.period();
        let state = self.state.lock();
        let Some(at) = state.1.at else {
            return true;
        };
        wal_bytes.saturating_sub(state.1.wal_bytes) >= max_wal || at.elapsed() >= period
    }

    /// Ends the cycle at `now`: the decider's step from the region sizes `sizes` is handed to
    /// `apply` (under the tuner's lock, so steps apply in order) and recorded. `None` at the
    /// first call (which only starts the first cycle), or when no operation ran.
    pub(crate) fn cycle(
        &self,
        opts: &Options,
        now: Mark,
        shape: impl FnOnce() -> Shape,
        sizes: Sizes,
        apply: impl FnOnce(MemoryLimits),
    ) -> Option<TunerRecord> {
        let mut state = self.state.lock();
        let (t, last, history) = &mut *state;
        if last.at.is_none() {
            *last = now;
            return None;
        }
        let ops = now.ops.saturating_sub(last.ops);
        if ops == 0 {
            // Nothing ran: restart the cycle, so that background work done meanwhile (a
            // compaction catching up after an open) is not charged to the next cycle's
            // operations.
            *last = now;
            return None;
        }
        let cycle = cycle(opts, &self.params, last, &now, &shape(), ops as f64);
        let step = t.step(sizes, &cycle);
        let next = step.sizes;
        self.read_derivative.store(step.read_derivative.to_bits(), Relaxed);
        apply(MemoryLimits {
            write_memory_budget: Some(next.write as usize),
            write_buffer_size: Some(
                match opts.memtable.component {
                    MemoryComponent::Monolithic => next.write as usize / 2,
                    MemoryComponent::Partitioned => next.write as usize / 16,
                }
                .max(1),
            ),
            block_cache: Some(next.cache as usize),
            filter_memory: (sizes.filter > 0 || next.filter > 0).then_some(next.filter as usize),
            kv_cache: step.kv.map(|_| next.kv as usize),
        });
        let record = TunerRecord {
            at_ms: self.opened.elapsed().as_millis() as u64,
            ops,
            cost: cycle.cost,
            write_derivative: step.write_derivative,
            read_derivative: step.read_derivative,
            cost_derivative: step.write.derivative,
            write_step: step.write.step,
            filter_derivative: step.filter.map_or(0.0, |f| f.derivative),
            filter_step: step.filter.map_or(0, |f| f.step),
            kv_derivative: step.kv.map_or(0.0, |k| k.derivative),
            kv_step: step.kv.map_or(0, |k| k.step),
            kv: next.kv,
            rule: step.write.rule,
            write: next.write,
            cache: next.cache,
            filter: next.filter,
        };
        history.push(record);
        *last = now;
        Some(record)
    }
}

/// The decider's view of the interval between two marks.
fn cycle(opts: &Options, params: &crate::options::Tuner, a: &Mark, b: &Mark, shape: &Shape, ops: f64) -> Cycle {
    let w = params.write_weight;
    let kinds =
        |s: &IoSnapshot, f: fn(&KindSnapshot) -> u64| -> u64 { BlockKind::ALL.iter().map(|&k| f(&s.kind(k))).sum() };
    let reads = |s: &IoSnapshot| kinds(s, |k| k.reads);
    let ghost = |s: &IoSnapshot| kinds(s, |k| k.ghost_hits);
    let user_reads = reads(&b.io) - reads(&a.io);
    let merge_reads = reads(&b.compaction_io) - reads(&a.compaction_io);
    let written = (b.flush_bytes - a.flush_bytes + b.compaction_written - a.compaction_written) as f64 / PAGE;
    let elastic = opts.filters.policy.kind().is_elastic();
    // Filter units of the other policies are cached beside the data (elastic units have
    // their own region), as are index blocks charged to the cache; both stay resident only
    // within the high-priority share.
    let cached_filters = if elastic { 0.0 } else { shape.filter_bytes };
    let total_mem: f64 = shape.mems.iter().sum();
    let trees = b
        .trees
        .iter()
        .enumerate()
        .map(|(i, &(comp, mem, log))| {
            let (c0, m0, l0) = a.trees.get(i).copied().unwrap_or_default();
            TreeCycle {
                merge: (comp - c0) as f64 / PAGE / ops,
                last_level_bytes: shape.last_levels.get(i).copied().unwrap_or(0.0),
                memory_share: if total_mem > 0.0 {
                    shape.mems.get(i).copied().unwrap_or(0.0) / total_mem
                } else {
                    1.0 / b.trees.len().max(1) as f64
                },
                flushed_for_memory: (mem - m0) as f64,
                flushed_for_log: (log - l0) as f64,
            }
        })
        .collect();
    let (gain, loss) = if elastic && params.filters {
        let (g, l) = shape.elastic_marginals;
        let probes = (b.probes - a.probes) as f64 / ops;
        (Some(g * probes), Some(l * probes))
    } else {
        (None, None)
    };
    Cycle {
        trees,
        saved_query: (ghost(&b.io) - ghost(&a.io)) as f64 / ops,
        saved_merge: (ghost(&b.compaction_io) - ghost(&a.compaction_io)) as f64 / ops,
        sim_bytes: shape.sim_bytes,
        merge_reads: merge_reads as f64 / ops,
        cost: (w * written + (user_reads + merge_reads) as f64) / ops,
        filter_benefit: gain,
        filter_loss: loss,
        meta_bytes: (shape.cache_reserved
            + (cached_filters + shape.cached_index) / high_share(opts.cache.high_pri_pool_ratio))
            as u64,
        writes_idle: b.user_writes == a.user_writes,
        kv_benefit: (params.kv_cache && shape.kv_sim_bytes > 0.0).then(|| {
            // A hit of a larger key-value cache saves what a lookup past it reads from storage:
            // the reads of misses that found a version (a ghost hit is a key once filled; keys
            // no table holds cost the filters' false positives only, and are not cached).
            let found = b.kv_found.saturating_sub(a.kv_found);
            let per_miss = if found > 0 {
                b.point_reads.saturating_sub(a.point_reads) as f64 / found as f64
            } else {
                0.0
            };
            b.kv_ghost_hits.saturating_sub(a.kv_ghost_hits) as f64 / ops * per_miss / shape.kv_sim_bytes
        }),
    }
}

/// The share of the cache filter units may hold at high priority (all of it when none is
/// reserved for them: they then compete with data blocks on equal terms).
fn high_share(ratio: f64) -> f64 {
    if ratio > 0.0 {
        ratio
    } else {
        1.0
    }
}
