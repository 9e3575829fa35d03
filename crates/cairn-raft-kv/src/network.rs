//! openraft's network over the wire protocol: one connection per replication stream.

use crate::proto::{Answer, Call, Conn};
use cairn_raft::TypeConfig;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use openraft::BasicNode;
use std::io;

/// Makes [`Peer`]s.
#[derive(Debug, Clone, Default)]
pub struct Network;

/// The connection to one peer.
#[derive(Debug)]
pub struct Peer {
    target: u64,
    conn: Conn,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> Peer {
        Peer {
            target,
            conn: Conn::new(node.addr.clone()),
        }
    }
}

type RpcResult<T, E> = Result<T, RPCError<u64, BasicNode, RaftError<u64, E>>>;

impl Peer {
    /// Sends `call` within the RPC's time limit.
    async fn call(&mut self, call: Call, option: &RPCOption) -> Result<Answer, io::Error> {
        match tokio::time::timeout(option.hard_ttl(), self.conn.call(&call)).await {
            Ok(r) => r,
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "rpc timed out")),
        }
    }

    fn error<E: std::error::Error>(e: io::Error) -> RPCError<u64, BasicNode, RaftError<u64, E>> {
        // Refused connections mean the node is down: openraft backs off from unreachable ones.
        if matches!(e.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound) {
            RPCError::Unreachable(Unreachable::new(&e))
        } else {
            RPCError::Network(NetworkError::new(&e))
        }
    }

    fn unexpected<E: std::error::Error>(a: &Answer) -> RPCError<u64, BasicNode, RaftError<u64, E>> {
        let e = io::Error::new(io::ErrorKind::InvalidData, format!("unexpected answer {a:?}"));
        RPCError::Network(NetworkError::new(&e))
    }

    #[expect(clippy::result_large_err, reason = "openraft's RPCError is what RaftNetwork returns")]
    fn remote<T, E: std::error::Error>(&self, r: Result<T, RaftError<u64, E>>) -> RpcResult<T, E> {
        r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>, openraft::error::Infallible> {
        match self
            .call(Call::AppendEntries(rpc), &option)
            .await
            .map_err(Self::error)?
        {
            Answer::AppendEntries(r) => self.remote(r),
            a => Err(Self::unexpected(&a)),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<u64>, InstallSnapshotError> {
        match self
            .call(Call::InstallSnapshot(rpc), &option)
            .await
            .map_err(Self::error)?
        {
            Answer::InstallSnapshot(r) => self.remote(r),
            a => Err(Self::unexpected(&a)),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<u64>, openraft::error::Infallible> {
        match self.call(Call::Vote(rpc), &option).await.map_err(Self::error)? {
            Answer::Vote(r) => self.remote(r),
            a => Err(Self::unexpected(&a)),
        }
    }
}
