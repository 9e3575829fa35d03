//! Microbenchmarks: block seek, cached table point lookup, Bloom probe, bits-per-key solver,
//! and the read path's concurrency pieces (striped counters, the lock-free cache hit against
//! `quick_cache`), on 1 and 2 threads.
//! `cargo bench -p cairn --bench micro`

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]
#![allow(missing_docs, reason = "criterion's macros generate undocumented functions")]

use cairn::env::{FileSystem, MemFs};
use cairn::filter::bloom::{self, BloomFilter};
use cairn::filter::key_hash;
use cairn::format::ikey::{InternalKey, KeyOrder, ValueKind};
use cairn::iter::InternalIterator;
use cairn::sst::BlockCache;
use cairn::sst::{Block, BlockBuilder, ReaderOptions, TableBuilder, TableOptions, TableReader, UnitSelection};
use cairn::stats::IoStats;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::path::Path;
use std::sync::Arc;

/// db_bench-style 16-byte keys.
fn key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

fn lcg(x: &mut u64) -> u64 {
    *x = x
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *x >> 33
}

/// A 4 KiB block of 16-byte keys (even numbers) and 100-byte values, restart interval 16, with
/// or without a hash index; its entry count; 1,024 seek targets over present and absent keys.
fn bench_block(hash_index: bool) -> (Arc<Block>, u64, Vec<InternalKey>) {
    let mut b = if hash_index {
        BlockBuilder::with_hash_index(16)
    } else {
        BlockBuilder::new(16)
    };
    let mut n = 0u64;
    while b.size_estimate() < 4096 {
        b.add(InternalKey::new(&key(n * 2), 1, ValueKind::Put).encoded(), &[7u8; 100]);
        n += 1;
    }
    let block = Arc::new(Block::new(b.finish().to_vec(), Arc::from(Path::new("bench")), 0).unwrap());
    let targets = (0..1024)
        .map(|i| InternalKey::for_seek(&key((i * 7919) % (2 * n)), 1))
        .collect();
    (block, n, targets)
}

fn block_seek(c: &mut Criterion) {
    let (block, n, targets) = bench_block(false);
    let mut it = block.iter(KeyOrder::Internal);
    let mut i = 0usize;
    c.bench_function(&format!("block_seek ({n} entries, 4 KiB)"), |bch| {
        bch.iter(|| {
            it.seek(targets[i % targets.len()].encoded());
            i += 1;
            black_box(it.valid())
        })
    });
}

/// A point lookup's cursor: a new owning cursor per seek (an `Arc` clone and a key allocation)
/// against a borrowing one reusing its key buffer.
fn block_point_cursor(c: &mut Criterion) {
    let (block, _, targets) = bench_block(false);
    let mut i = 0usize;
    c.bench_function("block point seek, owning cursor per lookup", |bch| {
        bch.iter(|| {
            let mut it = block.iter(KeyOrder::Internal);
            it.seek(targets[i % targets.len()].encoded());
            i += 1;
            black_box(it.valid())
        })
    });
    // The same keys in a hash-indexed block: the bucket names the restart to scan from.
    let (hashed, _, _) = bench_block(true);
    let hashes: Vec<u64> = targets
        .iter()
        .map(|t| key_hash(cairn::format::ikey::user_key(t.encoded())))
        .collect();
    let mut buf = Vec::new();
    c.bench_function("block point seek, hash index hint (hash precomputed)", |bch| {
        bch.iter(|| {
            let t = i % targets.len();
            i += 1;
            black_box(hinted_seek(&hashed, hashes[t], targets[t].encoded(), &mut buf))
        })
    });
    c.bench_function("block point seek, borrowing cursor, reused key buffer", |bch| {
        bch.iter(|| {
            let mut it = block.iter_ref(KeyOrder::Internal, std::mem::take(&mut buf));
            it.seek(targets[i % targets.len()].encoded());
            i += 1;
            let v = it.valid();
            buf = it.into_key_buffer();
            black_box(v)
        })
    });
}

/// A point lookup's seek in `block`: from the restart its hash index names (the key's hash
/// `h` precomputed), with `buf` as the key buffer; whether it landed on an entry.
fn hinted_seek(block: &Block, h: u64, target: &[u8], buf: &mut Vec<u8>) -> bool {
    let mut it = block.iter_ref(KeyOrder::Internal, std::mem::take(buf));
    match block.hash_hint(h) {
        cairn::sst::HashHint::Absent => {}
        cairn::sst::HashHint::Restart(r) => it.seek_from_restart(r, target),
        cairn::sst::HashHint::Search => it.seek(target),
    }
    let v = it.valid();
    *buf = it.into_key_buffer();
    v
}

