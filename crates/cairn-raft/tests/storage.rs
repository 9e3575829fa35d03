//! cairn-raft's own guarantees beyond openraft's suite: acknowledged appends survive power
//! loss, a node restarted from an installed snapshot plus its log serves exactly the applied
//! state, and a damaged snapshot is refused without touching the live state.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail by panicking"
)]

use cairn::env::{CrashMode, FaultFs, MemFs};
use cairn::{Db, Options};
use cairn_raft::{LogStore, Request, StateMachine, TypeConfig, SNAPSHOT_FILE};
use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, Membership, RaftLogReader, RaftSnapshotBuilder, Vote};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

fn log_id(term: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn entry(term: u64, index: u64, payload: EntryPayload<TypeConfig>) -> Entry<TypeConfig> {
    Entry {
        log_id: log_id(term, index),
        payload,
    }
}

fn put(k: u64, v: &str) -> EntryPayload<TypeConfig> {
    EntryPayload::Normal(Request::Put {
        key: format!("k{k:04}").into_bytes(),
        value: v.as_bytes().to_vec(),
    })
}

fn membership() -> EntryPayload<TypeConfig> {
    EntryPayload::Membership(Membership::new(vec![BTreeSet::from([1, 2, 3])], None))
}

/// Entries `from..=to`: puts of key `i % 37` (overwrites), a delete every 7th, a range delete
/// every 50th; applied to `model` too.
fn workload(from: u64, to: u64, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<Entry<TypeConfig>> {
    (from..=to)
        .map(|i| {
            let payload = if i % 50 == 0 {
                let (start, end) = (b"k0010".to_vec(), b"k0015".to_vec());
                model.retain(|k, _| *k < start || *k >= end);
                EntryPayload::Normal(Request::DeleteRange { start, end })
            } else if i % 7 == 0 {
                let key = format!("k{:04}", i % 37).into_bytes();
                model.remove(&key);
                EntryPayload::Normal(Request::Delete { key })
            } else {
                let p = put(i % 37, &format!("v{i}"));
                if let EntryPayload::Normal(Request::Put { key, value }) = &p {
                    model.insert(key.clone(), value.clone());
                }
                p
            };
            entry(2, i, payload)
        })
        .collect()
}

fn open(dir: &Path) -> (Db, LogStore<TypeConfig>, StateMachine) {
    let db = Db::open(dir.join("db"), Options::with_memory(32 << 20)).unwrap();
    let (log, sm) = cairn_raft::open(&db, "g", dir.join("snapshots")).unwrap();
    (db, log, sm)
}

/// The whole live data through the reader, for keys the workloads use.
fn state(sm: &StateMachine) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let r = sm.reader();
    (0..100u64)
        .filter_map(|k| {
            let key = format!("k{k:04}").into_bytes();
            r.get(&key).unwrap().map(|v| (key, v))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_appends_and_votes_survive_power_loss() {
    for mode in [CrashMode::DropUnsynced, CrashMode::TearGarbage] {
        let fs = FaultFs::new(Arc::new(MemFs::new()), 7);
        let snaps = tempfile::tempdir().unwrap();
        let opts = || {
            let mut o = Options::with_memory(16 << 20);
            o.fs = Arc::new(fs.clone());
            o
        };
        {
            let db = Db::open("/raft", opts()).unwrap();
            let (mut log, _sm) = cairn_raft::open(&db, "g", snaps.path()).unwrap();
            log.save_vote(&Vote::new(3, 2)).await.unwrap();
            for i in 1..=40 {
                // Returns once the append's callback reported it durable.
                log.blocking_append([entry(3, i, put(i, "x"))]).await.unwrap();
            }
            // Batches of several entries, one acknowledgement each.
            log.blocking_append((41..=60).map(|i| entry(3, i, put(i, "y"))))
                .await
                .unwrap();
            fs.crash(mode).unwrap();
        }
        fs.restart();
        let db = Db::open("/raft", opts()).unwrap();
        let (mut log, _sm) = cairn_raft::open(&db, "g", snaps.path()).unwrap();
        assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(3, 2)), "{mode:?}");
        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_log_id, Some(log_id(3, 60)), "{mode:?}");
        let entries = log.try_get_log_entries(1..=60).await.unwrap();
        assert_eq!(entries.len(), 60, "{mode:?}");
        assert!(entries.iter().zip(1..).all(|(e, i)| e.log_id == log_id(3, i)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncate_and_purge_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_db, mut log, _sm) = open(dir.path());
        log.blocking_append((1..=30).map(|i| entry(1, i, put(i, "a"))))
            .await
            .unwrap();
        log.truncate(log_id(1, 21)).await.unwrap();
        log.purge(log_id(1, 5)).await.unwrap();
        log.blocking_append((21..=25).map(|i| entry(2, i, put(i, "b"))))
            .await
            .unwrap();
    }
    let (_db, mut log, _sm) = open(dir.path());
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(log_id(1, 5)));
    assert_eq!(state.last_log_id, Some(log_id(2, 25)));
    let ids: Vec<_> = log
        .try_get_log_entries(..)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.log_id)
        .collect();
    let want: Vec<_> = (6..=20)
        .map(|i| log_id(1, i))
        .chain((21..=25).map(|i| log_id(2, i)))
        .collect();
    assert_eq!(ids, want);
}

