//! Options through their public forms: by field, by name (`Options::set`/`get`), validated at
//! open, stored in OPTIONS, and the generated `docs/options.md`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

use cairn::env::MemFs;
use cairn::{
    BpkPolicy, Budget, CacheSource, Db, Error, FilterPolicy, LevelTargets, Memory, MemoryComponent, MergePolicyKind,
    Options, Result,
};
use std::path::Path;
use std::sync::Arc;

fn refused(e: Result<()>) -> (&'static str, String) {
    match e {
        Err(Error::InvalidOptions { option, reason }) => (option, reason),
        other => panic!("accepted: {other:?}"),
    }
}

/// The names of the table, from the generated docs.
fn names() -> Vec<String> {
    cairn::options_table()
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next().map(String::from))
        .collect()
}

fn fixed() -> Options {
    Options::with_fixed_memory(128 << 20, 64 << 20, 32 << 20)
}

#[test]
fn validation_names_the_option() {
    Options::default().validate().unwrap();
    type Set = Box<dyn Fn(&mut Options)>;
    let cases: Vec<(&str, Set)> = vec![
        ("memtable.size", Box::new(|o| o.memory.fixed_mut().memtable_size = 0)),
        ("table.block_size", Box::new(|o| o.table.block_size = 10)),
        ("filters.bits_per_key", Box::new(|o| o.filters.bits_per_key = -1.0)),
        (
            "range_filter.bits_per_key",
            Box::new(|o| o.range_filter.bits_per_key = 65.0),
        ),
        ("range_filter.key_offset", Box::new(|o| o.range_filter.key_offset = 256)),
        (
            "range_filter.probe_budget",
            Box::new(|o| o.range_filter.probe_budget = 0),
        ),
        (
            "compaction.merge_policy",
            Box::new(|o| o.compaction.merge_policy = MergePolicyKind::Garnering { c: 1.5 }),
        ),
        (
            "write_stalls.l0_stop_trigger",
            Box::new(|o| o.write_stalls.l0_stop_trigger = 1),
        ),
        ("compaction.max_levels", Box::new(|o| o.compaction.max_levels = 1)),
        (
            "memory.write_memory",
            Box::new(|o| o.memory.fixed_mut().write_memory = 1),
        ),
    ];
    for (name, set) in cases {
        let mut o = Options::default();
        set(&mut o);
        assert_eq!(refused(o.validate()).0, name);
    }
    let mut o = Options::default();
    o.table.block_size = 10;
    assert_eq!(
        refused(o.validate()).1,
        "table.block_size = 10 B must be between 64 B and 64 MiB"
    );
}

/// One row per setting: names unique, grouped except the per-open flags at the top.
#[test]
fn the_table_names_every_setting_once() {
    let names = names();
    let mut seen = std::collections::BTreeSet::new();
    for n in &names {
        assert!(seen.insert(n), "{n} twice");
        assert!(
            n.contains('.')
                || [
                    "create_if_missing",
                    "error_if_exists",
                    "keep_stored",
                    "malloc_mmap_threshold"
                ]
                .contains(&n.as_str()),
            "{n}: settings have a group"
        );
    }
    assert!(names.len() > 60, "{}", names.len());
}

/// `docs/options.md` is generated from the table (`CAIRN_REWRITE=1` rewrites it).
#[test]
fn docs_table_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/options.md");
    let actual = cairn::options_table();
    if cairn::testutil::rewrite() {
        std::fs::write(&path, &actual).unwrap();
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        golden == actual,
        "docs/options.md is stale: run CAIRN_REWRITE=1 cargo test -p cairn --test options"
    );
}

