//! Opening: create or recover (manifest, then WALs), then start background threads.
//!
//! Recovery replays the manifest into a version, replays every WAL from the oldest one a tree
//! still needs (writing what it replays to L0 a memtable at a time, within write memory), and
//! then makes the new state durable before deleting anything: tables and directory synced, a
//! new WAL, manifest and OPTIONS file written, CURRENT pointed at the manifest, and only then
//! old WALs, manifests and leftovers removed.

use super::inner::{DbInner, State, WalState};
use super::replay::replay_wals;
use super::table_cache::TableCache;
use crate::compaction::job::Outputs;
use crate::compaction::policies::{Garnering, Leveling};
use crate::compaction::MergePolicy;
use crate::env::{read_all, FileLock, FileSystem};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::memory::MemoryRegions;
use crate::memtable::{filter_target, MemComponent, Memtable};
use crate::options::{check_compatible, merge_stored, BpkPolicy, LevelTargets, MergePolicyKind, Options, Regions};
use crate::sst::BlockCache;
use crate::stats::{EngineCounters, FileRegistry, IoStats};
use crate::tuning::bpk::{BpkAllocator, Elastic, Mnemosyne, Monkey, Optimal, Uniform};
use crate::tuning::FilterPlan;
use crate::version::set::{self, Initial, Recovered, VersionSet};
use crate::version::{FileMeta, Version, VersionEdit};
use crate::wal::WalWriter;
use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

fn policy(o: &Options) -> Box<dyn MergePolicy> {
    let c = &o.compaction;
    match c.merge_policy {
        MergePolicyKind::Leveling => Box::new(Leveling {
            t: c.size_ratio,
            l0_trigger: c.l0_trigger,
            base_bytes: c.max_bytes_for_level_base,
            max_levels: c.max_levels,
            follow_write_memory: c.level_targets == LevelTargets::WriteMemory,
        }),
        MergePolicyKind::Garnering { c: scale } => Box::new(Garnering {
            t: c.size_ratio,
            c: scale,
            l0_trigger: c.l0_trigger,
            base_bytes: c.max_bytes_for_level_base,
            max_levels: c.max_levels,
        }),
    }
}

pub(super) fn allocator(o: &Options) -> Arc<dyn BpkAllocator> {
    let b = o.filters.bits_per_key;
    let p = &o.filters.policy;
    match (p.kind(), p.units()) {
        (_, Some(u)) => Arc::new(Elastic {
            name: p.kind().name(),
            units: u.units,
            unit_bpk: u.unit_bits_per_key,
        }),
        (BpkPolicy::Uniform, _) => Arc::new(Uniform { bpk: b }),
        (BpkPolicy::Monkey, _) => Arc::new(Monkey { bpk: b }),
        (BpkPolicy::Optimal, _) => Arc::new(Optimal { bpk: b }),
        _ => Arc::new(Mnemosyne { bpk: b }),
    }
}

/// A new database: the default tree and nothing else.
fn fresh(dir: &Path) -> Result<Recovered> {
    let mut e = VersionEdit::default();
    e.new_trees.push((0, "default".into()));
    Ok(Recovered {
        version: Version::default().apply(&e).map_err(|e| Error::corruption(dir, 0, e))?,
        tree_names: vec!["default".into()],
        log_numbers: BTreeMap::new(),
        next_file: 2,
        last_seq: 0,
        db_id: None,
        manifest: dir.join("(new)"),
        manifest_number: 0,
    })
}

/// The options of this open: the caller's with the database's stored configuration merged in
/// (`Options::keep_stored`; `stored` is the newest OPTIONS file, if any), validated, with the
/// merge operator resolved; and the regions they start with.
fn checked(mut given: Options, stored: Option<(&Path, &BTreeMap<String, String>)>) -> Result<(Options, Regions)> {
    let caller = given.clone();
    let mut taken = Vec::new();
    if let Some((path, stored)) = stored {
        check_compatible(stored)?;
        taken = merge_stored(&mut given, stored).map_err(|e| Error::corruption(path, 0, e))?;
    }
    if let Err(Error::InvalidOptions { option, reason }) = given.validate() {
        // Name the stored settings that took part when the caller's options alone were fine.
        let reason = if !taken.is_empty() && caller.validate().is_ok() {
            format!(
                "{reason} (kept from the database's OPTIONS: {}; set them, or keep_stored = false)",
                taken.join(", ")
            )
        } else {
            reason
        };
        return Err(Error::InvalidOptions { option, reason });
    }
    if !taken.is_empty() {
        tracing::info!(settings = %taken.join(", "), "kept the database's stored settings the options left at their defaults");
    }
    let stored_merge = stored.and_then(|(_, m)| m.get("merge.operator")).map(String::as_str);
    given.merge_operator = crate::merge::for_open(given.merge_operator.as_ref(), stored_merge)?;
    let regions = Regions::of(&given);
    Ok((given, regions))
}