/// Streams `bytes` into a receiving file of `sm` and installs it as `meta`.
async fn install(
    sm: &mut StateMachine,
    meta: &openraft::SnapshotMeta<u64, openraft::BasicNode>,
    bytes: &[u8],
) -> Result<(), openraft::StorageError<u64>> {
    let mut f = sm.begin_receiving_snapshot().await.unwrap();
    f.write_all(bytes).await.unwrap();
    f.flush().await.unwrap();
    sm.install_snapshot(meta, f).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_from_snapshot_and_log_serves_exactly_the_applied_state() {
    // The leader applies 1..=100 and builds a snapshot.
    let leader_dir = tempfile::tempdir().unwrap();
    let (_ldb, _llog, mut lsm) = open(leader_dir.path());
    let mut model = BTreeMap::new();
    lsm.apply([entry(1, 1, membership())]).await.unwrap();
    lsm.apply(workload(2, 100, &mut model)).await.unwrap();
    let snap = lsm.get_snapshot_builder().await.build_snapshot().await.unwrap();
    assert_eq!(snap.meta.last_log_id, Some(log_id(2, 100)));
    // Writes after the build are not in it.
    lsm.apply([entry(2, 101, put(99, "late"))]).await.unwrap();
    let bytes = std::fs::read(leader_dir.path().join("snapshots").join(SNAPSHOT_FILE)).unwrap();

    // A follower with older state of its own installs it, then gets and applies more log.
    let dir = tempfile::tempdir().unwrap();
    let mut after = model.clone();
    {
        let (_db, mut log, mut sm) = open(dir.path());
        sm.apply([entry(1, 1, put(80, "stale")), entry(1, 2, put(81, "stale"))])
            .await
            .unwrap();
        install(&mut sm, &snap.meta, &bytes).await.unwrap();
        assert_eq!(state(&sm), model, "installed state");
        let more = workload(101, 150, &mut BTreeMap::new());
        log.blocking_append(more.clone()).await.unwrap();
        sm.apply(workload(101, 120, &mut after)).await.unwrap();
    }
    let (_db, mut log, mut sm) = open(dir.path());
    let (applied, mem) = sm.applied_state().await.unwrap();
    assert_eq!(applied, Some(log_id(2, 120)));
    assert_eq!(mem, snap.meta.last_membership);
    assert_eq!(state(&sm), after, "restarted state = snapshot + applied log");
    let cur = sm.get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(cur.meta, snap.meta);
    assert_eq!(log.get_log_state().await.unwrap().last_log_id, Some(log_id(2, 150)));
    // The installed copy is byte-identical to the leader's file.
    assert_eq!(
        std::fs::read(dir.path().join("snapshots").join(SNAPSHOT_FILE)).unwrap(),
        bytes
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_snapshot_is_refused_and_the_live_state_is_kept() {
    let leader_dir = tempfile::tempdir().unwrap();
    let (_ldb, _llog, mut lsm) = open(leader_dir.path());
    let mut model = BTreeMap::new();
    lsm.apply(workload(1, 60, &mut model)).await.unwrap();
    let snap = lsm.get_snapshot_builder().await.build_snapshot().await.unwrap();
    let bytes = std::fs::read(leader_dir.path().join("snapshots").join(SNAPSHOT_FILE)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut own = BTreeMap::new();
    {
        let (_db, _log, mut sm) = open(dir.path());
        sm.apply(workload(1, 10, &mut own)).await.unwrap();
        for at in [bytes.len() / 2, bytes.len() - 2] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert!(install(&mut sm, &snap.meta, &bad).await.is_err(), "flip at {at}");
            assert!(install(&mut sm, &snap.meta, &bytes[..at]).await.is_err(), "cut at {at}");
            assert_eq!(state(&sm), own);
            assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(2, 10)));
        }
    }
    let (_db, _log, mut sm) = open(dir.path());
    assert_eq!(state(&sm), own, "after a restart too");
    assert!(sm.get_current_snapshot().await.unwrap().is_none());
    install(&mut sm, &snap.meta, &bytes).await.unwrap();
    assert_eq!(state(&sm), model);
    assert_eq!(sm.applied_state().await.unwrap().0, Some(log_id(2, 60)));
}
