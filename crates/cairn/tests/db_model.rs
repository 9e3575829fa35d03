//! Model-based randomized test: random operation sequences against a `BTreeMap` per tree,
//! under both merge policies, with tiny sizes so that flushes, compactions, block and segment
//! boundaries happen constantly (block 256 B, memtable 4 KiB, L0 trigger 1).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::MemFs;
use cairn::{BlockCache, Db, MergePolicyKind, Options, WriteBatch, WriteOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn tiny_with(
    fs: &MemFs,
    policy: MergePolicyKind,
    component: cairn::MemoryComponent,
    cache: Option<&Arc<BlockCache>>,
) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 4096);
    o.memtable.component = component;
    o.set("merge.operator", "stringappend").unwrap();
    o.compaction.l0_trigger = 1;
    o.compaction.max_bytes_for_level_base = 8192;
    o.compaction.size_ratio = 4.0;
    o.compaction.merge_policy = policy;
    o.memory.fixed_mut().block_cache = match cache {
        Some(c) => cairn::CacheSource::Shared(c.clone()),
        None => cairn::CacheSource::Own(64 << 10),
    };
    o
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    format!("k{:04}", rng.gen_range(0..600)).into_bytes()
}

fn bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng)),
        _ => Bound::Excluded(key(rng)),
    }
}

