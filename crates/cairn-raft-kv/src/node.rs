//! A node: one cairn database holding one Raft group's log and key-value state machine, served
//! over the wire protocol to its peers and to clients.

use crate::network::Network;
use crate::proto::{recv, send, Answer, Call, ReadError, Status, WriteError};
use cairn::{Db, Options};
use cairn_raft::{KvReader, TypeConfig};
use openraft::{BasicNode, Config, Raft, SnapshotPolicy};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};

/// What a node runs with.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// Raft node id (non-zero).
    pub id: u64,
    /// Address to listen on, e.g. `127.0.0.1:7001`.
    pub listen: String,
    /// The node's directory: `db/` (cairn) and `snapshots/`.
    pub dir: PathBuf,
    /// cairn's memory budget in bytes.
    pub memory: usize,
    /// Build a snapshot after this many applied entries.
    pub snapshot_logs: u64,
    /// Entries kept in the log behind a snapshot (for slow followers).
    pub keep_logs: u64,
    /// Raft heartbeat interval, ms; elections time out after 3–6 of them.
    pub heartbeat_ms: u64,
}

/// Runs a node until the process is killed. Prints `ready <address>` once it listens.
///
/// # Errors
/// Opening the database or the listener; an invalid Raft configuration.
pub async fn run(cfg: NodeConfig) -> io::Result<()> {
    let db = Db::open(cfg.dir.join("db"), Options::with_memory(cfg.memory)).map_err(io::Error::other)?;
    let limits = db.options().limits;
    let (log, sm) = cairn_raft::open(&db, "kv", cfg.dir.join("snapshots")).map_err(io::Error::other)?;
    let reader = sm.reader();
    let config = Config {
        cluster_name: "cairn-raft-kv".into(),
        heartbeat_interval: cfg.heartbeat_ms,
        election_timeout_min: 3 * cfg.heartbeat_ms,
        election_timeout_max: 6 * cfg.heartbeat_ms,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(cfg.snapshot_logs),
        max_in_snapshot_log_to_keep: cfg.keep_logs,
        ..Default::default()
    }
    .validate()
    .map_err(io::Error::other)?;
    let raft = Raft::new(cfg.id, Arc::new(config), Network, log, sm)
        .await
        .map_err(io::Error::other)?;
    let listener = TcpListener::bind(&cfg.listen).await?;
    {
        let mut out = io::stdout().lock();
        writeln!(out, "ready {}", listener.local_addr()?)?;
        out.flush()?;
    }
    let node = Arc::new(Node {
        id: cfg.id,
        raft,
        reader,
        limits,
    });
    loop {
        let (stream, _) = listener.accept().await?;
        let node = node.clone();
        tokio::spawn(async move {
            if let Err(e) = node.serve(stream).await {
                if e.kind() != io::ErrorKind::UnexpectedEof {
                    eprintln!("node {}: connection ended: {e}", node.id);
                }
            }
        });
    }
}

struct Node {
    id: u64,
    raft: Raft<TypeConfig>,
    reader: KvReader,
    limits: cairn::Limits,
}

impl Node {
    async fn serve(&self, mut s: TcpStream) -> io::Result<()> {
        s.set_nodelay(true)?;
        loop {
            let call: Call = recv(&mut s).await?;
            let answer = self.answer(call).await;
            send(&mut s, &answer).await?;
        }
    }

    async fn answer(&self, call: Call) -> Answer {
        let raft = &self.raft;
        match call {
            Call::AppendEntries(r) => Answer::AppendEntries(raft.append_entries(r).await),
            Call::Vote(r) => Answer::Vote(raft.vote(r).await),
            Call::InstallSnapshot(r) => Answer::InstallSnapshot(raft.install_snapshot(r).await),
            Call::Write(req) => Answer::Write(match req.validate(&self.limits) {
                Err(e) => Err(WriteError::Invalid(e)),
                Ok(()) => raft.client_write(req).await.map(|r| r.log_id).map_err(WriteError::Raft),
            }),
            Call::Read(key) => Answer::Read(match raft.ensure_linearizable().await {
                Ok(_) => self.reader.get(&key).map_err(|e| ReadError::Storage(e.to_string())),
                Err(e) => Err(ReadError::Raft(e)),
            }),
            Call::ReadLocal(key) => Answer::ReadLocal(self.reader.get(&key).map_err(|e| e.to_string())),
            Call::Init(members) => {
                let members: BTreeMap<u64, BasicNode> =
                    members.into_iter().map(|(id, addr)| (id, BasicNode { addr })).collect();
                Answer::Init(raft.initialize(members).await)
            }
            Call::Status => {
                let m = raft.metrics().borrow().clone();
                Answer::Status(Status {
                    id: m.id,
                    leader: m.current_leader,
                    term: m.current_term,
                    last_log_index: m.last_log_index,
                    last_applied: m.last_applied,
                    snapshot: m.snapshot,
                    purged: m.purged,
                })
            }
        }
    }
}
