//! The OPTIONS file (spec: `docs/format/options.md`): every option as `key=value`, written at
//! each open; and the parser that reads options back by name, so tools open a database with
//! the options it was written with.

use super::{invalid, BpkPolicy, FlushPolicy, LevelTargets, MemoryComponent, MergePolicyKind, Options, FORMAT_VERSION};
use crate::error::{Error, Result};
use crate::format::coding::masked_crc;
use crate::sst::Compression;
use crate::wal::RecoveryMode;
use std::collections::BTreeMap;

impl Options {
    /// Sets the option `name` (as OPTIONS and [`Options::to_map`] spell it) from its text form.
    /// `format_version` and `comparator` are accepted only with the values this build writes.
    ///
    /// # Errors
    /// `InvalidOptions` naming the option when the name is unknown or the value does not
    /// parse. Ranges are checked later, by [`validate`](Self::validate) at open.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        fn parse<T: std::str::FromStr>(name: &'static str, v: &str) -> Result<T> {
            v.parse().map_err(|_| invalid(name, format!("cannot parse {v:?}")))
        }
        macro_rules! fields {
            ($($field:ident),* $(,)?) => {
                match name {
                    $(stringify!($field) => {
                        self.$field = parse(stringify!($field), value)?;
                        return Ok(());
                    })*
                    _ => {}
                }
            };
        }
        fields!(
            create_if_missing,
            error_if_exists,
            write_buffer_size,
            write_memory_budget,
            max_wal_size,
            block_size,
            block_restart_interval,
            data_block_hash_index,
            segment_size,
            bloom_bits_per_key,
            merlin_window,
            filter_memory,
            elastic_units,
            elastic_unit_bpk,
            elastic_life_time,
            elastic_solve_every,
            elastic_interval_ms,
            range_filter_bits_per_key,
            range_filter_by_workload,
            range_filter_key_offset,
            range_filter_max_depth,
            range_filter_probe_budget,
            block_cache_size,
            ghost_cache_size,
            memory_budget,
            memory_write_share,
            memory_size_ratio,
            memory_flush_beta,
            memory_filter_share,
            memory_tuner,
            memory_tuner_period_ms,
            memory_tuner_floor,
            memory_tuner_write_weight,
            memory_tuner_filters,
            high_pri_pool_ratio,
            index_in_block_cache,
            max_open_files,
            size_ratio,
            l0_compaction_trigger,
            l0_slowdown_trigger,
            l0_stop_trigger,
            max_bytes_for_level_base,
            target_file_size,
            max_levels,
            soft_pending_compaction_bytes,
            hard_pending_compaction_bytes,
            compaction_threads,
            max_subcompactions,
            delayed_write_rate,
            use_direct_reads,
            max_manifest_size,
            max_key_size,
            max_value_size,
            max_batch_size,
        );
        let now = self.to_map();
        match name {
            "format_version" | "comparator" => {
                if now.get(name).map(String::as_str) != Some(value) {
                    let option = if name == "comparator" {
                        "comparator"
                    } else {
                        "format_version"
                    };
                    return Err(invalid(option, format!("this build supports only {}", now[name])));
                }
            }
            "compression" => {
                self.compression = [Compression::None, Compression::Lz4, Compression::Zstd]
                    .into_iter()
                    .find(|c| format!("{c:?}").eq_ignore_ascii_case(value))
                    .ok_or_else(|| invalid("compression", format!("{value:?} is not none, lz4 or zstd")))?;
            }
            "flush_policy" => {
                self.flush_policy = FlushPolicy::parse(value).ok_or_else(|| {
                    invalid(
                        "flush_policy",
                        format!("{value:?} is not max-memory, min-lsn or optimal"),
                    )
                })?;
            }
            "memory_component" => {
                self.memory_component = MemoryComponent::parse(value).ok_or_else(|| {
                    invalid(
                        "memory_component",
                        format!("{value:?} is not monolithic or partitioned"),
                    )
                })?;
            }
            "level_targets" => {
                self.level_targets = LevelTargets::parse(value)
                    .ok_or_else(|| invalid("level_targets", format!("{value:?} is not fixed or write-memory")))?;
            }
            "bpk_policy" => {
                self.bpk_policy = BpkPolicy::parse(value)
                    .ok_or_else(|| invalid("bpk_policy", format!("unknown policy {value:?}")))?;
            }
            "merge_policy" => {
                self.merge_policy = match value.split_once(':') {
                    None if value == "leveling" => MergePolicyKind::Leveling,
                    Some(("garnering", c)) => MergePolicyKind::Garnering {
                        c: parse("merge_policy", c)?,
                    },
                    _ => {
                        return Err(invalid(
                            "merge_policy",
                            format!("{value:?} is not leveling or garnering:C"),
                        ))
                    }
                };
            }
            "wal_recovery_mode" => {
                self.wal_recovery_mode = [
                    RecoveryMode::PointInTime,
                    RecoveryMode::TolerateCorruptedTail,
                    RecoveryMode::AbsoluteConsistency,
                ]
                .into_iter()
                .find(|m| format!("{m:?}") == value)
                .ok_or_else(|| invalid("wal_recovery_mode", format!("unknown mode {value:?}")))?;
            }
            _ => {
                return Err(Error::InvalidArgument(format!("unknown option {name:?}")));
            }
        }
        Ok(())
    }

    /// These options with every option stored in the newest OPTIONS file of the database in
    /// `dir` applied (what the database was last opened with); unchanged when it has none.
    /// Options this build does not know (written by a newer one) are skipped, and so are
    /// `create_if_missing` and `error_if_exists`, which are about one open, not the database.
    ///
    /// # Errors
    /// `Corruption` for a damaged OPTIONS file or a stored value that does not parse; I/O
    /// errors.
    pub fn with_stored(mut self, dir: &std::path::Path) -> Result<Options> {
        let Some((path, stored)) = crate::inspect::stored_options(&*self.fs, dir)? else {
            return Ok(self);
        };
        for (k, v) in stored
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "create_if_missing" | "error_if_exists"))
        {
            match self.set(k, v) {
                Ok(()) | Err(Error::InvalidArgument(_)) => {}
                Err(e) => return Err(Error::corruption(&path, 0, e)),
            }
        }
        Ok(self)
    }

    pub(crate) fn to_map(&self) -> BTreeMap<&'static str, String> {
        let mut m = BTreeMap::new();
        m.insert("format_version", FORMAT_VERSION.to_string());
        m.insert("comparator", "bytewise".into());
        m.insert("create_if_missing", self.create_if_missing.to_string());
        m.insert("error_if_exists", self.error_if_exists.to_string());
        m.insert("write_buffer_size", self.write_buffer_size.to_string());
        m.insert("write_memory_budget", self.write_memory_budget.to_string());
        m.insert("flush_policy", self.flush_policy.name().to_string());
        m.insert("level_targets", self.level_targets.name().to_string());
        m.insert("memory_component", self.memory_component.name().to_string());
        m.insert("memory_size_ratio", self.memory_size_ratio.to_string());
        m.insert("memory_flush_beta", self.memory_flush_beta.to_string());
        m.insert("max_wal_size", self.max_wal_size.to_string());
        m.insert("block_size", self.block_size.to_string());
        m.insert("block_restart_interval", self.block_restart_interval.to_string());
        m.insert("data_block_hash_index", self.data_block_hash_index.to_string());
        m.insert("compression", format!("{:?}", self.compression).to_lowercase());
        m.insert("segment_size", self.segment_size.to_string());
        m.insert("bloom_bits_per_key", self.bloom_bits_per_key.to_string());
        m.insert("bpk_policy", self.bpk_policy.name().to_string());
        m.insert("merlin_window", self.merlin_window.to_string());
        m.insert("filter_memory", self.filter_memory.to_string());
        m.insert("elastic_units", self.elastic_units.to_string());
        m.insert("elastic_unit_bpk", self.elastic_unit_bpk.to_string());
        m.insert("elastic_life_time", self.elastic_life_time.to_string());
        m.insert("elastic_solve_every", self.elastic_solve_every.to_string());
        m.insert("elastic_interval_ms", self.elastic_interval_ms.to_string());
        m.insert("range_filter_bits_per_key", self.range_filter_bits_per_key.to_string());
        m.insert("range_filter_by_workload", self.range_filter_by_workload.to_string());
        m.insert("range_filter_key_offset", self.range_filter_key_offset.to_string());
        m.insert("range_filter_max_depth", self.range_filter_max_depth.to_string());
        m.insert("range_filter_probe_budget", self.range_filter_probe_budget.to_string());
        m.insert("block_cache_size", self.block_cache_size.to_string());
        m.insert("ghost_cache_size", self.ghost_cache_size.to_string());
        m.insert("memory_budget", self.memory_budget.to_string());
        m.insert("memory_write_share", self.memory_write_share.to_string());
        m.insert("memory_filter_share", self.memory_filter_share.to_string());
        m.insert("memory_tuner", self.memory_tuner.to_string());
        m.insert("memory_tuner_period_ms", self.memory_tuner_period_ms.to_string());
        m.insert("memory_tuner_floor", self.memory_tuner_floor.to_string());
        m.insert("memory_tuner_write_weight", self.memory_tuner_write_weight.to_string());
        m.insert("memory_tuner_filters", self.memory_tuner_filters.to_string());
        m.insert("high_pri_pool_ratio", self.high_pri_pool_ratio.to_string());
        m.insert("index_in_block_cache", self.index_in_block_cache.to_string());
        m.insert("max_open_files", self.max_open_files.to_string());
        m.insert(
            "merge_policy",
            match self.merge_policy {
                MergePolicyKind::Leveling => "leveling".into(),
                MergePolicyKind::Garnering { c } => format!("garnering:{c}"),
            },
        );
        m.insert("size_ratio", self.size_ratio.to_string());
        m.insert("l0_compaction_trigger", self.l0_compaction_trigger.to_string());
        m.insert("l0_slowdown_trigger", self.l0_slowdown_trigger.to_string());
        m.insert("l0_stop_trigger", self.l0_stop_trigger.to_string());
        m.insert("max_bytes_for_level_base", self.max_bytes_for_level_base.to_string());
        m.insert("target_file_size", self.target_file_size.to_string());
        m.insert("max_levels", self.max_levels.to_string());
        m.insert(
            "soft_pending_compaction_bytes",
            self.soft_pending_compaction_bytes.to_string(),
        );
        m.insert(
            "hard_pending_compaction_bytes",
            self.hard_pending_compaction_bytes.to_string(),
        );
        m.insert("compaction_threads", self.compaction_threads.to_string());
        m.insert("max_subcompactions", self.max_subcompactions.to_string());
        m.insert("delayed_write_rate", self.delayed_write_rate.to_string());
        m.insert("wal_recovery_mode", format!("{:?}", self.wal_recovery_mode));
        m.insert("use_direct_reads", self.use_direct_reads.to_string());
        m.insert("max_manifest_size", self.max_manifest_size.to_string());
        m.insert("max_key_size", self.max_key_size.to_string());
        m.insert("max_value_size", self.max_value_size.to_string());
        m.insert("max_batch_size", self.max_batch_size.to_string());
        m
    }

    /// The OPTIONS file contents: `key=value` lines, then `checksum=<masked crc32c hex>` over
    /// every byte before that line.
    pub(crate) fn encode_file(&self) -> Vec<u8> {
        let mut s = String::from("# cairn OPTIONS (informational except format_version, comparator)\n");
        for (k, v) in self.to_map() {
            s.push_str(&format!("{k}={v}\n"));
        }
        let crc = masked_crc(&[s.as_bytes()]);
        s.push_str(&format!("checksum={crc:08x}\n"));
        s.into_bytes()
    }
}

