//! RocksDB through the `rocksdb` crate 0.20.1 linked to Debian's librocksdb 7.8.3. Options are
//! set the way Debian's `db_bench` sets them for the same flags, so the adapter can be checked
//! against that binary (calibration in the README).

use super::{count_steps, EResult, Engine, EngineArgs, EngineError};
use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, DBRawIterator, Options, ReadOptions, WriteOptions, DB};
use std::path::Path;

pub struct RocksEngine {
    db: DB,
    opts: Options,
    cache_capacity: u64,
    plain: WriteOptions,
    synced: WriteOptions,
    opened: std::time::Instant,
}

/// RocksDB answers `rocksdb.block-cache-entry-stats` from its last scan of the cache when that
/// scan is under 10 seconds old (`internal_stats.cc`: foreground scans at most every 10 s), and
/// it scans once soon after the open: a run shorter than that read the nearly empty cache of
/// its start (0.00 MiB of every kind in the fastest equal-memory cell).
const ENTRY_STATS_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(11);

impl RocksEngine {
    pub fn open(a: &EngineArgs, dir: &Path) -> EResult<Self> {
        if a.txn != "none" {
            return Err("--txn: opened by the transactional adapter".into());
        }
        let (o, cache_size) = options(a)?;
        // The default column family named, so that the batched MultiGet has its handle.
        let db = DB::open_cf(&o, dir, [rocksdb::DEFAULT_COLUMN_FAMILY_NAME])?;
        let mut synced = WriteOptions::default();
        synced.set_sync(true);
        Ok(RocksEngine {
            db,
            opts: o,
            cache_capacity: cache_size as u64,
            plain: WriteOptions::default(),
            synced,
            opened: std::time::Instant::now(),
        })
    }

    fn int_property(&self, name: &str) -> EResult<u64> {
        Ok(self
            .db
            .property_int_value(name)?
            .ok_or_else(|| format!("RocksDB has no property {name}"))?)
    }
}

/// The options for the flags, and the block cache's size.
pub(super) fn options(a: &EngineArgs) -> EResult<(Options, usize)> {
    {
        let mut table = BlockBasedOptions::default();
        table.set_block_size(a.block_size);
        // --memory_budget: RocksDB's static split, 2 write buffers and the rest block cache with
        // index and filter blocks charged to it (so both engines spend the same total memory).
        let write_memory = a.memory();
        let row_cache = a.row_cache_size.unwrap_or(0);
        let cache_size = match a.memory_budget {
            Some(b) => b
                .checked_sub(write_memory + row_cache)
                .ok_or("--memory_budget: smaller than RocksDB's write buffers and row cache")?,
            None => a.cache_size,
        };
        let cache = Cache::new_lru_cache(cache_size)?;
        table.set_block_cache(&cache);
        if a.bloom_bits > 0.0 {
            table.set_bloom_filter(a.bloom_bits, false);
        }
        if let Some(i) = a.block_restart_interval {
            table.set_block_restart_interval(i32::try_from(i).map_err(|_| "--block_restart_interval: too large")?);
        }
        if let Some(i) = a.index_block_restart_interval {
            table.set_index_block_restart_interval(
                i32::try_from(i).map_err(|_| "--index_block_restart_interval: too large")?,
            );
        }
        if a.cache_index_and_filter_blocks || a.memory_budget.is_some() {
            // Index and filter blocks in the block cache (with high priority: RocksDB's default
            // for cache_index_and_filter_blocks_with_high_priority), L0's pinned there.
            table.set_cache_index_and_filter_blocks(true);
            table.set_pin_l0_filter_and_index_blocks_in_cache(true);
        }
        let mut o = Options::default();
        o.create_if_missing(true);
        if row_cache > 0 {
            o.set_row_cache(&Cache::new_lru_cache(row_cache)?);
        }
        o.set_block_based_table_factory(&table);
        o.set_write_buffer_size(a.write_buffer_size);
        // db_bench keeps max_write_buffer_number = 2; a larger --memory_budget buys more buffers.
        o.set_max_write_buffer_number((a.memory() / a.write_buffer_size.max(1)).max(2) as i32);
        o.set_use_direct_reads(a.use_direct_reads);
        o.set_max_bytes_for_level_base(a.max_bytes_for_level_base);
        o.set_max_bytes_for_level_multiplier(a.max_bytes_for_level_multiplier);
        o.set_level_zero_file_num_compaction_trigger(a.level0_file_num_compaction_trigger as i32);
        o.set_target_file_size_base(a.target_file_size_base);
        o.set_compression_type(match a.compression_type.as_str() {
            "none" => DBCompressionType::None,
            "lz4" => DBCompressionType::Lz4,
            "zstd" => DBCompressionType::Zstd,
            other => return Err(format!("--compression_type={other}: expected none, lz4 or zstd").into()),
        });
        if a.memory_tuner || a.flush_policy != "max-memory" {
            return Err("--memory_tuner and --flush_policy are cairn's (RocksDB splits memory statically and flushes the largest memtable)".into());
        }
        if let Some(n) = a.max_total_wal_size {
            o.set_max_total_wal_size(n);
        }
        if a.bpk_policy != "uniform" || a.merlin_window.is_some() || a.cairn_filter_flags() {
            return Err("--bpk_policy, --merlin_window, --segment_size, --filter_unit_format, the elastic flags and --memory_component are cairn's (other engines allocate filters uniformly and flush memtables whole)".into());
        }
        if a.merge_policy != "leveling" {
            return Err(format!("--merge_policy={}: RocksDB runs leveling only", a.merge_policy).into());
        }
        match a.merge_operator.as_str() {
            "none" => {}
            "uint64add" => o.set_merge_operator_associative("uint64add", uint64add),
            other => return Err(format!("--merge_operator={other}: expected none or uint64add").into()),
        }
        // db_bench's own defaults where they differ from the library's (compared OPTIONS files
        // written by Debian's db_bench and by this adapter for the same flags).
        o.set_enable_pipelined_write(true);
        o.set_hard_pending_compaction_bytes_limit(128 << 30);
        o.set_table_cache_num_shard_bits(4);
        if let Some(n) = a.max_background_compactions {
            o.set_max_background_jobs(n as i32 + 1);
        }
        if let Some(n) = a.subcompactions {
            o.set_max_subcompactions(n as u32);
        }
        if let Some(n) = a.level0_slowdown_writes_trigger {
            o.set_level_zero_slowdown_writes_trigger(n as i32);
        }
        if let Some(n) = a.level0_stop_writes_trigger {
            o.set_level_zero_stop_writes_trigger(n as i32);
        }
        if a.delayed_write_rate.is_some() {
            return Err("--delayed_write_rate: the rocksdb crate 0.20.1 cannot set it".into());
        }
        if a.statistics {
            o.enable_statistics();
        }
        Ok((o, cache_size))
    }
}

