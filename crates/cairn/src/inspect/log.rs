//! Logs: a WAL (`NNNNNN.wal`, spec `docs/format/wal.md`) and the manifest (`MANIFEST-NNNNNN`,
//! spec `docs/format/manifest.md`), dumped record by record and verified.

use super::{Bytes, Damage, VerifyReport};
use crate::batch::DecodedBatch;
use crate::env::{FileSystem, ReadOptions};
use crate::error::{Error, Result};
use crate::format::ikey::ValueKind;
use crate::version::{manifest, VersionEdit};
use crate::wal::{RecoveryMode, WalEnd, WalReader};
use std::io::Write;
use std::path::Path;

/// The log number a WAL or manifest file name carries (`000012.wal`, `MANIFEST-000003`): the
/// number every record of the file must carry.
fn log_number(path: &Path) -> Result<u64> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let digits = name
        .strip_prefix("MANIFEST-")
        .or_else(|| name.strip_suffix(".wal"))
        .unwrap_or(name);
    digits.parse::<u64>().map_err(|_| {
        Error::InvalidArgument(format!(
            "{}: the log number comes from the file name (NNNNNN.wal or MANIFEST-NNNNNN)",
            path.display()
        ))
    })
}

/// One record of a log, or how the log ended.
enum Item {
    Record {
        offset: u64,
        end: u64,
        body: Vec<u8>,
    },
    /// The log ended: `None` cleanly, else the damage that ended it and whether it is only a
    /// torn tail (bytes past the last sync).
    End(Option<(Damage, bool)>),
}

/// Reads log `path` under `PointInTime`: damage that a later record proves was synced is
/// corruption; damage past the last sync is a torn tail.
fn read_log(fs: &dyn FileSystem, path: &Path, mut each: impl FnMut(Item) -> Result<()>) -> Result<()> {
    let file = fs.open_read(path, ReadOptions::default())?;
    let mut r = WalReader::new(file, path, log_number(path)?, RecoveryMode::PointInTime);
    loop {
        match r.next_record() {
            Ok(Some(rec)) => each(Item::Record {
                offset: rec.offset,
                end: rec.end_offset,
                body: rec.body,
            })?,
            Ok(None) => break,
            Err(e) => return each(Item::End(Some((Damage::from_error(path, &e), false)))),
        }
    }
    match r.end() {
        WalEnd::TornTail { offset, what } | WalEnd::CorruptionTolerated { offset, what } => {
            let d = Damage {
                file: path.to_path_buf(),
                offset: *offset,
                what: what.clone(),
            };
            each(Item::End(Some((d, true))))
        }
        _ => each(Item::End(None)),
    }
}

fn ending(end: Option<&(Damage, bool)>) -> String {
    match end {
        None => "ends cleanly".into(),
        Some((d, true)) => format!(
            "ends in a torn tail at offset {} ({}): bytes past the last sync, normal after a crash",
            d.offset, d.what
        ),
        Some((d, false)) => format!(
            "DAMAGED at offset {}: {} (synced records follow; recovery refuses this log)",
            d.offset, d.what
        ),
    }
}

