//! A client of the cluster: finds the leader (following "forward to leader" answers and
//! trying the other nodes when one is down) and retries until its deadline.

use crate::proto::{Answer, Call, Conn, ReadError, Status, WriteError};
use cairn_raft::Request;
use openraft::LogId;
use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

/// Why a client call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientError {
    /// The cluster refused the request itself (retrying cannot help).
    Refused(String),
    /// No node answered as leader before the deadline; the last error seen. A write may or may
    /// not have been applied.
    Unavailable(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Refused(e) => write!(f, "refused: {e}"),
            ClientError::Unavailable(e) => write!(f, "unavailable: {e}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// A client with one connection per node.
#[derive(Debug)]
pub struct Client {
    nodes: BTreeMap<u64, Conn>,
    leader: Option<u64>,
    /// How long a call keeps retrying.
    pub deadline: Duration,
}

/// What one attempt at a node came to.
enum Attempt<T> {
    Done(T),
    Refused(String),
    /// Try the node named (or the next one) after the message.
    Retry(Option<u64>, String),
}

impl Client {
    /// A client of the nodes `id → address`.
    pub fn new(nodes: &BTreeMap<u64, String>) -> Self {
        Client {
            nodes: nodes.iter().map(|(&id, a)| (id, Conn::new(a.clone()))).collect(),
            leader: None,
            deadline: Duration::from_secs(10),
        }
    }

    /// The node believed to lead, if any.
    pub fn leader(&self) -> Option<u64> {
        self.leader
    }

    /// Calls the leader (guessing when unknown) until an attempt is done or refused.
    async fn on_leader<T>(&mut self, call: &Call, judge: impl Fn(Answer) -> Attempt<T>) -> Result<T, ClientError> {
        let start = Instant::now();
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        let mut next = 0usize;
        let mut last = String::from("no node tried");
        loop {
            if start.elapsed() >= self.deadline {
                return Err(ClientError::Unavailable(last));
            }
            let target = match self.leader {
                Some(l) => l,
                None => {
                    next += 1;
                    ids[next % ids.len()]
                }
            };
            last = match self.nodes.get_mut(&target) {
                None => format!("leader {target} is not a known node"),
                Some(conn) => match conn.call(call).await {
                    Err(e) => format!("node {target}: {e}"),
                    Ok(answer) => match judge(answer) {
                        Attempt::Done(v) => {
                            self.leader = Some(target);
                            return Ok(v);
                        }
                        Attempt::Refused(e) => return Err(ClientError::Refused(e)),
                        Attempt::Retry(Some(l), _) if l != target && self.nodes.contains_key(&l) => {
                            self.leader = Some(l);
                            continue;
                        }
                        Attempt::Retry(_, e) => e,
                    },
                },
            };
            self.leader = None;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A replicated write; `Ok` once it is committed and applied on the leader.
    ///
    /// # Errors
    /// `Refused` for a request over the database's limits; `Unavailable` past the deadline.
    pub async fn write(&mut self, req: Request) -> Result<LogId<u64>, ClientError> {
        self.on_leader(&Call::Write(req), |a| match a {
            Answer::Write(Ok(id)) => Attempt::Done(id),
            Answer::Write(Err(WriteError::Invalid(e))) => Attempt::Refused(e),
            Answer::Write(Err(WriteError::Raft(e))) => {
                Attempt::Retry(e.forward_to_leader().and_then(|f| f.leader_id), e.to_string())
            }
            a => Attempt::Retry(None, format!("unexpected answer {a:?}")),
        })
        .await
    }

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub async fn put(&mut self, key: &[u8], value: &[u8]) -> Result<LogId<u64>, ClientError> {
        self.write(Request::Put {
            key: key.to_vec(),
            value: value.to_vec(),
        })
        .await
    }

    /// A linearizable read through the leader.
    ///
    /// # Errors
    /// `Refused` if the leader's state machine fails the read; `Unavailable` past the deadline.
    pub async fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        self.on_leader(&Call::Read(key.to_vec()), |a| match a {
            Answer::Read(Ok(v)) => Attempt::Done(v),
            Answer::Read(Err(ReadError::Storage(e))) => Attempt::Refused(e),
            Answer::Read(Err(ReadError::Raft(e))) => {
                Attempt::Retry(e.forward_to_leader().and_then(|f| f.leader_id), e.to_string())
            }
            a => Attempt::Retry(None, format!("unexpected answer {a:?}")),
        })
        .await
    }

    async fn on_node(&mut self, node: u64, call: &Call) -> Result<Answer, ClientError> {
        let conn = self
            .nodes
            .get_mut(&node)
            .ok_or_else(|| ClientError::Refused(format!("no node {node}")))?;
        conn.call(call)
            .await
            .map_err(|e| ClientError::Unavailable(format!("node {node}: {e}")))
    }

    /// `key` in node `node`'s state machine as it is now (no leader involved).
    ///
    /// # Errors
    /// `Unavailable` if the node does not answer; `Refused` if its read fails.
    pub async fn get_local(&mut self, node: u64, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        match self.on_node(node, &Call::ReadLocal(key.to_vec())).await? {
            Answer::ReadLocal(r) => r.map_err(ClientError::Refused),
            a => Err(ClientError::Refused(format!("unexpected answer {a:?}"))),
        }
    }

    /// Node `node`'s view of the cluster.
    ///
    /// # Errors
    /// `Unavailable` if the node does not answer.
    pub async fn status(&mut self, node: u64) -> Result<Status, ClientError> {
        match self.on_node(node, &Call::Status).await? {
            Answer::Status(s) => Ok(s),
            a => Err(ClientError::Refused(format!("unexpected answer {a:?}"))),
        }
    }

    /// Makes the cluster of every node known to this client, through node `node`.
    ///
    /// # Errors
    /// `Unavailable` if the node does not answer; `Refused` if Raft refuses (already
    /// initialized with other members, for one).
    pub async fn init(&mut self, node: u64) -> Result<(), ClientError> {
        let members = self.nodes.iter().map(|(&id, c)| (id, c.addr().to_string())).collect();
        match self.on_node(node, &Call::Init(members)).await? {
            Answer::Init(r) => r.map_err(|e| ClientError::Refused(e.to_string())),
            a => Err(ClientError::Refused(format!("unexpected answer {a:?}"))),
        }
    }

    /// Waits until a node other than `not` leads, as every live node in `among` sees it.
    ///
    /// # Errors
    /// `Unavailable` past the deadline.
    pub async fn wait_leader(&mut self, among: &[u64], not: Option<u64>) -> Result<u64, ClientError> {
        let start = Instant::now();
        loop {
            let mut seen = Vec::new();
            for &n in among {
                if let Ok(s) = self.status(n).await {
                    seen.push(s.leader);
                }
            }
            if let Some(&Some(l)) = seen.first() {
                if Some(l) != not && seen.iter().all(|&s| s == Some(l)) && among.contains(&l) {
                    self.leader = Some(l);
                    return Ok(l);
                }
            }
            if start.elapsed() >= self.deadline {
                return Err(ClientError::Unavailable(format!("no agreed leader; seen {seen:?}")));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
