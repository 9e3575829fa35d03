//! openraft's own storage test suite, unchanged, against cairn-raft.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail by panicking")]

use cairn::{Db, Options};
use cairn_raft::{LogStore, StateMachine, TypeConfig};
use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;
use tempfile::TempDir;

struct Builder;

impl StoreBuilder<TypeConfig, LogStore<TypeConfig>, StateMachine, TempDir> for Builder {
    async fn build(&self) -> Result<(TempDir, LogStore<TypeConfig>, StateMachine), StorageError<u64>> {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path().join("db"), Options::with_memory(32 << 20)).unwrap();
        let (log, sm) = cairn_raft::open(&db, "g", dir.path().join("snapshots"))?;
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_storage_suite() {
    Suite::test_all(Builder).unwrap();
}
