//! What `Db::stats`, `Db::levels`, `Db::memory` and the `cairn.stats` property report,
//! assembled from the counters in `stats/` and the current version.

use super::inner::DbInner;
use crate::memory::MemoryUsage;
use crate::stats::{
    report, BlockKind, DbStats, ElasticStats, FileAccessStats, KvCacheStats, LevelInfo, TreeLevels, TreeStatsSnapshot,
};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

pub(super) fn snapshot(inner: &Arc<DbInner>) -> DbStats {
    let (names, version, memtable_bytes) = {
        let st = inner.state.lock();
        (
            st.versions.tree_names().to_vec(),
            st.version().clone(),
            st.mems.iter().map(|m| m.bytes() as u64).sum(),
        )
    };
    let trees: Vec<TreeStatsSnapshot> = inner
        .counters
        .trees()
        .iter()
        .enumerate()
        .map(|(i, t)| t.snapshot(names.get(i).map_or("", |n| n.as_str())))
        .collect();
    let files = inner
        .files
        .snapshot(&version, None)
        .files
        .into_iter()
        .map(|s| {
            let meta = version
                .trees
                .get(s.tree as usize)
                .and_then(|t| t.level(s.level).iter().find(|f| f.number == s.number.0));
            FileAccessStats {
                tree: s.tree,
                level: s.level,
                file: s.number.0,
                entries: s.entries,
                filter_bpk: meta.map_or(0.0, |f| f.filter_bpk),
                filter_policy: meta.map(|f| f.filter_policy.clone()).unwrap_or_default(),
                probes: s.probes,
                filter_negatives: s.filter_negatives,
                found: s.found,
                data_reads: s.data_reads,
                range_probes: s.range_probes,
                range_empty: s.range_empty,
                loaded_units: s.loaded_units,
                estimated_lookups: s.estimate.q,
                estimated_hits: s.estimate.x,
                estimated_empty: s.estimate.z(),
                exact_lookups: s.exact.q,
                exact_hits: s.exact.x,
                exact_empty: s.exact.z(),
            }
        })
        .collect();
    let flush_bytes_written = trees.iter().map(|t| t.flush_bytes).sum();
    let compaction_bytes_written = trees
        .iter()
        .flat_map(|t| &t.levels)
        .map(|l| l.compaction_bytes_written)
        .sum();
    let w = inner.counters.writes();
    DbStats {
        io: inner.io.snapshot(),
        compaction_io: inner.compaction_io.snapshot(),
        trees,
        files,
        user_write_ops: w.user_ops,
        user_bytes_written: w.user_bytes,
        wal_bytes_written: w.wal_bytes,
        flush_bytes_written,
        compaction_bytes_written,
        stall_slowdowns: w.slowdowns,
        stall_stops: w.stops,
        stall_micros: w.stall_micros,
        delay_micros: w.delay_micros,
        delayed_write_rate: w.delayed_write_rate,
        pending_compaction_bytes: version
            .trees
            .iter()
            .map(|t| crate::compaction::pending_bytes(&*inner.policy, t.deepest, t.levels.len(), |l| t.level_bytes(l)))
            .sum(),
        l0_files: version.trees.iter().map(|t| t.level(0).len() as u64).max().unwrap_or(0),
        l0_groups: version.trees.iter().map(|t| t.l0_groups() as u64).max().unwrap_or(0),
        memtable_bytes,
        cache_usage: inner.cache.usage() as u64,
        cache_capacity: inner.cache.capacity() as u64,
        elastic: elastic(inner),
        kv_cache: inner.kv.as_ref().map_or_else(Default::default, |kv| {
            let c = kv.counters();
            KvCacheStats {
                capacity: kv.capacity() as u64,
                usage: kv.usage() as u64,
                entries: kv.len() as u64,
                hits: c.hits,
                negative_hits: c.negative_hits,
                misses: c.misses,
                fills: c.fills,
                refused: c.refused,
            }
        }),
        range_builds: inner.range_memory.builds(inner.opts.range_filter.bits_per_key),
        transactions: inner.txns.stats(),
    }
}

