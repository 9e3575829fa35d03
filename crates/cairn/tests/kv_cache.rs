//! The key-value cache never answers stale data. Each test first makes the cache hold a key's
//! answer (read from the tables, then read again as a hit: the counters prove the cache
//! answered), then changes the key in one of the ways the engine has — overwrite, delete,
//! merge, range delete, expiry, a compaction filter — moves the change into the tables, and
//! reads again: a cache that kept the old answer fails the test. Snapshots, iterators, many
//! trees, reopens, read-only opens and checkpoints are covered the same way.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::MemFs;
use cairn::merge::StringAppend;
use cairn::{CompactionFilter, Db, FilterContext, FilterDecision, ManualClock, Options, Tree};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const T0: u64 = 1_800_000_000_000;

fn opts(fs: &MemFs) -> Options {
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.memory.fixed_mut().kv_cache = 1 << 20;
    o
}

fn s(v: &str) -> Option<Vec<u8>> {
    Some(v.as_bytes().to_vec())
}

/// Hits (with a value, and negative) so far.
fn hits(db: &Db) -> (u64, u64) {
    let k = db.stats().kv_cache;
    (k.hits, k.negative_hits)
}

/// Reads `key` twice and checks that the second read was the cache's answer, `expect`.
fn cached(db: &Db, tree: &Tree, key: &str, expect: Option<Vec<u8>>) {
    assert_eq!(tree.get(key).unwrap(), expect, "{key} from the tables");
    let (h, n) = hits(db);
    assert_eq!(tree.get(key).unwrap(), expect, "{key} from the cache");
    let (h2, n2) = hits(db);
    assert_eq!(h2 + n2, h + n + 1, "{key} was not answered by the cache");
    assert_eq!(h2 > h, expect.is_some());
}

fn open(o: Options) -> (Db, Tree) {
    let db = Db::open(Path::new("/db"), o).unwrap();
    let t = db.tree("t").unwrap();
    (db, t)
}

#[test]
fn overwrites_and_deletes_flushed_later_are_seen() {
    let fs = MemFs::new();
    let (db, t) = open(opts(&fs));
    t.put("a", "1").unwrap();
    t.put("b", "1").unwrap();
    t.flush().unwrap();
    cached(&db, &t, "a", s("1"));
    cached(&db, &t, "b", s("1"));
    // A key no table holds is not cached: the filters answer it.
    assert_eq!(t.get("none").unwrap(), None);
    let before = db.stats().kv_cache;
    assert_eq!(t.get("none").unwrap(), None);
    assert_eq!(db.stats().kv_cache.fills, before.fills);
    // In the memtable, the new versions answer before the cache is asked.
    t.put("a", "2").unwrap();
    t.delete("b").unwrap();
    t.put("none", "now").unwrap();
    assert_eq!((t.get("a").unwrap(), t.get("b").unwrap()), (s("2"), None));
    // Flushed: the tables answer anew.
    t.flush().unwrap();
    cached(&db, &t, "a", s("2"));
    cached(&db, &t, "b", None);
    cached(&db, &t, "none", s("now"));
    // Compactions change no answer, and keep the cache's.
    t.compact_range::<&str, _>(..).unwrap();
    cached(&db, &t, "a", s("2"));
}

#[test]
fn merged_values_are_cached_final_and_follow_new_operands() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.merge_operator = Some(Arc::new(StringAppend::default()));
    let (db, t) = open(o);
    t.put("m", "a").unwrap();
    t.flush().unwrap();
    t.merge("m", "b").unwrap();
    t.flush().unwrap();
    cached(&db, &t, "m", s("a,b"));
    t.merge("m", "c").unwrap();
    assert_eq!(t.get("m").unwrap(), s("a,b,c"));
    t.flush().unwrap();
    cached(&db, &t, "m", s("a,b,c"));
    t.compact_range::<&str, _>(..).unwrap();
    cached(&db, &t, "m", s("a,b,c"));
}

