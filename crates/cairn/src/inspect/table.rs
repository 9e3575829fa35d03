//! A table (`NNNNNN.sst`, spec `docs/format/sst.md`): its dump and its verification.

use super::{Bytes, Damage, VerifyReport};
use crate::env::FileSystem;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::filter::bloom::BloomFilter;
use crate::format::ikey::{self, ValueKind};
use crate::iter::InternalIterator;
use crate::sst::{IterOptions, ReaderOptions, TableReader};
use crate::stats::IoStats;
use crate::version::FileMeta;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Reads the table without a cache, counting into a throw-away counter, its entries with
/// `global_seqno` (an ingested table's, from its manifest entry; 0: as stored).
fn open(fs: &dyn FileSystem, path: &Path, global_seqno: u64) -> Result<Arc<TableReader>> {
    let number = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| match filename::parse(n) {
            FileKind::Table(n) => Some(n),
            _ => None,
        });
    let opts = ReaderOptions {
        global_seqno,
        ..ReaderOptions::default()
    };
    Ok(Arc::new(TableReader::open(fs, path, number, opts)?))
}

fn scan_options() -> IterOptions {
    IterOptions {
        fill_cache: false,
        stats: Some(Arc::new(IoStats::new())),
        readahead: 2 << 20,
        ..crate::sst::IterOptions::default()
    }
}

fn io_err(path: &Path, e: std::io::Error) -> Error {
    Error::io("write", path, e)
}

/// What [`dump_table_with`] prints besides the summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableDump {
    /// Every entry.
    pub entries: bool,
    /// Every index entry (one per data block).
    pub index: bool,
}

/// Writes what table `path` holds to `out`: footer, properties, the filter decision, every
/// segment with its key range and filter units, and with `entries` every entry (the index's
/// entries: [`dump_table_with`]).
///
/// # Errors
/// `Corruption` when the table cannot be opened (damaged footer, metaindex, properties or
/// index) or an entry cannot be read; I/O errors, also from `out`.
pub fn dump_table(fs: &dyn FileSystem, path: &Path, entries: bool, bytes: Bytes, out: &mut dyn Write) -> Result<()> {
    dump_table_with(fs, path, TableDump { entries, index: false }, bytes, out)
}

