//! fjall 3 with its closest options: one keyspace, the same memtable, block and cache sizes,
//! Bloom bits per key on every level, no compression, and leveled compaction with the same L0
//! trigger and size ratio (fjall sizes L1 as table target × L0 trigger, so the table target is
//! chosen to give RocksDB's `max_bytes_for_level_base`). fjall has no direct reads, and its
//! total write-buffer cap is an undocumented, deprecated option, so only the per-memtable size maps.

use super::{EResult, Engine, EngineArgs, EngineError};
use fjall::compaction::Leveled;
use fjall::config::{BlockSizePolicy, BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use std::path::Path;
use std::sync::Arc;

pub struct FjallEngine {
    db: Database,
    ks: Keyspace,
    l0_trigger: usize,
}

impl FjallEngine {
    pub fn open(a: &EngineArgs, dir: &Path) -> EResult<Self> {
        if a.txn != "none" {
            return Err("--txn: opened by the transactional adapter".into());
        }
        let ks_opts = keyspace_options(a)?;
        let l0 = a.level0_file_num_compaction_trigger.clamp(1, 255) as u8;
        // The same write memory as the other engines (all memtables, sealed ones included):
        // fjall leaves it unbounded by default and marks the setting unfinished ("todo"), but
        // without it a fill holds as many sealed memtables as its flushes lag behind.
        #[expect(
            deprecated,
            reason = "fjall marks the write-buffer bound unfinished; it is what equal write memory needs"
        )]
        let db = Database::builder(dir)
            .cache_size(a.cache_size as u64)
            .max_write_buffer_size(Some((a.memory() as u64).max(1 << 20)))
            .open()?;
        let ks = db.keyspace("default", || ks_opts)?;
        Ok(FjallEngine {
            db,
            ks,
            l0_trigger: usize::from(l0),
        })
    }
}

impl Engine for FjallEngine {
    fn name(&self) -> &'static str {
        "fjall"
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> EResult<()> {
        self.ks.insert(key, value)?;
        if sync {
            self.db.persist(PersistMode::SyncData)?;
        }
        Ok(())
    }

    fn put_batch(&self, entries: &[(Vec<u8>, Vec<u8>)], sync: bool) -> EResult<()> {
        let mut b = self.db.batch();
        for (k, v) in entries {
            b.insert(&self.ks, k.as_slice(), v.as_slice());
        }
        b.commit()?;
        if sync {
            self.db.persist(PersistMode::SyncData)?;
        }
        Ok(())
    }

    fn delete(&self, key: &[u8], sync: bool) -> EResult<()> {
        self.ks.remove(key)?;
        if sync {
            self.db.persist(PersistMode::SyncData)?;
        }
        Ok(())
    }

    fn get(&self, key: &[u8]) -> EResult<Option<usize>> {
        Ok(self.ks.get(key)?.map(|v| v.len()))
    }

    fn scan(&self, start: Option<&[u8]>, limit: u64, reverse: bool) -> EResult<(u64, u64)> {
        let it = match (start, reverse) {
            (None, _) => self.ks.iter(),
            (Some(s), false) => self.ks.range(s..),
            (Some(s), true) => self.ks.range(..=s),
        };
        let sizes = it.map(|g| {
            g.into_inner()
                .map(|(k, v)| (k.len(), v.len()))
                .map_err(EngineError::from)
        });
        count_entries_dir(sizes, limit, reverse)
    }

    fn range(&self, lo: &[u8], hi: &[u8]) -> EResult<(u64, u64)> {
        let sizes = self.ks.range(lo..hi).map(|g| {
            g.into_inner()
                .map(|(k, v)| (k.len(), v.len()))
                .map_err(EngineError::from)
        });
        count_entries(sizes, u64::MAX)
    }

    fn flush(&self) -> EResult<()> {
        Ok(self.ks.rotate_memtable_and_wait()?)
    }

    fn compact(&self) -> EResult<()> {
        Ok(self.ks.major_compact()?)
    }