impl Engine for RocksEngine {
    fn name(&self) -> &'static str {
        "rocksdb"
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> EResult<()> {
        Ok(self
            .db
            .put_opt(key, value, if sync { &self.synced } else { &self.plain })?)
    }

    fn put_batch(&self, entries: &[(Vec<u8>, Vec<u8>)], sync: bool) -> EResult<()> {
        let mut b = rocksdb::WriteBatch::default();
        for (k, v) in entries {
            b.put(k, v);
        }
        Ok(self.db.write_opt(b, if sync { &self.synced } else { &self.plain })?)
    }

    fn delete(&self, key: &[u8], sync: bool) -> EResult<()> {
        Ok(self.db.delete_opt(key, if sync { &self.synced } else { &self.plain })?)
    }

    fn write_table(&self, path: &Path, fill: &mut dyn FnMut(&mut super::TableSink<'_>) -> EResult<()>) -> EResult<()> {
        let mut w = rocksdb::SstFileWriter::create(&self.opts);
        w.open(path)?;
        fill(&mut |k, v| Ok(w.put(k, v)?))?;
        Ok(w.finish()?)
    }

    fn ingest(&self, paths: &[std::path::PathBuf], move_files: bool) -> EResult<()> {
        let mut o = rocksdb::IngestExternalFileOptions::default();
        o.set_move_files(move_files);
        Ok(self.db.ingest_external_file_opts(&o, paths.to_vec())?)
    }

    fn merge(&self, key: &[u8], operand: &[u8]) -> EResult<()> {
        Ok(self.db.merge_opt(key, operand, &self.plain)?)
    }

    fn checkpoint(&self, dir: &Path) -> EResult<Option<u64>> {
        rocksdb::checkpoint::Checkpoint::new(&self.db)?.create_checkpoint(dir)?;
        Ok(None)
    }

    fn backup(&self, dir: &Path) -> EResult<Option<u64>> {
        use rocksdb::backup::{BackupEngine, BackupEngineOptions};
        let mut engine = BackupEngine::open(&BackupEngineOptions::new(dir)?, &rocksdb::Env::new()?)?;
        engine.create_new_backup(&self.db)?;
        Ok(None)
    }

    fn restore(&self, dir: &Path, to: &Path) -> EResult<()> {
        use rocksdb::backup::{BackupEngine, BackupEngineOptions, RestoreOptions};
        let mut engine = BackupEngine::open(&BackupEngineOptions::new(dir)?, &rocksdb::Env::new()?)?;
        engine.restore_from_latest_backup(to, to, &RestoreOptions::default())?;
        Ok(())
    }

    fn get_value(&self, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        Ok(self.db.get(key)?)
    }

    fn delete_range(&self, lo: &[u8], hi: &[u8]) -> EResult<()> {
        // The default column family has no handle here: a batch writes to it.
        let mut b = rocksdb::WriteBatch::default();
        b.delete_range(lo, hi);
        Ok(self.db.write_opt(b, &self.plain)?)
    }

    fn get(&self, key: &[u8]) -> EResult<Option<usize>> {
        // Pinned, as db_bench reads: no copy of the value.
        Ok(self.db.get_pinned(key)?.map(|v| v.len()))
    }

    fn multi_get(&self, keys: &[Vec<u8>]) -> EResult<Vec<Option<usize>>> {
        // The batched MultiGet (db_bench's multireadrandom): pinned values.
        let cf = self.db.cf_handle("default").ok_or("no default column family")?;
        self.db
            .batched_multi_get_cf(&cf, keys, false)
            .into_iter()
            .map(|r| Ok(r?.map(|v| v.len())))
            .collect()
    }

    fn scan(&self, start: Option<&[u8]>, limit: u64, reverse: bool) -> EResult<(u64, u64)> {
        let mut it = self.db.raw_iterator();
        match (start, reverse) {
            (None, false) => it.seek_to_first(),
            (None, true) => it.seek_to_last(),
            (Some(s), false) => it.seek(s),
            (Some(s), true) => it.seek_for_prev(s),
        }
        // The raw iterator lends each entry (the crate's `Iterator` boxes a copy of both).
        count_steps(raw_steps(it, reverse), limit)
    }

    fn range(&self, lo: &[u8], hi: &[u8]) -> EResult<(u64, u64)> {
        // RocksDB's way to bound a range read: the iterator stops at `iterate_upper_bound`
        // without reading past it.
        let mut ro = ReadOptions::default();
        ro.set_iterate_upper_bound(hi.to_vec());
        let mut it = self.db.raw_iterator_opt(ro);
        it.seek(lo);
        count_steps(raw_steps(it, false), u64::MAX)
    }

    fn flush(&self) -> EResult<()> {
        Ok(self.db.flush()?)
    }

    fn compact(&self) -> EResult<()> {
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    fn wait_for_background(&self) -> EResult<()> {
        loop {
            let busy = self.int_property("rocksdb.mem-table-flush-pending")?
                + self.int_property("rocksdb.compaction-pending")?
                + self.int_property("rocksdb.num-running-flushes")?
                + self.int_property("rocksdb.num-running-compactions")?;
            if busy == 0 {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn stats_text(&self) -> String {
        let mut s = self
            .db
            .property_value("rocksdb.stats")
            .ok()
            .flatten()
            .unwrap_or_default();
        if let Some(st) = self.opts.get_statistics() {
            s.push_str(&st);
        }
        s
    }

    fn filter_false_positives(&self) -> Option<u64> {
        let st = self.opts.get_statistics()?;
        let positive = ticker(&st, "rocksdb.bloom.filter.full.positive")?;
        let true_positive = ticker(&st, "rocksdb.bloom.filter.full.true.positive")?;
        Some(positive.saturating_sub(true_positive))
    }

    fn cache_accounting(&self) -> Option<crate::engine::CacheAccounting> {
        let st = self.opts.get_statistics()?;
        std::thread::sleep(ENTRY_STATS_MAX_AGE.saturating_sub(self.opened.elapsed()));
        let entries = self.db.property_value("rocksdb.block-cache-entry-stats").ok()??;
        let tables = self.db.property_value("rocksdb.aggregated-table-properties").ok()??;
        let capacity = self.cache_capacity;
        // Each role's share of the capacity, `Role(count,size,portion%)`, in % to four decimals
        // (its size is rounded to 0.01 MB).
        let shares: Vec<(&str, u64)> = entries
            .split(')')
            .filter_map(|s| {
                let (head, inside) = s.rsplit_once('(')?;
                let p: f64 = inside.rsplit(',').next()?.trim_end_matches('%').parse().ok()?;
                Some((head.rsplit(' ').next()?, (p / 100.0 * capacity as f64) as u64))
            })
            .collect();
        let share = |role: &str| shares.iter().find(|(r, _)| *r == role).map_or(0, |(_, b)| *b);
        let (data, index, filter) = (share("DataBlock"), share("IndexBlock"), share("FilterBlock"));
        let used: u64 = shares.iter().map(|(_, b)| b).sum();
        let prop = |name: &str| -> u64 {
            tables
                .split("; ")
                .find(|kv| kv.starts_with(name))
                .and_then(|kv| kv.rsplit('=').next())
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        let tick = |k: &str| ticker(&st, &format!("rocksdb.block.cache.{k}")).unwrap_or(0);
        Some(crate::engine::CacheAccounting {
            capacity,
            data,
            index,
            filter,
            other: used.saturating_sub(data + index + filter),
            tables_index: prop("index block size"),
            tables_filter: prop("filter block size"),
            tables_bytes: prop("data block size") + prop("index block size") + prop("filter block size"),
            tables_data_blocks: prop("# data blocks"),
            files_per_level: crate::engine::files_per_level((0..7).map(|l| {
                self.int_property(&format!("rocksdb.num-files-at-level{l}"))
                    .unwrap_or(0)
            })),
            hits: [tick("data.hit"), tick("index.hit"), tick("filter.hit")],
            misses: [tick("data.miss"), tick("index.miss"), tick("filter.miss")],
        })
    }

    fn block_reads(&self) -> Option<crate::engine::BlockReads> {
        let st = self.opts.get_statistics()?;
        Some(crate::engine::BlockReads {
            data: ticker(&st, "rocksdb.block.cache.data.miss")?,
            filter: ticker(&st, "rocksdb.block.cache.filter.miss")?,
            index: ticker(&st, "rocksdb.block.cache.index.miss")?,
        })
    }

    fn scan_counters(&self) -> Option<crate::engine::ScanCounters> {
        let st = self.opts.get_statistics()?;
        let tick = |k: &str| ticker(&st, k).unwrap_or(0);
        Some(crate::engine::ScanCounters {
            seeks: tick("rocksdb.number.db.seek"),
            entries: tick("rocksdb.number.db.next") + tick("rocksdb.number.db.prev"),
            data_reads: tick("rocksdb.block.cache.data.miss"),
            data_hits: tick("rocksdb.block.cache.data.hit"),
            index_reads: tick("rocksdb.block.cache.index.miss"),
            index_hits: tick("rocksdb.block.cache.index.hit"),
            // A histogram: its line ends with `SUM : bytes`, which `ticker` reads.
            readahead_wasted: tick("rocksdb.prefetched.bytes.discarded"),
            ..Default::default()
        })
    }

    fn debt(&self) -> Option<crate::engine::Debt> {
        Some(crate::engine::Debt {
            l0_files: self.int_property("rocksdb.num-files-at-level0").ok()?,
            pending_compaction_bytes: self.int_property("rocksdb.estimate-pending-compaction-bytes").ok()?,
            stall_micros: None,
            delay_micros: None,
        })
    }
}

/// A ticker's count in RocksDB's statistics text (`name COUNT : n`).
fn ticker(stats: &str, name: &str) -> Option<u64> {
    stats
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))?
        .rsplit(':')
        .next()?
        .trim()
        .parse()
        .ok()
}

/// RocksDB's `uint64add` (its built-in is not reachable through the Rust bindings): 8-byte
/// little-endian sums, a value of another length counting as 0.
fn uint64add(_key: &[u8], existing: Option<&[u8]>, operands: &rocksdb::MergeOperands) -> Option<Vec<u8>> {
    let n = |b: &[u8]| <[u8; 8]>::try_from(b).map_or(0, u64::from_le_bytes);
    let sum = operands
        .iter()
        .fold(existing.map_or(0, n), |acc, o| acc.wrapping_add(n(o)));
    Some(sum.to_le_bytes().to_vec())
}

/// Steps of a positioned raw iterator (the entry it stands on first), as key and value lengths.
fn raw_steps(mut it: DBRawIterator<'_>, reverse: bool) -> impl FnMut() -> Option<EResult<(usize, usize)>> + '_ {
    let mut first = true;
    move || {
        if !std::mem::take(&mut first) {
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        match (it.key(), it.value()) {
            (Some(k), Some(v)) => Some(Ok((k.len(), v.len()))),
            _ => it.status().err().map(|e| Err(EngineError::from(e))),
        }
    }
}