/// [`dump_table`], choosing what to list: the entries, the index entries, or both.
///
/// # Errors
/// As [`dump_table`].
pub fn dump_table_with(
    fs: &dyn FileSystem,
    path: &Path,
    what: TableDump,
    bytes: Bytes,
    out: &mut dyn Write,
) -> Result<()> {
    let entries = what.entries;
    let t = open(fs, path, 0)?;
    let p = t.properties();
    let w = |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| io_err(path, e));
    let footer = t.footer();
    let show_ikey = |k: &[u8]| match ikey::split(k) {
        Some((u, seq, kind)) => format!(
            "{} @{} {}",
            super::key_text(bytes, u),
            super::seq_text(seq),
            kind_name(kind)
        ),
        None => format!("(malformed {})", Bytes::Hex.show(k)),
    };
    w(out, format!("table {}", path.display()))?;
    w(
        out,
        format!(
            "  file {} bytes, format version {}, written as file {}, created {}",
            t.file_size(),
            footer.version,
            p.file_number,
            super::iso_time(p.creation_time)
        ),
    )?;
    w(
        out,
        format!(
            "  footer: metaindex at {} ({} bytes), index at {} ({} bytes)",
            footer.metaindex.offset, footer.metaindex.size, footer.index.offset, footer.index.size
        ),
    )?;
    w(
        out,
        format!(
            "  entries {} ({} tombstones), data blocks {}, raw keys {} bytes, raw values {} bytes",
            p.entries, p.tombstones, p.data_blocks, p.raw_key_bytes, p.raw_value_bytes
        ),
    )?;
    w(
        out,
        format!(
            "  data {} bytes, filters {} bytes, index {} bytes; block size {}, segment size {}, compression {}",
            p.data_size,
            p.filter_size,
            p.index_size,
            p.block_size,
            p.segment_size,
            p.compression.name()
        ),
    )?;
    w(out, format!("  smallest {}", show_ikey(&p.smallest_key)))?;
    w(out, format!("  largest  {}", show_ikey(&p.largest_key)))?;
    w(
        out,
        format!(
            "  seqnos {}..={}",
            super::seq_text(p.smallest_seqno),
            super::seq_text(p.largest_seqno)
        ),
    )?;
    let units: Vec<String> = p
        .filter
        .units
        .iter()
        .map(|u| format!("{:.2} bits/key (seed {})", u.bpk, u.seed))
        .collect();
    w(
        out,
        format!(
            "  point filter: policy {}, {} unit(s) per segment, {:.2} bits/key in all{}{}",
            p.filter.policy,
            units.len(),
            p.filter.total_bpk(),
            if units.is_empty() { "" } else { ": " },
            units.join(", ")
        ),
    )?;
    match t.range_filter_slot() {
        Some((v, h)) => w(
            out,
            format!(
                "  range filter: version {v} ({}), at {} ({} bytes)",
                crate::filter::range::version_name(v),
                h.offset,
                h.size
            ),
        )?,
        None => w(out, "  range filter: none".into())?,
    }
    let rd = t.range_dels();
    if rd.is_empty() {
        w(out, "  range deletions: none".into())?;
    } else {
        w(
            out,
            format!("  range deletions: {} in {} fragment(s)", p.range_deletions, rd.len()),
        )?;
        for f in rd.fragments() {
            let seqs: Vec<String> = f.seqs.iter().map(|&s| super::seq_text(s)).collect();
            w(
                out,
                format!(
                    "    [{} .. {}) @{}",
                    super::key_text(bytes, &f.start),
                    super::key_text(bytes, &f.end),
                    seqs.join(",")
                ),
            )?;
        }
    }
    w(out, format!("  segments: {}", p.segments.len()))?;
    for (i, s) in p.segments.iter().enumerate() {
        w(
            out,
            format!(
                "    segment {i}: blocks {}..{}, data at {} ({} bytes), {} entries, {} distinct keys, keys {} ..= {}",
                s.first_block,
                s.first_block + s.block_count,
                s.data_offset,
                s.data_len,
                s.entries,
                s.distinct_keys,
                super::key_text(bytes, &s.smallest_user_key),
                super::key_text(bytes, &s.largest_user_key)
            ),
        )?;
        for (u, h) in s.units.iter().enumerate() {
            let bpk = if s.distinct_keys > 0 {
                (h.size * 8) as f64 / s.distinct_keys as f64
            } else {
                0.0
            };
            w(
                out,
                format!(
                    "      unit {u}: at {} ({} bytes, {bpk:.2} bits per distinct key)",
                    h.offset, h.size
                ),
            )?;
        }
    }
    if what.index {
        w(
            out,
            format!(
                "  index: {} entries ({} keys)",
                p.data_blocks,
                if p.index_user_keys { "user" } else { "internal" }
            ),
        )?;
        let mut index_lines = Vec::new();
        t.for_each_index_entry(|key, h| {
            index_lines.push(format!(
                "    block at {} ({} bytes): key {}",
                h.offset,
                h.size,
                if p.index_user_keys {
                    super::key_text(bytes, key)
                } else {
                    show_ikey(key)
                }
            ));
        })?;
        for l in index_lines {
            w(out, l)?;
        }
    } else {
        w(
            out,
            format!(
                "  index: {} entries with {} keys (listed with --index)",
                p.data_blocks,
                if p.index_user_keys { "user" } else { "internal" }
            ),
        )?;
    }
    if entries {
        w(out, "  entries:".into())?;
        let mut it = t.iter_with(scan_options());
        it.seek_to_first();
        while it.valid() {
            let line = match ikey::split(it.key()) {
                Some((_, _, ValueKind::Delete)) => format!("    {}", show_ikey(it.key())),
                Some((_, _, ValueKind::Expiring)) => format!(
                    "    {} => {}",
                    show_ikey(it.key()),
                    super::expiring_text(bytes, it.value())
                ),
                _ => format!("    {} => {}", show_ikey(it.key()), bytes.show(it.value())),
            };
            w(out, line)?;
            it.next();
        }
        it.status()?;
    }
    Ok(())
}

