use super::*;
use crate::filter::FilterDecision;
use super::BlockCache;
use crate::env::{read_all, write_all_synced, FileSystem, MemFs};
use crate::format::ikey::{InternalKey, ValueKind};
use crate::iter::InternalIterator;
use crate::range_del::{Fragments, RangeTombstone};
use crate::stats::{BlockKind, IoStats};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Model = BTreeMap<InternalKey, Vec<u8>>;

/// The format versions a table written now carries: its golden files record them, and bytes
/// may change only with one of them (`testutil::check_format_golden`).
fn table_versions() -> String {
    format!(
        "footer {}, properties {}, filter units {}/{}, range filter blocks rosetta {} projected {} grafite {} ({}), range deletions {}",
        super::FORMAT_VERSION,
        super::properties::VERSION,
        crate::filter::bloom::VERSION,
        crate::filter::bloom::VERSION_LOCAL,
        crate::filter::rosetta::VERSION,
        crate::filter::range::ROSETTA_PROJECTED,
        crate::filter::range::GRAFITE,
        crate::filter::grafite::VERSION,
        crate::range_del::block::VERSION,
    )
}

fn fs() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/t")).unwrap();
    fs
}

fn build(fs: &dyn FileSystem, path: &Path, model: &Model, opts: TableOptions) -> TableSummary {
    build_numbered(fs, path, 7, model, opts)
}

/// [`build`] as file number `number`.
fn build_numbered(fs: &dyn FileSystem, path: &Path, number: u64, model: &Model, opts: TableOptions) -> TableSummary {
    build_with_range_dels(fs, path, number, model, opts, Fragments::default())
}

/// [`build_numbered`] with range tombstones.
fn build_with_range_dels(
    fs: &dyn FileSystem,
    path: &Path,
    number: u64,
    model: &Model,
    opts: TableOptions,
    range_dels: Fragments,
) -> TableSummary {
    let mut b = TableBuilder::new(fs.create(path).unwrap(), number, opts, Arc::new(IoStats::new()));
    b.set_creation_time(1_700_000_000);
    for (k, v) in model {
        b.add(k.encoded(), v).unwrap();
    }
    b.set_range_dels(range_dels);
    b.finish().unwrap()
}

fn tombstones(ts: &[(&str, &str, u64)]) -> Fragments {
    Fragments::new(ts.iter().map(|&(a, b, seq)| RangeTombstone {
        start: a.into(),
        end: b.into(),
        seq,
    }))
}

/// A range filter of `bits_per_key` with the default layout.
fn range_filter(bits_per_key: f64) -> Option<super::RangeFilterOptions> {
    range_filter_of(crate::filter::range::RangeFilterKind::Rosetta, bits_per_key)
}

fn range_filter_of(kind: crate::filter::range::RangeFilterKind, bits_per_key: f64) -> Option<super::RangeFilterOptions> {
    Some(super::RangeFilterOptions {
        kind,
        decider: None,
        bits_per_key,
        key_offset: 0,
        sizes: None,
        ends: None,
        probe_budget: 100,
    })
}

fn open(fs: &dyn FileSystem, path: &Path, cache: Option<Arc<BlockCache>>) -> crate::Result<Arc<TableReader>> {
    TableReader::open(
        fs,
        path,
        Some(7),
        ReaderOptions {
            direct: false,
            cache,
            stats: Arc::new(IoStats::new()),
            meta_region: None,
            index_region: None,
            reserve_in_cache: false,
            range_region: None,
            filter_region: None,
            ghost: None,
            global_seqno: 0,
        },
    )
    .map(Arc::new)
}

fn random_key(rng: &mut StdRng, alphabet: u8) -> Vec<u8> {
    (0..rng.gen_range(1..8))
        .map(|_| b'a' + rng.gen_range(0..alphabet))
        .collect()
}

fn random_model(rng: &mut StdRng, n: usize, big: bool) -> Model {
    let mut m = Model::new();
    for _ in 0..n {
        let kind = if rng.gen_bool(0.2) {
            ValueKind::Delete
        } else {
            ValueKind::Put
        };
        let key = if big && rng.gen_bool(0.05) {
            (0..rng.gen_range(1..=65_536)).map(|_| rng.gen()).collect()
        } else {
            random_key(rng, 6)
        };
        let vlen = if big && rng.gen_bool(0.05) {
            rng.gen_range(1..=65_536)
        } else {
            rng.gen_range(1..40)
        };
        let v = if kind == ValueKind::Delete {
            Vec::new()
        } else {
            (0..vlen).map(|_| rng.gen()).collect()
        };
        m.insert(InternalKey::new(&key, rng.gen_range(0..1000), kind), v);
    }
    m
}

/// Newest version of `uk` with seqno ≤ `seq` in the model.
fn model_get(m: &Model, uk: &[u8], seq: u64) -> Option<Found> {
    let start = InternalKey::for_seek(uk, seq);
    let (k, v) = m.range(start..).next()?;
    let (u, s, kind) = crate::format::ikey::split(k.encoded())?;
    (u == uk).then(|| Found {
        kind,
        seqno: s,
        value: v.clone(),
    })
}

/// A reader whose index block lives in `cache` at high priority (`reserve_in_cache`), its size
/// charged to `index_region`.
fn open_cached_index(
    fs: &dyn FileSystem,
    path: &Path,
    cache: &Arc<BlockCache>,
    stats: &Arc<IoStats>,
    index_region: Option<Arc<crate::memory::Region>>,
) -> crate::Result<Arc<TableReader>> {
    TableReader::open(
        fs,
        path,
        Some(7),
        ReaderOptions {
            cache: Some(cache.clone()),
            stats: stats.clone(),
            reserve_in_cache: true,
            index_region,
            ..ReaderOptions::default()
        },
    )
    .map(Arc::new)
}