/// Each combination the types allow where a setting has no effect is refused, naming the
/// setting the caller changed and showing the values.
#[test]
fn what_the_types_allow_is_validated() {
    // Filter memory with a policy that loads no units.
    let mut o = fixed();
    o.memory.fixed_mut().filter_memory = 8 << 20;
    let (option, why) = refused(o.validate());
    assert_eq!(option, "memory.filter_memory");
    assert!(why.contains("filters.policy = mnemosyne"), "{why}");
    // No bits per key with an elastic policy and nothing else to size filter memory.
    let mut o = fixed();
    o.filters.bits_per_key = 0.0;
    o.filters.policy = BpkPolicy::MnemosyneElastic.into();
    let (option, why) = refused(o.validate());
    assert_eq!(option, "filters.bits_per_key");
    assert!(why.contains("mnemosyne-elastic"), "{why}");
    // Bits per key that filter memory overrides.
    let mut o = fixed();
    o.filters.bits_per_key = 6.0;
    o.filters.policy = BpkPolicy::Elastic.into();
    o.memory.fixed_mut().filter_memory = 1 << 20;
    assert_eq!(refused(o.validate()).0, "filters.bits_per_key");
    // A tuner floor above a starting region; the automatic floor fits every budget.
    let mut o = Options::with_memory(64 << 20);
    o.memory.budget_mut().tuner_mut().floor = 32 << 20;
    let (option, why) = refused(o.validate());
    assert_eq!(option, "memory.tuner_floor");
    assert!(why.contains("32 MiB") && why.contains("16 MiB"), "{why}");
    for budget in [cairn::MIN_BUDGET, 4 << 20, 64 << 20, 1 << 30, 16 << 30] {
        Options::with_memory(budget).validate().unwrap();
    }
    // Partitioned parameters with a monolithic component.
    let mut o = Options::default();
    o.memtable.partitioned_size_ratio = 4;
    assert_eq!(refused(o.validate()).0, "memtable.partitioned_size_ratio");
    o.memtable.component = MemoryComponent::Partitioned;
    o.validate().unwrap();
    // Range-filter settings without range filters, or of another kind.
    let mut o = Options::default();
    o.range_filter.bits_per_key = 0.0;
    o.range_filter.key_offset = 4;
    assert_eq!(refused(o.validate()).0, "range_filter.key_offset");
    o.range_filter.key_offset = 0;
    o.range_filter.by_workload = false; // a switch off agrees with the filter being off
    o.validate().unwrap();
    let mut o = Options::default();
    o.range_filter.kind = cairn::RangeFilterKind::Grafite;
    o.range_filter.max_depth = 8;
    let (option, why) = refused(o.validate());
    assert_eq!(option, "range_filter.max_depth");
    assert!(why.contains("range_filter.kind = grafite"), "{why}");
    // Range-filter memory where range filters are not charged to the cache.
    let mut o = fixed();
    o.range_filter.memory_share = 0.25;
    assert_eq!(refused(o.validate()).0, "range_filter.memory_share");
    o.memory.fixed_mut().index_in_block_cache = true;
    o.validate().unwrap();
    // Level targets under Garnering; L1's capacity when it follows write memory.
    let mut o = Options::default();
    o.compaction.merge_policy = MergePolicyKind::Garnering { c: 0.8 };
    o.compaction.level_targets = LevelTargets::WriteMemory;
    assert_eq!(refused(o.validate()).0, "compaction.level_targets");
    let mut o = Options::default();
    o.compaction.level_targets = LevelTargets::WriteMemory;
    o.compaction.max_bytes_for_level_base = 1 << 20;
    assert_eq!(refused(o.validate()).0, "compaction.max_bytes_for_level_base");
    // glibc's mmap threshold is at most 32 MiB.
    let o = Options {
        malloc_mmap_threshold: 64 << 20,
        ..Options::default()
    };
    let (option, why) = refused(o.validate());
    assert_eq!(option, "malloc_mmap_threshold");
    assert!(why.contains("64 MiB") && why.contains("32 MiB"), "{why}");
    // A budget of no bytes.
    let o = Options {
        memory: Memory::Budget(Budget {
            bytes: 0,
            ..Budget::default()
        }),
        ..Options::default()
    };
    let (option, why) = refused(o.validate());
    assert_eq!(option, "memory.budget");
    assert!(why.contains("Memory::Fixed"), "{why}");
}

