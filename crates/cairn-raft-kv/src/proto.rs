//! The wire protocol: one request and one answer at a time per TCP connection, each a frame of
//! a 4-byte little-endian length and a postcard-encoded [`Call`] or [`Answer`]. Raft messages
//! and client requests share it.

use cairn_raft::{Request, TypeConfig};
use openraft::error::{CheckIsLeaderError, ClientWriteError, InitializeError, InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use openraft::{BasicNode, LogId};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest frame accepted (a snapshot chunk is 3 MiB by default; a client value up to cairn's
/// value limit would not fit, and is refused by the sender's frame check).
pub const MAX_FRAME: usize = 64 << 20;

/// A request to a node.
#[derive(Debug, Serialize, Deserialize)]
pub enum Call {
    /// Raft: replicate entries (or heartbeat).
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    /// Raft: ask for a vote.
    Vote(VoteRequest<u64>),
    /// Raft: one chunk of a snapshot.
    InstallSnapshot(InstallSnapshotRequest<TypeConfig>),
    /// Client: a replicated write, answered once committed and applied on the leader.
    Write(Request),
    /// Client: a linearizable read (leader only).
    Read(Vec<u8>),
    /// Client: this node's state machine as it is, without asking the leader.
    ReadLocal(Vec<u8>),
    /// Client: make the cluster of these members (node id → address), on one node once.
    Init(BTreeMap<u64, String>),
    /// Client: this node's view of the cluster.
    Status,
}

/// The answer to a [`Call`] of the same name.
#[derive(Debug, Serialize, Deserialize)]
pub enum Answer {
    /// To `AppendEntries`.
    AppendEntries(Result<AppendEntriesResponse<u64>, RaftError<u64>>),
    /// To `Vote`.
    Vote(Result<VoteResponse<u64>, RaftError<u64>>),
    /// To `InstallSnapshot`.
    InstallSnapshot(Result<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>>),
    /// To `Write`: the entry's log id.
    Write(Result<LogId<u64>, WriteError>),
    /// To `Read`.
    Read(Result<Option<Vec<u8>>, ReadError>),
    /// To `ReadLocal`.
    ReadLocal(Result<Option<Vec<u8>>, String>),
    /// To `Init`.
    Init(Result<(), RaftError<u64, InitializeError<u64, BasicNode>>>),
    /// To `Status`.
    Status(Status),
}

/// Why a write was not done.
#[derive(Debug, Serialize, Deserialize)]
pub enum WriteError {
    /// Refused before proposing (too large for the database's limits).
    Invalid(String),
    /// From Raft (not the leader: it names the leader if known).
    Raft(RaftError<u64, ClientWriteError<u64, BasicNode>>),
}

/// Why a read was not done.
#[derive(Debug, Serialize, Deserialize)]
pub enum ReadError {
    /// From Raft (not the leader, or leadership not confirmed).
    Raft(RaftError<u64, CheckIsLeaderError<u64, BasicNode>>),
    /// The state machine's read failed.
    Storage(String),
}

/// A node's view of the cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    /// This node.
    pub id: u64,
    /// The leader it knows of.
    pub leader: Option<u64>,
    /// Its term.
    pub term: u64,
    /// Its last log index.
    pub last_log_index: Option<u64>,
    /// Its state machine's last applied log id.
    pub last_applied: Option<LogId<u64>>,
    /// Its last snapshot.
    pub snapshot: Option<LogId<u64>>,
    /// The last log id it purged (its log starts after it).
    pub purged: Option<LogId<u64>>,
}

/// Writes one frame.
///
/// # Errors
/// Encoding errors, an oversized frame, socket errors.
pub async fn send<T: Serialize>(s: &mut TcpStream, v: &T) -> io::Result<()> {
    // The length is filled in after encoding behind its 4 bytes.
    let mut buf = postcard::to_extend(v, vec![0u8; 4]).map_err(io::Error::other)?;
    let len = buf.len() - 4;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("frame of {len} bytes over {MAX_FRAME}"),
        ));
    }
    buf[..4].copy_from_slice(&(len as u32).to_le_bytes());
    s.write_all(&buf).await
}

/// Reads one frame.
///
/// # Errors
/// Socket errors (`UnexpectedEof` when the peer closed), an oversized length, a frame that
/// does not decode.
pub async fn recv<T: DeserializeOwned>(s: &mut TcpStream) -> io::Result<T> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes over {MAX_FRAME}"),
        ));
    }
    let mut buf = vec![0u8; len];
    s.read_exact(&mut buf).await?;
    postcard::from_bytes(&buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// One connection to `addr`, opened on first use and again after an error.
#[derive(Debug)]
pub struct Conn {
    addr: String,
    stream: Option<TcpStream>,
}

impl Conn {
    /// A connection to `addr` (not opened yet).
    pub fn new(addr: String) -> Self {
        Conn { addr, stream: None }
    }

    /// The address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Sends `call` and waits for the answer. After an error the connection is dropped (a
    /// late answer must never be taken for the next call's).
    ///
    /// # Errors
    /// Connection and frame errors.
    pub async fn call(&mut self, call: &Call) -> io::Result<Answer> {
        if self.stream.is_none() {
            let s = TcpStream::connect(&self.addr).await?;
            s.set_nodelay(true)?;
            self.stream = Some(s);
        }
        let Some(s) = self.stream.as_mut() else {
            return Err(io::Error::other("not connected"));
        };
        let r = async {
            send(s, call).await?;
            recv(s).await
        }
        .await;
        if r.is_err() {
            self.stream = None;
        }
        r
    }
}