fn check_table(fs: &dyn FileSystem, path: &Path, model: &Model, rng: &mut StdRng) {
    check_reader(open(fs, path, Some(Arc::new(BlockCache::new(1 << 20, 0.5)))).unwrap(), model, rng);
    // The index in a cache from a few KiB (index and blocks evicted all the time, or too large
    // to be cached at all) to one that holds everything.
    let cache = Arc::new(BlockCache::new(1 << rng.gen_range(12..20), 0.5));
    check_reader(open_cached_index(fs, path, &cache, &Arc::default(), None).unwrap(), model, rng);
}

fn check_reader(t: Arc<TableReader>, model: &Model, rng: &mut StdRng) {
    assert_eq!(t.properties().entries, model.len() as u64);
    let mut it = t.iter();
    crate::iter::conformance::check(&mut it, model, rng, 20, 5, |r| {
        InternalKey::new(&random_key_dyn(r, 7), r.gen_range(0..1000), ValueKind::Put)
    });
    // Point lookups for present keys at several snapshots, and for absent keys.
    let keys: Vec<&InternalKey> = model.keys().collect();
    for _ in 0..300.min(keys.len() * 3 + 10) {
        let uk = if !keys.is_empty() && rng.gen_bool(0.7) {
            keys[rng.gen_range(0..keys.len())].user_key().to_vec()
        } else {
            random_key(rng, 7)
        };
        let seq = rng.gen_range(0..1100);
        let sel = [UnitSelection::All, UnitSelection::None, UnitSelection::First(1)][rng.gen_range(0..3)];
        let got = t.get(&uk, seq, sel).unwrap();
        let want = model_get(model, &uk, seq);
        if got.filter_negative {
            assert!(want.is_none(), "filter said no for a present key");
        } else {
            assert_eq!(got.found, want);
        }
    }
}

#[test]
fn round_trip_random_tables() {
    let mut rng = StdRng::seed_from_u64(1);
    let fs = fs();
    for round in 0..24 {
        let n = [0usize, 1, 2, 50, 2000][round % 5];
        let model = random_model(&mut rng, n, round % 3 == 0);
        let opts = TableOptions {
            block_size: [64, 256, 4096][round % 3],
            restart_interval: [1, 4, 16][round % 3],
            index_restart_interval: [1, 8, 3, 16][round % 4],
            // Half the tables without hash indexes (the version-1 layout of data blocks).
            hash_index: round % 2 == 0,
            compression: [Compression::None, Compression::Lz4, Compression::Zstd][(round / 3) % 3],
            segment_size: [512, 4096, 4 << 20][(round / 2) % 3],
            filter: match round % 4 {
                0 => FilterDecision::uniform(0.0),
                1 => FilterDecision::uniform(10.0),
                2 => FilterDecision::units("elastic", 6, 4.0),
                _ => FilterDecision::uniform(2.5),
            },
            // Cache-local units in a third of the tables (version-2 units).
            cache_local_filters: round % 3 == 1,
            filter_decider: None,
            range_filter: None,
            db_id: round as u64,
        };
        let p = PathBuf::from(format!("/t/{round}.sst"));
        let s = build(&fs, &p, &model, opts.clone());
        assert_eq!(s.file_size, fs.file_size(&p).unwrap());
        check_table(&fs, &p, &model, &mut rng);
        let t = open(&fs, &p, None).unwrap();
        assert_eq!(t.properties(), &s.properties);
        assert_eq!(t.properties().filter, opts.filter);
        if n > 0 {
            assert!(t
                .properties()
                .segments
                .iter()
                .all(|s| s.units.len() == opts.filter.units.len()));
        } else {
            assert!(t.properties().segments.is_empty());
        }
    }
}

#[test]
fn same_user_key_at_many_seqnos_across_segments() {
    let mut model = Model::new();
    for seq in 1..=3000u64 {
        let kind = if seq % 7 == 0 {
            ValueKind::Delete
        } else {
            ValueKind::Put
        };
        model.insert(InternalKey::new(b"hot", seq, kind), seq.to_le_bytes().to_vec());
    }
    model.insert(InternalKey::new(b"a", 5, ValueKind::Put), b"x".to_vec());
    model.insert(InternalKey::new(b"z", 5, ValueKind::Put), b"y".to_vec());
    let fs = fs();
    let p = Path::new("/t/hot.sst");
    let opts = TableOptions {
        block_size: 128,
        segment_size: 1024,
        ..TableOptions::default()
    };
    build(&fs, p, &model, opts);
    let t = open(&fs, p, None).unwrap();
    assert!(t.properties().segments.len() > 10, "the key spans many segments");
    assert!(!t.properties().index_user_keys, "a user key spans blocks: internal index keys");
    for seq in (0..3100u64).step_by(37) {
        let got = t.get(b"hot", seq, UnitSelection::All).unwrap();
        assert_eq!(got.found, model_get(&model, b"hot", seq), "seq {seq}");
    }
    check_table(&fs, p, &model, &mut StdRng::seed_from_u64(2));
}