/// Where two settings relate, the error names the one the caller set, with both values.
#[test]
fn relations_name_the_option_set() {
    let mut o = fixed();
    o.memory.fixed_mut().memtable_size = 256 << 20;
    let (option, why) = refused(o.validate());
    assert_eq!(option, "memtable.size");
    assert!(
        why.contains("memtable.size = 256 MiB") && why.contains("memory.write_memory = 128 MiB"),
        "{why}"
    );
    let mut o = Options::default();
    o.set("memory.write_memory", "32MiB").unwrap();
    assert_eq!(refused(o.validate()).0, "memory.write_memory");
    let mut o = Options::with_memory(64 << 20);
    o.memory.budget_mut().write_share = 0.9;
    o.filters.policy = BpkPolicy::Elastic.into();
    assert_eq!(refused(o.validate()).0, "memory.write_share");
}

#[test]
fn set_takes_names_and_units() {
    let mut o = Options::default();
    o.set("memory.budget", "64MiB").unwrap();
    assert!(matches!(&o.memory, Memory::Budget(b) if b.bytes == 64 << 20));
    o.set("memory.budget", "1.5 GiB").unwrap();
    assert_eq!(o.get("memory.budget").unwrap(), (3u64 << 29).to_string());
    o.set("table.block_size", "8k").unwrap();
    assert_eq!(o.table.block_size, 8192);
    o.set("filters.policy", "mnemosyne-elastic").unwrap();
    o.set("wal.recovery_mode", "absolute-consistency").unwrap();
    assert_eq!(o.wal.recovery_mode, cairn::RecoveryMode::AbsoluteConsistency);
    o.set("table.compression", "zstd").unwrap();
    assert_eq!(o.table.compression, cairn::Compression::Zstd);
    let e = o.set("filters.policy", "elastik").unwrap_err().to_string();
    assert!(
        e.contains("filters.policy") && e.contains("\"elastik\"") && e.contains("uniform, monkey, mnemosyne"),
        "{e}"
    );
    let e = o.set("memory.budget", "64 MB/s").unwrap_err().to_string();
    assert!(e.contains("not a size"), "{e}");
    let e = o.set("cache.huge_pages", "maybe").unwrap_err().to_string();
    assert!(
        e.contains("cache.huge_pages") && e.contains("\"maybe\"") && e.contains("true") && e.contains("false"),
        "{e}"
    );
    // One name each: the flat names of pre-release builds are unknown, with the near names.
    for flat in ["bpk_policy", "memory_budget", "cache_huge_pages", "block_size"] {
        let e = o.set(flat, "1").unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{flat}: {e}");
    }
    let e = o.set("bloom_bits", "4").unwrap_err().to_string();
    assert!(e.contains("filters.bits_per_key"), "{e}");
    assert!(o.get("no.such").is_none());
}

/// Every setting reads back what `set` gave it, through the groups: each given a value other
/// than its default (with the alternative that holds it chosen).
#[test]
fn every_setting_round_trips_through_the_groups() {
    for name in names() {
        let mut o = Options::default();
        let select: &[(&str, &str)] = match name.as_str() {
            "memory.write_memory"
            | "memtable.size"
            | "memory.block_cache"
            | "memory.filter_memory"
            | "memory.kv_cache"
            | "cache.index_in_block_cache" => &[("memory.budget", "0"), ("filters.policy", "elastic")],
            _ => &[("filters.policy", "mnemosyne-elastic")],
        };
        o.set_all(select.iter().copied()).unwrap();
        let now = o.get(&name).unwrap_or_else(|| panic!("{name} has no place"));
        let other = match (now.as_str(), name.as_str()) {
            ("true", _) => "false".to_string(),
            ("false", _) => "true".to_string(),
            (_, "compaction.merge_policy") => "garnering:0.5".into(),
            (_, "filters.policy") => "elastic".into(),
            (_, "table.compression") => "lz4".into(),
            (_, "filters.unit_format") => "standard".into(),
            (_, "range_filter.kind") => "rosetta".into(),
            (_, "memtable.flush_policy") => "min-lsn".into(),
            (_, "memtable.component") => "partitioned".into(),
            (_, "compaction.level_targets") => "write-memory".into(),
            (_, "wal.recovery_mode") => "tolerate-corrupted-tail".into(),
            (_, "merge.operator") => "uint64add".into(),
            (_, "ttl.trees") => "sessions=30m".into(),
            (_, "memory.budget") => "1048576".into(),
            _ => "3".into(),
        };
        assert_ne!(now, other, "{name}");
        o.set(&name, &other).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(o.get(&name).as_deref(), Some(other.as_str()), "{name}");
        // And back to the value it had.
        o.set(&name, &now).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(o.get(&name), Some(now), "{name}");
    }
}

