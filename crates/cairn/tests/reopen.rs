//! The stored configuration on reopen: kept for the settings the caller leaves at their
//! defaults, replaced by the ones it sets, refused with a message when the two conflict.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

use cairn::env::MemFs;
use cairn::{BpkPolicy, Compression, Db, MemoryComponent, MergePolicyKind, Options};
use std::sync::Arc;

fn base(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

/// The techniques switched on together, as a user who found them would.
fn configured(fs: &MemFs) -> Options {
    Options {
        memory_budget: 64 << 20,
        bpk_policy: BpkPolicy::Monkey,
        memory_component: MemoryComponent::Partitioned,
        range_filter_bits_per_key: 16.0,
        merge_policy: MergePolicyKind::Garnering { c: 0.8 },
        compression: Compression::Zstd,
        ..base(fs)
    }
}

fn fill(db: &Db) {
    for i in 0..2000u32 {
        db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
}

/// The settings that shape the engine, as `Db::options` reports them.
fn shape(o: &Options) -> (u64, bool, BpkPolicy, MemoryComponent, f64, MergePolicyKind, Compression) {
    (
        o.memory_budget as u64,
        o.memory_tuner,
        o.bpk_policy,
        o.memory_component,
        o.range_filter_bits_per_key,
        o.merge_policy,
        o.compression,
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
    assert_eq!(db.memory().write_capacity + db.memory().cache_capacity, 64 << 20);
    let file = stored(&fs);
    assert_eq!(file["filters.policy"], "monkey");
    assert_eq!(file["memtable.component"], "partitioned");
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
    let db = Db::open(
        "/db",
        Options {
            bpk_policy: BpkPolicy::Optimal,
            memory_budget: 32 << 20,
            ..base(&fs)
        },
    )
    .unwrap();
    let o = db.options();
    assert_eq!((o.bpk_policy, o.memory_budget), (BpkPolicy::Optimal, 32 << 20));
    // The rest is kept.
    assert_eq!(o.memory_component, MemoryComponent::Partitioned);
    assert!(o.memory_tuner);
    db.close().unwrap();
    assert_eq!(stored(&fs)["filters.policy"], "optimal");

    // keep_stored = false: exactly the options given, defaults included.
    let db = Db::open(
        "/db",
        Options {
            keep_stored: false,
            ..base(&fs)
        },
    )
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
    Db::open("/db", configured(&fs)).unwrap().close().unwrap();
    let before = stored(&fs);
    let e = Db::open(
        "/db",
        Options {
            write_memory_budget: 256 << 20,
            ..base(&fs)
        },
    )
    .unwrap_err();
    match &e {
        cairn::Error::InvalidOptions { option, reason } => {
            assert_eq!(*option, "write_memory_budget");
            assert!(
                reason.contains("memory.budget = 64 MiB")
                    && reason.contains("kept from the database's OPTIONS")
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
    o.keep_stored = false;
    o.write_memory_budget = 256 << 20;
    let db = Db::open("/db", o).unwrap();
    assert_eq!(db.options().memory_budget, 0);
}