#[test]
fn range_deletes_flushed_later_are_seen() {
    let fs = MemFs::new();
    let (db, t) = open(opts(&fs));
    for k in ["a", "b", "c", "d"] {
        t.put(k, "v").unwrap();
    }
    t.flush().unwrap();
    for k in ["a", "b", "c", "d"] {
        cached(&db, &t, k, s("v"));
    }
    t.delete_range("b", "d").unwrap();
    t.flush().unwrap();
    cached(&db, &t, "a", s("v"));
    cached(&db, &t, "b", None);
    cached(&db, &t, "c", None);
    cached(&db, &t, "d", s("v"));
    t.put("c", "again").unwrap();
    t.flush().unwrap();
    cached(&db, &t, "c", s("again"));
}

#[test]
fn a_cached_value_expires_at_its_deadline() {
    let fs = MemFs::new();
    let clock = Arc::new(ManualClock::new(T0));
    let mut o = opts(&fs);
    o.clock = clock.clone();
    o.merge_operator = Some(Arc::new(StringAppend::default()));
    let (db, t) = open(o);
    t.put_with_ttl("e", "soon", Duration::from_secs(10)).unwrap();
    t.flush().unwrap();
    cached(&db, &t, "e", s("soon"));
    clock.advance(Duration::from_secs(11));
    assert_eq!(t.get("e").unwrap(), None, "expired while cached");
    // A merge over an expiring value changes with time: it is not cached.
    t.put_with_ttl("m", "base", Duration::from_secs(10)).unwrap();
    t.merge("m", "x").unwrap();
    t.flush().unwrap();
    assert_eq!(t.get("m").unwrap(), s("base,x"));
    clock.advance(Duration::from_secs(11));
    assert_eq!(t.get("m").unwrap(), s("x"));
}

#[derive(Debug)]
struct Rewrite;

impl CompactionFilter for Rewrite {
    fn name(&self) -> &str {
        "rewrite"
    }

    fn filter(&self, _: &FilterContext<'_>, key: &[u8], _: &[u8]) -> FilterDecision {
        match key {
            b"drop" => FilterDecision::Remove,
            b"change" => FilterDecision::ChangeValue(b"changed".to_vec()),
            _ => FilterDecision::Keep,
        }
    }
}

#[test]
fn what_a_compaction_filter_changes_is_seen() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.compaction_filter = Some(Arc::new(Rewrite));
    let (db, t) = open(o);
    for k in ["drop", "change", "keep"] {
        t.put(k, "orig").unwrap();
    }
    t.flush().unwrap();
    for k in ["drop", "change", "keep"] {
        cached(&db, &t, k, s("orig"));
    }
    t.compact_range::<&str, _>(..).unwrap();
    // Removed: no table holds it any more (such keys are not cached).
    assert_eq!(t.get("drop").unwrap(), None);
    cached(&db, &t, "change", s("changed"));
    cached(&db, &t, "keep", s("orig"));
}

#[test]
fn snapshots_and_iterators_never_see_a_newer_cached_version() {
    let fs = MemFs::new();
    let (db, t) = open(opts(&fs));
    t.put("k", "old").unwrap();
    t.put("gone", "was").unwrap();
    t.flush().unwrap();
    let snap = db.snapshot();
    t.put("k", "new").unwrap();
    t.delete("gone").unwrap();
    t.flush().unwrap();
    cached(&db, &t, "k", s("new"));
    cached(&db, &t, "gone", None);
    // The snapshot reads below the cached versions: they fall through to the tables.
    assert_eq!(snap.get_in(&t, "k").unwrap(), s("old"));
    assert_eq!(snap.get_in(&t, "gone").unwrap(), s("was"));
    let seen: Vec<_> = snap.range_in::<&str, _>(&t, ..).map(|r| r.unwrap()).collect();
    assert_eq!(
        seen,
        vec![(b"gone".to_vec(), b"was".to_vec()), (b"k".to_vec(), b"old".to_vec())]
    );
    drop(snap);
    // Iterators neither use nor fill the cache.
    let before = db.stats().kv_cache;
    let now: Vec<_> = t.iter().map(|r| r.unwrap()).collect();
    assert_eq!(now, vec![(b"k".to_vec(), b"new".to_vec())]);
    let after = db.stats().kv_cache;
    assert_eq!(
        (after.fills, after.hits, after.misses),
        (before.fills, before.hits, before.misses)
    );
}