/// Point seeks in blocks that are not in the CPU cache: 16,384 copies of the hash-indexed block
/// (64 MiB), a random one per seek — where the interval prefetch pays (the entries of a block
/// in memory but not in cache are one miss each when scanned without it).
fn block_seek_out_of_cache(c: &mut Criterion) {
    let (_, _, targets) = bench_block(true);
    let blocks: Vec<Arc<Block>> = (0..16_384).map(|_| bench_block(true).0).collect();
    let hashes: Vec<u64> = targets
        .iter()
        .map(|t| key_hash(cairn::format::ikey::user_key(t.encoded())))
        .collect();
    let (mut x, mut buf) = (1u64, Vec::new());
    c.bench_function(
        "block point seek, hash index hint, 16K blocks out of CPU cache",
        |bch| {
            bch.iter(|| {
                let b = &blocks[lcg(&mut x) as usize % blocks.len()];
                let t = lcg(&mut x) as usize % targets.len();
                black_box(hinted_seek(b, hashes[t], targets[t].encoded(), &mut buf))
            })
        },
    );
}

/// Runs `op(thread, i)` `iters` times on each of `threads` threads at once; the time per
/// iteration is the wall time of all threads doing one operation each.
fn on_threads(threads: usize, iters: u64, op: &(dyn Fn(usize, u64) + Sync)) -> std::time::Duration {
    let start = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    let t0 = std::time::Instant::now();
                    for i in 0..iters {
                        op(t, i);
                    }
                    t0.elapsed()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).max().unwrap_or_default()
    })
}

/// A counter every lookup adds to: one shared atomic against the per-CPU striped copies.
fn counters(c: &mut Criterion) {
    use cairn::stats::stripe::{Stripe, Striped};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    #[repr(align(64))]
    #[derive(Default)]
    struct Line(AtomicU64);
    let shared = Line::default();
    let striped: Striped<Line> = Striped::default();
    for threads in [1, 2] {
        c.bench_function(&format!("counter add, one shared atomic, {threads} thread(s)"), |b| {
            b.iter_custom(|iters| {
                on_threads(threads, iters, &|_, _| {
                    shared.0.fetch_add(1, Relaxed);
                })
            })
        });
        c.bench_function(&format!("counter add, striped per CPU, {threads} thread(s)"), |b| {
            b.iter_custom(|iters| {
                on_threads(threads, iters, &|_, _| {
                    striped.at(Stripe::current()).0.fetch_add(1, Relaxed);
                })
            })
        });
    }
}

/// Cache hits on 1 and 2 threads: our CLOCK cache (lock-free hit) against `quick_cache`
/// (sharded, a read lock per hit), both holding the same 64K entries, room for all.
fn cache_hit(c: &mut Criterion) {
    use cairn::cache::{BlockKey, Priority};
    use cairn::sst::CachedBlock;
    use cairn::stats::BlockKind;
    #[derive(Clone)]
    struct ByCharge;
    impl quick_cache::Weighter<BlockKey, Arc<Block>> for ByCharge {
        fn weight(&self, _: &BlockKey, v: &Arc<Block>) -> u64 {
            v.size() as u64
        }
    }
    let n = 65_536u64;
    let block = || Arc::new(Block::new(BlockBuilder::new(16).finish().to_vec(), Arc::from(Path::new("b")), 0).unwrap());
    let charge = 4096;
    let ours = BlockCache::new((n as usize + 1024) * charge, 0.5);
    let theirs = quick_cache::sync::Cache::with_weighter(n as usize, (n + 1024) * charge as u64, ByCharge);
    for i in 0..n {
        let k = BlockKey {
            table: 1,
            offset: i * 4096,
        };
        // Each entry its own block, as in a real cache (one shared `Arc` would contend).
        ours.insert(k, CachedBlock::Block(block()), BlockKind::Data, charge, Priority::Low);
        theirs.insert(k, block());
    }
    let keys: Vec<BlockKey> = (0..4096u64)
        .map(|i| BlockKey {
            table: 1,
            offset: (i.wrapping_mul(0x9e37_79b9) % n) * 4096,
        })
        .collect();
    for threads in [1, 2] {
        c.bench_function(
            &format!("cache hit, cairn CLOCK (lock-free), {threads} thread(s)"),
            |b| {
                b.iter_custom(|iters| {
                    on_threads(threads, iters, &|t, i| {
                        black_box(ours.get(&keys[(i as usize + t * 997) & 4095], BlockKind::Data));
                    })
                })
            },
        );
        c.bench_function(&format!("cache hit, quick_cache, {threads} thread(s)"), |b| {
            b.iter_custom(|iters| {
                on_threads(threads, iters, &|t, i| {
                    black_box(theirs.get(&keys[(i as usize + t * 997) & 4095]));
                })
            })
        });
    }
}

