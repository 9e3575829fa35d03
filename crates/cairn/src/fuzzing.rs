//! Entry points for the fuzz targets in `fuzz/` and for replaying their corpora as ordinary
//! tests: each feeds arbitrary bytes to one decoder and exercises what it returns. None may
//! panic, hang or allocate from an unchecked length; errors are the expected outcome.

use crate::env::{write_all_synced, FileSystem, MemFs};
use crate::filter::grafite::GrafiteFilter;
use crate::filter::range::{Kind, RangeFilter};
use crate::filter::rosetta::{ProbeLimits, RosettaFilter};
use crate::format::ikey::{split, KeyOrder, LookupKey, MAX_SEQNO};
use crate::iter::InternalIterator;
use crate::iter::KeyBounds;
use crate::sst::{Block, ReaderOptions, TableReader, UnitSelection};
use crate::stats::IoStats;
use crate::version::{Version, VersionEdit};
use crate::wal::{RecoveryMode, WalReader};
use std::path::Path;
use std::sync::Arc;

/// Walks an iterator forward and backward, at most `limit` steps each way; returns keys seen.
fn walk(it: &mut dyn InternalIterator, limit: usize) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    it.seek_to_first();
    while it.valid() && keys.len() < limit {
        keys.push(it.key().to_vec());
        let _ = it.value();
        it.next();
    }
    it.seek_to_last();
    let mut n = 0;
    while it.valid() && n < limit {
        it.prev();
        n += 1;
    }
    for k in keys.iter().take(8) {
        it.seek(k);
        it.seek_for_prev(k);
    }
    let _ = it.status();
    keys
}

/// A data or index block, read both as a plain block and as an index block with delta handles.
pub fn block(data: &[u8]) {
    for delta in [false, true] {
        block_as(data, delta);
    }
}

fn block_as(data: &[u8], delta: bool) {
    if let Ok(b) = Block::new_index(data.to_vec(), Arc::from(Path::new("fuzz.block")), 0, delta) {
        let b = Arc::new(b);
        for order in [KeyOrder::Internal, KeyOrder::Bytewise] {
            let mut it = b.iter(order);
            it.seek_among_restarts(1, 3, data.get(..data.len().min(16)).unwrap_or_default());
            let _ = it.value();
            let mut it = b.iter(order);
            walk(&mut it, 4096);
            let target = data.get(..data.len().min(24)).unwrap_or_default();
            it.seek(target);
            // The hash index's point seek, from whatever restart the input's buckets name.
            if let crate::sst::HashHint::Restart(r) = b.hash_hint(crate::filter::key_hash(target)) {
                it.seek_from_restart(r, target);
            }
            for r in 0..4 {
                it.seek_from_restart(r, target);
            }
        }
    }
}

/// A whole table file: open, iterate, and look up keys seen plus one made from the input.
pub fn table(data: &[u8]) {
    let fs = MemFs::new();
    let path = Path::new("/f/000007.sst");
    if fs.create_dir_all(Path::new("/f")).is_err() || write_all_synced(&fs, path, data).is_err() {
        return;
    }
    let opts = ReaderOptions {
        direct: false,
        cache: None,
        stats: Arc::new(IoStats::new()),
        meta_region: None,
        index_region: None,
        reserve_in_cache: false,
        range_region: None,
        // Half the inputs read filter units through the (absent) cache, half pin them.
        filter_region: (data.len() % 2 == 0).then(|| Arc::new(crate::memory::Region::new(usize::MAX))),
        ghost: None,
        // A third of the inputs are read as an ingested table's.
        global_seqno: if data.len() % 3 == 0 { 5 } else { 0 },
    };
    let Ok(t) = TableReader::open(&fs, path, None, opts) else {
        return;
    };
    let t = Arc::new(t);
    let mut it = t.iter();
    let keys = walk(&mut it, 4096);
    let mut probes: Vec<Vec<u8>> = keys
        .iter()
        .take(16)
        .filter_map(|k| split(k).map(|(uk, _, _)| uk.to_vec()))
        .collect();
    probes.push(data.iter().rev().take(16).copied().collect());
    for k in probes {
        let _ = t.lookup(&LookupKey::new(&k, MAX_SEQNO), UnitSelection::All);
    }
    let _ = t.with_range_filter(true, |f| query_any_range_filter(f, data));
}

/// A range-deletion block: decode, then query keys made from the input and the fragments'
/// own bounds, and re-encode (what decodes must encode back to the same bytes).
pub fn range_del(data: &[u8]) {
    if let Ok(f) = crate::range_del::block::decode(data) {
        assert_eq!(
            crate::range_del::block::encode(&f),
            data,
            "range-deletion block round trip"
        );
        let probe = data.get(..data.len().min(12)).unwrap_or_default();
        let _ = f.covering(probe, MAX_SEQNO);
        for frag in f.fragments().iter().take(64) {
            assert!(
                f.covering(&frag.start, MAX_SEQNO) > 0,
                "a fragment does not cover its start"
            );
            let _ = f.covering(&frag.end, 1);
        }
        let _ = (
            f.key_bounds(),
            f.seq_bounds(),
            f.clipped(Some(probe), None),
            f.compacted(7, |_, _| true),
        );
    }
}