/// Random seek / seek_for_prev / next / prev against a BTreeMap, with tiny blocks and
/// segments so walks cross block and segment boundaries constantly.
#[test]
fn iterator_conformance_with_btreemap() {
    let mut rng = StdRng::seed_from_u64(9);
    let fs = fs();
    for round in 0..8 {
        let model = random_model(&mut rng, 1500, false);
        let p = PathBuf::from(format!("/t/it{round}.sst"));
        build(
            &fs,
            &p,
            &model,
            TableOptions {
                block_size: 96,
                restart_interval: 3,
                segment_size: 700,
                ..TableOptions::default()
            },
        );
        let t = open(
            &fs,
            &p,
            if round % 2 == 0 {
                None
            } else {
                Some(Arc::new(BlockCache::new(4096, 0.5)))
            },
        )
        .unwrap();
        let mut it = t.iter();
        crate::iter::conformance::check(&mut it, &model, &mut rng, 500, 40, |r| {
            InternalKey::new(&random_key_dyn(r, 7), r.gen_range(0..1000), ValueKind::Put)
        });
    }
}

fn random_key_dyn(rng: &mut dyn rand::RngCore, alphabet: u8) -> Vec<u8> {
    (0..rng.gen_range(1..8))
        .map(|_| b'a' + rng.gen_range(0..alphabet))
        .collect()
}

#[test]
fn io_accounting_is_exact_per_block_kind() {
    let mut model = Model::new();
    for i in 0..1000u32 {
        model.insert(
            InternalKey::new(format!("k{i:05}").as_bytes(), 1, ValueKind::Put),
            vec![1; 50],
        );
    }
    let fs = fs();
    let p = Path::new("/t/io.sst");
    build(
        &fs,
        p,
        &model,
        TableOptions {
            filter: FilterDecision::units("elastic", 3, 4.0),
            segment_size: 8192,
            ..TableOptions::default()
        },
    );
    let stats = Arc::new(IoStats::new());
    let cache = Arc::new(BlockCache::new(1 << 20, 0.5));
    let t = TableReader::open(
        &fs,
        p,
        Some(7),
        ReaderOptions {
            direct: false,
            cache: Some(cache.clone()),
            stats: stats.clone(),
            meta_region: None,
            index_region: None,
            reserve_in_cache: false,
            range_region: None,
            filter_region: None,
            ghost: None,
            global_seqno: 0,
        },
    )
    .unwrap();
    let s0 = stats.snapshot();
    assert_eq!(s0.kind(BlockKind::Meta).reads, 2, "footer + metaindex");
    assert_eq!(s0.kind(BlockKind::Properties).reads, 1);
    assert_eq!(s0.kind(BlockKind::Index).reads, 1);
    // A present key with 2 of 3 units: 2 unit reads + 1 data block read.
    let g = t.get(b"k00500", 5, UnitSelection::First(2)).unwrap();
    assert!(g.found.is_some() && g.data_block_read && g.units_probed == 2);
    let d = stats.snapshot() - s0;
    assert_eq!(d.kind(BlockKind::FilterUnit).reads, 2);
    assert_eq!(d.kind(BlockKind::Data).reads, 1);
    // Again: everything from the cache.
    let s1 = stats.snapshot();
    t.get(b"k00500", 5, UnitSelection::First(2)).unwrap();
    let d = stats.snapshot() - s1;
    assert_eq!(d.total_reads(), 0);
    assert_eq!(d.kind(BlockKind::FilterUnit).cache_hits, 2);
    assert_eq!(d.kind(BlockKind::Data).cache_hits, 1);
    assert_eq!(cache.counters(BlockKind::Data).hits, 1);
    // With no units consulted, absent keys read a data block: an unnecessary read.
    let g = t.get(b"k00500x", 5, UnitSelection::None).unwrap();
    assert!(g.found.is_none() && g.data_block_read && g.units_probed == 0);
    // Past the last key: no block at all.
    let s2 = stats.snapshot();
    let g = t.get(b"zzz", 5, UnitSelection::All).unwrap();
    assert!(!g.data_block_read && g.units_probed == 0);
    assert_eq!((stats.snapshot() - s2).total_reads(), 0);
    // Filter negatives stop before the data block: count over many absent keys.
    let mut negatives = 0;
    let s3 = stats.snapshot();
    // (k00999x sorts after the table's last key, so it is left out.)
    for i in 0..999u32 {
        let g = t.get(format!("k{i:05}x").as_bytes(), 5, UnitSelection::All).unwrap();
        negatives += u64::from(g.filter_negative);
        assert_eq!(g.filter_negative, !g.data_block_read);
    }
    let d = stats.snapshot() - s3;
    assert_eq!(
        d.kind(BlockKind::Data).reads + d.kind(BlockKind::Data).cache_hits,
        999 - negatives
    );
    assert!(negatives > 949, "12 bits per key over three units: {negatives}");
}

/// All block handles of a table, by kind.
fn blocks_of(fs: &dyn FileSystem, p: &Path) -> Vec<(BlockKind, u64, u64)> {
    let data = read_all(fs, p).unwrap();
    let footer = Footer::decode(&data[data.len() - FOOTER_LEN..]).unwrap();
    let t = open(fs, p, None).unwrap();
    let mut out = Vec::new();
    let mut it = t.index_block().unwrap().iter(t.index_order());
    it.seek_to_first();
    while it.valid() {
        let h = BlockHandle::decode(&mut crate::format::coding::Decoder::new(it.value())).unwrap();
        out.push((BlockKind::Data, h.offset, h.size));
        it.next();
    }
    for s in &t.properties().segments {
        for u in &s.units {
            out.push((BlockKind::FilterUnit, u.offset, u.size));
        }
    }
    if let Some((_, h)) = t.range_filter_slot() {
        out.push((BlockKind::RangeFilter, h.offset, h.size));
    }
    if t.properties().range_deletions > 0 {
        // Between the filters and the index (read at open, like the other meta blocks).
        let prev_end = out.iter().map(|&(_, o, s)| o + s + TRAILER_LEN as u64).max().unwrap_or(0);
        out.push((BlockKind::Meta, prev_end, footer.index.offset - prev_end - TRAILER_LEN as u64));
    }
    out.push((BlockKind::Index, footer.index.offset, footer.index.size));
    let props_off = footer.index.offset + footer.index.size + TRAILER_LEN as u64;
    out.push((
        BlockKind::Properties,
        props_off,
        footer.metaindex.offset - props_off - TRAILER_LEN as u64,
    ));
    out.push((BlockKind::Meta, footer.metaindex.offset, footer.metaindex.size));
    out.push((
        BlockKind::Meta,
        data.len() as u64 - FOOTER_LEN as u64,
        FOOTER_LEN as u64 - TRAILER_LEN as u64,
    ));
    out
}