/// Refuses a database with files deeper than `max_levels` allows.
fn check_levels(rec: &Recovered, opts: &Options) -> Result<()> {
    for (t, tv) in rec.version.trees.iter().enumerate() {
        if tv.deepest_nonempty() >= opts.compaction.max_levels {
            return Err(Error::InvalidOptions {
                option: "compaction.max_levels",
                reason: format!(
                    "tree {} has files in level {}, beyond compaction.max_levels = {}",
                    rec.tree_names.get(t).map_or("?", |s| s.as_str()),
                    tv.deepest_nonempty(),
                    opts.compaction.max_levels
                ),
            });
        }
    }
    Ok(())
}

/// Opens or creates the database.
pub(super) fn open(dir: &Path, given: Options) -> Result<Arc<DbInner>> {
    let fs = given.fs.clone();
    if !fs.exists(dir)? {
        // Nothing stored to merge: bad options fail before anything is created.
        given.validate()?;
        if !given.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "{} does not exist (create_if_missing is false)",
                dir.display()
            )));
        }
        fs.create_dir_all(dir)?;
        if let Some(parent) = dir.parent() {
            fs.sync_dir(parent)?;
        }
    }
    let lock = fs.lock(&filename::lock(dir))?;
    let names = fs.list(dir)?;
    let exists = names.iter().any(|n| n == "CURRENT");
    if exists && given.error_if_exists {
        return Err(Error::InvalidArgument(format!(
            "{} already holds a database (error_if_exists)",
            dir.display()
        )));
    }
    let stored = crate::options::read_stored(&*fs, dir, &names)?;
    let (opts, regions) = checked(given, stored.as_ref().map(|(p, m)| (p.as_path(), m)))?;
    crate::memory::fix_malloc_threshold(opts.malloc_mmap_threshold);

    let mut rec = if exists { set::recover(&*fs, dir)? } else { fresh(dir)? };
    let db_id = rec.db_id.unwrap_or_else(rand::random);
    check_levels(&rec, &opts)?;
    // File numbers already on disk (including orphans of an interrupted open) are never reused.
    for n in filename::numbers(&names, FileKind::Table)
        .into_iter()
        .chain(filename::numbers(&names, FileKind::Wal))
    {
        rec.next_file = rec.next_file.max(n + 1);
    }

    let io = Arc::new(IoStats::new());
    // What is replayed goes to L0 as it comes (a memtable at a time) and the rest at the end;
    // nothing is durable before the new manifest names it.
    let bpk = allocator(&opts);
    let mut version = rec.version.clone();
    let mut next_file = rec.next_file;
    let mut flush_replayed = |t: usize, m: &Arc<Memtable>| -> Result<()> {
        let table = super::filters::recovery_table_options(&opts, db_id, &bpk, version.trees.get(t));
        let mut alloc = || {
            let n = next_file;
            next_file += 1;
            n
        };
        // No reader exists yet: only each key's newest version is kept.
        let out = super::flush::write_l0(
            std::slice::from_ref(m),
            crate::format::ikey::MAX_SEQNO,
            opts.clock.now_ms(),
            &mut Outputs {
                fs: &*fs,
                dir,
                table,
                target_file_size: u64::MAX,
                grandparents: Vec::new(),
                stats: io.clone(),
                new_file_number: &mut alloc,
                merge: opts.merge_operator.clone(),
            },
        )?;
        // Replayed data is the newest of its keys: a new L0 group above every other.
        let l0_group = version
            .trees
            .get(t)
            .map_or(1, |tv| tv.l0_group_for(b"", b"", false, &|_| false));
        let mut edit = VersionEdit::default();
        edit.added
            .extend(out.files.into_iter().map(|f| (t as u32, 0, FileMeta { l0_group, ..f })));
        version = version.apply(&edit).map_err(|e| Error::corruption(dir, 0, e))?;
        Ok(())
    };
    let (mems, last_seq) = replay_wals(&*fs, dir, &opts, &names, &rec, exists, Some(&mut flush_replayed))?;
    for (t, m) in mems.iter().enumerate() {
        if !m.active().is_empty() {
            flush_replayed(t, m.active())?;
        }
    }
    let wal_number = next_file;
    let manifest_number = next_file + 1;
    let options_number = next_file + 2;
    let wal_writer = WalWriter::create(
        &*fs,
        &filename::wal(dir, wal_number),
        wal_number,
        db_id,
        Some(last_seq + 1),
    )?;
    let ntrees = rec.tree_names.len();
    let versions = VersionSet::create(
        fs.clone(),
        dir,
        Initial {
            db_id,
            version,
            tree_names: rec.tree_names,
            manifest_number,
            next_file_number: next_file + 3,
            last_seq,
            log_number: wal_number,
            max_manifest_size: opts.files.max_manifest_size,
        },
    )?;
    filename::write_atomically(&*fs, &filename::options(dir, options_number), &opts.encode_file())?;
    fs.sync_dir(dir)?;
    versions.make_current()?;

    let first = filter_target(0, regions.memtable_size, regions.write_memory / ntrees.max(1));
    let mems = (0..ntrees)
        .map(|_| MemComponent::shaped(opts.memtable.component, opts.memtable.partitioned_size_ratio, first))
        .collect();
    let inner = assemble(
        dir,
        opts,
        regions,
        Parts {
            db_id,
            bpk,
            io,
            versions,
            // The replayed memtables are in tables now.
            mems,
            wal_number,
            writer: Some(wal_writer),
            lock: Some(lock),
            last_seq,
            options_number,
        },
    );
    // Temporary files left by a write that failed or was interrupted before its rename
    // (listed before this open wrote anything) are never referenced.
    for name in names.iter().filter(|n| filename::parse(n) == FileKind::Temp) {
        if let Err(e) = fs.remove_file(&dir.join(name)) {
            tracing::warn!(file = %name, error = %e, "could not delete a leftover temporary file");
        }
    }
    inner.delete_obsolete_files();
    if let Err(e) = super::background::start_threads(&inner) {
        inner.life.shut_down();
        return Err(e);
    }
    Ok(inner)
}

