//! Three node processes on loopback: writes go through the leader while it is killed with
//! SIGKILL; a new leader must be elected and serve every acknowledged write, and the killed
//! node, restarted on its directory once the new leader's log is purged past its own end, must
//! catch up by installing a snapshot and hold every acknowledged write too. `CAIRN_RAFT_ROUNDS` rounds (default 3).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail by panicking"
)]

use cairn_raft_kv::Client;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Node {
    child: Child,
    addr: String,
    dir: PathBuf,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts node `id` on `dir`, listening on `addr`; `None` if it could not (port taken).
fn try_start(id: u64, dir: &Path, addr: &str) -> Option<Node> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairn-raft-kv"))
        .args(["node", "--id", &id.to_string(), "--listen", addr, "--memory-mib", "16"])
        .args(["--snapshot-logs", "150", "--keep-logs", "10", "--heartbeat-ms", "100"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.with_extension("err")).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let Some(addr) = line.strip_prefix("ready ") else {
        let _ = child.wait();
        return None;
    };
    Some(Node {
        child,
        addr: addr.trim().to_string(),
        dir: dir.to_path_buf(),
    })
}

/// Starts node `id` on a port below Linux's ephemeral range (32768 on), so that no outgoing
/// connection or `:0` listener can take it while the node is down between a kill and its
/// restart.
fn start(id: u64, dir: &Path) -> Node {
    use std::hash::{BuildHasher, RandomState};
    let random = RandomState::new();
    for attempt in 0..50u64 {
        let port = 20_000 + random.hash_one(attempt) % 12_000;
        if let Some(node) = try_start(id, dir, &format!("127.0.0.1:{port}")) {
            return node;
        }
    }
    panic!("node {id}: no free port found");
}

fn key(round: u64, i: u64) -> Vec<u8> {
    format!("r{round}-{i:06}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("value-{i}").into_bytes()
}

/// One round; returns how many writes were acknowledged.
async fn round(round: u64, base: &Path) -> usize {
    let mut nodes: BTreeMap<u64, Node> = (1..=3)
        .map(|id| {
            let dir = base.join(format!("r{round}-n{id}"));
            std::fs::create_dir_all(&dir).unwrap();
            (id, start(id, &dir))
        })
        .collect();
    let addrs: BTreeMap<u64, String> = nodes.iter().map(|(&id, n)| (id, n.addr.clone())).collect();
    let mut admin = Client::new(&addrs);
    admin.init(1).await.unwrap();
    let leader = admin.wait_leader(&[1, 2, 3], None).await.unwrap();

    // A writer that never stops for the kill: every put it got `Ok` for is acknowledged.
    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (acked, stop, addrs) = (acked.clone(), stop.clone(), addrs.clone());
        tokio::spawn(async move {
            let mut c = Client::new(&addrs);
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // An error leaves the write's outcome unknown: not acknowledged, not checked.
                if c.put(&key(round, i), &value(i)).await.is_ok() {
                    acked.lock().unwrap().push(i);
                }
                i += 1;
            }
        })
    };
    let wait_acked = |n: usize| {
        let acked = acked.clone();
        async move {
            let start = Instant::now();
            while acked.lock().unwrap().len() < n {
                assert!(start.elapsed() < Duration::from_secs(60), "writes stalled below {n}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    wait_acked(250).await;
    let old_last = admin.status(leader).await.unwrap().last_log_index.unwrap();
    let old = nodes.remove(&leader).unwrap();
    let (old_dir, old_addr) = (old.dir.clone(), old.addr.clone());
    drop(old); // SIGKILL
    let alive: Vec<u64> = nodes.keys().copied().collect();
    let new_leader = admin.wait_leader(&alive, Some(leader)).await.unwrap();
    let at_kill = acked.lock().unwrap().len();
    wait_acked(at_kill + 250).await;
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    let acked: Vec<u64> = acked.lock().unwrap().clone();

    for &i in &acked {
        let got = admin.get(&key(round, i)).await.unwrap();
        assert_eq!(
            got,
            Some(value(i)),
            "round {round}: acknowledged write {i} lost by leader {new_leader}"
        );
    }

    // The old leader comes back on its directory and address and catches up; first the new
    // leader purges its log past where the old one's ended (a snapshot every 150 entries, 10
    // kept), so that the catch-up must install a snapshot.
    let start_wait = Instant::now();
    let target = loop {
        let s = admin.status(new_leader).await.unwrap();
        if s.purged.is_some_and(|p| p.index > old_last + 20) {
            break s.last_applied;
        }
        assert!(
            start_wait.elapsed() < Duration::from_secs(60),
            "round {round}: leader {new_leader} never purged past {old_last}: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let back = try_start(leader, &old_dir, &old_addr)
        .unwrap_or_else(|| panic!("node {leader} could not listen on {old_addr} again"));
    nodes.insert(leader, back);
    let start_wait = Instant::now();
    loop {
        if let Ok(s) = admin.status(leader).await {
            if s.last_applied >= target {
                // Entries past `old_last` exist only in the leader's snapshot now.
                assert!(
                    s.snapshot.is_some_and(|x| x.index > old_last),
                    "round {round}: node {leader} caught up without a snapshot: {s:?}"
                );
                break;
            }
        }
        assert!(
            start_wait.elapsed() < Duration::from_secs(60),
            "round {round}: node {leader} did not catch up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for &i in &acked {
        let got = admin.get_local(leader, &key(round, i)).await.unwrap();
        assert_eq!(
            got,
            Some(value(i)),
            "round {round}: restarted node {leader} lacks write {i}"
        );
    }
    acked.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_loses_no_acknowledged_write() {
    let rounds: u64 = std::env::var("CAIRN_RAFT_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let base = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let mut total = 0;
    for r in 0..rounds {
        total += round(r, base.path()).await;
    }
    println!(
        "{rounds} leader kills, {total} acknowledged writes checked on the new leader and the restarted node, {:.1} s",
        start.elapsed().as_secs_f64()
    );
}