/// What the alternatives cannot hold is refused by name, naming the setting and why; in one
/// `set_all` the order does not matter.
#[test]
fn set_refuses_what_the_alternatives_cannot_hold() {
    let mut o = Options::default();
    let (option, why) = refused(o.set("filters.elastic_units", "8"));
    assert_eq!(option, "filters.elastic_units");
    assert!(why.contains("filters.policy = mnemosyne"), "{why}");
    assert_eq!(o.filters.policy, FilterPolicy::Mnemosyne, "nothing changed");
    o.set_all([("filters.elastic_units", "8"), ("filters.policy", "elastic")])
        .unwrap();
    assert_eq!(o.filters.policy.units().map(|u| u.units), Some(8));
    // Switching the policy away would drop the units set: refused, naming them.
    assert_eq!(refused(o.set("filters.policy", "monkey")).0, "filters.elastic_units");

    // A region by hand beside an explicit budget (the budget used to win silently).
    let mut o = Options::default();
    o.set("memory.budget", "64MiB").unwrap();
    let (option, why) = refused(o.set("memory.write_memory", "512MiB"));
    assert_eq!(option, "memory.write_memory");
    assert!(
        why.contains("512MiB") && why.contains("memory.budget = 64 MiB"),
        "{why}"
    );
    // With the budget at its default, a region by hand selects fixed sizes.
    let mut o = Options::default();
    o.set_all([("memory.write_memory", "512MiB"), ("memory.block_cache", "1GiB")])
        .unwrap();
    match &o.memory {
        Memory::Fixed(f) => {
            assert_eq!(f.write_memory, 512 << 20);
            assert!(matches!(f.block_cache, CacheSource::Own(n) if n == 1 << 30));
        }
        Memory::Budget(_) => panic!("a region by hand selects fixed sizes"),
    }
    // ... and `memory.budget` then switches back, refusing the regions set by hand.
    assert_eq!(
        refused(o.clone().set("memory.budget", "64MiB")).0,
        "memory.write_memory"
    );
    // The tuner's parameters without the tuner, and the tuner turned off under them.
    let mut o = Options::default();
    o.set("memory.tuner", "false").unwrap();
    assert!(matches!(&o.memory, Memory::Budget(b) if b.tuner.is_none()));
    assert_eq!(
        refused(o.set("memory.tuner_period_ms", "5")).0,
        "memory.tuner_period_ms"
    );
    let mut o = Options::default();
    o.set("memory.tuner_period_ms", "5").unwrap();
    assert_eq!(refused(o.set("memory.tuner", "false")).0, "memory.tuner_period_ms");
    // Under fixed sizes, a share of the budget has no place.
    let mut o = Options::default();
    o.set("memory.budget", "0").unwrap();
    assert_eq!(refused(o.set("memory.write_share", "0.5")).0, "memory.write_share");
}

