//! Validation at open: each value in its range, no setting the types allow that would have no
//! effect under the others, and the settings that relate to each other consistent. Errors
//! name the setting (the one the caller changed, where several are involved), show the values
//! and say why.

use super::invalid;
use super::table::{find, settings};
use super::{
    CacheSource, FilterPolicy, Memory, MemoryComponent, MergePolicyKind, Options, RangeFilterKind, MIN_BUDGET,
};
use crate::error::{Error, Result};

/// The setting called `name` (a name of the table).
fn row(name: &str) -> &'static super::table::Setting {
    find(name).unwrap_or(&settings()[0])
}

/// `name = value`, as a person reads it.
fn shown(o: &Options, name: &str) -> String {
    format!("{name} = {}", row(name).show(o))
}

impl Options {
    /// Checks every option as given: each value in its range, no setting that has no effect
    /// under the others away from its default, and the settings that relate to each other
    /// consistent.
    ///
    /// # Errors
    /// `InvalidOptions` naming the option (the one the caller changed, where several are
    /// involved), showing the values and, for an enum, its valid choices.
    pub fn validate(&self) -> Result<()> {
        self.check_ranges()?;
        self.check_unused()?;
        self.check_relations()
    }

    fn check_ranges(&self) -> Result<()> {
        if let Memory::Budget(b) = &self.memory {
            if b.bytes < MIN_BUDGET {
                let why = match b.bytes {
                    0 => "a budget needs bytes; for regions sized by hand use Memory::Fixed".to_string(),
                    _ => "must be at least 256 KiB".to_string(),
                };
                return Err(invalid(
                    "memory.budget",
                    format!("{}: {why}", shown(self, "memory.budget")),
                ));
            }
        }
        for s in settings() {
            if let Some(x) = s.number(self) {
                if !s.range.contains(x) {
                    return Err(invalid(
                        s.name,
                        format!("{} = {} must be {}", s.name, s.show(self), s.range.describe(s.kind)),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The settings the types let a caller set where they have no effect: refused unless at
    /// their defaults (a switch turned off agrees with the feature being absent, so
    /// `range_filter.by_workload` and `memory.tuner_filters` need no rule).
    pub(crate) fn check_unused(&self) -> Result<()> {
        let unused = |name: &'static str, why: String| -> Result<()> {
            match row(name).is_set(self) {
                true => Err(invalid(name, format!("{} has no effect: {why}", shown(self, name)))),
                false => Ok(()),
            }
        };
        let policy = self.filters.policy.kind();
        let not_elastic = || {
            format!(
                "only the elastic policies (elastic, mnemosyne-elastic) load filter units into filter memory \
                 (filters.policy = {})",
                policy.name()
            )
        };
        match &self.memory {
            Memory::Budget(b) => {
                if policy.is_elastic() && b.filter_share > 0.0 {
                    unused(
                        "filters.bits_per_key",
                        sized_by_memory(self, "memory.filter_share of memory.budget"),
                    )?;
                }
                if !policy.is_elastic() {
                    unused("memory.filter_share", not_elastic())?;
                }
            }
            Memory::Fixed(f) => {
                if policy.is_elastic() && f.filter_memory > 0 {
                    unused("filters.bits_per_key", sized_by_memory(self, "memory.filter_memory"))?;
                }
                if !policy.is_elastic() {
                    unused("memory.filter_memory", not_elastic())?;
                }
                if let CacheSource::Shared(_) = f.block_cache {
                    let why = "the shared block_cache given in the options has its own capacity, high-priority \
                               pool and huge-page threshold (BlockCache::huge_pages_from)";
                    unused("cache.high_pri_pool_ratio", why.into())?;
                    unused("cache.huge_pages", why.into())?;
                }
            }
        }
        let no_kv = match &self.memory {
            Memory::Budget(b) => b.kv_cache_share == 0.0,
            Memory::Fixed(f) => f.kv_cache == 0,
        };
        if no_kv {
            unused(
                "cache.kv_max_value",
                "there is no key-value cache (memory.kv_cache_share = 0 under a budget, memory.kv_cache = 0 \
                 with fixed sizes)"
                    .into(),
            )?;
        }
        if self.memtable.component == MemoryComponent::Monolithic {
            let why = "it applies only with memtable.component = partitioned (memtable.component = monolithic)";
            unused("memtable.partitioned_size_ratio", why.into())?;
            unused("memtable.partitioned_flush_beta", why.into())?;
        }
        let rf = &self.range_filter;
        let rf_names = [
            "range_filter.kind",
            "range_filter.key_offset",
            "range_filter.max_depth",
            "range_filter.probe_budget",
            "range_filter.memory_share",
            "range_filter.round_ms",
            "range_filter.build_rate",
            "range_filter.max_bits_per_key",
        ];
        if rf.bits_per_key == 0.0 {
            for name in rf_names {
                unused(
                    name,
                    "it applies only with the range filter on (range_filter.bits_per_key = 0)".into(),
                )?;
            }
        }
        if !rf.by_workload {
            unused(
                "range_filter.build_rate",
                "filters are built for tables already written only when their bits follow the reads \
                 (range_filter.by_workload = false)"
                    .into(),
            )?;
            unused(
                "range_filter.max_bits_per_key",
                "the bits grow only where they follow the reads (range_filter.by_workload = false)".into(),
            )?;
        }
        let tuner = matches!(&self.memory, Memory::Budget(b) if b.tuner.is_some());
        if !tuner {
            unused(
                "range_filter.max_bits_per_key",
                "the bits grow against the block cache's worth, which the memory tuner measures (no memory.tuner)"
                    .into(),
            )?;
        }
        if rf.kind != RangeFilterKind::Rosetta {
            let why = format!(
                "it applies only to Rosetta range filters (range_filter.kind = {})",
                rf.kind.name()
            );
            unused("range_filter.max_depth", why.clone())?;
            unused("range_filter.probe_budget", why)?;
        }
        if let Memory::Fixed(f) = &self.memory {
            if !f.index_in_block_cache {
                let why = "range filters are bounded only where they are charged to the block cache \
                           (memory.budget = 0, cache.index_in_block_cache = false)";
                unused("range_filter.memory_share", why.into())?;
                unused("range_filter.round_ms", why.into())?;
                unused("range_filter.build_rate", why.into())?;
            }
        }
        let c = &self.compaction;
        if c.merge_policy != MergePolicyKind::Leveling {
            let why = format!(
                "Garnering sets its own level capacities ({})",
                shown(self, "compaction.merge_policy")
            );
            unused("compaction.level_targets", why)?;
        }
        if c.level_targets != super::LevelTargets::Fixed {
            let why = "with compaction.level_targets = write-memory, L1's capacity follows write memory";
            unused("compaction.max_bytes_for_level_base", why.into())?;
        }
        if !cfg!(all(target_os = "linux", target_env = "gnu")) && self.malloc_mmap_threshold != 0 {
            unused(
                "malloc_mmap_threshold",
                "this build does not allocate with glibc's malloc (set 0)".into(),
            )?;
        }
        if !cfg!(target_os = "linux") {
            unused(
                "background.compaction_nice",
                "it asks for a thread's own CPU priority, which cairn sets on Linux only (use 0)".into(),
            )?;
        }
        Ok(())
    }

    /// Checks between settings. Where two are involved, the error names the one that differs
    /// from its default (the one the caller set), or the first when both do.
    fn check_relations(&self) -> Result<()> {
        let pair = |a: &'static str, b: &'static str, why: &str| -> Error {
            let named = if row(a).is_set(self) || !row(b).is_set(self) {
                a
            } else {
                b
            };
            invalid(named, format!("{} with {}: {why}", shown(self, a), shown(self, b)))
        };
        let rf = &self.range_filter;
        if rf.bits_per_key > 0.0
            && row("range_filter.max_bits_per_key").is_set(self)
            && rf.max_bits_per_key < rf.bits_per_key
        {
            return Err(pair(
                "range_filter.max_bits_per_key",
                "range_filter.bits_per_key",
                "the most bits per key range filters grow to cannot be below the least (equal: they do not grow)",
            ));
        }
        let elastic = self.filters.policy.kind().is_elastic();
        match &self.memory {
            Memory::Budget(b) => {
                let filter = if elastic { b.filter_share } else { 0.0 };
                if b.write_share + filter > 0.95 {
                    return Err(pair(
                        "memory.write_share",
                        "memory.filter_share",
                        "together at most 0.95, so the block cache keeps at least 5% of the budget",
                    ));
                }
                if b.write_share + filter + b.kv_cache_share > 0.95 {
                    return Err(pair(
                        "memory.kv_cache_share",
                        "memory.write_share",
                        "together (and with memory.filter_share under an elastic policy) at most 0.95, so the \
                         block cache keeps at least 5% of the budget",
                    ));
                }
                if let Some(t) = b.tuner.as_ref().filter(|t| t.floor > 0) {
                    let start = super::Regions::of(self);
                    let (region, share, least) = if start.write_memory <= start.block_cache {
                        ("write memory", "memory.write_share", start.write_memory)
                    } else {
                        ("block cache", "what the other shares leave", start.block_cache)
                    };
                    if t.floor > least {
                        return Err(invalid(
                            "memory.tuner_floor",
                            format!(
                                "{} exceeds the starting {region} of {} ({share} of {}): lower the floor, or \
                                 leave it 0 for the automatic one",
                                shown(self, "memory.tuner_floor"),
                                super::show_bytes(least as u64),
                                shown(self, "memory.budget"),
                            ),
                        ));
                    }
                }
            }
            Memory::Fixed(f) => {
                if f.write_memory < f.memtable_size {
                    return Err(pair(
                        "memtable.size",
                        "memory.write_memory",
                        "a memtable must fit in write memory",
                    ));
                }
                if elastic && self.filters.bits_per_key == 0.0 && f.filter_memory == 0 {
                    return Err(pair(
                        "filters.bits_per_key",
                        "filters.policy",
                        "the elastic policies write filter units and load them into filter memory sized by bits \
                         per key (or memory.filter_memory, or memory.budget); 0 bits per key would load none: set \
                         filters.policy = uniform for no filters, or bits per key above 0",
                    ));
                }
            }
        }
        if let MergePolicyKind::Garnering { c } = self.compaction.merge_policy {
            if !(c > 0.0 && c <= 1.0) {
                return Err(invalid(
                    "compaction.merge_policy",
                    format!("compaction.merge_policy = garnering:{c}: Garnering's c must be above 0 and at most 1"),
                ));
            }
        }
        let (w, l) = (&self.write_stalls, &self.limits);
        let stop = "writes would stop before they slow down";
        for (holds, a, b, why) in [
            (
                w.l0_slowdown_trigger >= self.compaction.l0_trigger,
                "write_stalls.l0_slowdown_trigger",
                "compaction.l0_trigger",
                "writes would slow down before a compaction starts",
            ),
            (
                w.l0_stop_trigger >= w.l0_slowdown_trigger,
                "write_stalls.l0_stop_trigger",
                "write_stalls.l0_slowdown_trigger",
                stop,
            ),
            (
                w.hard_pending_compaction_bytes >= w.soft_pending_compaction_bytes,
                "write_stalls.hard_pending_compaction_bytes",
                "write_stalls.soft_pending_compaction_bytes",
                stop,
            ),
            (
                l.max_batch_size >= l.max_key_size,
                "limits.max_batch_size",
                "limits.max_key_size",
                "a batch must hold at least one key",
            ),
        ] {
            if !holds {
                return Err(pair(a, b, why));
            }
        }
        Ok(())
    }
}

/// Why bits per key have no effect where filter memory sizes the elastic units.
fn sized_by_memory(o: &Options, memory: &str) -> String {
    let policy = match o.filters.policy {
        FilterPolicy::Elastic(_) => "elastic",
        _ => "mnemosyne-elastic",
    };
    format!(
        "with filters.policy = {policy} the filter memory ({memory}) decides how many units are loaded; bits per \
         key size it only when it is 0"
    )
}
