//! `cairn-raft-kv`: run a node of the replicated key-value example, talk to a cluster, or
//! benchmark it.

use cairn_raft_kv::{bench, parse_nodes, Client, NodeConfig};
use clap::{Args, Parser, Subcommand};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(version, about = "A key-value store replicated by openraft on cairn")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// The cluster a client command talks to.
#[derive(Args)]
struct Nodes {
    /// Node ids and addresses: `1=127.0.0.1:7001,2=...`.
    #[arg(long = "nodes", value_name = "NODES", value_parser = parse_nodes)]
    map: BTreeMap<u64, String>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a node until killed.
    Node {
        #[arg(long)]
        id: u64,
        /// Address to listen on.
        #[arg(long)]
        listen: String,
        /// The node's directory.
        #[arg(long)]
        dir: PathBuf,
        /// cairn's memory budget, MiB.
        #[arg(long, default_value_t = 64)]
        memory_mib: usize,
        /// Snapshot after this many applied entries.
        #[arg(long, default_value_t = 10_000)]
        snapshot_logs: u64,
        /// Entries kept behind a snapshot.
        #[arg(long, default_value_t = 1_000)]
        keep_logs: u64,
        /// Heartbeat interval, ms (elections time out after 3–6).
        #[arg(long, default_value_t = 100)]
        heartbeat_ms: u64,
    },
    /// Make the cluster of the nodes given, through the first.
    Init {
        #[command(flatten)]
        nodes: Nodes,
    },
    /// Set a key.
    Put {
        #[command(flatten)]
        nodes: Nodes,
        key: String,
        value: String,
    },
    /// Read a key through the leader.
    Get {
        #[command(flatten)]
        nodes: Nodes,
        key: String,
    },
    /// Every node's view of the cluster.
    Status {
        #[command(flatten)]
        nodes: Nodes,
    },
    /// Replicated puts: throughput and latency.
    Bench {
        #[command(flatten)]
        nodes: Nodes,
        #[arg(long, default_value_t = 20_000)]
        ops: u64,
        #[arg(long, default_value_t = 1)]
        clients: u64,
        #[arg(long, default_value_t = 100)]
        value_size: usize,
    },
    /// The same puts into one local cairn database (synced writes unless --no-sync).
    BenchLocal {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 64)]
        memory_mib: usize,
        #[arg(long, default_value_t = 20_000)]
        ops: u64,
        #[arg(long, default_value_t = 1)]
        clients: u64,
        #[arg(long, default_value_t = 100)]
        value_size: usize,
        #[arg(long)]
        no_sync: bool,
    },
    /// Build a snapshot of a state machine of --mib MiB and install it on another.
    BenchSnapshot {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 1024)]
        mib: u64,
        #[arg(long, default_value_t = 64)]
        memory_mib: usize,
        #[arg(long, default_value_t = 1000)]
        value_size: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli.cmd)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cmd: Cmd) -> Result<(), String> {
    match cmd {
        Cmd::Node {
            id,
            listen,
            dir,
            memory_mib,
            snapshot_logs,
            keep_logs,
            heartbeat_ms,
        } => cairn_raft_kv::run(NodeConfig {
            id,
            listen,
            dir,
            memory: memory_mib << 20,
            snapshot_logs,
            keep_logs,
            heartbeat_ms,
        })
        .await
        .map_err(|e| e.to_string()),
        Cmd::Init {
            nodes: Nodes { map: nodes },
        } => {
            let first = *nodes.keys().next().ok_or("no nodes")?;
            Client::new(&nodes).init(first).await.map_err(|e| e.to_string())
        }
        Cmd::Put {
            nodes: Nodes { map: nodes },
            key,
            value,
        } => {
            let id = Client::new(&nodes)
                .put(key.as_bytes(), value.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            println!("ok {id}");
            Ok(())
        }
        Cmd::Get {
            nodes: Nodes { map: nodes },
            key,
        } => {
            match Client::new(&nodes)
                .get(key.as_bytes())
                .await
                .map_err(|e| e.to_string())?
            {
                Some(v) => println!("{}", String::from_utf8_lossy(&v)),
                None => println!("(not found)"),
            }
            Ok(())
        }
        Cmd::Status {
            nodes: Nodes { map: nodes },
        } => {
            let mut client = Client::new(&nodes);
            for &id in nodes.keys() {
                match client.status(id).await {
                    Ok(s) => println!("{s:?}"),
                    Err(e) => println!("node {id}: {e}"),
                }
            }
            Ok(())
        }
        Cmd::Bench {
            nodes: Nodes { map: nodes },
            ops,
            clients,
            value_size,
        } => {
            let r = bench::replicated(&nodes, ops, clients.max(1), value_size).await?;
            println!("{}", r.line("replicated"));
            Ok(())
        }
        Cmd::BenchLocal {
            dir,
            memory_mib,
            ops,
            clients,
            value_size,
            no_sync,
        } => {
            let r = bench::local(&dir, memory_mib << 20, ops, clients.max(1), value_size, !no_sync)?;
            println!("{}", r.line(if no_sync { "local-nosync" } else { "local-sync" }));
            Ok(())
        }
        Cmd::BenchSnapshot {
            dir,
            mib,
            memory_mib,
            value_size,
        } => {
            let (build, receive, install, bytes) =
                bench::snapshot(&dir, memory_mib << 20, mib << 20, value_size).await?;
            println!(
                "snapshot bytes={bytes} build_s={:.2} install_s={:.2} receive_s={:.2}",
                build.as_secs_f64(),
                install.as_secs_f64(),
                receive.as_secs_f64()
            );
            Ok(())
        }
    }
}