/// Flipping any single bit of any block makes reading that block fail with `Corruption`:
/// at open for footer/metaindex/properties/index, at lookup or scan for data blocks and filter
/// units. Never a panic, never a wrong value.
#[test]
fn every_bit_flip_in_every_block_kind_is_detected() {
    let mut rng = StdRng::seed_from_u64(5);
    let model = random_model(&mut rng, 600, false);
    let fs = fs();
    let p = Path::new("/t/flip.sst");
    build_with_range_dels(
        &fs,
        p,
        7,
        &model,
        TableOptions {
            block_size: 256,
            segment_size: 2048,
            compression: Compression::Lz4,
            filter: FilterDecision::units("elastic", 2, 5.0),
            range_filter: range_filter(12.0),
            ..TableOptions::default()
        },
        tombstones(&[("b", "d", 3), ("c", "e", 5)]),
    );
    let orig = read_all(&fs, p).unwrap();
    let blocks = blocks_of(&fs, p);
    let mut tried = 0;
    let mut per_kind = BTreeMap::new();
    for &(kind, off, size) in &blocks {
        let span = size + TRAILER_LEN as u64;
        let positions: Vec<u64> = (0..12)
            .map(|_| off + rng.gen_range(0..span))
            .chain([off, off + span - 1])
            .collect();
        for pos in positions {
            let mut d = orig.clone();
            d[pos as usize] ^= 1 << rng.gen_range(0..8);
            write_all_synced(&fs, p, &d).unwrap();
            tried += 1;
            *per_kind.entry(kind.name()).or_insert(0) += 1;
            let t = match open(&fs, p, None) {
                Err(e) => {
                    assert!(e.is_corruption(), "{kind:?} at {pos}: {e}");
                    assert!(
                        matches!(kind, BlockKind::Meta | BlockKind::Properties | BlockKind::Index),
                        "{kind:?} failed at open"
                    );
                    continue;
                }
                Ok(t) => t,
            };
            assert!(
                !matches!(kind, BlockKind::Meta | BlockKind::Properties | BlockKind::Index),
                "{kind:?} flip at {pos} not detected at open"
            );
            // Scan: must stop with Corruption, having returned only correct entries.
            let mut it = t.iter();
            it.seek_to_first();
            let mut expect = model.iter();
            while it.valid() {
                let (k, v) = expect.next().unwrap();
                assert_eq!((it.key(), it.value()), (k.encoded(), &v[..]));
                it.next();
            }
            let scan = it.status();
            // Point lookups of every key with all units: wrong answers never, corruption on the
            // damaged block.
            let mut lookup_err = false;
            // Each entry is looked up at its own seqno, so every data block is reached.
            for k in model.keys() {
                let (uk, seq, _) = crate::format::ikey::split(k.encoded()).unwrap();
                match t.get(uk, seq, UnitSelection::All) {
                    Ok(g) => assert_eq!(g.found, model_get(&model, uk, seq)),
                    Err(e) => {
                        assert!(e.is_corruption(), "{e}");
                        lookup_err = true;
                    }
                }
            }
            match kind {
                BlockKind::Data => {
                    assert!(scan.unwrap_err().is_corruption());
                    assert!(lookup_err);
                }
                BlockKind::RangeFilter => {
                    assert!(scan.is_ok(), "scans do not read the range filter");
                    assert!(!lookup_err, "point lookups with units do not read it");
                    let e = t.with_range_filter(true, |_| ()).unwrap_err();
                    assert!(e.is_corruption(), "{e}");
                    assert!(t.read_range_filter().unwrap_err().is_corruption());
                }
                _ => {
                    assert!(scan.is_ok(), "scans do not read filter units");
                    assert!(
                        lookup_err,
                        "filter unit flip at {pos} not detected (block {off}+{size})"
                    );
                }
            }
        }
    }
    eprintln!("bit flips tried: {tried} {per_kind:?}");
    assert!(per_kind.len() == 6 && tried > 300);
}

#[test]
fn truncated_garbage_and_foreign_files_are_rejected_at_open() {
    let mut rng = StdRng::seed_from_u64(8);
    let model = random_model(&mut rng, 300, false);
    let fs = fs();
    let p = Path::new("/t/trunc.sst");
    build(&fs, p, &model, TableOptions::default());
    let orig = read_all(&fs, p).unwrap();
    let mut cuts: Vec<usize> = (0..40).map(|_| rng.gen_range(0..orig.len())).collect();
    cuts.extend([0, 1, FOOTER_LEN - 1, FOOTER_LEN, orig.len() - 1]);
    for cut in cuts {
        write_all_synced(&fs, p, &orig[..cut]).unwrap();
        let e = open(&fs, p, None).unwrap_err();
        assert!(e.is_corruption(), "cut at {cut}: {e}");
        assert!(e.to_string().contains("/t/trunc.sst"), "{e}");
    }
    for len in [10usize, 48, 100, 5000] {
        let junk: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        write_all_synced(&fs, p, &junk).unwrap();
        let e = open(&fs, p, None).unwrap_err();
        assert!(e.is_corruption(), "{e}");
    }
    write_all_synced(&fs, p, &orig).unwrap();
    let e = TableReader::open(&fs, p, Some(8), ReaderOptions::default()).unwrap_err();
    assert!(e.to_string().contains("written as file 7"), "{e}");
}