#[test]
fn trees_are_apart() {
    let fs = MemFs::new();
    let (db, t) = open(opts(&fs));
    let u = db.tree("u").unwrap();
    t.put("k", "in t").unwrap();
    u.put("k", "in u").unwrap();
    db.flush_all().unwrap();
    cached(&db, &t, "k", s("in t"));
    cached(&db, &u, "k", s("in u"));
    u.delete("k").unwrap();
    u.delete_range("a", "z").unwrap();
    db.flush_all().unwrap();
    cached(&db, &t, "k", s("in t"));
    cached(&db, &u, "k", None);
}

#[test]
fn reopens_read_only_opens_and_checkpoints_start_right() {
    let fs = MemFs::new();
    let (db, t) = open(opts(&fs));
    t.put("k", "1").unwrap();
    t.flush().unwrap();
    cached(&db, &t, "k", s("1"));
    t.put("k", "2").unwrap();
    db.checkpoint(Path::new("/cp")).unwrap();
    db.close().unwrap();
    // The WAL's version, replayed into tables by the open, is what every open answers.
    let (db, t) = open(opts(&fs));
    t.flush().unwrap();
    cached(&db, &t, "k", s("2"));
    db.close().unwrap();
    let ro = Db::open_read_only(Path::new("/db"), opts(&fs)).unwrap();
    cached(&ro, &ro.tree("t").unwrap(), "k", s("2"));
    drop(ro);
    let cp = Db::open(Path::new("/cp"), opts(&fs)).unwrap();
    cached(&cp, &cp.tree("t").unwrap(), "k", s("2"));
}

#[test]
fn the_cache_is_off_without_memory_and_reported_with_it() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.memory.fixed_mut().kv_cache = 0;
    let (db, t) = open(o);
    t.put("k", "v").unwrap();
    t.flush().unwrap();
    assert_eq!(t.get("k").unwrap(), s("v"));
    assert_eq!(db.stats().kv_cache, Default::default());
    assert_eq!(db.memory().kv_cache_capacity, 0);
    db.close().unwrap();
    let (db, t) = open(opts(&fs));
    cached(&db, &t, "k", s("v"));
    let m = db.memory();
    assert_eq!(m.kv_cache_capacity, 1 << 20);
    assert!(m.kv_cache_usage > 0 && m.total_usage() >= m.kv_cache_usage);
    let text = db.property("cairn.stats").unwrap();
    assert!(text.contains("key-value cache"), "{text}");
    // Under a budget it is on, with its share.
    let mut o = Options::with_memory(64 << 20);
    o.fs = Arc::new(fs.clone());
    let db = Db::open(Path::new("/budget"), o).unwrap();
    assert_eq!(db.memory().kv_cache_capacity, (64 << 20) / 10);
}