/// Writes WAL `path` record by record to `out`: the header (database id), then each batch's
/// offset, sequence numbers and operations (tree, kind, key, with `values` the value), and
/// where and why the log ends.
///
/// # Errors
/// I/O errors, also from `out`; `InvalidArgument` when the name carries no log number. Damage
/// is printed, not returned.
pub fn dump_wal(fs: &dyn FileSystem, path: &Path, values: bool, bytes: Bytes, out: &mut dyn Write) -> Result<()> {
    let w = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("write", path, e));
    w(out, format!("wal {} (log {})", path.display(), log_number(path)?))?;
    let (mut records, mut ops) = (0u64, 0u64);
    read_log(fs, path, |item| match item {
        Item::Record { offset, end, body } => {
            records += 1;
            if let Some(h) = crate::wal::parse_header(&body) {
                let first = h.first_seq.map_or_else(String::new, |s| format!(", first seq {s}"));
                return w(out, format!("  @{offset}: header, database id {:016x}{first}", h.db_id));
            }
            if let Some((first, last)) = crate::wal::parse_skip(&body) {
                return w(
                    out,
                    format!("  @{offset}: seq {first}..={last} given to ingested tables"),
                );
            }
            let batch = match DecodedBatch::parse(&body) {
                Ok(b) => b,
                Err(e) => return w(out, format!("  @{offset}: undecodable batch ({e})")),
            };
            let last = (batch.seqno + u64::from(batch.count)).saturating_sub(1);
            w(
                out,
                format!(
                    "  @{offset}..{end}: batch seq {}..={last}, {} op(s)",
                    batch.seqno, batch.count
                ),
            )?;
            for op in batch.ops() {
                match op {
                    Ok(op) => {
                        ops += 1;
                        let (verb, arrow) = match op.kind {
                            ValueKind::Merge => ("merge", "<="),
                            ValueKind::RangeDelete => ("delete_range", ".."),
                            _ => ("put", "=>"),
                        };
                        let (tree, key) = (op.tree, bytes.show(op.key));
                        let line = match (op.kind, values) {
                            (ValueKind::Delete, _) => format!("    tree {tree} delete {key}"),
                            (ValueKind::Expiring, true) => {
                                format!("    tree {tree} put {key} => {}", super::expiring_text(bytes, op.value))
                            }
                            (ValueKind::Expiring, false) => format!(
                                "    tree {tree} put {key} ({} byte value, {})",
                                op.value.len().saturating_sub(crate::ttl::DEADLINE_LEN),
                                super::deadline_text(op.value)
                            ),
                            // A range's end is a key: always shown.
                            (ValueKind::RangeDelete, _) | (_, true) => {
                                format!("    tree {tree} {verb} {key} {arrow} {}", bytes.show(op.value))
                            }
                            (_, false) => format!("    tree {tree} {verb} {key} ({} byte value)", op.value.len()),
                        };
                        w(out, line)?;
                    }
                    Err(e) => w(out, format!("    undecodable op ({e})"))?,
                }
            }
            Ok(())
        }
        Item::End(end) => w(
            out,
            format!("  {records} record(s), {ops} op(s); the log {}", ending(end.as_ref())),
        ),
    })
}

/// Writes the manifest of database `dir` (the one CURRENT names) edit by edit to `out`.
///
/// # Errors
/// `Corruption` for a damaged CURRENT; I/O errors. A damaged edit is printed, not returned.
pub fn dump_manifest(fs: &dyn FileSystem, dir: &Path, bytes: Bytes, out: &mut dyn Write) -> Result<()> {
    let (_, path) = manifest::read_current(fs, dir)?;
    let w = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("write", &path, e));
    w(out, format!("manifest {} (named by CURRENT)", path.display()))?;
    let mut edits = 0u64;
    read_log(fs, &path, |item| match item {
        Item::Record { body, .. } if body.is_empty() => Ok(()), // the sync marker after an edit
        Item::Record { offset, body, .. } => {
            edits += 1;
            match VersionEdit::decode(&body) {
                Ok(e) => w(out, format!("  @{offset}: {}", describe_edit(&e, bytes))),
                Err(e) => w(out, format!("  @{offset}: undecodable edit ({e})")),
            }
        }
        Item::End(end) => w(out, format!("  {edits} edit(s); the manifest {}", ending(end.as_ref()))),
    })
}

