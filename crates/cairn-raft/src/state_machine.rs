//! The replicated key-value state machine on cairn. Its data lives in one of two trees,
//! `{group}.sm.0` and `{group}.sm.1`; `{group}.meta` says which is live (`sm.live`) beside the
//! last-applied log id (`sm.applied`) and the membership (`sm.membership`). Every applied run of
//! entries is one write batch of its data changes and those two ids.
//!
//! A snapshot is built from a cairn snapshot (data and ids at one sequence number) into a file,
//! and installed into the idle tree: cleared, filled from the stream, synced, and made live by
//! one synced write of `sm.live` with the snapshot's ids — a crash at any point leaves either
//! the old state or the new one. The tree that was live is then cleared and compacted (an
//! error there leaves garbage in the idle tree, cleared by the next install, never wrong data).

use crate::snapshot::{Reader, Writer, SNAPSHOT_FILE};
use crate::{any, meta_tree, Request, Response, TypeConfig};
use cairn::{Db, IngestOptions, TableWriter, Tree, WriteBatch};
use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{BasicNode, EntryPayload, LogId, RaftSnapshotBuilder, StorageError, StorageIOError, StoredMembership};
use parking_lot::Mutex;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::AsyncSeekExt;

const LIVE: &[u8] = b"sm.live";
const APPLIED: &[u8] = b"sm.applied";
const MEMBERSHIP: &[u8] = b"sm.membership";
/// Clearing a tree writes its deletions in batches of about this many bytes.
const INSTALL_BATCH: usize = 4 << 20;
/// An install writes the snapshot into tables of about this many bytes of keys and values.
const INSTALL_TABLE: usize = 64 << 20;

type Meta = SnapshotMeta<u64, BasicNode>;
type Membership = StoredMembership<u64, BasicNode>;
type Error = StorageError<u64>;

/// The state shared by the state machine, its snapshot builders and readers.
#[derive(Debug)]
struct Shared {
    db: Db,
    meta: Tree,
    data: [Tree; 2],
    /// Which of `data` is live (`sm.live`); changed only by an install.
    live: AtomicUsize,
    dir: PathBuf,
    /// The current snapshot file's metadata; held while the file is replaced or opened.
    current: Mutex<Option<Meta>>,
    /// Numbers temporary file names.
    tmp: AtomicU64,
}

/// openraft's `RaftStateMachine` for the key-value store of one group.
#[derive(Debug)]
pub struct StateMachine {
    shared: Arc<Shared>,
}

/// Builds snapshots (openraft's `RaftSnapshotBuilder`); runs beside the state machine.
#[derive(Debug)]
pub struct SnapshotBuilder {
    shared: Arc<Shared>,
}

/// Reads the state machine's live data (a local read: linearizable only after openraft's
/// `ensure_linearizable` on the leader).
#[derive(Debug, Clone)]
pub struct KvReader {
    shared: Arc<Shared>,
}

fn decode<T: serde::de::DeserializeOwned>(what: &[u8], b: &[u8]) -> io::Result<T> {
    postcard::from_bytes(b).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{what:?}: {e}")))
}

fn encode<T: serde::Serialize>(v: &T) -> io::Result<Vec<u8>> {
    postcard::to_allocvec(v).map_err(io::Error::other)
}

fn cairn_io(e: cairn::Error) -> io::Error {
    io::Error::other(e.to_string())
}

/// The state machine's meta keys as `get` reads them (the latest state or a snapshot's).
struct MetaState {
    applied: Option<LogId<u64>>,
    membership: Membership,
    /// Which data tree is live.
    live: usize,
}