/// Readers racing a writer whose versions are flushed all the time (small memtables) never
/// read a version older than one acknowledged before their read began: a fill that raced a
/// flush of its key is refused.
#[test]
fn readers_racing_flushes_never_go_back() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    const KEYS: usize = 8;
    let fs = MemFs::new();
    let mut o = common::small(Arc::new(fs.clone()), 2 << 10);
    o.memory.fixed_mut().kv_cache = 16 << 10;
    let (db, t) = open(o);
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let key = |k: usize| format!("key{k}");
    for k in 0..KEYS {
        t.put(key(k), 0u64.to_be_bytes()).unwrap();
    }
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (t, acked, done) = (t.clone(), acked.clone(), done.clone());
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !done.load(Ordering::Acquire) || reads < 1000 {
                    let k = (reads as usize + r) % KEYS;
                    let least = acked[k].load(Ordering::Acquire);
                    let v = t.get(key(k)).unwrap().expect("never deleted");
                    let got = u64::from_be_bytes(v.try_into().unwrap());
                    assert!(got >= least, "key{k}: read {got} after {least} was acknowledged");
                    reads += 1;
                }
            })
        })
        .collect();
    for n in 1..=3000u64 {
        let k = (n as usize * 7) % KEYS;
        t.put(key(k), n.to_be_bytes()).unwrap();
        acked[k].store(n, Ordering::Release);
        if n % 500 == 0 {
            t.flush().unwrap();
        }
    }
    done.store(true, Ordering::Release);
    for r in readers {
        r.join().unwrap();
    }
    // Settled in the tables, every key's last version is what the cache answers.
    t.flush().unwrap();
    for k in 0..KEYS {
        cached(
            &db,
            &t,
            &key(k),
            Some(acked[k].load(Ordering::Acquire).to_be_bytes().to_vec()),
        );
    }
}

#[test]
fn resizing_evicts_at_once_and_a_database_without_one_refuses_to_start_one() {
    let fs = MemFs::new();
    let (db, t) = open(opts(&fs));
    for i in 0..100 {
        t.put(format!("k{i:03}"), "v").unwrap();
    }
    t.flush().unwrap();
    for i in 0..100 {
        t.get(format!("k{i:03}")).unwrap();
    }
    assert_eq!(db.stats().kv_cache.entries, 100);
    db.resize_memory(cairn::MemoryLimits {
        kv_cache: Some(0),
        ..Default::default()
    })
    .unwrap();
    let k = db.stats().kv_cache;
    assert_eq!((k.capacity, k.usage, k.entries), (0, 0, 0));
    assert_eq!(t.get("k001").unwrap(), s("v"));
    let mut o = opts(&fs);
    o.memory.fixed_mut().kv_cache = 0;
    let db = Db::open(Path::new("/without"), o).unwrap();
    let e = db
        .resize_memory(cairn::MemoryLimits {
            kv_cache: Some(1 << 20),
            ..Default::default()
        })
        .unwrap_err();
    assert!(e.to_string().contains("without a key-value cache"), "{e}");
}

#[test]
fn settings_without_effect_or_past_the_budget_are_refused_by_name() {
    let fs = MemFs::new();
    // A longest value for a cache that is off.
    let mut o = common::small(Arc::new(fs.clone()), 16 << 10);
    o.cache.kv_max_value = 4096;
    let e = Db::open(Path::new("/a"), o).unwrap_err().to_string();
    assert!(
        e.contains("cache.kv_max_value") && e.contains("no key-value cache"),
        "{e}"
    );
    // Shares that leave the block cache less than 5% of the budget.
    let mut o = Options::with_memory(64 << 20);
    o.fs = Arc::new(fs.clone());
    o.memory.budget_mut().kv_cache_share = 0.8;
    let e = Db::open(Path::new("/b"), o).unwrap_err().to_string();
    assert!(e.contains("memory.kv_cache_share") && e.contains("0.95"), "{e}");
    // Both by name, as text.
    let mut o = Options::default();
    o.set("memory.kv_cache_share", "0.2").unwrap();
    assert_eq!(o.get("memory.kv_cache_share").as_deref(), Some("0.2"));
    // Sized by hand while the budget is at its default: fixed sizes; not beside a budget set.
    assert!(o.set("memory.kv_cache", "8MiB").is_err());
    let mut o = Options::default();
    o.set("memory.kv_cache", "8MiB").unwrap();
    assert_eq!(
        o.memory.fixed_mut().kv_cache,
        8 << 20,
        "sizing it by name selects fixed sizes"
    );
}