    fn wait_for_background(&self) -> EResult<()> {
        // fjall exposes no "work pending" signal: wait until its memtables are flushed and L0 is
        // at or below the trigger.
        while self.ks.sealed_memtable_count() > 0 || self.ks.l0_table_count() > self.l0_trigger {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Ok(())
    }

    fn stats_text(&self) -> String {
        format!(
            "fjall: {} tables ({} in L0), {} bytes on disk",
            self.ks.table_count(),
            self.ks.l0_table_count(),
            self.ks.disk_space()
        )
    }
}

/// The keyspace's options for the flags (refusing the flags fjall has no match for).
pub(super) fn keyspace_options(a: &EngineArgs) -> EResult<KeyspaceCreateOptions> {
    if a.use_direct_reads {
        return Err("--use_direct_reads: fjall has no direct I/O".into());
    }
    if a.max_background_compactions.is_some()
        || a.subcompactions.is_some()
        || a.level0_slowdown_writes_trigger.is_some()
        || a.level0_stop_writes_trigger.is_some()
        || a.delayed_write_rate.is_some()
    {
        return Err("the fjall adapter maps no compaction-thread or write-stall flags".into());
    }
    if a.bpk_policy != "uniform" || a.merlin_window.is_some() || a.cairn_filter_flags() {
        return Err("--bpk_policy, --merlin_window, --segment_size, --filter_unit_format, the elastic flags and --memory_component are cairn's (other engines allocate filters uniformly and flush memtables whole)".into());
    }
    if a.data_block_index_type.is_some()
        || a.index_block_restart_interval.is_some()
        || a.block_restart_interval.is_some()
    {
        return Err(
                "--data_block_index_type, --block_restart_interval and --index_block_restart_interval: the fjall adapter maps no block-layout flag"
                    .into(),
            );
    }
    if a.merge_policy != "leveling" {
        return Err(format!("--merge_policy={}: fjall runs leveling only here", a.merge_policy).into());
    }
    let compression = match a.compression_type.as_str() {
        "none" => CompressionPolicy::disabled(),
        "lz4" => CompressionPolicy::all(fjall::CompressionType::Lz4),
        other => return Err(format!("--compression_type={other}: fjall supports none or lz4").into()),
    };
    // fjall refuses block sizes outside 1 KiB..=1 MiB with a panic; check first.
    if !(1024..=1 << 20).contains(&a.block_size) {
        return Err(format!("--block_size={}: fjall needs 1 KiB..=1 MiB", a.block_size).into());
    }
    let filter = if a.bloom_bits > 0.0 {
        FilterPolicy::all(FilterPolicyEntry::Bloom(BloomConstructionPolicy::BitsPerKey(
            a.bloom_bits as f32,
        )))
    } else {
        FilterPolicy::disabled()
    };
    let l0 = a.level0_file_num_compaction_trigger.clamp(1, 255) as u8;
    let strategy = Leveled::default()
        .with_l0_threshold(l0)
        .with_level_ratio_policy(vec![a.max_bytes_for_level_multiplier as f32])
        .with_table_target_size((a.max_bytes_for_level_base / u64::from(l0)).max(1 << 20));
    Ok(KeyspaceCreateOptions::default()
        .max_memtable_size(a.write_buffer_size as u64)
        .data_block_size_policy(BlockSizePolicy::all(a.block_size as u32))
        .data_block_compression_policy(compression)
        .filter_policy(filter)
        .compaction_strategy(Arc::new(strategy)))
}

/// Counts up to `limit` entries, and their key + value bytes, from an engine's iterator of
/// (key length, value length) results: fjall's iterators copy each entry out.
fn count_entries(entries: impl Iterator<Item = EResult<(usize, usize)>>, limit: u64) -> EResult<(u64, u64)> {
    let (mut n, mut bytes) = (0u64, 0u64);
    for e in entries.take(usize::try_from(limit).unwrap_or(usize::MAX)) {
        let (k, v) = e?;
        n += 1;
        bytes += (k + v) as u64;
    }
    Ok((n, bytes))
}

/// [`count_entries`] from the front or, for `reverse`, from the back.
fn count_entries_dir<I>(entries: I, limit: u64, reverse: bool) -> EResult<(u64, u64)>
where
    I: DoubleEndedIterator<Item = EResult<(usize, usize)>>,
{
    if reverse {
        count_entries(entries.rev(), limit)
    } else {
        count_entries(entries, limit)
    }
}