#[test]
fn out_of_order_keys_are_refused_by_the_builder() {
    let fs = fs();
    let mut b = TableBuilder::new(
        fs.create(Path::new("/t/o.sst")).unwrap(),
        1,
        TableOptions::default(),
        Arc::default(),
    );
    b.add(InternalKey::new(b"b", 1, ValueKind::Put).encoded(), b"").unwrap();
    assert!(b.add(InternalKey::new(b"a", 1, ValueKind::Put).encoded(), b"").is_err());
    assert!(b.add(InternalKey::new(b"b", 1, ValueKind::Put).encoded(), b"").is_err());
    assert!(b.add(b"short", b"").is_err());
}

/// The whole file of a tiny table, pinned byte for byte (regenerate with `CAIRN_REWRITE=1`
/// only for an intended change: of the format, with a version bump, or of what a writer
/// chooses within it, keeping the older file as a read test, as `tiny-full-index-keys`).
#[test]
fn golden_table_bytes() {
    let mut model = Model::new();
    model.insert(InternalKey::new(b"apple", 2, ValueKind::Put), b"red".to_vec());
    model.insert(InternalKey::new(b"apple", 1, ValueKind::Delete), Vec::new());
    model.insert(InternalKey::new(b"pear", 3, ValueKind::Put), b"green".to_vec());
    let fs = fs();
    let p = Path::new("/t/golden.sst");
    build(
        &fs,
        p,
        &model,
        TableOptions {
            block_size: 32,
            filter: FilterDecision::units("uniform", 1, 4.0),
            ..TableOptions::default()
        },
    );
    let bytes = read_all(&fs, p).unwrap();
    crate::testutil::check_format_golden("golden/tiny.sst.hex", &table_versions(), &crate::testutil::hex_lines(&bytes));
    // Spot checks against the spec: the file ends with the magic, the first data block starts
    // with an unshared 13-byte key (5 + 8-byte trailer).
    assert_eq!(&bytes[bytes.len() - 8..], b"cairnSST");
    assert_eq!(&bytes[..3], &[0, 13, 3]);
    assert_eq!(&bytes[3..8], b"apple");

    // The same table with a range filter of each kind (its block, and the metaindex entry
    // naming it with the block's version).
    let with_range = |kind, name: &str, golden: &str, version: u8| {
        let p = Path::new("/t").join(name);
        build(
            &fs,
            &p,
            &model,
            TableOptions {
                block_size: 32,
                filter: FilterDecision::units("uniform", 1, 4.0),
                range_filter: range_filter_of(kind, 10.0),
                ..TableOptions::default()
            },
        );
        let bytes = read_all(&fs, &p).unwrap();
        crate::testutil::check_format_golden(golden, &table_versions(), &crate::testutil::hex_lines(&bytes));
        let t = open(&fs, &p, None).unwrap();
        assert_eq!(t.range_filter_slot().map(|s| s.0), Some(version));
        let f = t.read_range_filter().unwrap().expect("a range filter");
        assert!(f.may_contain_key(b"pear"));
        f
    };
    use crate::filter::range::Kind;
    use crate::filter::range::RangeFilterKind;
    let f = with_range(RangeFilterKind::Rosetta, "golden-range.sst", "golden/tiny-range.sst.hex", 3);
    let Kind::Rosetta(r) = f.kind() else {
        panic!("a Rosetta filter: {f:?}");
    };
    assert_eq!(r.keys(), 2);
    let f = with_range(RangeFilterKind::Grafite, "golden-grafite.sst", "golden/tiny-grafite.sst.hex", 2);
    let Kind::Grafite(g) = f.kind() else {
        panic!("a Grafite filter: {f:?}");
    };
    assert_eq!(g.keys(), 2);
}

#[test]
fn tables_read_through_o_direct_on_real_files() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = crate::env::StdFs::new();
    let mut rng = StdRng::seed_from_u64(12);
    let model = random_model(&mut rng, 3000, false);
    let p = tmp.path().join("000001.sst");
    build(&fs, &p, &model, TableOptions::default());
    let t = TableReader::open(
        &fs,
        &p,
        Some(7),
        ReaderOptions {
            direct: true,
            cache: None,
            stats: Arc::default(),
            meta_region: None,
            index_region: None,
            reserve_in_cache: false,
            range_region: None,
            filter_region: None,
            ghost: None,
            global_seqno: 0,
        },
    )
    .unwrap();
    assert!(
        t.range_filter_slot().is_none(),
        "version 1 writers leave the range-filter slot empty"
    );
    let t = Arc::new(t);
    let mut it = t.iter();
    it.seek_to_first();
    for (k, v) in &model {
        assert_eq!((it.key(), it.value()), (k.encoded(), &v[..]));
        it.next();
    }
    for (k, _) in model.iter().step_by(7) {
        let (uk, seq, _) = crate::format::ikey::split(k.encoded()).unwrap();
        assert_eq!(
            t.get(uk, seq, UnitSelection::All).unwrap().found,
            model_get(&model, uk, seq)
        );
    }
}

