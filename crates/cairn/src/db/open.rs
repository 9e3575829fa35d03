//! Opening: create or recover (manifest, then WALs), then start background threads.
//!
//! Recovery replays the manifest into a version, replays every WAL from the oldest one a tree
//! still needs, flushes what was replayed to L0, and then makes the new state durable before
//! deleting anything: tables and directory synced, a new manifest written and named by
//! CURRENT, and only then old WALs and manifests removed.

use super::{DbInner, State, TreeMems, WalState, WriteQueue};
use crate::batch::DecodedBatch;
use crate::cache::{BlockCache, TableCache};
use crate::compaction::iter::CompactionFilter;
use crate::compaction::job::{write_outputs, Outputs};
use crate::compaction::policies::{Garnering, Leveling};
use crate::compaction::MergePolicy;
use crate::env::{read_all, FileSystem, ReadOptions};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::options::{check_compatible, parse_options_file, MergePolicyKind, Options};
use crate::stats::IoStats;
use crate::tuning::bpk::Uniform;
use crate::version::{manifest, Version, VersionEdit};
use crate::wal::{WalEnd, WalReader, WalWriter};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn policy(o: &Options) -> Box<dyn MergePolicy> {
    match o.merge_policy {
        MergePolicyKind::Leveling => Box::new(Leveling {
            t: o.size_ratio,
            l0_trigger: o.l0_compaction_trigger,
            base_bytes: o.max_bytes_for_level_base,
            max_levels: o.max_levels,
        }),
        MergePolicyKind::Garnering { c } => Box::new(Garnering {
            t: o.size_ratio,
            c,
            l0_trigger: o.l0_compaction_trigger,
            base_bytes: o.max_bytes_for_level_base,
            max_levels: o.max_levels,
        }),
    }
}

struct Recovered {
    version: Version,
    tree_names: Vec<String>,
    log_numbers: BTreeMap<u32, u64>,
    next_file: u64,
    last_seq: u64,
    /// None for a database created before ids existed: it gets one now.
    db_id: Option<u64>,
    /// The manifest replayed (None for a new database).
    manifest: Option<PathBuf>,
}

fn replay_manifest(fs: &dyn FileSystem, dir: &Path) -> Result<Recovered> {
    let (number, path) = manifest::read_current(fs, dir)?;
    let file = fs.open_read(&path, ReadOptions::default())?;
    let mut reader = WalReader::new(file, &path, number, crate::wal::RecoveryMode::PointInTime);
    let mut r = Recovered {
        version: Version::default(),
        tree_names: Vec::new(),
        log_numbers: BTreeMap::new(),
        next_file: 2,
        last_seq: 0,
        db_id: None,
        manifest: Some(path.clone()),
    };
    let mut records = 0;
    while let Some(rec) = reader.next_record()? {
        records += 1;
        let bad = |what: String| Error::corruption(&path, rec.offset, what);
        let edit = VersionEdit::decode(&rec.body).map_err(|e| bad(format!("version edit: {e}")))?;
        r.version = r.version.apply(&edit).map_err(bad)?;
        for (id, name) in &edit.new_trees {
            if *id as usize != r.tree_names.len() && r.tree_names.get(*id as usize).is_none_or(|n| n != name) {
                return Err(bad(format!("tree {id} ({name}) created out of order")));
            }
            if *id as usize == r.tree_names.len() {
                r.tree_names.push(name.clone());
            }
        }
        for &(t, n) in &edit.log_numbers {
            r.log_numbers.insert(t, n);
        }
        if let Some(n) = edit.next_file_number {
            r.next_file = r.next_file.max(n);
        }
        if let Some(s) = edit.last_seqno {
            r.last_seq = r.last_seq.max(s);
        }
        if let Some(id) = edit.db_id {
            if r.db_id.is_some_and(|old| old != id) {
                return Err(bad(format!("database id changes from {:?} to {id}", r.db_id)));
            }
            r.db_id = Some(id);
        }
    }
    if records == 0 || r.tree_names.is_empty() {
        return Err(Error::corruption(&path, 0, "manifest holds no database description"));
    }
    r.next_file = r.next_file.max(number + 1);
    // Every live table must exist with the size the manifest recorded. A manifest that lost
    // edits (damage that reads as a torn tail) names tables compactions already deleted; a
    // manifest from another database names files of other sizes. Both are corruption here,
    // before recovery deletes "obsolete" files and makes the loss permanent.
    for tv in &r.version.trees {
        for f in tv.levels.iter().flatten() {
            let table = filename::table(dir, f.number);
            match fs.file_size(&table) {
                Ok(size) if size == f.size => {}
                Ok(size) => {
                    return Err(Error::corruption(
                        &table,
                        size,
                        format!(
                            "{} lists this table with {} bytes; the file has {size}",
                            path.display(),
                            f.size
                        ),
                    ))
                }
                Err(e) => {
                    return Err(Error::corruption(
                        &table,
                        0,
                        format!("{} lists this table, which cannot be read: {e}", path.display()),
                    ))
                }
            }
        }
    }
    Ok(r)
}