/// The settings of the engine's own cache, beside a shared cache that has its own: refused,
/// naming the setting and why.
#[test]
fn own_cache_settings_beside_a_shared_cache_are_refused() {
    let shared = || {
        let mut o = fixed();
        o.memory.fixed_mut().block_cache = CacheSource::Shared(Arc::new(cairn::BlockCache::new(1 << 20, 0.5)));
        o
    };
    shared().validate().unwrap();
    for (name, value) in [("cache.huge_pages", "false"), ("cache.high_pri_pool_ratio", "0.25")] {
        let mut o = shared();
        o.set(name, value).unwrap();
        let (option, why) = refused(o.validate());
        assert_eq!(option, name);
        assert!(why.contains(name) && why.contains("shared block_cache"), "{why}");
    }
    assert_eq!(
        refused(shared().set("memory.block_cache", "1MiB")).0,
        "memory.block_cache"
    );
}

/// The OPTIONS file an open writes with the default options, pinned
/// (`docs/format/options.md`), and its checksum checked.
#[test]
fn golden_options_file_and_its_checksum() {
    let fs = MemFs::new();
    let mut o = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    // Thread counts default to the machine's cores: pinned here.
    o.background.compaction_threads = 2;
    o.background.max_subcompactions = 2;
    Db::open("/db", o).unwrap().close().unwrap();
    let (path, stored) = cairn::inspect::stored_options(&fs, Path::new("/db")).unwrap().unwrap();
    let bytes = cairn::env::read_all(&fs, &path).unwrap();
    // The file's format, and which settings it stores: a new setting adds a line without a
    // new format, and is recorded as one more stored setting.
    let versions = format!("OPTIONS {}, {} values", stored["format_version"], stored.len());
    cairn::testutil::check_format_golden(
        "golden/OPTIONS-default",
        &versions,
        std::str::from_utf8(&bytes).unwrap(),
    );
    assert_eq!(stored["table.block_size"], "4096");
    let mut bad = bytes;
    bad[40] ^= 1;
    cairn::env::write_all_synced(&fs, &path, &bad).unwrap();
    assert!(cairn::inspect::stored_options(&fs, Path::new("/db")).is_err());
}

/// Every stored setting of a configuration away from the defaults reads back through
/// `with_stored`, and values that do not parse are refused naming the option.
#[test]
fn stored_options_read_back() {
    let fs = MemFs::new();
    let mut o = fixed();
    o.fs = Arc::new(fs.clone());
    o.set_all([
        ("table.compression", "zstd"),
        ("filters.bits_per_key", "7.5"),
        ("filters.policy", "mnemosyne-elastic"),
        ("filters.elastic_unit_bits_per_key", "3.25"),
        ("compaction.merge_policy", "garnering:0.6"),
        ("memtable.flush_policy", "optimal"),
        ("memtable.component", "partitioned"),
        ("memtable.partitioned_size_ratio", "4"),
        ("cache.high_pri_pool_ratio", "0.25"),
        ("compaction.max_levels", "9"),
    ])
    .unwrap();
    Db::open("/db", o.clone()).unwrap().close().unwrap();
    let back = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let back = back.with_stored(Path::new("/db")).unwrap();
    for name in names() {
        if !["create_if_missing", "error_if_exists", "keep_stored"].contains(&name.as_str()) {
            assert_eq!(back.get(&name), o.get(&name), "{name}");
        }
    }
    let mut b = Options::default();
    for (k, v) in [
        ("table.block_size", "big"),
        ("table.compression", "snappy"),
        ("compaction.merge_policy", "tiering"),
        ("compaction.merge_policy", "garnering:x"),
        ("filters.policy", "dense"),
        ("memtable.flush_policy", "largest"),
        ("compaction.level_targets", "dynamic"),
        ("memtable.component", "tiered"),
        ("wal.recovery_mode", "Skip"),
    ] {
        let e = b.set(k, v).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidOptions { option, .. } if *option == k),
            "{k}={v}: {e}"
        );
    }
    assert!(matches!(b.set("comparator", "reverse"), Err(Error::InvalidArgument(_))));
}