fn model_range(m: &Model, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    if let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) = (lo, hi) {
        if a > b || (a == b && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_)))) {
            return Vec::new();
        }
    }
    m.range((lo.clone(), hi.clone()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn run(seed: u64, policy: MergePolicyKind, steps: usize) {
    run_with(seed, policy, cairn::MemoryComponent::Monolithic, None, steps);
}

/// `cache`: a shared block cache whose capacity the run also moves (else a 64 KiB one of
/// the engine's own).
fn run_with(
    seed: u64,
    policy: MergePolicyKind,
    component: cairn::MemoryComponent,
    cache: Option<&Arc<BlockCache>>,
    steps: usize,
) {
    let tiny = |fs: &MemFs, policy| tiny_with(fs, policy, component, cache);
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = MemFs::new();
    let path = Path::new("/db");
    let mut db = Db::open(path, tiny(&fs, policy)).unwrap();
    let mut trees = vec![None, Some(db.tree("second").unwrap())];
    let mut models = vec![Model::new(), Model::new()];
    let mut snaps: Vec<(cairn::Snapshot, Vec<Model>)> = Vec::new();
    for step in 0..steps {
        let ctx = || format!("seed {seed} step {step} {policy:?}");
        let t = rng.gen_range(0..2);
        let op = rng.gen_range(0..100);
        if let Some(c) = cache.filter(|_| rng.gen_bool(0.01)) {
            // Shrinking evicts (and sends new blocks to the heap); growing takes them back.
            c.set_capacity(if c.capacity() > 1 << 20 { 64 << 10 } else { 16 << 20 });
        }
        match op {
            0..=39 => {
                let (k, v) = (
                    key(&mut rng),
                    format!("v{step}-{}", "x".repeat(rng.gen_range(0..60))).into_bytes(),
                );
                match &trees[t] {
                    None => db.put(&k, &v).unwrap(),
                    Some(tr) => tr.put(&k, &v).unwrap(),
                }
                models[t].insert(k, v);
            }
            40..=44 => {
                // A range delete: mostly a few keys, sometimes hundreds, sometimes empty.
                let a = key(&mut rng);
                let b = match rng.gen_range(0..10) {
                    0 => a.clone(),
                    1 => key(&mut rng).max(a.clone()),
                    _ => {
                        let n: u32 = std::str::from_utf8(&a[1..]).unwrap().parse().unwrap();
                        format!("k{:04}", n + rng.gen_range(1..20)).into_bytes()
                    }
                };
                match &trees[t] {
                    None => db.delete_range(&a, &b).unwrap(),
                    Some(tr) => tr.delete_range(&a, &b).unwrap(),
                }
                let gone: Vec<Vec<u8>> = models[t].range(a.clone()..b.clone()).map(|(k, _)| k.clone()).collect();
                for k in gone {
                    models[t].remove(&k);
                }
            }
            45..=49 => {
                let k = key(&mut rng);
                match &trees[t] {
                    None => db.delete(&k).unwrap(),
                    Some(tr) => tr.delete(&k).unwrap(),
                }
                models[t].remove(&k);
            }
            50..=57 => {
                // A cross-tree batch.
                let mut b = WriteBatch::new();
                for _ in 0..rng.gen_range(1..8) {
                    let tt = rng.gen_range(0..2);
                    let k = key(&mut rng);
                    if rng.gen_bool(0.1) {
                        let v = format!("bm{step}").into_bytes();
                        match &trees[tt] {
                            None => b.merge(&k, &v),
                            Some(tr) => b.merge_in(tr, &k, &v),
                        };
                        let merged = match models[tt].get(&k) {
                            Some(old) => [old.as_slice(), b",", &v].concat(),
                            None => v,
                        };
                        models[tt].insert(k, merged);
                    } else if rng.gen_bool(0.1) {
                        let k2 = key(&mut rng);
                        let (lo, hi) = if k <= k2 { (k, k2) } else { (k2, k) };
                        match &trees[tt] {
                            None => b.delete_range(&lo, &hi),
                            Some(tr) => b.delete_range_in(tr, &lo, &hi),
                        };
                        let gone: Vec<Vec<u8>> = models[tt].range(lo..hi).map(|(k, _)| k.clone()).collect();
                        for k in gone {
                            models[tt].remove(&k);
                        }
                    } else if rng.gen_bool(0.7) {
                        let v = format!("b{step}").into_bytes();
                        match &trees[tt] {
                            None => b.put(&k, &v),
                            Some(tr) => b.put_in(tr, &k, &v),
                        };
                        models[tt].insert(k, v);
                    } else {
                        match &trees[tt] {
                            None => b.delete(&k),
                            Some(tr) => b.delete_in(tr, &k),
                        };
                        models[tt].remove(&k);
                    }
                }
                db.write(
                    b,
                    &WriteOptions {
                        sync: rng.gen_bool(0.1),
                        ..Default::default()
                    },
                )
                .unwrap();
            }
            58..=61 => {
                // A merge: appended to the value with a comma (stringappend).
                let (k, v) = (key(&mut rng), format!("m{step}").into_bytes());
                match &trees[t] {
                    None => db.merge(&k, &v).unwrap(),
                    Some(tr) => tr.merge(&k, &v).unwrap(),
                }
                let merged = match models[t].get(&k) {
                    Some(old) => [old.as_slice(), b",", &v].concat(),
                    None => v,
                };
                models[t].insert(k, merged);
            }
            62..=74 => {
                let k = key(&mut rng);
                let got = match &trees[t] {
                    None => db.get(&k).unwrap(),
                    Some(tr) => tr.get(&k).unwrap(),
                };
                assert_eq!(
                    got.as_ref(),
                    models[t].get(&k),
                    "get {:?} {}",
                    String::from_utf8_lossy(&k),
                    ctx()
                );
            }
            75..=84 => {
                let (lo, hi) = (bound(&mut rng), bound(&mut rng));
                let expect = model_range(&models[t], &lo, &hi);
                let r = match &trees[t] {
                    None => db.range((lo.clone(), hi.clone())),
                    Some(tr) => tr.range((lo.clone(), hi.clone())),
                };
                if rng.gen_bool(0.5) {
                    let got: Vec<_> = r.map(|x| x.unwrap()).collect();
                    assert_eq!(got, expect, "range {lo:?}..{hi:?} {}", ctx());
                } else {
                    let got: Vec<_> = r.rev().map(|x| x.unwrap()).collect();
                    let mut e = expect;
                    e.reverse();
                    assert_eq!(got, e, "reverse range {lo:?}..{hi:?} {}", ctx());
                }
            }
            85..=87 => {
                if snaps.len() < 3 {
                    snaps.push((db.snapshot(), models.clone()));
                } else {
                    snaps.remove(0);
                }
            }
            88..=90 => {
                if let Some((s, ms)) = snaps.last() {
                    let k = key(&mut rng);
                    assert_eq!(s.get(&k).unwrap().as_ref(), ms[0].get(&k), "snapshot get {}", ctx());
                    let got: Vec<_> = s.iter().map(|x| x.unwrap()).collect();
                    assert_eq!(got.len(), ms[0].len(), "snapshot scan {}", ctx());
                    if let Some(tr) = &trees[1] {
                        let got: Vec<_> = s.range_in::<&[u8], _>(tr, ..).map(|x| x.unwrap()).collect();
                        let want: Vec<_> = ms[1].iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                        assert_eq!(got, want, "snapshot scan of tree 2 {}", ctx());
                    }
                }
            }
            91..=93 => match &trees[t] {
                None => db.flush_all().unwrap(),
                Some(tr) => tr.flush().unwrap(),
            },
            94..=96 => {
                let (a, b) = (key(&mut rng), key(&mut rng));
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                match &trees[t] {
                    None => db.compact_range(lo..=hi).unwrap(),
                    Some(tr) => tr.compact_range(lo..=hi).unwrap(),
                }
            }
            _ => {
                // Reopen: snapshots and handles go first.
                snaps.clear();
                trees = vec![None, None];
                if rng.gen_bool(0.5) {
                    db.close().unwrap();
                } else {
                    drop(db);
                }
                db = Db::open(path, tiny(&fs, policy)).unwrap();
                trees[1] = Some(db.tree("second").unwrap());
            }
        }
    }
    // Final full comparison, forward and backward (through a large cache, when shared).
    if let Some(c) = cache {
        c.set_capacity(16 << 20);
    }
    for t in 0..2 {
        let all: Vec<_> = match &trees[t] {
            None => db.iter().map(|x| x.unwrap()).collect(),
            Some(tr) => tr.iter().map(|x| x.unwrap()).collect(),
        };
        let want: Vec<_> = models[t].iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(all, want, "final scan of tree {t}, seed {seed}");
    }
    if let Some(c) = cache.filter(|_| thp_on()) {
        assert!(
            c.huge_page_bytes() > 0,
            "the scans' blocks are in the arena, seed {seed}"
        );
    }
    db.wait_for_background().unwrap();
    let shape = db.levels();
    assert!(
        shape[0].levels.len() > 1,
        "the tiny sizes must produce a multi-level tree: {shape:?}"
    );
}

#[test]
fn model_leveling() {
    for seed in 0..24 {
        run(seed, MergePolicyKind::Leveling, 6000);
    }
}

#[test]
fn model_garnering() {
    for seed in 100..124 {
        let c = [0.4, 0.5, 0.8, 1.0][seed as usize % 4];
        run(seed, MergePolicyKind::Garnering { c }, 6000);
    }
}

/// The partitioned memory component (memory runs, partial and log flushes) under the same
/// operations, range deletes included.
#[test]
fn model_partitioned() {
    for seed in 200..212 {
        run_with(
            seed,
            MergePolicyKind::Leveling,
            cairn::MemoryComponent::Partitioned,
            None,
            6000,
        );
    }
}

/// The same operations with the cached blocks in huge-page slots (forced at any capacity):
/// blocks move between the arena and the heap as the capacity changes, and are freed while
/// readers and iterators may still hold them.
#[test]
fn model_with_blocks_in_huge_pages() {
    let cache = Arc::new(BlockCache::new(16 << 20, 0.5).huge_pages_from(Some(0)));
    for seed in 300..308 {
        run_with(
            seed,
            MergePolicyKind::Leveling,
            cairn::MemoryComponent::Monolithic,
            Some(&cache),
            6000,
        );
    }
}

/// Whether the kernel backs advised memory with huge pages (else the cache keeps blocks on
/// the heap).
fn thp_on() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").is_ok_and(|s| !s.contains("[never]"))
}
