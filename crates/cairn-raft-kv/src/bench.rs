//! Put throughput and latency: replicated through the cluster, or into one local cairn
//! database with synced writes (the same durability as an acknowledged Raft append).

use crate::client::Client;
use cairn::{Db, Options, WriteBatch, WriteOptions};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Throughput and latency of a run.
#[derive(Debug, Clone)]
pub struct Report {
    /// Puts done.
    pub ops: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Per-put latencies, sorted.
    pub latencies: Vec<Duration>,
}

impl Report {
    fn new(ops: u64, elapsed: Duration, mut latencies: Vec<Duration>) -> Self {
        latencies.sort_unstable();
        Report {
            ops,
            elapsed,
            latencies,
        }
    }

    /// The `q` quantile of latency (0 ≤ q ≤ 1).
    pub fn quantile(&self, q: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let i = ((self.latencies.len() - 1) as f64 * q).round() as usize;
        self.latencies[i.min(self.latencies.len() - 1)]
    }

    /// One line: `NAME ops=.. secs=.. ops_per_s=.. p50_us=.. p99_us=..`.
    pub fn line(&self, name: &str) -> String {
        format!(
            "{name} ops={} secs={:.3} ops_per_s={:.0} p50_us={} p99_us={}",
            self.ops,
            self.elapsed.as_secs_f64(),
            self.ops as f64 / self.elapsed.as_secs_f64(),
            self.quantile(0.5).as_micros(),
            self.quantile(0.99).as_micros()
        )
    }
}

fn value(size: usize, i: u64) -> Vec<u8> {
    (0..size)
        .map(|j| (i as usize).wrapping_mul(31).wrapping_add(j) as u8)
        .collect()
}

/// `ops` puts of `value_size`-byte values from `clients` concurrent clients of the cluster.
///
/// # Errors
/// The first failed put.
pub async fn replicated(
    nodes: &BTreeMap<u64, String>,
    ops: u64,
    clients: u64,
    value_size: usize,
) -> Result<Report, String> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let nodes = nodes.clone();
        tasks.push(tokio::spawn(async move {
            let mut client = Client::new(&nodes);
            let mut lat = Vec::new();
            for i in (c..ops).step_by(clients as usize) {
                let t = Instant::now();
                client
                    .put(format!("bench-{i:012}").as_bytes(), &value(value_size, i))
                    .await
                    .map_err(|e| e.to_string())?;
                lat.push(t.elapsed());
            }
            Ok::<_, String>(lat)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.map_err(|e| e.to_string())??);
    }
    Ok(Report::new(ops, start.elapsed(), all))
}

/// The same puts into one local database at `dir` with `sync` writes, from `clients` threads.
///
/// # Errors
/// Opening the database; the first failed put.
pub fn local(
    dir: &Path,
    memory: usize,
    ops: u64,
    clients: u64,
    value_size: usize,
    sync: bool,
) -> Result<Report, String> {
    let db = Db::open(dir, Options::with_memory(memory)).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let lats = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let db = &db;
                s.spawn(move || {
                    let mut lat = Vec::new();
                    for i in (c..ops).step_by(clients as usize) {
                        let t = Instant::now();
                        let mut b = WriteBatch::new();
                        b.put(format!("bench-{i:012}"), value(value_size, i));
                        db.write(
                            b,
                            &WriteOptions {
                                sync,
                                ..Default::default()
                            },
                        )
                        .map_err(|e| e.to_string())?;
                        lat.push(t.elapsed());
                    }
                    Ok::<_, String>(lat)
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.join().map_err(|_| "a bench thread panicked".to_string())??);
        }
        Ok::<_, String>(all)
    })?;
    let elapsed = start.elapsed();
    db.close().map_err(|e| e.to_string())?;
    Ok(Report::new(ops, elapsed, lats))
}

/// Times of building a snapshot of a state machine of about `bytes` bytes and installing it in
/// another node's: `(build, receive, install, snapshot file bytes)`, the install's time counting
/// the receipt of the stream (openraft's chunks copied into the file it hands the install).
///
/// # Errors
/// Any storage error.
pub async fn snapshot(
    dir: &Path,
    memory: usize,
    bytes: u64,
    value_size: usize,
) -> Result<(Duration, Duration, Duration, u64), String> {
    use cairn_raft::{Request, TypeConfig};
    use openraft::storage::RaftStateMachine;
    use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, RaftSnapshotBuilder};
    let e = |e: openraft::StorageError<u64>| e.to_string();
    let open = |name: &str| -> Result<_, String> {
        let db = Db::open(dir.join(name).join("db"), Options::with_memory(memory)).map_err(|e| e.to_string())?;
        let (_log, sm) = cairn_raft::open(&db, "kv", dir.join(name).join("snapshots")).map_err(e)?;
        Ok((db, sm))
    };
    let (_ldb, mut leader) = open("leader")?;
    let per_key = value_size as u64 + 17;
    let keys = bytes / per_key;
    let mut index = 0u64;
    for chunk in (0..keys).collect::<Vec<_>>().chunks(1000) {
        let entries: Vec<Entry<TypeConfig>> = chunk
            .iter()
            .map(|&i| {
                index += 1;
                Entry {
                    log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
                    payload: EntryPayload::Normal(Request::Put {
                        key: format!("k{i:016}").into_bytes(),
                        value: value(value_size, i),
                    }),
                }
            })
            .collect();
        leader.apply(entries).await.map_err(e)?;
    }
    let t = Instant::now();
    let snap = leader.get_snapshot_builder().await.build_snapshot().await.map_err(e)?;
    let build = t.elapsed();
    let file_bytes = snap.snapshot.metadata().await.map_err(|e| e.to_string())?.len();
    let (_fdb, mut follower) = open("follower")?;
    let t = Instant::now();
    let mut recv = follower.begin_receiving_snapshot().await.map_err(e)?;
    // In chunks of 1 MiB (openraft sends up to `snapshot_max_chunk_size`, 3 MiB by default;
    // tokio's `copy` would move 8 KiB per blocking call).
    let mut src = tokio::io::BufReader::with_capacity(1 << 20, snap.snapshot);
    tokio::io::copy_buf(&mut src, &mut *recv)
        .await
        .map_err(|e| e.to_string())?;
    let received = t.elapsed();
    follower.install_snapshot(&snap.meta, recv).await.map_err(e)?;
    let install = t.elapsed();
    Ok((build, received, install, file_bytes))
}