fn elastic(inner: &DbInner) -> ElasticStats {
    if !inner.opts.filters.policy.kind().is_elastic() {
        return ElasticStats::default();
    }
    let c = &inner.elastic.counters;
    ElasticStats {
        // The adjuster sets the region's capacity at its first round; until then, the user's.
        budget: match inner.elastic.explicit_budget.load(std::sync::atomic::Ordering::Relaxed) {
            0 => inner.memory.pinned_filters.capacity() as u64,
            b => b,
        },
        usage: inner.memory.pinned_filters.usage() as u64,
        loads: c.loads.load(Relaxed),
        unloads: c.unloads.load(Relaxed),
        load_errors: c.load_errors.load(Relaxed),
        rounds: c.rounds.load(Relaxed),
        solves: c.solves.load(Relaxed),
        loaded_per_level: loaded_units_per_level(inner),
    }
}

/// Loaded elastic units per level of every tree.
fn loaded_units_per_level(inner: &DbInner) -> Vec<u64> {
    let mut per_level = Vec::new();
    for sv in inner.super_versions().iter() {
        for (level, states) in sv.files.iter().enumerate() {
            if per_level.len() <= level {
                per_level.resize(level + 1, 0);
            }
            per_level[level] += states.iter().map(|st| st.elastic().total_loaded()).sum::<u64>();
        }
    }
    per_level
}

/// Capacity and usage of every memory region.
pub(super) fn memory(inner: &DbInner) -> MemoryUsage {
    let write_usage = inner.state.lock().mems.iter().map(|m| m.bytes()).sum();
    MemoryUsage {
        write_capacity: inner.memory.write_budget(),
        write_usage,
        write_buffer_size: inner.memory.write_buffer_size(),
        cache_capacity: inner.cache.capacity(),
        cache_usage: inner.cache.usage(),
        cache_data_usage: inner.cache.usage_of(BlockKind::Data),
        cache_index_usage: inner.cache.usage_of(BlockKind::Index),
        cache_reserved: inner.cache.reserved(),
        cache_huge_pages: inner.cache.huge_page_bytes(),
        cache_huge_page_slack: inner.cache.huge_page_slack(),
        table_index_bytes: inner.memory.table_index.usage(),
        filter_capacity: if inner.opts.filters.policy.kind().is_elastic() {
            inner.memory.pinned_filters.capacity()
        } else {
            0
        },
        filter_usage: inner.cache.usage_of(BlockKind::FilterUnit) + inner.memory.pinned_filters.usage(),
        pinned_meta_usage: inner.memory.pinned_meta.usage(),
        pinned_filter_usage: inner.memory.pinned_filters.usage(),
        range_filter_capacity: inner.memory.range_filters.capacity(),
        range_filter_usage: inner.memory.range_filters.usage(),
        ghost_capacity: inner.ghost.as_ref().map_or(0, |(g, _)| g.capacity()),
        ghost_ids: inner.ghost.as_ref().map_or(0, |(g, _)| g.usage().0),
        kv_cache_capacity: inner.kv.as_ref().map_or(0, |kv| kv.capacity()),
        kv_cache_usage: inner.kv.as_ref().map_or(0, |kv| kv.usage()),
    }
}

pub(super) fn levels(inner: &Arc<DbInner>) -> Vec<TreeLevels> {
    let st = inner.state.lock();
    st.version()
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
                    range_deletions: fs.iter().map(|f| f.range_deletions).sum(),
                })
                .collect();
            while levels.last().is_some_and(|l| l.files == 0) {
                levels.pop();
            }
            TreeLevels {
                name: st.versions.tree_names().get(i).cloned().unwrap_or_default(),
                levels,
                deepest: t.deepest,
            }
        })
        // Dropped trees (no name) hold nothing.
        .filter(|t| !t.name.is_empty())
        .collect()
}