fn table_get(c: &mut Criterion) {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/b")).unwrap();
    let p = Path::new("/b/1.sst");
    let n = 200_000u64;
    let mut tb = TableBuilder::new(
        fs.create(p).unwrap(),
        1,
        TableOptions::default(),
        Arc::new(IoStats::new()),
    );
    for i in 0..n {
        tb.add(InternalKey::new(&key(i), 1, ValueKind::Put).encoded(), &[7u8; 100])
            .unwrap();
    }
    tb.finish().unwrap();
    let cache = Arc::new(BlockCache::new(256 << 20, 0.5));
    let t = TableReader::open(
        &fs,
        p,
        Some(1),
        ReaderOptions {
            cache: Some(cache),
            ..Default::default()
        },
    )
    .unwrap();
    for i in 0..n {
        t.get(&key(i), 10, UnitSelection::All).unwrap(); // warm the cache
    }
    // Keys are precomputed so the loop measures the lookup, not key formatting.
    let mut x = 1u64;
    let present: Vec<Vec<u8>> = (0..4096).map(|_| key(lcg(&mut x) % n)).collect();
    let absent: Vec<Vec<u8>> = (0..4096).map(|_| key(n + lcg(&mut x) % n)).collect();
    let mut i = 0usize;
    c.bench_function("table_get cached, present key (200K entries, 10 bpk)", |b| {
        b.iter(|| {
            i += 1;
            black_box(t.get(&present[i & 4095], 10, UnitSelection::All).unwrap())
        })
    });
    c.bench_function("table_get cached, absent key (filter negative mostly)", |b| {
        b.iter(|| {
            i += 1;
            black_box(t.get(&absent[i & 4095], 10, UnitSelection::All).unwrap())
        })
    });
}

fn bloom_probe(c: &mut Criterion) {
    let hashes: Vec<u64> = (0..1_000_000u64).map(|i| key_hash(&key(i))).collect();
    let f = BloomFilter::decode(bloom::build(&hashes, 10.0, 0)).unwrap();
    let keys: Vec<Vec<u8>> = (0..4096u64).map(|i| key(i * 31 + 5_000_000)).collect();
    let probes: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
    let mut i = 0usize;
    c.bench_function("bloom_probe (1M keys, 10 bpk, hash included)", |b| {
        b.iter(|| {
            i += 1;
            black_box(f.may_contain(&keys[i & 4095]))
        })
    });
    c.bench_function("bloom_probe (1M keys, 10 bpk, precomputed hash)", |b| {
        b.iter(|| {
            i += 1;
            black_box(f.may_contain_hash(probes[i & 4095]))
        })
    });
}

/// The sort-and-search bits-per-key solver over 1,000 and 10,000 files with skewed lookups.
fn bpk_solver(c: &mut Criterion) {
    use cairn::tuning::bpk::{sort_and_search, SolverFile};
    for n in [1_000usize, 10_000] {
        let files: Vec<SolverFile> = (0..n)
            .map(|i| SolverFile {
                entries: 50_000.0 + (i % 7) as f64 * 10_000.0,
                // Zipf-like: a few files get most empty lookups, a tenth none.
                empty: if i % 10 == 9 { 0.0 } else { 1e6 / (1 + i) as f64 },
            })
            .collect();
        c.bench_function(&format!("bpk sort-and-search ({n} files)"), |b| {
            b.iter(|| black_box(sort_and_search(&files, 4.0, 1.0, cairn::filter::bloom::LN2_SQ)))
        });
    }
}

criterion_group!(
    benches,
    block_seek,
    block_point_cursor,
    block_seek_out_of_cache,
    counters,
    cache_hit,
    table_get,
    bloom_probe,
    bpk_solver
);
criterion_main!(benches);