fn kind_name(k: ValueKind) -> &'static str {
    match k {
        ValueKind::Put => "put",
        ValueKind::Delete => "delete",
        ValueKind::RangeDelete => "delete_range",
        ValueKind::Merge => "merge",
        ValueKind::Expiring => "put-ttl",
    }
}

/// Verifies table `path` on its own: every block's checksum, that its entries are in order and
/// agree with its properties, and that every filter unit holds every key of its segment.
pub fn verify_table(fs: &dyn FileSystem, path: &Path) -> VerifyReport {
    let mut report = VerifyReport::default();
    check_table(fs, path, None, None, &mut report);
    report
}

/// Adds what is wrong with table `path` to `report`: every block's checksum and structure, its
/// properties against what it holds and, when given, against its manifest entry `meta` and
/// the database's id.
pub(super) fn check_table(
    fs: &dyn FileSystem,
    path: &Path,
    meta: Option<&FileMeta>,
    db_id: Option<u64>,
    report: &mut VerifyReport,
) {
    check_table_with(fs, path, meta, db_id, report, |_, _| None);
}

/// [`check_table`], asking `entry` about each entry in order (its internal key as read and its
/// value): what it returns is damage at that entry, and ends the scan.
pub(crate) fn check_table_with(
    fs: &dyn FileSystem,
    path: &Path,
    meta: Option<&FileMeta>,
    db_id: Option<u64>,
    report: &mut VerifyReport,
    mut entry: impl FnMut(&[u8], &[u8]) -> Option<String>,
) {
    report.checked.push(("table", path.to_path_buf()));
    let global = meta.map_or(0, |m| m.global_seqno);
    let t = match open(fs, path, global) {
        Ok(t) => t,
        Err(e) => {
            report.damage.push(Damage::from_error(path, &e));
            return;
        }
    };
    let damage = std::cell::RefCell::new(Vec::new());
    let damaged = |offset: u64, what: String| {
        damage.borrow_mut().push(Damage {
            file: path.to_path_buf(),
            offset,
            what,
        });
    };
    let p = t.properties().clone();
    let mut blocks = 3 + p.data_blocks; // metaindex, properties, index
    let mut entries = 0u64;
    let mut tombstones = 0u64;
    let mut seqnos = (u64::MAX, 0u64);
    let (mut first, mut last): (Option<Vec<u8>>, Vec<u8>) = (None, Vec::new());
    // Each unit of a segment, read and checked alone.
    let mut units: Vec<Vec<Option<BloomFilter>>> = Vec::with_capacity(p.segments.len());
    for (s, seg) in p.segments.iter().enumerate() {
        let mut row = Vec::with_capacity(seg.units.len());
        for u in 0..seg.units.len() {
            blocks += 1;
            match t.read_filter_unit(s, u) {
                Ok(f) => row.push(Some(f)),
                Err(e) => {
                    let d = Damage::from_error(path, &e);
                    damaged(d.offset, format!("segment {s} unit {u}: {}", d.what));
                    row.push(None);
                }
            }
        }
        units.push(row);
    }
    if t.range_filter_slot().is_some() {
        blocks += 1;
        if let Err(e) = t.read_range_filter() {
            let d = Damage::from_error(path, &e);
            damaged(d.offset, d.what);
        }
    }
    let mut seg = 0usize;
    let mut missing_in_filter = 0u64;
    let mut it = t.iter_with(scan_options());
    it.seek_to_first();
    while it.valid() {
        let k = it.key();
        let Some((user, seq, kind)) = ikey::split(k) else {
            damaged(0, format!("entry {entries} has a malformed key"));
            break;
        };
        if first.is_some() && ikey::compare(&last, k).is_ge() {
            damaged(0, format!("entry {entries} is out of order"));
            break;
        }
        if let Some(what) = entry(k, it.value()) {
            damaged(0, format!("entry {entries}: {what}"));
            break;
        }
        if first.is_none() || ikey::user_key(&last) != user {
            while p
                .segments
                .get(seg)
                .is_some_and(|s| s.largest_user_key.as_slice() < user)
            {
                seg += 1;
            }
            let h = crate::filter::bloom::key_hash(user);
            if let Some(row) = units.get(seg) {
                missing_in_filter += row.iter().flatten().filter(|f| !f.may_contain_hash(h)).count() as u64;
            }
        }
        first.get_or_insert_with(|| k.to_vec());
        last.clear();
        last.extend_from_slice(k);
        entries += 1;
        tombstones += u64::from(kind == ValueKind::Delete);
        seqnos = (seqnos.0.min(seq), seqnos.1.max(seq));
        it.next();
    }
    if let Err(e) = it.status() {
        let d = Damage::from_error(path, &e);
        damaged(d.offset, format!("data block: {}", d.what));
        report.damage.append(&mut damage.borrow_mut());
        report.blocks += blocks;
        report.entries += entries;
        return;
    }
    if missing_in_filter > 0 {
        damaged(
            0,
            format!("{missing_in_filter} key probes answered absent by a filter unit of their own segment"),
        );
    }
    let expect = |what: &str, found: &dyn std::fmt::Display, recorded: &dyn std::fmt::Display, source: &str| {
        let (found, recorded) = (found.to_string(), recorded.to_string());
        if found != recorded {
            damaged(
                0,
                format!("{what}: the table holds {found}, {source} records {recorded}"),
            );
        }
    };
    let hex = |k: &[u8]| Bytes::Hex.show(k);
    let mut first = first.unwrap_or_default();
    // The range tombstones widen the table's range as the writer did.
    t.range_dels().widen(entries == 0, &mut first, &mut last, &mut seqnos);
    // An ingested table's bounds, widened ones too, read with its global sequence number
    // (as its manifest entry was made).
    let (first, last) = (ikey::read_as(&first, global), ikey::read_as(&last, global));
    let props = "its properties block";
    let seg_entries: u64 = p.segments.iter().map(|s| s.entries).sum();
    expect("entries", &entries, &p.entries, props);
    expect("entries", &entries, &seg_entries, "its segment list");
    expect("tombstones", &tombstones, &p.tombstones, props);
    // An ingested table's properties hold its keys as stored (sequence number 0).
    expect(
        "smallest key",
        &hex(&first),
        &hex(&ikey::read_as(&p.smallest_key, global)),
        props,
    );
    expect(
        "largest key",
        &hex(&last),
        &hex(&ikey::read_as(&p.largest_key, global)),
        props,
    );
    if let Some(m) = meta {
        let manifest = "the manifest";
        expect("entries", &entries, &m.entries, manifest);
        expect("tombstones", &tombstones, &m.tombstones, manifest);
        expect("range deletions", &p.range_deletions, &m.range_deletions, manifest);
        expect("smallest key", &hex(&first), &hex(&m.smallest), manifest);
        expect("largest key", &hex(&last), &hex(&m.largest), manifest);
        if entries > 0 || p.range_deletions > 0 {
            expect(
                "seqnos",
                &format!("{}..={}", seqnos.0, seqnos.1),
                &format!("{}..={}", m.smallest_seqno, m.largest_seqno),
                manifest,
            );
        }
        expect("size", &t.file_size(), &m.size, manifest);
        if let Some(id) = db_id.filter(|&id| p.written_by_other(id)) {
            damaged(
                0,
                format!(
                    "written by another database (id {:016x}; the manifest's is {id:016x})",
                    p.db_id
                ),
            );
        }
        expect("segments", &p.segments.len(), &m.segments, manifest);
    }
    report.damage.append(&mut damage.borrow_mut());
    report.blocks += blocks;
    report.entries += entries;
}