/// A range-filter block of any version (its first byte): decode, then query ranges and keys
/// taken from the input and fixed ones.
pub fn range_filter(data: &[u8]) {
    if let Some(&version) = data.first() {
        if let Ok(f) = RangeFilter::decode(version, data.to_vec()) {
            query_any_range_filter(&f, data);
        }
    }
}

/// A Grafite block (version 2): decode, then query as [`range_filter`] does.
pub fn grafite(data: &[u8]) {
    if let Ok(f) = RangeFilter::decode(2, data.to_vec()) {
        query_any_range_filter(&f, data);
    }
}

fn query_any_range_filter(f: &RangeFilter, data: &[u8]) {
    match f.kind() {
        Kind::Rosetta(r) => query_range_filter(r, data),
        Kind::Grafite(g) => query_grafite(g, data),
    }
    // Keys and bounds made from the input, through the projection.
    let p = f.projection();
    let (lo, hi) = data.split_at(data.len() / 2);
    let _ = f.may_contain_key(lo);
    let bounds = KeyBounds {
        lo: std::ops::Bound::Included(lo.to_vec()),
        hi: std::ops::Bound::Excluded(hi.to_vec()),
    };
    if let Some(Some((prefix, a, b))) = p.interval(&bounds) {
        assert!(a <= b && b <= p.max_value(), "projection interval out of order");
        let _ = (p.smallest_key_of(prefix, a), p.project(lo));
    }
}

fn query_grafite(f: &GrafiteFilter, data: &[u8]) {
    let (x, w) = (input_word(data, 0), input_word(data, 8) >> (input_word(data, 16) % 64));
    for (a, b) in [
        (x, x.saturating_add(w)),
        (0, u64::MAX),
        (x, x),
        (u64::MAX - 3, u64::MAX),
    ] {
        if f.may_contain_range(a, a) || f.may_contain_range(b, b) {
            assert!(
                f.may_contain_range(a, b),
                "a range says empty where its end may hold a key"
            );
        }
        let _ = f.may_contain_projection(a);
    }
    let _ = (f.keys(), f.universe(), f.memory(), f.bits_per_key());
}

/// The little-endian word at byte `i` of the input, zero-padded.
fn input_word(data: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    for (j, x) in data.iter().skip(i).take(8).enumerate() {
        b[j] = *x;
    }
    u64::from_le_bytes(b)
}

fn query_range_filter(f: &RosettaFilter, data: &[u8]) {
    let (x, w) = (input_word(data, 0), input_word(data, 8) >> (input_word(data, 16) % 64));
    let limits = ProbeLimits::default();
    for (a, b) in [
        (x, x.saturating_add(w)),
        (0, u64::MAX),
        (x, x),
        (u64::MAX - 3, u64::MAX),
        (5, 4),
    ] {
        let lo = f.first_maybe(a, b, limits, None);
        let hi = f.last_maybe(a, b, limits, None);
        // Both directions agree on emptiness, and their bounds lie in the range.
        assert_eq!(lo.is_some(), hi.is_some(), "range filter directions disagree");
        if let (Some(l), Some(h)) = (lo, hi) {
            assert!(a <= l && l <= h && h <= b, "tightened bounds outside the range");
        }
        let _ = f.may_contain_projection(a);
    }
    let _ = (f.levels(), f.num_bits(), f.keys(), f.key_offset());
}

/// A WAL file under every recovery mode.
pub fn wal(data: &[u8]) {
    for mode in [
        RecoveryMode::PointInTime,
        RecoveryMode::TolerateCorruptedTail,
        RecoveryMode::AbsoluteConsistency,
    ] {
        for_each_record(data, mode, |_| {});
    }
}

fn for_each_record(data: &[u8], mode: RecoveryMode, mut f: impl FnMut(&[u8])) {
    let fs = MemFs::new();
    let path = Path::new("/f/000005.wal");
    if fs.create_dir_all(Path::new("/f")).is_err() || write_all_synced(&fs, path, data).is_err() {
        return;
    }
    let Ok(file) = fs.open_read(path, Default::default()) else {
        return;
    };
    let mut r = WalReader::new(file, path, 5, mode);
    // Every record is at least one fragment header long, so this bounds the loop.
    for _ in 0..=data.len() / crate::wal::HEADER_LEN {
        match r.next_record() {
            Ok(Some(rec)) => f(&rec.body),
            Ok(None) | Err(_) => break,
        }
    }
}

/// A MANIFEST: its records decoded as version edits and applied in order, as recovery does.
pub fn manifest(data: &[u8]) {
    let mut v = Version::default();
    let mut ok = true;
    for_each_record(data, RecoveryMode::PointInTime, |body| {
        if !ok {
            return;
        }
        match VersionEdit::decode(body).map(|e| v.apply(&e)) {
            Ok(Ok(next)) => {
                // Re-encoding what was decoded must round-trip.
                let snap = next.snapshot_edit(&[]);
                let _ = VersionEdit::decode(&snap.encode());
                v = next;
            }
            _ => ok = false,
        }
    });
}

/// An OPTIONS file.
pub fn options(data: &[u8]) {
    let _ = crate::options::parse_options_file(data);
}