/// Parses an OPTIONS file into its key/value pairs, verifying the checksum.
pub fn parse_options_file(bytes: &[u8]) -> std::result::Result<BTreeMap<String, String>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "OPTIONS is not UTF-8".to_string())?;
    let body_end = text.rfind("checksum=").ok_or("OPTIONS has no checksum line")?;
    let (body, tail) = text.split_at(body_end);
    // The line ends the file exactly as written: a truncated newline is damage too.
    // The line ends the file exactly as written (8 lowercase digits, a newline): any other
    // spelling is damage too.
    let crc = tail
        .strip_suffix('\n')
        .and_then(|t| t.strip_prefix("checksum="))
        .ok_or("OPTIONS checksum line is malformed")?;
    if crc != format!("{:08x}", masked_crc(&[body.as_bytes()])) {
        return Err("OPTIONS checksum mismatch".into());
    }
    let mut m = BTreeMap::new();
    for line in body.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| format!("OPTIONS line without '=': {line:?}"))?;
        m.insert(k.to_string(), v.to_string());
    }
    Ok(m)
}

/// Checks options stored by an earlier open against the new ones: the on-disk format and key
/// order must not change.
pub(crate) fn check_compatible(stored: &BTreeMap<String, String>, new: &Options) -> Result<()> {
    let now = new.to_map();
    for option in ["format_version", "comparator"] {
        if let Some(old) = stored.get(option) {
            if now.get(option) != Some(old) {
                return Err(invalid(
                    option,
                    format!("the database was created with {option}={old}, which cannot change"),
                ));
            }
        }
    }
    Ok(())
}