/// Opens or creates the database.
pub(super) fn open(dir: &Path, opts: Options) -> Result<Arc<DbInner>> {
    opts.validate()?;
    let fs = opts.fs.clone();
    if !fs.exists(dir)? {
        if !opts.create_if_missing {
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
    if exists && opts.error_if_exists {
        return Err(Error::InvalidArgument(format!(
            "{} already holds a database (error_if_exists)",
            dir.display()
        )));
    }
    if let Some(&n) = filename::numbers(&names, FileKind::Options).last() {
        let path = filename::options(dir, n);
        let stored = parse_options_file(&read_all(&*fs, &path)?).map_err(|e| Error::corruption(&path, 0, e))?;
        check_compatible(&stored, &opts)?;
    }

    let mut rec = if exists {
        replay_manifest(&*fs, dir)?
    } else {
        let mut e = VersionEdit::default();
        e.new_trees.push((0, "default".into()));
        Recovered {
            version: Version::default().apply(&e).map_err(|e| Error::corruption(dir, 0, e))?,
            tree_names: vec!["default".into()],
            log_numbers: BTreeMap::new(),
            next_file: 2,
            last_seq: 0,
            db_id: None,
            manifest: None,
        }
    };
    let db_id = rec.db_id.unwrap_or_else(rand::random);
    for (t, tv) in rec.version.trees.iter().enumerate() {
        if tv.deepest_nonempty() >= opts.max_levels {
            return Err(Error::InvalidOptions {
                option: "max_levels",
                reason: format!(
                    "tree {} has files in level {}, beyond max_levels = {}",
                    rec.tree_names.get(t).map_or("?", |s| s.as_str()),
                    tv.deepest_nonempty(),
                    opts.max_levels
                ),
            });
        }
    }
    // File numbers already on disk (including orphans of an interrupted open) are never reused.
    for n in filename::numbers(&names, FileKind::Table)
        .into_iter()
        .chain(filename::numbers(&names, FileKind::Wal))
    {
        rec.next_file = rec.next_file.max(n + 1);
    }

    let io = Arc::new(IoStats::new());
    let mut mems: Vec<TreeMems> = rec.tree_names.iter().map(|_| TreeMems::new()).collect();
    let min_log = (0..rec.tree_names.len() as u32)
        .map(|t| rec.log_numbers.get(&t).copied().unwrap_or(0))
        .min()
        .unwrap_or(0);
    let mut last_seq = rec.last_seq;
    let wals: Vec<u64> = filename::numbers(&names, FileKind::Wal)
        .into_iter()
        .filter(|&n| n >= min_log)
        .collect();
    // The oldest WAL a tree needs is deleted only after an edit moving every tree past it is
    // durable. If it is gone, the manifest lost that edit (damage at its tail that reads as a
    // torn write): replaying it would silently drop the flushed data.
    if let Some(manifest) = &rec.manifest {
        if min_log > 0 && wals.first() != Some(&min_log) {
            return Err(Error::corruption(
                manifest,
                0,
                format!(
                    "trees need {} which is gone; the manifest has lost edits",
                    filename::wal(dir, min_log).display()
                ),
            ));
        }
    }
    'logs: for (i, &n) in wals.iter().enumerate() {
        let path = filename::wal(dir, n);
        let file = fs.open_read(&path, ReadOptions::default())?;
        let mut reader = WalReader::new(file, &path, n, opts.wal_recovery_mode);
        let mut first = true;
        while let Some(record) = reader.next_record()? {
            let bad = |what: String| Error::corruption(&path, record.offset, what);
            if std::mem::take(&mut first) {
                let header = crate::wal::parse_header(&record.body);
                if header.is_none() && opts.wal_recovery_mode == crate::wal::RecoveryMode::AbsoluteConsistency {
                    return Err(bad("log does not start with its header record".into()));
                }
                if let Some(id) = header {
                    if let Some(mine) = rec.db_id.filter(|&mine| mine != id) {
                        return Err(bad(format!(
                            "log of another database (id {id:016x}; this database is {mine:016x})"
                        )));
                    }
                    continue;
                }
            }
            let batch = DecodedBatch::parse(&record.body).map_err(|e| bad(format!("write batch: {e}")))?;
            for (j, op) in batch.ops().enumerate() {
                let op = op.map_err(|e| bad(format!("write batch: {e}")))?;
                let m = mems
                    .get(op.tree as usize)
                    .ok_or_else(|| bad(format!("write batch names unknown tree {}", op.tree)))?;
                let seq = batch.seqno + j as u64;
                if n >= rec.log_numbers.get(&op.tree).copied().unwrap_or(0) {
                    m.active.insert(op.key, seq, op.kind, op.value, n);
                }
                last_seq = last_seq.max(seq);
            }
        }
        if first && opts.wal_recovery_mode == crate::wal::RecoveryMode::AbsoluteConsistency {
            // Every log starts with a synced header: an empty live log lost bytes.
            return Err(Error::corruption(
                &path,
                0,
                "log is empty; it should start with its header record",
            ));
        }
        match reader.end() {
            WalEnd::Clean => {}
            end => {
                tracing::warn!(wal = %path.display(), ?end, "WAL ends early; later records are not replayed");
                if i + 1 < wals.len() {
                    // Replaying later logs would leave a hole in the history: stop here.
                    break 'logs;
                }
            }
        }
    }

    // Flush what was replayed, then make the new state durable.
    let mut edit = VersionEdit::default();
    let mut next_file = rec.next_file;
    let bpk = Box::new(Uniform {
        bpk: opts.bloom_bits_per_key,
    });
    for (t, m) in mems.iter_mut().enumerate() {
        if m.active.is_empty() {
            continue;
        }
        let table = super::table_options(&opts, &*bpk, t as u32, 0);
        let mut alloc = || {
            let n = next_file;
            next_file += 1;
            n
        };
        let mut filter = CompactionFilter::new(last_seq, |_| false);
        let out = write_outputs(
            &mut m.active.iter(),
            &mut filter,
            &mut Outputs {
                fs: &*fs,
                dir,
                table,
                target_file_size: u64::MAX,
                stats: io.clone(),
                new_file_number: &mut alloc,
            },
        )?;
        for f in out.files {
            edit.added.push((t as u32, 0, f));
        }
        *m = TreeMems::new();
    }
    let version = rec.version.apply(&edit).map_err(|e| Error::corruption(dir, 0, e))?;
    let wal_number = next_file;
    let manifest_number = next_file + 1;
    let options_number = next_file + 2;
    next_file += 3;
    let mut snap = version.snapshot_edit(&rec.tree_names);
    snap.db_id = Some(db_id);
    snap.next_file_number = Some(next_file);
    snap.last_seqno = Some(last_seq);
    for t in 0..rec.tree_names.len() as u32 {
        snap.log_numbers.push((t, wal_number));
    }
    let wal_writer = WalWriter::create(&*fs, &filename::wal(dir, wal_number), wal_number, db_id)?;
    let mpath = filename::manifest(dir, manifest_number);
    let mut mwriter = WalWriter::new(fs.create(&mpath)?, manifest_number);
    manifest::append_durably(&mut mwriter, &snap.encode())?;
    filename::write_atomically(&*fs, &filename::options(dir, options_number), &opts.encode_file())?;
    fs.sync_dir(dir)?;
    manifest::set_current(&*fs, dir, manifest_number)?;

    let cache = opts
        .block_cache
        .clone()
        .unwrap_or_else(|| Arc::new(BlockCache::new(opts.block_cache_size, opts.high_pri_pool_ratio)));
    let version = Arc::new(version);
    let ntrees = rec.tree_names.len();
    let inner = Arc::new(DbInner {
        db_id,
        dir: dir.to_path_buf(),
        fs: fs.clone(),
        policy: policy(&opts),
        bpk,
        cache,
        tables: TableCache::new(opts.max_open_files),
        io,
        compaction_io: Arc::new(IoStats::new()),
        stats: super::stats::Stats::new(ntrees, opts.max_levels),
        state: Mutex::new(State {
            live_versions: vec![Arc::downgrade(&version)],
            version,
            tree_names: rec.tree_names,
            mems,
            next_file_number: next_file,
            manifest: mwriter,
            manifest_number,
            pending_outputs: BTreeSet::new(),
            busy: HashSet::new(),
            wal_number,
            log_numbers: vec![wal_number; ntrees],
            old_wals: BTreeMap::new(),
            running_compactions: 0,
            flushing: false,
        }),
        bg_cv: Condvar::new(),
        done_cv: Condvar::new(),
        queue: Mutex::new(WriteQueue {
            tickets: VecDeque::new(),
            batches: BTreeMap::new(),
            results: BTreeMap::new(),
            next_ticket: 0,
        }),
        queue_cv: Condvar::new(),
        wal: Mutex::new(WalState { writer: wal_writer }),
        last_seq: AtomicU64::new(last_seq),
        supers: RwLock::new(Vec::new()),
        snapshots: Mutex::new(BTreeMap::new()),
        poison: Mutex::new(None),
        poisoned: AtomicBool::new(false),
        shutdown: AtomicBool::new(false),
        threads: Mutex::new(Vec::new()),
        lock: Mutex::new(Some(lock)),
        options_number,
        opts,
    });
    {
        let st = inner.state.lock();
        for t in 0..ntrees {
            inner.install_super_version(&st, t);
        }
    }
    // Temporary files left by a write that failed or was interrupted before its rename
    // (listed before this open wrote anything) are never referenced.
    for name in names.iter().filter(|n| filename::parse(n) == FileKind::Temp) {
        if let Err(e) = fs.remove_file(&dir.join(name)) {
            tracing::warn!(file = %name, error = %e, "could not delete a leftover temporary file");
        }
    }
    inner.delete_obsolete_files();
    if let Err(e) = super::compact::start_threads(&inner) {
        inner.shutdown.store(true, Ordering::Release);
        return Err(e);
    }
    Ok(inner)
}

/// Creates tree `name` (durably, in the manifest) unless it exists; returns its id.
pub(super) fn create_tree(inner: &Arc<DbInner>, name: &str) -> Result<u32> {
    if name.is_empty() || name.len() > 255 {
        return Err(Error::InvalidArgument("tree names must be 1 to 255 bytes".into()));
    }
    inner.check_writable()?;
    let _wal = inner.wal.lock();
    let mut st = inner.state.lock();
    if let Some(id) = st.tree_names.iter().position(|n| n == name) {
        return Ok(id as u32);
    }
    let id = st.tree_names.len() as u32;
    let mut edit = VersionEdit::default();
    edit.new_trees.push((id, name.to_string()));
    edit.log_numbers.push((id, st.wal_number));
    st.mems.push(TreeMems::new());
    st.tree_names.push(name.to_string());
    if let Err(e) = inner.log_and_apply(&mut st, edit) {
        st.mems.pop();
        st.tree_names.pop();
        return Err(e);
    }
    inner.stats.add_tree(inner.opts.max_levels);
    Ok(id)
}
