//! fjall's optimistic transactional database (`--engine=fjall --txn=optimistic`): serializable
//! transactions whose commit is checked against what they read, with the plain adapter's
//! options. It runs the load (puts), lookups and the transaction benchmarks.

use super::{EResult, Engine, EngineArgs, Update};
use fjall::{OptimisticTxDatabase, OptimisticTxKeyspace, Readable};
use std::path::Path;

pub struct FjallTxEngine {
    db: OptimisticTxDatabase,
    ks: OptimisticTxKeyspace,
}

impl FjallTxEngine {
    pub fn open(a: &EngineArgs, dir: &Path) -> EResult<Self> {
        if a.txn != "optimistic" {
            return Err(format!("--txn={}: fjall's transactions here are optimistic", a.txn).into());
        }
        let ks_opts = super::fjall_engine::keyspace_options(a)?;
        #[expect(
            deprecated,
            reason = "fjall marks the write-buffer bound unfinished; it is what equal write memory needs"
        )]
        let db = OptimisticTxDatabase::builder(dir)
            .cache_size(a.cache_size as u64)
            .max_write_buffer_size(Some((a.memory() as u64).max(1 << 20)))
            .open()?;
        let ks = db.keyspace("default", || ks_opts)?;
        Ok(FjallTxEngine { db, ks })
    }
}

impl Engine for FjallTxEngine {
    fn name(&self) -> &'static str {
        "fjall-optimistic"
    }

    fn put(&self, key: &[u8], value: &[u8], _sync: bool) -> EResult<()> {
        self.ks.insert(key, value)?;
        Ok(())
    }

    fn delete(&self, key: &[u8], _sync: bool) -> EResult<()> {
        self.ks.remove(key)?;
        Ok(())
    }

    fn get_value(&self, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        Ok(self.ks.get(key)?.map(|v| v.to_vec()))
    }

    fn get(&self, key: &[u8]) -> EResult<Option<usize>> {
        Ok(self.ks.get(key)?.map(|v| v.len()))
    }

    fn transact(&self, keys: &[&[u8]], update: &mut Update<'_>) -> EResult<bool> {
        let mut tx = self.db.write_tx()?;
        let values = keys
            .iter()
            .map(|k| Ok(tx.get(&self.ks, k)?.map(|v| v.to_vec())))
            .collect::<Result<Vec<_>, fjall::Error>>()?;
        for (i, v) in update(&values) {
            tx.insert(&self.ks, keys[i], v);
        }
        Ok(tx.commit()?.is_ok())
    }

    fn read_at_once(&self, keys: &[&[u8]], _transaction: bool) -> EResult<usize> {
        // fjall's read-only transaction is its snapshot.
        let s = self.db.read_tx();
        let mut found = 0;
        for k in keys {
            found += usize::from(s.get(&self.ks, k)?.is_some());
        }
        Ok(found)
    }

    fn scan(&self, _start: Option<&[u8]>, _limit: u64, _reverse: bool) -> EResult<(u64, u64)> {
        Err("the transactional fjall adapter runs no scans".into())
    }

    fn range(&self, _lo: &[u8], _hi: &[u8]) -> EResult<(u64, u64)> {
        Err("the transactional fjall adapter runs no range reads".into())
    }

    fn flush(&self) -> EResult<()> {
        Err("the transactional fjall adapter runs no flush".into())
    }

    fn compact(&self) -> EResult<()> {
        Err("the transactional fjall adapter runs no compactions".into())
    }

    fn wait_for_background(&self) -> EResult<()> {
        Err("the transactional fjall adapter does not wait for its background work".into())
    }

    fn stats_text(&self) -> String {
        String::new()
    }
}
