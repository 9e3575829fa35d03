//! Runs the fuzz targets' entry points (`cairn::fuzzing`) on seed inputs taken from a real
//! database, on damaged variants of them, and on every committed corpus file under
//! `fuzz/corpus/<target>/` — so CI replays what fuzzing found. `CAIRN_WRITE_FUZZ_SEEDS=1`
//! writes the seeds into `fuzz/corpus/` to start a fuzzing campaign from.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

use cairn::env::{read_all, FileSystem, MemFs};
use cairn::filter::range::RangeBuilder;
use cairn::format::ikey::{InternalKey, ValueKind};
use cairn::fuzzing;
use cairn::sst::BlockBuilder;
use cairn::{Db, Options, RangeFilterKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Target = fn(&[u8]);

fn targets() -> [(&'static str, Target); 8] {
    [
        ("range_del", fuzzing::range_del),
        ("block", fuzzing::block),
        ("range_filter", fuzzing::range_filter),
        ("grafite", fuzzing::grafite),
        ("table", fuzzing::table),
        ("wal", fuzzing::wal),
        ("manifest", fuzzing::manifest),
        ("options", fuzzing::options),
    ]
}

/// Seed inputs per target from a small real database.
fn seeds() -> BTreeMap<&'static str, Vec<Vec<u8>>> {
    let fs = MemFs::new();
    let opts = {
        let mut o = Options {
            fs: Arc::new(fs.clone()),
            ..Options::default()
        };
        o.table.block_size = 256;
        o.memory.fixed_mut().memtable_size = 8 << 10;
        o.memory.fixed_mut().write_memory = 32 << 10;
        o.filters.bits_per_key = 10.0;
        o.range_filter.bits_per_key = 12.0;
        o.set("merge.operator", "uint64add").unwrap();
        // Cache-local units (version 2, the default) in the seeds; the committed corpus has
        // version 1.
        o
    };
    let db = Db::open("/s", opts).unwrap();
    for i in 0..300u32 {
        db.put(format!("key{i:05}"), format!("value{i}")).unwrap();
        if i % 7 == 0 {
            db.delete(format!("key{:05}", i / 2)).unwrap();
        }
    }
    // Range tombstones in a table (its range-deletion block, the manifest's tag 10) and in
    // the WAL.
    db.delete_range("key00010", "key00030").unwrap();
    for i in 0..10u64 {
        db.merge(format!("key{:05}", i * 31), i.to_le_bytes()).unwrap();
    }
    db.delete_range("key00020", "key00040").unwrap();
    // Expiring values (kind 4) in a table and in the WAL.
    for i in 0..5u32 {
        db.put_with_ttl(format!("key{:05}", i * 17), "ttl", std::time::Duration::from_secs(3600))
            .unwrap();
    }
    db.flush_all().unwrap();
    db.put_with_ttl("wal9", "ttl", std::time::Duration::from_secs(3600))
        .unwrap();
    for i in 0..20u32 {
        db.put(format!("wal{i}"), "x").unwrap();
    }
    db.delete_range("wal3", "wal5").unwrap();
    db.merge("wal7", 3u64.to_le_bytes()).unwrap();
    let mut out: BTreeMap<&str, Vec<Vec<u8>>> = BTreeMap::new();
    for name in fs.list(Path::new("/s")).unwrap() {
        let bytes = read_all(&fs, &Path::new("/s").join(&name)).unwrap();
        let kind = if name.ends_with(".sst") {
            "table"
        } else if name.ends_with(".wal") {
            "wal"
        } else if name.starts_with("MANIFEST") {
            "manifest"
        } else if name.starts_with("OPTIONS") {
            "options"
        } else {
            continue;
        };
        if !bytes.is_empty() {
            out.entry(kind).or_default().push(bytes);
        }
    }
    drop(db);
    let mut b = BlockBuilder::new(4);
    for i in 0..40u64 {
        b.add(
            InternalKey::new(format!("k{i:03}").as_bytes(), 100 - i, ValueKind::Put).encoded(),
            b"v",
        );
    }
    out.entry("block").or_default().push(b.finish().to_vec());
    let rd = cairn::range_del::Fragments::new([("a", "f", 9), ("c", "k", 4), ("m", "m\0", 2)].map(|(a, b, seq)| {
        cairn::range_del::RangeTombstone {
            start: a.into(),
            end: b.into(),
            seq,
        }
    }));
    out.entry("range_del")
        .or_default()
        .push(cairn::range_del::block::encode(&rd));
    // Rosetta blocks of two levels and of a single level, with a per-table projection
    // (version 3) and a fixed one (version 3 with a fixed projection; the committed corpus
    // holds version 1).
    let keys = |n: u64, f: fn(u64) -> Vec<u8>| (0..n).map(f).collect::<Vec<_>>();
    let numbers = keys(60, |i| (i * 37).to_be_bytes().to_vec());
    let strings = keys(60, |i| format!("user:{:08}", i * 37).into_bytes());
    for (plan, ks, fixed) in [
        (vec![(0, 600.0), (3, 300.0)], &numbers, None),
        (vec![(0, 900.0)], &strings, None),
        (vec![(0, 900.0)], &strings, Some(5)),
    ] {
        let mut r = RangeBuilder::new(RangeFilterKind::Rosetta, fixed);
        for k in ks {
            r.add_key(k);
        }
        let (_, block) = r.finish(3, 15.0, None, |_| plan).unwrap();
        out.entry("range_filter").or_default().push(block);
    }
    // Grafite blocks: one with several low bits per hash, one with none (r < 2m).
    for (bpk, ks) in [(12.0, &strings), (2.6, &numbers)] {
        let mut g = RangeBuilder::new(RangeFilterKind::Grafite, None);
        for k in ks {
            g.add_key(k);
        }
        let (_, block) = g.finish(5, bpk, None, |_| Vec::new()).unwrap();
        out.entry("grafite").or_default().push(block);
    }
    out
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

#[test]
fn fuzz_targets_survive_seeds_damage_and_the_corpus() {
    let seeds = seeds();
    let mut runs = 0;
    for (name, f) in targets() {
        let list = seeds.get(name).unwrap_or_else(|| panic!("no seed for {name}"));
        for s in list {
            f(s);
            // Truncations and single-byte damage at spread positions.
            for cut in (0..s.len()).step_by((s.len() / 40).max(1)) {
                f(&s[..cut]);
                let mut d = s.clone();
                d[cut] ^= 0x5a;
                f(&d);
                runs += 2;
            }
        }
        if std::env::var_os("CAIRN_WRITE_FUZZ_SEEDS").is_some() {
            let dir = corpus_dir().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            for (i, s) in list.iter().enumerate() {
                std::fs::write(dir.join(format!("seed-{i}")), s).unwrap();
            }
        }
        if let Ok(entries) = std::fs::read_dir(corpus_dir().join(name)) {
            for e in entries {
                let bytes = std::fs::read(e.unwrap().path()).unwrap();
                f(&bytes);
                runs += 1;
            }
        }
    }
    println!("{runs} fuzz-target inputs ran without a panic");
}
