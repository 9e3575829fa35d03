//! WAL replay at open: every WAL from the oldest one a tree still needs, batch by batch, into
//! fresh memory components, checking each log's header against the database id and the
//! recovery mode's rules for a damaged tail; a writable open spills full memtables to L0
//! within write memory as it goes (`open.rs` writes them).

use crate::batch::DecodedBatch;
use crate::env::{FileSystem, ReadOptions};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::memtable::{filter_target, MemComponent, Memtable};
use crate::options::{MemoryComponent, Options, Regions};
use crate::version::set::Recovered;
use crate::wal::{WalEnd, WalReader};
use std::path::Path;
use std::sync::Arc;

/// Replays the WALs `rec`'s trees still need into fresh memory components; returns them with
/// the largest sequence number seen.
pub(super) fn replay_wals(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
    names: &[String],
    rec: &Recovered,
    existed: bool,
    mut spill: Option<Spill<'_>>,
) -> Result<(Vec<MemComponent>, u64)> {
    let regions = &Regions::of(opts);
    let (db_id, log_numbers) = (rec.db_id, &rec.log_numbers);
    let ntrees = rec.tree_names.len().max(1);
    let filtered_for = filter_target(0, regions.memtable_size, regions.write_memory / ntrees);
    let mut mems: Vec<MemComponent> = rec
        .tree_names
        .iter()
        .map(|_| {
            MemComponent::shaped(
                opts.memtable.component,
                opts.memtable.partitioned_size_ratio,
                filtered_for,
            )
        })
        .collect();
    let min_log = (0..rec.tree_names.len() as u32)
        .map(|t| log_numbers.get(&t).copied().unwrap_or(0))
        .min()
        .unwrap_or(0);
    let mut last_seq = rec.last_seq;
    let wals: Vec<u64> = filename::numbers(names, FileKind::Wal)
        .into_iter()
        .filter(|&n| n >= min_log)
        .collect();
    // The oldest WAL a tree needs is deleted only after an edit moving every tree past it is
    // durable. If it is gone, the manifest lost that edit (damage at its tail that reads as a
    // torn write): replaying it would silently drop the flushed data.
    if existed && min_log > 0 && wals.first() != Some(&min_log) {
        return Err(Error::corruption(
            &rec.manifest,
            0,
            format!(
                "trees need {} which is gone; the manifest has lost edits",
                filename::wal(dir, min_log).display()
            ),
        ));
    }
    let mut next_seq: Option<u64> = None;
    'logs: for (i, &n) in wals.iter().enumerate() {
        let path = filename::wal(dir, n);
        let file = fs.open_read(&path, ReadOptions::default())?;
        let mut reader = WalReader::new(file, &path, n, opts.wal.recovery_mode);
        let mut first = true;
        while let Some(record) = reader.next_record()? {
            let bad = |what: String| Error::corruption(&path, record.offset, what);
            if std::mem::take(&mut first) {
                let header = crate::wal::parse_header(&record.body);
                if header.is_none() && opts.wal.recovery_mode == crate::wal::RecoveryMode::AbsoluteConsistency {
                    return Err(bad("log does not start with its header record".into()));
                }
                if let Some(h) = header {
                    if let Some(mine) = db_id.filter(|&mine| mine != h.db_id) {
                        return Err(bad(format!(
                            "log of another database (id {:016x}; this database is {mine:016x})",
                            h.db_id
                        )));
                    }
                    if let Some(first) = h.first_seq {
                        if next_seq.is_some_and(|s| s != first) {
                            gap(&path, record.offset, next_seq, first);
                            break 'logs;
                        }
                        next_seq = Some(first);
                    }
                    continue;
                }
            }
            // Sequence numbers an ingestion gave its tables: the next batch follows them.
            if let Some((first, last)) = crate::wal::parse_skip(&record.body) {
                if next_seq.is_some_and(|s| s != first) {
                    gap(&path, record.offset, next_seq, first);
                    break 'logs;
                }
                next_seq = Some(last + 1);
                last_seq = last_seq.max(last);
                continue;
            }
            let batch = DecodedBatch::parse(&record.body).map_err(|e| bad(format!("write batch: {e}")))?;
            // Sequence numbers run on without a gap from record to record and log to log (each
            // log's header names its first). A gap means an earlier log lost its end — a switch
            // leaves the closed log to be synced later, and a cut at a record boundary reads as
            // a clean end: like a log that ends early, nothing from there on is replayed.
            if next_seq.is_some_and(|s| s != batch.seqno) {
                gap(&path, record.offset, next_seq, batch.seqno);
                break 'logs;
            }
            next_seq = Some(batch.seqno + u64::from(batch.count));
            for (j, op) in batch.ops().enumerate() {
                let op = op.map_err(|e| bad(format!("write batch: {e}")))?;
                let m = mems
                    .get(op.tree as usize)
                    .ok_or_else(|| bad(format!("write batch names unknown tree {}", op.tree)))?;
                let seq = batch.seqno + j as u64;
                // A dropped tree's records are not replayed (`Db::drop_tree`).
                let dropped = crate::version::is_dropped(&rec.tree_names, op.tree as usize);
                if !dropped && n >= log_numbers.get(&op.tree).copied().unwrap_or(0) {
                    m.active().insert(op.key, seq, op.kind, op.value, n);
                }
                last_seq = last_seq.max(seq);
            }
            if let Some(spill) = spill.as_mut() {
                while let Some(t) = over_replay_limit(opts, regions, &mems) {
                    spill(t, mems[t].active())?;
                    mems[t] = MemComponent::shaped(
                        opts.memtable.component,
                        opts.memtable.partitioned_size_ratio,
                        filtered_for,
                    );
                }
            }
        }
        if first && opts.wal.recovery_mode == crate::wal::RecoveryMode::AbsoluteConsistency {
            // Every log starts with a synced header: an empty live log lost bytes.
            return Err(Error::corruption(
                &path,
                0,
                "log is empty; it should start with its header record",
            ));
        }
        match reader.end() {
            WalEnd::Clean => {}
            end => {
                tracing::warn!(wal = %path.display(), ?end, "WAL ends early; later records are not replayed");
                if i + 1 < wals.len() {
                    // Replaying later logs would leave a hole in the history: stop here.
                    break 'logs;
                }
            }
        }
    }

    Ok((mems, last_seq))
}

/// Reports a gap in the replayed history at `offset` of `path`.
fn gap(path: &Path, offset: u64, expected: Option<u64>, found: u64) {
    tracing::warn!(
        wal = %path.display(),
        offset,
        expected,
        found,
        "WAL history has a gap (an earlier log lost its unsynced end); later records are not replayed"
    );
}

/// Writes a tree's replayed memtable to L0 (a writable open keeps replay within write memory).
pub(super) type Spill<'a> = &'a mut dyn FnMut(usize, &Arc<Memtable>) -> Result<()>;

/// The tree whose replayed memtable must be written out now: one past what a flush would take
/// (a memtable, or half of write memory for a partitioned component), or the largest once all
/// of them fill write memory.
fn over_replay_limit(opts: &Options, regions: &Regions, mems: &[MemComponent]) -> Option<usize> {
    let one = match opts.memtable.component {
        MemoryComponent::Monolithic => regions.memtable_size,
        MemoryComponent::Partitioned => regions.write_memory / 2,
    };
    let bytes = |t: usize| mems[t].active_bytes();
    let largest = (0..mems.len()).max_by_key(|&t| bytes(t))?;
    let total: usize = (0..mems.len()).map(bytes).sum();
    (bytes(largest) > 0 && (bytes(largest) >= one || total >= regions.write_memory)).then_some(largest)
}