fn describe_edit(e: &VersionEdit, bytes: Bytes) -> String {
    let mut parts = Vec::new();
    if let Some(id) = e.db_id {
        parts.push(format!("database id {id:016x}"));
    }
    for (id, name) in &e.new_trees {
        parts.push(format!("new tree {id} {name:?}"));
    }
    for id in &e.dropped_trees {
        parts.push(format!("drop tree {id}"));
    }
    for (t, n) in &e.log_numbers {
        parts.push(format!("tree {t} log {n}"));
    }
    for (t, l) in &e.deepest {
        parts.push(format!("tree {t} deepest level {l}"));
    }
    for (t, l, n) in &e.deleted {
        parts.push(format!("delete tree {t} L{l} #{n}"));
    }
    for (t, l, f) in &e.added {
        parts.push(format!(
            "add tree {t} L{l} #{} ({} bytes, {} entries, {} tombstones, seq {}..={}, keys {} ..= {}, {} segment(s), filter {} {:.2} bits/key)",
            f.number,
            f.size,
            f.entries,
            f.tombstones,
            super::seq_text(f.smallest_seqno),
            super::seq_text(f.largest_seqno),
            super::key_text(bytes, f.smallest_user_key()),
            super::key_text(bytes, f.largest_user_key()),
            f.segments,
            f.filter_policy,
            f.filter_bpk
        ));
        if f.global_seqno != 0 {
            parts.push(format!("#{} ingested: read at seq {}", f.number, f.global_seqno));
        }
    }
    if let Some(n) = e.next_file_number {
        parts.push(format!("next file {n}"));
    }
    if let Some(s) = e.last_seqno {
        parts.push(format!("last seq {s}"));
    }
    if parts.is_empty() {
        "empty edit".into()
    } else {
        parts.join("; ")
    }
}

/// Adds what is wrong with WAL `path` to `report`: checksums, record framing, every batch's
/// encoding and the header's database id (when `db_id` is known); a torn tail is a note.
pub(super) fn check_wal(fs: &dyn FileSystem, path: &Path, db_id: Option<u64>, report: &mut VerifyReport) {
    report.checked.push(("wal", path.to_path_buf()));
    let r = read_log(fs, path, |item| {
        match item {
            Item::Record { offset, body, .. } => {
                report.entries += 1;
                if let Some(id) = crate::wal::parse_header(&body).map(|h| h.db_id) {
                    if let Some(mine) = db_id.filter(|&mine| mine != id) {
                        report.damage.push(Damage {
                            file: path.to_path_buf(),
                            offset,
                            what: format!("log of another database (id {id:016x}; this database is {mine:016x})"),
                        });
                    }
                    return Ok(());
                }
                if crate::wal::parse_skip(&body).is_some() {
                    return Ok(());
                }
                let bad = DecodedBatch::parse(&body).and_then(|b| b.ops().find_map(|op| op.err()).map_or(Ok(()), Err));
                if let Err(e) = bad {
                    report.damage.push(Damage {
                        file: path.to_path_buf(),
                        offset,
                        what: format!("write batch: {e}"),
                    });
                }
            }
            Item::End(Some((d, true))) => report.notes.push(format!(
                "{}: torn tail at offset {} past the last sync (normal after a crash; its writes were not synced)",
                path.display(),
                d.offset
            )),
            Item::End(Some((d, false))) => report.damage.push(d),
            Item::End(None) => {}
        }
        Ok(())
    });
    if let Err(e) = r {
        report.damage.push(Damage::from_error(path, &e));
    }
}

/// Adds what is wrong with manifest `path` (checksums, framing, edit encoding) to `report`.
pub(super) fn check_manifest(fs: &dyn FileSystem, path: &Path, report: &mut VerifyReport) {
    report.checked.push(("manifest", path.to_path_buf()));
    let r = read_log(fs, path, |item| {
        match item {
            Item::Record { offset, body, .. } => {
                report.entries += 1;
                if let Err(e) = VersionEdit::decode(&body) {
                    report.damage.push(Damage {
                        file: path.to_path_buf(),
                        offset,
                        what: format!("version edit: {e}"),
                    });
                }
            }
            Item::End(Some((d, true))) => report.notes.push(format!(
                "{}: torn tail at offset {} past the last sync",
                path.display(),
                d.offset
            )),
            Item::End(Some((d, false))) => report.damage.push(d),
            Item::End(None) => {}
        }
        Ok(())
    });
    if let Err(e) = r {
        report.damage.push(Damage::from_error(path, &e));
    }
}