/// The `cairn.stats` property.
pub(super) fn text(inner: &Arc<DbInner>) -> String {
    let header = format!(
        "merge policy {}, filter allocation {}",
        inner.policy.name(),
        inner.bpk.name()
    );
    report::stats_text(&header, &snapshot(inner), &levels(inner), &memory(inner))
}

/// The `cairn.filters` property: the allocation policy, Merlin's accuracy, and per live file its
/// filter, its probes, and the estimated and exact lookups and empty lookups; then the range
/// filters.
pub(super) fn filters_text(inner: &Arc<DbInner>) -> String {
    let s = snapshot(inner);
    let plan = inner.filter_plan.load();
    let rows: Vec<report::FilterRow<'_>> = s
        .files
        .iter()
        .map(|f| report::FilterRow {
            file: f,
            probed: match plan.units_for(f.file) {
                _ if inner.opts.filters.policy.kind().is_elastic() => format!("{} units", f.loaded_units),
                crate::tuning::UnitChoice::Skip => "skip".into(),
                _ => "yes".into(),
            },
        })
        .collect();
    let header = format!(
        "policy {} at {} bits per key on average",
        inner.bpk.name(),
        inner.opts.filters.bits_per_key
    );
    let range_header = if inner.opts.range_filter.bits_per_key > 0.0 {
        format!(
            "{} at {} bits per key on average{}, key offset {}",
            inner.opts.range_filter.kind.name(),
            inner.opts.range_filter.bits_per_key,
            if inner.opts.range_filter.by_workload {
                " by workload"
            } else {
                ""
            },
            inner.opts.range_filter.key_offset
        )
    } else {
        "off".into()
    };
    report::filters_text(
        &header,
        inner.files.stats().lookups(),
        s.merlin_accuracy(),
        &rows,
        &range_header,
        &range_trees(inner, &s),
    )
}

/// Per tree the sampled range sizes the layouts are decided from, the probes per height, and
/// per file its range reads, empty ones, and filter levels (height: bits per prefix).
fn range_trees(inner: &Arc<DbInner>, stats: &DbStats) -> Vec<report::RangeTree> {
    let version = inner.state.lock().version().clone();
    let mut out = Vec::new();
    for (t, tv) in version.trees.iter().enumerate() {
        let counters = inner.counters.tree(t);
        let mut files = Vec::new();
        for (level, fs) in tv.levels.iter().enumerate() {
            for f in fs {
                let reader = inner.open_table(f);
                // A filter not pinned is read for the report and not kept.
                let levels = match reader.as_ref().map_err(crate::Error::clone).and_then(|r| {
                    match r.with_range_filter(false, |rf| rf.describe())? {
                        Some(d) => Ok(Some(d)),
                        None => Ok(r
                            .read_range_filter()?
                            .map(|rf| format!("{} (not in memory)", rf.describe()))),
                    }
                }) {
                    Ok(Some(d)) => d,
                    Ok(None) => "none".into(),
                    Err(e) => format!("unreadable: {e}"),
                };
                let (probes, empty) = stats
                    .files
                    .iter()
                    .find(|s| s.file == f.number)
                    .map_or((0, 0.0), |s| (s.range_probes, s.range_empty));
                files.push((level, f.number, probes, empty, levels));
            }
        }
        out.push(report::RangeTree {
            tree: t as u32,
            sizes: counters
                .range_sizes()
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(b, &n)| (1u128 << b, n))
                .collect(),
            heights: counters
                .range_height_probes()
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(h, &n)| (h, n))
                .collect(),
            files,
        });
    }
    out
}

/// The `cairn.tuner` property: the memory tuner's history, one row per cycle.
pub(super) fn tuner_text(inner: &Arc<DbInner>) -> String {
    match &inner.tuner {
        None => "** cairn tuner ** off (memory.tuner = false, or fixed memory sizes)\n".into(),
        Some(t) => report::tuner_text(inner.regions.budget as u64, &t.history()),
    }
}
