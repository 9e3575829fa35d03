//! The stored configuration on reopen: kept for the settings the caller leaves at their
//! defaults, replaced by the ones it sets, refused with a message when the two conflict.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

use cairn::env::MemFs;
use cairn::{BpkPolicy, Compression, Db, FilterPolicy, Memory, MemoryComponent, MergePolicyKind, Options, UnitFormat};
use std::sync::Arc;

fn base(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

/// The techniques switched on together, as a user who found them would.
fn configured(fs: &MemFs) -> Options {
    let mut o = base(fs);
    o.memory.budget_mut().bytes = 64 << 20;
    o.filters.policy = BpkPolicy::Monkey.into();
    o.memtable.component = MemoryComponent::Partitioned;
    o.range_filter.bits_per_key = 16.0;
    o.compaction.merge_policy = MergePolicyKind::Garnering { c: 0.8 };
    o.table.compression = Compression::Zstd;
    o.filters.unit_format = UnitFormat::Standard;
    o
}

fn fill(db: &Db) {
    for i in 0..2000u32 {
        db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    db.flush_all().unwrap();
}

/// The settings that shape the engine, as `Db::options` reports them.
fn shape(o: &Options) -> (u64, bool, BpkPolicy, MemoryComponent, f64, MergePolicyKind, Compression) {
    let (budget, tuner) = match &o.memory {
        Memory::Budget(b) => (b.bytes as u64, b.tuner.is_some()),
        Memory::Fixed(_) => (0, false),
    };
    (
        budget,
        tuner,
        o.filters.policy.kind(),
        o.memtable.component,
        o.range_filter.bits_per_key,
        o.compaction.merge_policy,
        o.table.compression,
    )
}

/// The newest OPTIONS file's `key=value` pairs.
fn stored(fs: &MemFs) -> std::collections::BTreeMap<String, String> {
    cairn::inspect::stored_options(fs, std::path::Path::new("/db"))
        .unwrap()
        .unwrap()
        .1
}

#[test]
fn a_reopen_with_defaults_keeps_the_configuration() {
    let fs = MemFs::new();
    let want = shape(&configured(&fs));
    let db = Db::open("/db", configured(&fs)).unwrap();
    fill(&db);
    db.close().unwrap();

    let db = Db::open("/db", base(&fs)).unwrap();
    assert_eq!(shape(&db.options()), want);
    // The engine runs with it, and the OPTIONS file the reopen wrote still holds it.
    let stats = db.property("cairn.stats").unwrap();
    assert!(stats.contains("filter allocation monkey"), "{stats}");
    let m = db.memory();
    assert_eq!(m.write_capacity + m.cache_capacity + m.kv_cache_capacity, 64 << 20);
    let file = stored(&fs);
    assert_eq!(file["filters.policy"], "monkey");
    assert_eq!(file["memtable.component"], "partitioned");
    assert_eq!(db.options().filters.unit_format, UnitFormat::Standard);
    assert_eq!(file["filters.unit_format"], "standard");
    assert_eq!(file["memory.budget"], (64u64 << 20).to_string());
    for i in 0..2000u32 {
        assert_eq!(db.get(format!("k{i:05}")).unwrap(), Some(format!("v{i}").into_bytes()));
    }
    db.close().unwrap();

    // A read-only open follows the same rule.
    let db = Db::open_read_only("/db", base(&fs)).unwrap();
    assert_eq!(shape(&db.options()), want);
}

#[test]
fn a_setting_the_caller_changes_replaces_the_stored_one() {
    let fs = MemFs::new();
    Db::open("/db", configured(&fs)).unwrap().close().unwrap();
    let db = Db::open("/db", {
        let mut o = base(&fs);
        o.memory.budget_mut().bytes = 32 << 20;
        o.filters.policy = BpkPolicy::Optimal.into();
        o
    })
    .unwrap();
    let o = db.options();
    assert_eq!(o.filters.policy, FilterPolicy::Optimal);
    // The rest is kept.
    assert_eq!(
        shape(&o),
        (
            32 << 20,
            true,
            BpkPolicy::Optimal,
            MemoryComponent::Partitioned,
            16.0,
            MergePolicyKind::Garnering { c: 0.8 },
            Compression::Zstd
        )
    );
    db.close().unwrap();
    assert_eq!(stored(&fs)["filters.policy"], "optimal");

    // keep_stored = false: exactly the options given, defaults included.
    let db = Db::open("/db", {
        let mut o = base(&fs);
        o.keep_stored = false;
        o
    })
    .unwrap();
    let o = db.options();
    assert_eq!(shape(&o), shape(&Options::default()));
    db.close().unwrap();
    assert_eq!(stored(&fs)["filters.policy"], "mnemosyne");
    assert_eq!(stored(&fs)["memory.budget"], (256u64 << 20).to_string());
}

/// A caller's setting that conflicts with a stored one is refused, naming both and the way
/// out; nothing is written.
#[test]
fn a_conflict_with_the_stored_configuration_is_refused() {
    let fs = MemFs::new();
    Db::open("/db", {
        let mut o = configured(&fs);
        o.range_filter.bits_per_key = 0.0;
        o
    })
    .unwrap()
    .close()
    .unwrap();
    let before = stored(&fs);
    // The range filter is off in the database; a parameter of it given alone conflicts.
    let e = Db::open("/db", {
        let mut o = base(&fs);
        o.range_filter.key_offset = 2;
        o
    })
    .unwrap_err();
    match &e {
        cairn::Error::InvalidOptions { option, reason } => {
            assert_eq!(*option, "range_filter.key_offset");
            assert!(
                reason.contains("range_filter.key_offset = 2")
                    && reason.contains("kept from the database's OPTIONS")
                    && reason.contains("range_filter.bits_per_key")
                    && reason.contains("keep_stored = false"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(stored(&fs), before, "a refused open writes no OPTIONS");

    // The format cannot change whatever the caller asks.
    let mut o = base(&fs);
    assert!(o.set("comparator", "reverse").is_err());

    // Fixed sizes are an explicit choice: they replace the stored budget (by type or by name).
    for fixed in [Options::with_fixed_memory(256 << 20, 64 << 20, 8 << 20), {
        let mut o = Options::default();
        o.set("memory.write_memory", "256MiB").unwrap();
        o
    }] {
        let mut o = fixed;
        o.fs = Arc::new(fs.clone());
        let db = Db::open("/db", o).unwrap();
        assert!(matches!(&db.options().memory, Memory::Fixed(f) if f.write_memory == 256 << 20));
        assert_eq!(stored(&fs)["memory.budget"], "0");
        db.close().unwrap();
    }
}

/// The index restart interval (added with delta-handle index entries): set by its name (the
/// flat one refused), refused out of range naming itself and its range, kept by a reopen with the
/// defaults, and the tables written with it read back.
#[test]
fn the_index_restart_interval_is_set_refused_and_kept_like_the_others() {
    let fs = MemFs::new();
    let mut o = base(&fs);
    o.set("table.index_restart_interval", "3").unwrap();
    assert_eq!(o.table.index_restart_interval, 3);
    assert!(base(&fs).set("index_restart_interval", "3").is_err(), "one name each");
    let e = base(&fs)
        .set("table.index_restart_interval", "eight")
        .unwrap_err()
        .to_string();
    assert!(e.contains("table.index_restart_interval") && e.contains("eight"), "{e}");
    // Out of range: refused at open, naming the option, the value and the range.
    for bad in ["0", "70000"] {
        let mut b = base(&fs);
        b.set("table.index_restart_interval", bad).unwrap();
        let Err(e) = Db::open("/bad", b) else {
            panic!("{bad} accepted")
        };
        let e = e.to_string();
        assert!(
            e.contains("table.index_restart_interval") && e.contains(bad) && e.contains("65535"),
            "{bad}: {e}"
        );
    }

    let db = Db::open("/db", o).unwrap();
    fill(&db);
    db.close().unwrap();
    let db = Db::open("/db", base(&fs)).unwrap();
    assert_eq!(db.options().table.index_restart_interval, 3);
    assert_eq!(stored(&fs)["table.index_restart_interval"], "3");
    for i in 0..2000u32 {
        assert_eq!(db.get(format!("k{i:05}")).unwrap(), Some(format!("v{i}").into_bytes()));
    }
    db.close().unwrap();
}

/// `cache.huge_pages`: set by its name (the flat one refused), a bad value refused naming it and the choices, kept
/// by a reopen with the defaults; beside a shared cache (which has its own threshold) refused
/// at open, naming it.
#[test]
fn cache_huge_pages_is_set_refused_and_kept_like_the_others() {
    let fs = MemFs::new();
    let mut o = base(&fs);
    o.set("cache.huge_pages", "false").unwrap();
    assert!(!o.cache.huge_pages);
    assert!(base(&fs).set("cache_huge_pages", "false").is_err(), "one name each");
    let e = base(&fs).set("cache.huge_pages", "sometimes").unwrap_err().to_string();
    assert!(
        e.contains("cache.huge_pages") && e.contains("sometimes") && e.contains("true") && e.contains("false"),
        "{e}"
    );

    let db = Db::open("/db", o).unwrap();
    fill(&db);
    db.close().unwrap();
    let db = Db::open("/db", base(&fs)).unwrap();
    assert!(!db.options().cache.huge_pages);
    assert_eq!(stored(&fs)["cache.huge_pages"], "false");
    db.close().unwrap();

    let mut shared = base(&fs);
    shared.memory.fixed_mut().block_cache = cairn::CacheSource::Shared(Arc::new(cairn::BlockCache::new(1 << 20, 0.5)));
    shared.set("cache.huge_pages", "false").unwrap();
    let Err(e) = Db::open("/shared", shared) else {
        panic!("cache.huge_pages = false beside a shared cache accepted")
    };
    let e = e.to_string();
    assert!(
        e.contains("cache.huge_pages") && e.contains("shared block_cache"),
        "{e}"
    );
}