/// Reads the golden table `file` (the tiny table of `golden_table_bytes`, as an older writer
/// wrote it): every entry by scan and by point lookup. Returns its footer's format version.
fn old_golden_bytes(file: &str) -> Vec<u8> {
    let hex = std::fs::read_to_string(crate::testutil::testdata(file)).unwrap();
    let hex: String = hex.lines().filter(|l| !l.starts_with('#')).flat_map(str::split_whitespace).collect();
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn read_old_golden_table(file: &str) -> u8 {
    let bytes = old_golden_bytes(file);
    let fs = fs();
    let p = Path::new("/t/old.sst");
    write_all_synced(&fs, p, &bytes).unwrap();
    let t = open(&fs, p, None).unwrap();
    let mut it = t.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    assert_eq!(n, 3, "{file}");
    let got = |k: &[u8]| t.get(k, 10, UnitSelection::All).unwrap().found.map(|f| (f.kind, f.value));
    assert_eq!(got(b"apple"), Some((ValueKind::Put, b"red".to_vec())), "{file}");
    assert_eq!(got(b"banana"), None, "{file}");
    assert_eq!(got(b"pear"), Some((ValueKind::Put, b"green".to_vec())), "{file}");
    assert_eq!(got(b"plum"), None, "{file}");
    bytes[bytes.len() - 16]
}

/// A table whose range filter is a Rosetta block of version 1 (a fixed projection, pinned
/// before per-table projections) is still read, and its filter still answers.
#[test]
fn rosetta_blocks_of_version_1_are_still_read() {
    let file = "golden/tiny-range-rosetta-v1.sst.hex";
    assert_eq!(read_old_golden_table(file), 2);
    let fs = fs();
    let p = Path::new("/t/old-range.sst");
    write_all_synced(&fs, p, &old_golden_bytes(file)).unwrap();
    let t = open(&fs, p, None).unwrap();
    assert_eq!(t.range_filter_slot().map(|s| s.0), Some(1));
    let f = t.read_range_filter().unwrap().expect("a range filter");
    assert_eq!(f.projection(), &crate::filter::projection::Projection::fixed(0));
    assert!(f.may_contain_key(b"apple") && f.may_contain_key(b"pear"));
}

/// A table written by format version 1 (before data blocks had hash indexes; the golden file
/// pinned before the change) is still read.
#[test]
fn version_1_tables_are_still_read() {
    assert_eq!(read_old_golden_table("golden/tiny-v1.sst.hex"), 1);
}

/// A table whose index keys are its blocks' last keys (written before separators were
/// shortened, same format version) is still read.
#[test]
fn tables_with_full_index_keys_are_still_read() {
    assert_eq!(read_old_golden_table("golden/tiny-full-index-keys.sst.hex"), 2);
}

/// A table whose properties block is version 1 (no database id; pinned before the id was
/// added) is still read, with id 0.
#[test]
fn tables_without_a_database_id_are_still_read() {
    assert_eq!(read_old_golden_table("golden/tiny-properties-v1.sst.hex"), 2);
}

/// A table whose properties block is version 2 (no range-deletion count; pinned before range
/// deletions) is still read, without tombstones.
#[test]
fn tables_before_range_deletions_are_still_read() {
    assert_eq!(read_old_golden_table("golden/tiny-properties-v2.sst.hex"), 2);
}

/// A table whose properties block is version 3 (index keys always internal keys; pinned
/// before user-key indexes) is still read.
#[test]
fn tables_with_internal_index_keys_are_still_read() {
    assert_eq!(read_old_golden_table("golden/tiny-properties-v3.sst.hex"), 2);
}

/// A table whose properties block is version 4 (index entries with plain handle values, one
/// per restart point; pinned before delta handles) is still read.
#[test]
fn tables_with_plain_index_entries_are_still_read() {
    assert_eq!(read_old_golden_table("golden/tiny-properties-v4.sst.hex"), 2);
}

/// A table with range tombstones (pinned byte for byte: `docs/format/sst.md`), and one holding
/// only tombstones: their key and seqno ranges include the tombstones', lookups see them.
#[test]
fn tables_with_range_deletions() {
    let mut model = Model::new();
    model.insert(InternalKey::new(b"apple", 2, ValueKind::Put), b"red".to_vec());
    model.insert(InternalKey::new(b"pear", 3, ValueKind::Put), b"green".to_vec());
    let fs = fs();
    let p = Path::new("/t/golden-rd.sst");
    let opts = TableOptions {
        block_size: 32,
        filter: FilterDecision::units("uniform", 1, 4.0),
        ..TableOptions::default()
    };
    let rd = tombstones(&[("apple", "banana", 9), ("a", "b", 1)]);
    build_with_range_dels(&fs, p, 7, &model, opts.clone(), rd.clone());
    let bytes = read_all(&fs, p).unwrap();
    crate::testutil::check_format_golden("golden/tiny-range-del.sst.hex", &table_versions(), &crate::testutil::hex_lines(&bytes));
    let t = open(&fs, p, None).unwrap();
    assert_eq!(**t.range_dels(), rd);
    let props = t.properties();
    assert_eq!(props.range_deletions, 4, "[a,apple)@1 [apple,b)@9,1 [b,banana)@9");
    assert_eq!(crate::format::ikey::user_key(&props.smallest_key), b"a");
    assert_eq!(crate::format::ikey::user_key(&props.largest_key), b"pear");
    assert_eq!((props.smallest_seqno, props.largest_seqno), (1, 9));
    assert_eq!(t.range_del_covering(b"apple", 100), 9);
    assert_eq!(t.range_del_covering(b"apple", 8), 1);
    assert_eq!(t.range_del_covering(b"banana", 100), 0);

    // Tombstones alone: the range reaches the last covered key (`k ‖ 0` ends at `k`).
    let p = Path::new("/t/only-rd.sst");
    let rd = tombstones(&[("m", "q\0", 4)]);
    build_with_range_dels(&fs, p, 7, &Model::new(), opts, rd.clone());
    let t = open(&fs, p, None).unwrap();
    let props = t.properties();
    assert_eq!((props.entries, props.range_deletions), (0, 1));
    assert_eq!(crate::format::ikey::user_key(&props.smallest_key), b"m");
    assert_eq!(crate::format::ikey::user_key(&props.largest_key), b"q");
    assert_eq!((props.smallest_seqno, props.largest_seqno), (4, 4));
    let mut it = t.iter();
    it.seek_to_first();
    assert!(!it.valid());
    it.status().unwrap();
    assert_eq!(t.get(b"n", 10, UnitSelection::All).unwrap().found, None);
    assert_eq!(t.range_del_covering(b"q", 10), 4);
}

/// Index keys are short separators where the keys allow (`ikey::separator`), the last block's
/// is its last key, and every lookup and seek still lands right, between the blocks too.
#[test]
fn index_keys_are_shortened_separators() {
    let mut model = Model::new();
    for i in 0..400u32 {
        // Long keys sharing a prefix, differing early enough to shorten.
        let k = format!("user-key-{:05}-{}", i * 10, "x".repeat(40));
        model.insert(InternalKey::new(k.as_bytes(), 1, ValueKind::Put), vec![b'v'; 50]);
    }
    let fs = fs();
    let p = Path::new("/t/sep.sst");
    build(&fs, p, &model, TableOptions::default());
    let t = open(&fs, p, None).unwrap();
    let mut keys = Vec::new();
    t.for_each_index_entry(|k, _| keys.push(k.to_vec())).unwrap();
    assert!(keys.len() > 10);
    assert!(t.properties().index_user_keys, "no user key spans two blocks");
    let last = model.keys().last().unwrap().user_key().to_vec();
    assert_eq!(keys.last(), Some(&last), "the last block's entry is its last key");
    assert!(keys[..keys.len() - 1].iter().all(|k| k.len() < last.len() - 30), "{keys:?}");
    for i in 0..4000u32 {
        let k = format!("user-key-{:05}-{}", i, "x".repeat(40));
        let found = t.get(k.as_bytes(), 5, UnitSelection::None).unwrap().found;
        assert_eq!(found.is_some(), i % 10 == 0, "{k}");
        let mut it = t.iter();
        it.seek(InternalKey::for_seek(k.as_bytes(), 5).encoded());
        let next = format!("user-key-{:05}-{}", i.div_ceil(10) * 10, "x".repeat(40));
        if i <= 3990 {
            assert_eq!(crate::format::ikey::user_key(it.key()), next.as_bytes());
        } else {
            assert!(!it.valid());
        }
    }
}

/// Filter units pinned in the reader answer exactly as units read through the block cache,
/// are read once, charged to the filter region while it has room, released with the reader,
/// and go through the block cache once the region is full.
#[test]
fn pinned_filter_units_answer_as_cached_ones_within_their_region() {
    let mut model = Model::new();
    for i in 0..3000u64 {
        model.insert(InternalKey::new(&(i * 2).to_be_bytes(), 1, ValueKind::Put), b"v".to_vec());
    }
    let fs = fs();
    let p = Path::new("/t/pin.sst");
    let segments = TableOptions {
        segment_size: 16 << 10,
        ..TableOptions::default()
    };
    build(&fs, p, &model, segments);
    let with = |cache: Option<Arc<BlockCache>>, region: Option<Arc<crate::memory::Region>>| {
        let stats = Arc::new(IoStats::new());
        let t = TableReader::open(
            &fs,
            p,
            Some(7),
            ReaderOptions {
                cache,
                stats: stats.clone(),
                filter_region: region,
                ..ReaderOptions::default()
            },
        )
        .unwrap();
        (t, stats)
    };
    let region = Arc::new(crate::memory::Region::new(usize::MAX));
    let (pinned, pin_io) = with(Some(Arc::new(BlockCache::new(1 << 20, 0.5))), Some(region.clone()));
    let (cached, _) = with(Some(Arc::new(BlockCache::new(1 << 20, 0.5))), None);
    let units = pinned.properties().segments.len() * pinned.properties().filter.units.len();
    assert!(units > 1, "the table has several units");
    for round in 0..2 {
        for i in 0..6000u64 {
            let k = i.to_be_bytes();
            let (a, b) = (
                pinned.get(&k, 5, UnitSelection::All).unwrap(),
                cached.get(&k, 5, UnitSelection::All).unwrap(),
            );
            assert_eq!(a, b, "key {i}");
        }
        // Every unit read from storage once, on the first round only.
        assert_eq!(pin_io.snapshot().kind(BlockKind::FilterUnit).reads, units as u64, "round {round}");
    }
    assert!(region.usage() > 0);
    drop(pinned);
    assert_eq!(region.usage(), 0, "the charge goes with the reader");
    // A full region: units go through the block cache instead (and are cached there).
    let full = Arc::new(crate::memory::Region::new(1));
    let cache = Arc::new(BlockCache::new(1 << 20, 0.5));
    let (t, io) = with(Some(cache.clone()), Some(full.clone()));
    for i in 0..100u64 {
        t.get(&i.to_be_bytes(), 5, UnitSelection::All).unwrap();
    }
    assert_eq!(full.usage(), 0);
    assert!(cache.counters(BlockKind::FilterUnit).inserts > 0);
    assert!(io.snapshot().kind(BlockKind::FilterUnit).cache_hits > 0);
}

/// A table without point-filter units answers point lookups from its range filter's height-0
/// level: absent keys are ruled out, present ones never are.
#[test]
fn the_range_filter_answers_point_lookups_when_there_are_no_units() {
    let mut model = Model::new();
    for i in 0..2000u64 {
        model.insert(InternalKey::new(&(i * 10).to_be_bytes(), 1, ValueKind::Put), b"v".to_vec());
    }
    let fs = fs();
    let p = Path::new("/t/bl.sst");
    build(
        &fs,
        p,
        &model,
        TableOptions {
            filter: FilterDecision::uniform(0.0),
            range_filter: range_filter(16.0),
            ..TableOptions::default()
        },
    );
    let t = open(&fs, p, None).unwrap();
    let (mut negatives, mut reads) = (0, 0);
    for i in 0..2000u64 {
        let present = t.get(&(i * 10).to_be_bytes(), 5, UnitSelection::All).unwrap();
        assert!(present.found.is_some() && !present.filter_negative);
        let absent = t.get(&(i * 10 + 3).to_be_bytes(), 5, UnitSelection::All).unwrap();
        assert!(absent.found.is_none());
        negatives += u32::from(absent.filter_negative);
        reads += u32::from(absent.data_block_read);
        // The skip list's "no filter" choice skips it too.
        assert!(!t.get(&(i * 10 + 3).to_be_bytes(), 5, UnitSelection::None).unwrap().filter_negative);
    }
    assert!(negatives >= 1990 && reads <= 10, "{negatives} negatives, {reads} data reads");
}

#[test]
fn an_index_in_the_block_cache_is_read_again_once_evicted() {
    let mut rng = StdRng::seed_from_u64(35);
    let model = random_model(&mut rng, 3000, false);
    let fs = fs();
    let p = Path::new("/t/ci.sst");
    build(&fs, p, &model, TableOptions::default());
    let pinned = open(&fs, p, None).unwrap();
    let index_size = pinned.footer().index.size as usize;
    let cache = Arc::new(BlockCache::new(1 << 20, 0.5));
    let stats = Arc::new(IoStats::new());
    let region = Arc::new(crate::memory::Region::new(usize::MAX));
    let t = open_cached_index(&fs, p, &cache, &stats, Some(region.clone())).unwrap();
    // Cached at open (no second read), charged to the index region, and not reserved.
    assert_eq!(cache.usage_of(BlockKind::Index), index_size);
    assert_eq!(region.usage(), index_size);
    assert_eq!(t.memory_usage() + index_size, pinned.memory_usage());
    assert_eq!(cache.reserved(), t.memory_usage());
    let lookup_all = |t: &TableReader| {
        for k in model.keys() {
            let uk = k.user_key();
            assert_eq!(t.get(uk, 2000, UnitSelection::All).unwrap().found, model_get(&model, uk, 2000));
        }
    };
    lookup_all(&t);
    let index = |s: &crate::stats::IoSnapshot| s.kind(BlockKind::Index);
    assert_eq!(index(&stats.snapshot()).reads, 1, "only the open read it");
    assert!(index(&stats.snapshot()).cache_hits >= 1);
    // Evicted (the cache emptied), read once more, then hit again.
    cache.set_capacity(0);
    assert_eq!(cache.usage_of(BlockKind::Index), 0);
    cache.set_capacity(1 << 20);
    lookup_all(&t);
    assert_eq!(index(&stats.snapshot()).reads, 2);
    assert_eq!(cache.usage_of(BlockKind::Index), index_size);
    // An iterator after an eviction reads it too.
    cache.set_capacity(0);
    cache.set_capacity(1 << 20);
    let mut it = t.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, model.len());
    assert_eq!(index(&stats.snapshot()).reads, 3);
    // Closing the reader gives back its index block, its reservation and its charge.
    drop(it);
    drop(t);
    assert_eq!(cache.usage_of(BlockKind::Index), 0);
    assert_eq!(cache.reserved(), 0);
    assert_eq!(region.usage(), 0);
}