fn read_meta(get: impl Fn(&[u8]) -> cairn::Result<Option<Vec<u8>>>) -> io::Result<MetaState> {
    let get = |k: &[u8]| get(k).map_err(cairn_io);
    let applied = get(APPLIED)?.map(|b| decode(APPLIED, &b)).transpose()?.flatten();
    let membership = get(MEMBERSHIP)?
        .map(|b| decode(MEMBERSHIP, &b))
        .transpose()?
        .unwrap_or_default();
    let live = match get(LIVE)?.as_deref() {
        None | Some([0]) => 0,
        Some([1]) => 1,
        Some(b) => return Err(io::Error::new(io::ErrorKind::InvalidData, format!("bad sm.live {b:?}"))),
    };
    Ok(MetaState {
        applied,
        membership,
        live,
    })
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl StateMachine {
    /// Opens (creating if missing) the state machine of `group` on `db`, with its snapshots in
    /// `dir`.
    ///
    /// # Errors
    /// cairn and file-system errors; a current snapshot file whose header does not decode.
    pub fn open(db: &Db, group: &str, dir: PathBuf) -> Result<Self, Error> {
        Self::open_inner(db, group, dir).map_err(|e| StorageIOError::read_state_machine(any(e)).into())
    }

    fn open_inner(db: &Db, group: &str, dir: PathBuf) -> io::Result<Self> {
        let tree = |name: String| db.tree(&name).map_err(cairn_io);
        let meta = tree(meta_tree(group))?;
        let data = [tree(format!("{group}.sm.0"))?, tree(format!("{group}.sm.1"))?];
        let live = read_meta(|k| meta.get(k))?.live;
        fs::create_dir_all(&dir)?;
        // Temporary files of builds and installs a crash interrupted.
        for e in fs::read_dir(&dir)? {
            let path = e?.path();
            if path.extension().is_some_and(|x| x == "tmp") {
                if path.is_dir() {
                    fs::remove_dir_all(&path)?;
                } else {
                    fs::remove_file(&path)?;
                }
            }
        }
        let path = dir.join(SNAPSHOT_FILE);
        let current = match File::open(&path) {
            Ok(f) => {
                let len = f.metadata()?.len();
                let (_, meta) = Reader::open(BufReader::new(f), io::sink(), len, &db.options().limits)?;
                Some(decode::<Meta>(b"snapshot meta", &meta)?)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(StateMachine {
            shared: Arc::new(Shared {
                db: db.clone(),
                meta,
                data,
                live: AtomicUsize::new(live),
                dir,
                current: Mutex::new(current),
                tmp: AtomicU64::new(0),
            }),
        })
    }

    /// A reader of the live data.
    pub fn reader(&self) -> KvReader {
        KvReader {
            shared: self.shared.clone(),
        }
    }
}

impl KvReader {
    /// The value of `key`.
    ///
    /// # Errors
    /// cairn read errors.
    pub fn get(&self, key: &[u8]) -> cairn::Result<Option<Vec<u8>>> {
        self.shared.data[self.shared.live.load(Ordering::Acquire)].get(key)
    }
}

impl Shared {
    fn applied_state(&self) -> io::Result<(Option<LogId<u64>>, Membership)> {
        let m = read_meta(|k| self.meta.get(k))?;
        Ok((m.applied, m.membership))
    }

    fn tmp_path(&self, what: &str) -> PathBuf {
        self.dir
            .join(format!("{what}-{}.tmp", self.tmp.fetch_add(1, Ordering::Relaxed)))
    }

    /// Makes the synced file at `tmp` the current snapshot unless a newer one is current.
    fn publish(&self, meta: &Meta, tmp: &Path) -> io::Result<()> {
        let mut current = self.current.lock();
        if current.as_ref().is_some_and(|c| c.last_log_id > meta.last_log_id) {
            return fs::remove_file(tmp);
        }
        fs::rename(tmp, self.dir.join(SNAPSHOT_FILE))?;
        sync_dir(&self.dir)?;
        *current = Some(meta.clone());
        Ok(())
    }

    fn write(&self, batch: WriteBatch, sync: bool) -> io::Result<()> {
        crate::write(&self.db, batch, sync).map_err(cairn_io)
    }

    /// Writes a snapshot of the live data to a file, makes it current and returns it open.
    fn build(&self) -> io::Result<(Meta, File)> {
        let snap = self.db.snapshot();
        let MetaState {
            applied: last_log_id,
            membership: last_membership,
            live,
        } = read_meta(|k| snap.get_in(&self.meta, k))?;
        // Unique across restarts: cairn's sequence numbers only grow.
        let snapshot_id = match &last_log_id {
            Some(l) => format!("{}-{}-{}", l.leader_id, l.index, snap.seqno()),
            None => format!("none-{}", snap.seqno()),
        };
        let meta = Meta {
            last_log_id,
            last_membership,
            snapshot_id,
        };
        let tmp = self.tmp_path("build");
        let file = File::options().read(true).write(true).create_new(true).open(&tmp)?;
        let mut w = Writer::new(BufWriter::with_capacity(1 << 20, &file), &encode(&meta)?)?;
        for item in snap.range_in::<&[u8], _>(&self.data[live], ..) {
            let (k, v) = item.map_err(cairn_io)?;
            w.record(&k, &v)?;
        }
        w.finish()?;
        file.sync_all()?;
        // The open handle stays valid whether or not the name is replaced later.
        self.publish(&meta, &tmp)?;
        Ok((meta, file))
    }

    /// Removes every key of `tree` (a range tombstone, and point deletes for keys from 0xff).
    fn clear(&self, tree: &Tree) -> io::Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete_range_in(tree, b"", [0xff]);
        for item in tree.range(vec![0xffu8]..) {
            let (k, _) = item.map_err(cairn_io)?;
            batch.delete_in(tree, &k);
            if batch.size_bytes() >= INSTALL_BATCH {
                self.write(std::mem::take(&mut batch), false)?;
            }
        }
        self.write(batch, false)
    }

    /// Writes the snapshot's records from `r` into external tables of about
    /// [`INSTALL_TABLE`] bytes each under `staging` (a new directory) and ingests them into
    /// `target` (moved: linked where the file system allows).
    fn fill_by_ingestion<R: io::Read, W: io::Write>(
        &self,
        target: &Tree,
        r: &mut Reader<R, W>,
        staging: &Path,
    ) -> io::Result<()> {
        fs::create_dir(staging)?;
        let opts = self.db.options();
        let mut tables = Vec::new();
        let mut writer: Option<(TableWriter, usize)> = None;
        while let Some((k, v)) = r.next_record()? {
            if writer.is_none() {
                let path = staging.join(format!("{:06}.sst", tables.len()));
                writer = Some((TableWriter::create(path, &opts).map_err(cairn_io)?, 0));
            }
            if let Some((w, bytes)) = &mut writer {
                w.put(&k, &v).map_err(cairn_io)?;
                *bytes += k.len() + v.len();
            }
            if let Some((w, _)) = writer.take_if(|(_, bytes)| *bytes >= INSTALL_TABLE) {
                tables.push(w.finish().map_err(cairn_io)?.path);
            }
        }
        if let Some((w, _)) = writer {
            tables.push(w.finish().map_err(cairn_io)?.path);
        }
        let moved = IngestOptions {
            move_files: true,
            ..IngestOptions::default()
        };
        target.ingest(&tables, &moved).map_err(cairn_io)?;
        Ok(())
    }

    /// Installs the snapshot in `file` (`len` bytes) described by `meta`.
    fn install(&self, meta: &Meta, file: File, len: u64) -> io::Result<()> {
        let old = self.live.load(Ordering::Acquire);
        let target = &self.data[1 - old];
        // Cleared only when it holds something (a crash interrupted an install): a range
        // tombstone over the whole tree would overlap every ingested table, sending them all to
        // L0 above it; an empty tree takes them at its deepest level.
        if target.iter().next().is_some() {
            self.clear(target)?;
        }
        let tmp = self.tmp_path("install");
        let copy = BufWriter::with_capacity(1 << 20, File::create_new(&tmp)?);
        let (mut r, file_meta) = Reader::open(
            BufReader::with_capacity(1 << 20, file),
            copy,
            len,
            &self.db.options().limits,
        )?;
        let file_meta: Meta = decode(b"snapshot meta", &file_meta)?;
        if file_meta != *meta {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the snapshot file is {file_meta:?}, openraft installs {meta:?}"),
            ));
        }
        // The records come in key order (a snapshot is a scan): they are written into tables
        // and ingested in one step, without the write path (a table refuses keys out of order,
        // and the install fails before anything is live).
        let staging = self.tmp_path("install-tables");
        let ingested = self.fill_by_ingestion(target, &mut r, &staging);
        let _ = fs::remove_dir_all(&staging);
        ingested?;
        let copy = r.into_copy().into_inner().map_err(|e| e.into_error())?;
        copy.sync_all()?;
        // The data is durable (the ingestion's manifest edit, and the logs it synced before
        // it); one synced write makes it live with its ids.
        let mut flip = WriteBatch::new();
        flip.put_in(&self.meta, LIVE, [(1 - old) as u8]);
        flip.put_in(&self.meta, APPLIED, encode(&meta.last_log_id)?);
        flip.put_in(&self.meta, MEMBERSHIP, encode(&meta.last_membership)?);
        self.write(flip, true)?;
        self.live.store(1 - old, Ordering::Release);
        self.publish(meta, &tmp)?;
        // The old data is garbage now: cleared and compacted away before the install returns
        // (a background thread would keep the database open after its owner closed it).
        let old_tree = &self.data[old];
        let reclaimed = self
            .clear(old_tree)
            .and_then(|()| old_tree.compact_range::<&[u8], _>(..).map_err(cairn_io));
        if let Err(e) = reclaimed {
            tracing::warn!(error = %e, "reclaiming the replaced state machine data failed");
        }
        Ok(())
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> io::Result<T> + Send + 'static) -> io::Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(io::Error::other)?
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, Error> {
        let shared = self.shared.clone();
        let (meta, file) = blocking(move || shared.build())
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
        let mut file = tokio::fs::File::from_std(file);
        file.seek(SeekFrom::Start(0))
            .await
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), any(e)))?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(file),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId<u64>>, Membership), Error> {
        self.shared
            .applied_state()
            .map_err(|e| StorageIOError::read_state_machine(any(e)).into())
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Response>, Error>
    where
        I: IntoIterator<Item = openraft::Entry<TypeConfig>> + openraft::OptionalSend,
        I::IntoIter: openraft::OptionalSend,
    {
        let s = &self.shared;
        let data = &s.data[s.live.load(Ordering::Acquire)];
        let mut batch = WriteBatch::new();
        let mut replies = Vec::new();
        let mut last = None;
        for entry in entries {
            last = Some(entry.log_id);
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(Request::Put { key, value }) => {
                    batch.put_in(data, key, value);
                }
                EntryPayload::Normal(Request::Delete { key }) => {
                    batch.delete_in(data, key);
                }
                EntryPayload::Normal(Request::DeleteRange { start, end }) => {
                    batch.delete_range_in(data, start, end);
                }
                EntryPayload::Membership(m) => {
                    let stored = Membership::new(Some(entry.log_id), m);
                    let v = encode(&stored).map_err(|e| StorageIOError::apply(entry.log_id, any(e)))?;
                    batch.put_in(&s.meta, MEMBERSHIP, v);
                }
            }
            replies.push(Response {});
        }
        let Some(last) = last else {
            return Ok(replies);
        };
        let v = encode(&Some(last)).map_err(|e| StorageIOError::apply(last, any(e)))?;
        batch.put_in(&s.meta, APPLIED, v);
        s.write(batch, false).map_err(|e| StorageIOError::apply(last, any(e)))?;
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder {
        SnapshotBuilder {
            shared: self.shared.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<tokio::fs::File>, Error> {
        // An unnamed file: it goes away with its handle whatever happens to the transfer.
        let path = self.shared.tmp_path("receive");
        let f = (|| {
            let f = File::options().read(true).write(true).create_new(true).open(&path)?;
            fs::remove_file(&path)?;
            Ok::<_, io::Error>(f)
        })()
        .map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
        Ok(Box::new(tokio::fs::File::from_std(f)))
    }

    async fn install_snapshot(&mut self, meta: &Meta, snapshot: Box<tokio::fs::File>) -> Result<(), Error> {
        let err = |e: io::Error| StorageError::from(StorageIOError::read_snapshot(Some(meta.signature()), any(e)));
        let mut file = *snapshot;
        file.seek(SeekFrom::Start(0)).await.map_err(err)?;
        let len = file.metadata().await.map_err(err)?.len();
        let file = file.into_std().await;
        let (shared, m) = (self.shared.clone(), meta.clone());
        blocking(move || shared.install(&m, file, len)).await.map_err(err)
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, Error> {
        let current = self.shared.current.lock();
        let Some(meta) = current.clone() else {
            return Ok(None);
        };
        let file = File::open(self.shared.dir.join(SNAPSHOT_FILE))
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), any(e)))?;
        drop(current);
        Ok(Some(Snapshot {
            meta,
            snapshot: Box::new(tokio::fs::File::from_std(file)),
        }))
    }
}