/// Opens the database read-only: no lock is taken, nothing is written or deleted, no
/// background thread runs. What the WALs hold is replayed into memtables and stays there, so
/// a reader sees the last state the writer pushed to the OS. A writer in another process may
/// be changing the files meanwhile (a new manifest, a flushed WAL deleted): an attempt that
/// fails while CURRENT or its manifest changed under it is retried on the new state.
pub(super) fn open_read_only(dir: &Path, given: Options) -> Result<Arc<DbInner>> {
    let fs = given.fs.clone();
    if !fs.exists(&filename::current(dir))? {
        return Err(Error::InvalidArgument(format!(
            "{} holds no database (no CURRENT file)",
            dir.display()
        )));
    }
    let mut attempts = 0;
    loop {
        let before = durable_mark(&*fs, dir);
        match recover_read_only(dir, &given) {
            Ok((opts, regions, parts)) => {
                crate::memory::fix_malloc_threshold(opts.malloc_mmap_threshold);
                return Ok(assemble(dir, opts, regions, parts));
            }
            Err(e) if attempts < 10 && durable_mark(&*fs, dir) != before => {
                tracing::debug!(error = %e, "the database changed during a read-only open; retrying");
                attempts += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// CURRENT's bytes and the size of the manifest it names: an edit or a new manifest changes it.
fn durable_mark(fs: &dyn FileSystem, dir: &Path) -> Option<(Vec<u8>, u64)> {
    let current = read_all(fs, &filename::current(dir)).ok()?;
    let size = crate::version::manifest::read_current(fs, dir)
        .and_then(|(_, path)| fs.file_size(&path))
        .ok()?;
    Some((current, size))
}

/// The options (the stored configuration merged as a writable open would), their regions and
/// the recovered state.
fn recover_read_only(dir: &Path, given: &Options) -> Result<(Options, Regions, Parts)> {
    let fs = &*given.fs;
    // The manifest first, then the listing: every WAL the manifest needs was created before
    // the edit that names it, so it is listed (unless a newer edit already released it).
    let rec = set::recover(fs, dir)?;
    let names = fs.list(dir)?;
    let stored = crate::options::read_stored(fs, dir, &names)?;
    let (opts, regions) = checked(given.clone(), stored.as_ref().map(|(p, m)| (p.as_path(), m)))?;
    check_levels(&rec, &opts)?;
    let (mems, last_seq) = replay_wals(fs, dir, &opts, &names, &rec, true, None)?;
    let db_id = rec.db_id.unwrap_or(0);
    let wal_number = filename::numbers(&names, FileKind::Wal).last().copied().unwrap_or(0);
    let parts = Parts {
        db_id,
        bpk: allocator(&opts),
        io: Arc::new(IoStats::new()),
        versions: VersionSet::read_only(opts.fs.clone(), dir, rec, db_id),
        mems,
        wal_number,
        writer: None,
        lock: None,
        last_seq,
        options_number: 0,
    };
    Ok((opts, regions, parts))
}

/// Creates tree `name` (durably, in the manifest) unless it exists; returns its id.
pub(super) fn create_tree(inner: &Arc<DbInner>, name: &str) -> Result<u32> {
    if name.is_empty() || name.len() > 255 {
        return Err(Error::InvalidArgument("tree names must be 1 to 255 bytes".into()));
    }
    let mut wal = inner.wal.lock();
    let mut st = inner.state.lock();
    if let Some(id) = st.versions.tree_names().iter().position(|n| n == name) {
        return Ok(id as u32);
    }
    inner.check_writable()?;
    let id = st.versions.tree_names().len() as u32;
    let mut edit = VersionEdit::default();
    edit.new_trees.push((id, name.to_string()));
    edit.log_numbers.push((id, st.wal_number));
    // The tree's memory component exists before the edit, so a manifest rotation the edit
    // triggers records its log number too.
    let empty = empty_component(inner, st.mems.len() + 1);
    st.mems.push(empty);
    wal.actives.clear();
    if let Err(e) = inner.log_and_apply(&mut st, edit, &[]) {
        st.mems.pop();
        return Err(e);
    }
    Ok(id)
}

/// An empty memory component for one of `trees` trees, its filter sized for its share of the
/// write budget.
fn empty_component(inner: &DbInner, trees: usize) -> MemComponent {
    let m = &inner.memory;
    MemComponent::shaped(
        inner.opts.memtable.component,
        inner.opts.memtable.partitioned_size_ratio,
        filter_target(0, m.write_buffer_size(), m.write_budget() / trees),
    )
}

/// Drops tree `name` (durably, in the manifest): its files leave the version (and are deleted
/// as obsolete once no reader holds them), its memory is released and its name is freed.
pub(super) fn drop_tree(inner: &Arc<DbInner>, name: &str) -> Result<()> {
    let mut wal = inner.wal.lock();
    let mut st = inner.state.lock();
    let id = match st.versions.tree_names().iter().position(|n| n == name) {
        Some(0) => return Err(Error::InvalidArgument("the default tree cannot be dropped".into())),
        Some(id) => id,
        None => return Err(Error::InvalidArgument(format!("no tree named {name:?}"))),
    };
    inner.check_writable()?;
    let mut edit = VersionEdit::default();
    edit.dropped_trees.push(id as u32);
    // It needs no WAL any more: older logs may go once the other trees are past them.
    edit.log_numbers.push((id as u32, st.wal_number));
    let empty = empty_component(inner, st.mems.len());
    let held = std::mem::replace(&mut st.mems[id], empty);
    wal.actives.clear();
    if let Err(e) = inner.log_and_apply(&mut st, edit, &[]) {
        // Not dropped unless the edit was applied (the database is poisoned when its manifest
        // write failed).
        if !st.versions.is_dropped(id) {
            st.mems[id] = held;
            inner.install_super_version(&st, id);
        }
        return Err(e);
    }
    drop((st, wal));
    inner.delete_obsolete_files();
    Ok(())
}

/// What an open recovered, to be assembled into the engine.
struct Parts {
    db_id: u64,
    bpk: Arc<dyn BpkAllocator>,
    io: Arc<IoStats>,
    versions: VersionSet,
    mems: Vec<MemComponent>,
    wal_number: u64,
    /// `None` when read-only.
    writer: Option<WalWriter>,
    lock: Option<Box<dyn FileLock>>,
    last_seq: u64,
    options_number: u64,
}

/// The engine over `p`, every tree's super-version installed; no thread started.
fn assemble(dir: &Path, opts: Options, regions: Regions, p: Parts) -> Arc<DbInner> {
    let ntrees = p.mems.len();
    let read_only = p.writer.is_none();
    // The tuner may shrink the cache to its floor (and the meta blocks charged to it).
    let least = regions.tuner.as_ref().map_or(regions.block_cache, |t| t.floor);
    let cache = regions.shared_cache.clone().unwrap_or_else(|| {
        Arc::new(
            BlockCache::with_least(regions.block_cache, least, opts.cache.high_pri_pool_ratio)
                .huge_pages_from(opts.cache.huge_pages.then_some(BlockCache::HUGE_PAGES_FROM)),
        )
    });
    let range_filters = super::control::range_filter_memory::capacity(&opts, &regions, cache.capacity());
    let ghost = (regions.ghost_cache > 0).then(|| crate::cache::GhostCache::attach(&cache, regions.ghost_cache));
    let inner = Arc::new(DbInner {
        db_id: p.db_id,
        dir: dir.to_path_buf(),
        fs: opts.fs.clone(),
        policy: policy(&opts),
        bpk: p.bpk,
        cache,
        ghost,
        kv: (regions.kv_cache > 0)
            .then(|| crate::cache::KvCache::new(regions.kv_cache, opts.cache.kv_max_value, regions.kv_ghost)),
        tables: TableCache::new(opts.files.max_open_files),
        io: p.io,
        compaction_io: Arc::new(IoStats::new()),
        counters: EngineCounters::new(ntrees, opts.compaction.max_levels),
        files: super::live_files::LiveFiles::new(
            FileRegistry::new(opts.filters.merlin_window),
            opts.filters.policy.kind().is_elastic(),
        ),
        memory: MemoryRegions::new(regions.write_memory, regions.memtable_size, range_filters),
        range_memory: super::control::range_filter_memory::RangeMemory::default(),
        readahead: Mutex::default(),
        filter_plan: ArcSwap::from_pointee(FilterPlan::default()),
        elastic: super::control::elastic_adjuster::Elastic::new(regions.filter_memory as u64),
        tuner: regions
            .tuner
            .as_ref()
            .map(super::control::memory_tuner::MemoryTuner::new),
        state: Mutex::new(State {
            versions: p.versions,
            mems: p.mems,
            pending_outputs: BTreeSet::new(),
            busy: HashSet::new(),
            wal_number: p.wal_number,
            old_wals: BTreeMap::new(),
            wal_pins: BTreeMap::new(),
            running_compactions: 0,
            writing: Vec::new(),
            flushing: false,
            recent_writes: Vec::new(),
            quiet: Default::default(),
            spare_wal: None,
            spare_wanted: !read_only,
        }),
        bg_cv: Condvar::new(),
        done_cv: Condvar::new(),
        commits: Default::default(),
        txns: Default::default(),
        wal: Mutex::new(WalState {
            writer: p.writer,
            delay: None,
            rates: Default::default(),
            room: None,
            actives: Vec::new(),
        }),
        closed_wals: Default::default(),
        last_seq: AtomicU64::new(p.last_seq),
        state_epoch: AtomicU64::new(0),
        supers: ArcSwap::from_pointee(Vec::new()),
        snapshots: Mutex::new(BTreeMap::new()),
        life: super::lifecycle::Lifecycle::new(p.lock),
        options_number: p.options_number,
        opts,
        regions,
    });
    let st = inner.state.lock();
    for t in 0..ntrees {
        inner.install_super_version(&st, t);
    }
    drop(st);
    inner
}