#[test]
fn an_unreadable_evicted_index_is_an_error_for_lookups_and_iterators() {
    use crate::env::{FaultFs, FaultKind, OpClass};
    let mut rng = StdRng::seed_from_u64(36);
    let model = random_model(&mut rng, 2000, false);
    let mem: Arc<dyn FileSystem> = Arc::new(fs());
    let p = Path::new("/t/ce.sst");
    build(&*mem, p, &model, TableOptions::default());
    let ffs = FaultFs::new(mem, 1);
    let cache = Arc::new(BlockCache::new(1 << 20, 0.5));
    let t = open_cached_index(&ffs, p, &cache, &Arc::default(), None).unwrap();
    let (k, _) = model.iter().next().unwrap();
    assert!(t.get(k.user_key(), 2000, UnitSelection::All).unwrap().found.is_some());
    cache.set_capacity(0);
    cache.set_capacity(1 << 20);
    ffs.fail_fraction(OpClass::Read, 1.0, FaultKind::Eio);
    assert!(t.get(k.user_key(), 2000, UnitSelection::All).is_err());
    let mut it = t.iter();
    it.seek_to_first();
    assert!(!it.valid());
    assert!(it.status().is_err());
    // The fault gone, the same reader reads it again.
    ffs.clear_faults();
    assert!(t.get(k.user_key(), 2000, UnitSelection::All).unwrap().found.is_some());
    let mut it = t.iter();
    it.seek_to_first();
    assert!(it.valid());
}
