//! Memory at run time: resizing the regions (write memory, block cache, filter memory) and the
//! memory tuner's cycle (Luo & Carey §5), which gathers one cycle's statistics, asks the pure
//! decider (`tuning/memory.rs`) for the next sizes, applies them and keeps the history.
//!
//! A cycle is due every `max_wal_size` bytes of log, or every `memory_tuner_period_ms` when
//! less was written (read-mostly load); the tuner thread checks a few times a second.

use super::inner::DbInner;
use crate::error::{Error, Result};
use crate::memory::MemoryLimits;
use crate::stats::{BlockKind, IoSnapshot, TunerRecord};
use crate::tuning::memory::{Config, Cycle, Sizes, TreeCycle, Tuner};
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The page the tuner counts I/O in (the paper's P).
const PAGE: f64 = 4096.0;

/// Counters at the start of a cycle.
#[derive(Debug, Clone, Default)]
struct Mark {
    at: Option<Instant>,
    wal_bytes: u64,
    user_writes: u64,
    ops: u64,
    io: IoSnapshot,
    compaction_io: IoSnapshot,
    flush_bytes: u64,
    compaction_written: u64,
    probes: u64,
    /// Per tree: compaction bytes written, switched for memory, switched for log.
    trees: Vec<(u64, u64, u64)>,
}

/// The tuner's state (present only with `memory_tuner`).
#[derive(Debug)]
pub(crate) struct MemoryTuner {
    state: Mutex<(Tuner, Mark, Vec<TunerRecord>)>,
    opened: Instant,
}

impl MemoryTuner {
    pub(crate) fn new(floor: usize, write_weight: f64) -> Self {
        let config = Config {
            floor: floor as u64,
            write_weight,
            ..Config::default()
        };
        MemoryTuner {
            state: Mutex::new((Tuner::new(config), Mark::default(), Vec::new())),
            opened: Instant::now(),
        }
    }

    pub(crate) fn history(&self) -> Vec<TunerRecord> {
        self.state.lock().2.clone()
    }
}

impl DbInner {
    /// Moves memory between regions (`Db::resize_memory`): a memtable larger than the new
    /// memtable size is switched (and flushed) at once, the write budget applies from the next
    /// write group, a smaller cache evicts at once, less filter memory unloads units at once.
    pub(crate) fn resize_memory(self: &Arc<Self>, limits: MemoryLimits) -> Result<()> {
        let m = &self.memory;
        let budget = limits.write_memory_budget.unwrap_or_else(|| m.write_budget());
        let buffer = limits.write_buffer_size.unwrap_or_else(|| m.write_buffer_size());
        if budget == 0 || buffer == 0 || buffer > budget {
            return Err(Error::InvalidArgument(format!(
                "write_buffer_size {buffer} must be between 1 and write_memory_budget {budget}"
            )));
        }
        m.write.set_capacity(budget);
        m.write_buffer_size.store(buffer, Ordering::Relaxed);
        // Without writes to come (the tuner's idle rule hands write memory to the cache), a
        // memtable above the new size would keep memory the cache has just been given.
        let over = |st: &super::inner::State| -> Vec<usize> {
            (0..st.mems.len())
                .filter(|&t| !st.mems[t].is_partitioned() && st.mems[t].active_bytes() > buffer)
                .collect()
        };
        // The WAL lock (which writers wait on) only when a memtable is over; checked again under
        // it, since a write group may have switched meanwhile.
        if !self.read_only && !over(&self.state.lock()).is_empty() {
            let mut wal = self.wal.lock();
            let mut st = self.state.lock();
            let trees = over(&st);
            if !trees.is_empty() {
                super::write::switch_memtables(self, &mut wal, &mut st, &trees)?;
            }
        }
        let mut shrank = false;
        if let Some(c) = limits.block_cache {
            shrank |= c < self.cache.capacity();
            self.cache.set_capacity(c);
        }
        if let Some(f) = limits.filter_memory {
            shrank |= (f as u64) < self.elastic.explicit_budget.load(Ordering::Relaxed);
            self.elastic.explicit_budget.store(f as u64, Ordering::Relaxed);
            self.adjust_filters();
        }
        // What the cache or the filters gave up is small blocks in malloc's heaps, which the
        // region that grows (memtable arenas, mmapped) cannot reuse: give it back.
        if shrank {
            crate::memory::trim_malloc(self.opts.malloc_mmap_threshold);
        }
        self.bg_cv.notify_all();
        Ok(())
    }

    fn current_sizes(&self) -> Sizes {
        Sizes {
            write: self.memory.write_budget() as u64,
            cache: self.cache.capacity() as u64,
            filter: if self.opts.bpk_policy.is_elastic() {
                self.elastic.explicit_budget.load(Ordering::Relaxed)
            } else {
                0
            },
        }
    }

    fn mark(&self) -> Mark {
        let trees: Vec<_> = self.counters.trees().iter().map(|t| t.snapshot("")).collect();
        let w = self.counters.writes();
        let written =
            |t: &crate::stats::TreeStatsSnapshot| t.levels.iter().map(|l| l.compaction_bytes_written).sum::<u64>();
        Mark {
            at: Some(Instant::now()),
            wal_bytes: w.wal_bytes,
            user_writes: w.user_ops,
            ops: w.user_ops + trees.iter().map(|t| t.gets + t.ranges).sum::<u64>(),
            io: self.io.snapshot(),
            compaction_io: self.compaction_io.snapshot(),
            flush_bytes: trees.iter().map(|t| t.flush_bytes).sum(),
            compaction_written: trees.iter().map(written).sum(),
            probes: trees.iter().flat_map(|t| t.levels.iter().map(|l| l.probes)).sum(),
            trees: trees
                .iter()
                .map(|t| (written(t), t.switched_for_memory, t.switched_for_log))
                .collect(),
        }
    }

    /// Whether a tuning cycle is due: `max_wal_size` of log, or the timer.
    pub(crate) fn tuning_due(&self) -> bool {
        let Some(t) = &self.tuner else {
            return false;
        };
        let state = t.state.lock();
        let mark = &state.1;
        let Some(at) = mark.at else {
            return true;
        };
        let wal = self.counters.writes().wal_bytes;
        wal.saturating_sub(mark.wal_bytes) >= self.max_wal_size()
            || at.elapsed() >= Duration::from_millis(self.opts.memory_tuner_period_ms)
    }

    /// One tuning cycle now: the statistics since the last one, the decider's step, the new
    /// sizes applied. `None` without a tuner, or at the first call (which only starts the
    /// first cycle), or when no operation ran.
    pub(crate) fn tune_memory(self: &Arc<Self>) -> Option<TunerRecord> {
        let tuner = self.tuner.as_ref()?;
        let now = self.mark();
        let mut state = tuner.state.lock();
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
        let cycle = self.cycle(last, &now, ops as f64);
        let sizes = self.current_sizes();
        let step = t.step(sizes, &cycle);
        let next = step.sizes;
        let limits = MemoryLimits {
            write_memory_budget: Some(next.write as usize),
            write_buffer_size: Some(
                match self.opts.memory_component {
                    crate::options::MemoryComponent::Monolithic => next.write as usize / 2,
                    crate::options::MemoryComponent::Partitioned => next.write as usize / 16,
                }
                .max(1),
            ),
            block_cache: Some(next.cache as usize),
            filter_memory: (sizes.filter > 0 || next.filter > 0).then_some(next.filter as usize),
        };
        if let Err(e) = self.resize_memory(limits) {
            tracing::warn!(error = %e, "memory tuner step not applied");
        }
        let record = TunerRecord {
            at_ms: tuner.opened.elapsed().as_millis() as u64,
            ops,
            cost: cycle.cost,
            write_derivative: step.write_derivative,
            read_derivative: step.read_derivative,
            cost_derivative: step.write.derivative,
            write_step: step.write.step,
            filter_derivative: step.filter.map_or(0.0, |f| f.derivative),
            filter_step: step.filter.map_or(0, |f| f.step),
            rule: step.write.rule,
            write: next.write,
            cache: next.cache,
            filter: next.filter,
        };
        history.push(record);
        *last = now;
        Some(record)
    }

    /// The decider's view of the interval between two marks.
    fn cycle(&self, a: &Mark, b: &Mark, ops: f64) -> Cycle {
        let w = self.opts.memory_tuner_write_weight;
        let kinds = |s: &IoSnapshot, f: fn(&crate::stats::KindSnapshot) -> u64| -> u64 {
            BlockKind::ALL.iter().map(|&k| f(&s.kind(k))).sum()
        };
        let reads = |s: &IoSnapshot| kinds(s, |k| k.reads);
        let ghost = |s: &IoSnapshot| kinds(s, |k| k.ghost_hits);
        let user_reads = reads(&b.io) - reads(&a.io);
        let merge_reads = reads(&b.compaction_io) - reads(&a.compaction_io);
        let written = (b.flush_bytes - a.flush_bytes + b.compaction_written - a.compaction_written) as f64 / PAGE;
        // The state lock (which writers take to switch memtables) only for what it guards.
        let (mems, version) = {
            let st = self.state.lock();
            let mems: Vec<f64> = st.mems.iter().map(|m| m.bytes() as f64).collect();
            (mems, st.version().clone())
        };
        let levels: Vec<f64> = version
            .trees
            .iter()
            .map(|t| t.level_bytes(t.deepest_nonempty()) as f64)
            .collect();
        // Filter units of the other policies are cached beside the data (elastic units have
        // their own region).
        let filter_bytes: f64 = if self.opts.bpk_policy.is_elastic() {
            0.0
        } else {
            version
                .trees
                .iter()
                .flat_map(|t| t.levels.iter().flatten())
                .map(|f| f.entries as f64 * f.filter_bpk / 8.0)
                .sum()
        };
        let total_mem: f64 = mems.iter().sum();
        let trees = b
            .trees
            .iter()
            .enumerate()
            .map(|(i, &(comp, mem, log))| {
                let (c0, m0, l0) = a.trees.get(i).copied().unwrap_or_default();
                TreeCycle {
                    merge: (comp - c0) as f64 / PAGE / ops,
                    last_level_bytes: levels.get(i).copied().unwrap_or(0.0),
                    memory_share: if total_mem > 0.0 {
                        mems.get(i).copied().unwrap_or(0.0) / total_mem
                    } else {
                        1.0 / b.trees.len().max(1) as f64
                    },
                    flushed_for_memory: (mem - m0) as f64,
                    flushed_for_log: (log - l0) as f64,
                }
            })
            .collect();
        let (gain, loss) = if self.opts.bpk_policy.is_elastic() && self.opts.memory_tuner_filters {
            let (g, l) = *self.elastic.marginals.lock();
            let probes = (b.probes - a.probes) as f64 / ops;
            (Some(g * probes), Some(l * probes))
        } else {
            (None, None)
        };
        Cycle {
            trees,
            saved_query: (ghost(&b.io) - ghost(&a.io)) as f64 / ops,
            saved_merge: (ghost(&b.compaction_io) - ghost(&a.compaction_io)) as f64 / ops,
            sim_bytes: self.ghost.as_ref().map_or(0.0, |(g, _)| g.capacity() as f64),
            merge_reads: merge_reads as f64 / ops,
            cost: (w * written + (user_reads + merge_reads) as f64) / ops,
            filter_benefit: gain,
            filter_loss: loss,
            // Cached filter units stay resident only within the high-priority share.
            meta_bytes: self.cache.reserved() as u64
                + (filter_bytes / high_share(self.opts.high_pri_pool_ratio)) as u64,
            writes_idle: b.user_writes == a.user_writes,
        }
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

/// The tuner thread: checks a few times a second whether a cycle is due.
pub(super) fn tuner_loop(inner: Arc<DbInner>) {
    crate::stats::stripe::Stripe::background();
    let tick = Duration::from_millis(inner.opts.memory_tuner_period_ms.clamp(1, 250));
    loop {
        {
            let mut st = inner.state.lock();
            if inner.shutdown.load(Ordering::Acquire) {
                return;
            }
            inner.bg_cv.wait_for(&mut st, tick);
            if inner.shutdown.load(Ordering::Acquire) {
                return;
            }
        }
        if inner.tuning_due() && !inner.poisoned.load(Ordering::Acquire) {
            inner.tune_memory();
        }
    }
}
