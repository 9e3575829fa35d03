//! Memory at run time: resizing the regions (write memory, block cache, filter memory), and
//! running the memory tuner's cycles (`control/memory_tuner.rs`) on the engine's counters and shape.
//!
//! A cycle is due every `max_wal_size` bytes of log, or every `memory_tuner_period_ms` when
//! less was written (read-mostly load); the tuner thread (`background.rs`) checks a few times a
//! second.

use super::control::memory_tuner::{Mark, Shape};
use super::inner::{DbInner, State};
use crate::error::{Error, Result};
use crate::memory::MemoryLimits;
use crate::stats::{TreeStatsSnapshot, TunerRecord};
use crate::tuning::memory::Sizes;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

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
        if let (Some(c), None) = (limits.kv_cache.filter(|&c| c > 0), &self.kv) {
            return Err(Error::InvalidArgument(format!(
                "kv_cache {c}: this database was opened without a key-value cache (memory.kv_cache = 0, or \
                 memory.kv_cache_share = 0 under a budget)"
            )));
        }
        m.write.set_capacity(budget);
        m.write_buffer_size.store(buffer, Ordering::Relaxed);
        // Without writes to come (the tuner's idle rule hands write memory to the cache), a
        // memtable above the new size would keep memory the cache has just been given.
        let over = |st: &State| -> Vec<usize> {
            (0..st.mems.len())
                .filter(|&t| !st.mems[t].is_partitioned() && st.mems[t].active_bytes() > buffer)
                .collect()
        };
        // The WAL lock (which writers wait on) only when a memtable is over; checked again under
        // it, since a write group may have switched meanwhile.
        if !self.life.is_read_only() && !over(&self.state.lock()).is_empty() {
            let mut wal = self.wal.lock();
            let mut st = self.state.lock();
            let trees = over(&st);
            if !trees.is_empty() {
                super::write::switch_memtables(self, &mut wal, &mut st, &trees)?;
            }
        }
        let mut shrank = false;
        if let (Some(c), Some(kv)) = (limits.kv_cache, &self.kv) {
            shrank |= c < kv.capacity();
            kv.set_capacity(c);
        }
        if let Some(c) = limits.block_cache {
            shrank |= c < self.cache.capacity();
            self.cache.set_capacity(c);
            // Range filters follow the cache: a smaller share unloads the least worth at once
            // (what it admits to build, the next timed round builds).
            self.keep_range_filters();
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

    /// Whether a tuning cycle is due.
    pub(crate) fn tuning_due(&self) -> bool {
        self.tuner
            .as_ref()
            .is_some_and(|t| t.due(self.counters.writes().wal_bytes, self.max_wal_size()))
    }

    /// One tuning cycle now: the statistics since the last one, the decider's step, the new
    /// sizes applied. `None` without a tuner, or at the first call (which only starts the
    /// first cycle), or when no operation ran.
    pub(crate) fn tune_memory(self: &Arc<Self>) -> Option<TunerRecord> {
        let sizes = Sizes {
            write: self.memory.write_budget() as u64,
            cache: self.cache.capacity() as u64,
            filter: if self.opts.filters.policy.kind().is_elastic() {
                self.elastic.explicit_budget.load(Ordering::Relaxed)
            } else {
                0
            },
            kv: self.kv.as_ref().map_or(0, |kv| kv.capacity() as u64),
        };
        self.tuner.as_ref()?.cycle(
            &self.opts,
            self.mark(),
            || self.shape(),
            sizes,
            |limits| {
                if let Err(e) = self.resize_memory(limits) {
                    tracing::warn!(error = %e, "memory tuner step not applied");
                }
            },
        )
    }

    fn mark(&self) -> Mark {
        let trees: Vec<_> = self.counters.trees().iter().map(|t| t.snapshot("")).collect();
        let kv = self.kv.as_ref().map(|kv| kv.counters()).unwrap_or_default();
        let w = self.counters.writes();
        let written = |t: &TreeStatsSnapshot| t.levels.iter().map(|l| l.compaction_bytes_written).sum::<u64>();
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
            point_reads: trees.iter().flat_map(|t| t.levels.iter().map(|l| l.data_reads)).sum(),
            kv_found: kv.fills + kv.refused,
            kv_ghost_hits: kv.ghost_hits,
            trees: trees
                .iter()
                .map(|t| (written(t), t.switched_for_memory, t.switched_for_log))
                .collect(),
        }
    }

    fn shape(&self) -> Shape {
        // The state lock (which writers take to switch memtables) only for what it guards.
        let (mems, version) = {
            let st = self.state.lock();
            let mems: Vec<f64> = st.mems.iter().map(|m| m.bytes() as f64).collect();
            (mems, st.version().clone())
        };
        Shape {
            mems,
            last_levels: version
                .trees
                .iter()
                .map(|t| t.level_bytes(t.deepest_nonempty()) as f64)
                .collect(),
            filter_bytes: version
                .trees
                .iter()
                .flat_map(|t| t.levels.iter().flatten())
                .map(|f| f.entries as f64 * f.filter_bpk / 8.0)
                .sum(),
            cache_reserved: self.cache.reserved() as f64,
            cached_index: if self.regions.index_in_block_cache {
                self.memory.table_index.usage() as f64
            } else {
                0.0
            },
            sim_bytes: self.ghost.as_ref().map_or(0.0, |(g, _)| g.capacity() as f64),
            elastic_marginals: *self.elastic.marginals.lock(),
            kv_sim_bytes: self.kv.as_ref().map_or(0.0, |kv| kv.ghost_capacity() as f64),
        }
    }
}
