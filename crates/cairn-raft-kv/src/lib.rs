//! An example service on cairn-raft: a key-value store replicated by openraft over loopback
//! TCP, with a client that finds the leader. The `cairn-raft-kv` binary runs nodes, the client
//! and the benchmarks; `tests/cluster.rs` kills leaders and checks nothing acknowledged is lost.
//!
//! Not a production server: no authentication, no TLS, one Raft group per process.

pub mod bench;
pub mod client;
pub mod network;
pub mod node;
pub mod proto;

pub use client::{Client, ClientError};
pub use node::{run, NodeConfig};

use std::collections::BTreeMap;

/// Parses `1=127.0.0.1:7001,2=127.0.0.1:7002` into node id → address.
///
/// # Errors
/// A message naming the bad part.
pub fn parse_nodes(s: &str) -> Result<BTreeMap<u64, String>, String> {
    let mut nodes = BTreeMap::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}`: expected ID=ADDRESS"))?;
        let id: u64 = id.parse().map_err(|e| format!("`{part}`: node id: {e}"))?;
        if id == 0 || nodes.insert(id, addr.to_string()).is_some() {
            return Err(format!("`{part}`: node ids must be distinct and non-zero"));
        }
    }
    if nodes.is_empty() {
        return Err("no nodes given".into());
    }
    Ok(nodes)
}
