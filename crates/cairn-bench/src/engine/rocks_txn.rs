//! RocksDB's transactions through the `rocksdb` crate 0.20.1 (`--engine=rocksdb --txn=...`):
//! an OptimisticTransactionDB (commits validated against the keys read for update and
//! written, from a snapshot taken at the start) or a TransactionDB (keys locked at
//! `get_for_update` and at writes, with deadlock detection), with the plain adapter's options.
//! It runs the load (puts), lookups and the transaction benchmarks.

use super::{EResult, Engine, EngineArgs, Update};
use rocksdb::{
    ErrorKind, OptimisticTransactionDB, OptimisticTransactionOptions, TransactionDB, TransactionDBOptions,
    TransactionOptions, WriteOptions,
};
use std::path::Path;

enum Db {
    Optimistic(OptimisticTransactionDB),
    Pessimistic(TransactionDB),
}

pub struct RocksTxEngine {
    db: Db,
}

impl RocksTxEngine {
    pub fn open(a: &EngineArgs, dir: &Path) -> EResult<Self> {
        let (o, _) = super::rocks::options(a)?;
        let db = match a.txn.as_str() {
            "optimistic" => Db::Optimistic(OptimisticTransactionDB::open(&o, dir)?),
            "pessimistic" => Db::Pessimistic(TransactionDB::open(&o, &TransactionDBOptions::default(), dir)?),
            other => return Err(format!("--txn={other}: expected optimistic or pessimistic").into()),
        };
        Ok(RocksTxEngine { db })
    }
}

/// Whether a transaction's error is a refusal to retry (a conflict, a deadlock, a lock
/// timeout), not a failure.
fn refused(e: &rocksdb::Error) -> bool {
    matches!(e.kind(), ErrorKind::Busy | ErrorKind::TryAgain | ErrorKind::TimedOut)
}

impl Engine for RocksTxEngine {
    fn name(&self) -> &'static str {
        match self.db {
            Db::Optimistic(_) => "rocksdb-optimistic",
            Db::Pessimistic(_) => "rocksdb-pessimistic",
        }
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> EResult<()> {
        let mut w = WriteOptions::default();
        w.set_sync(sync);
        match &self.db {
            Db::Optimistic(d) => d.put_opt(key, value, &w)?,
            Db::Pessimistic(d) => d.put_opt(key, value, &w)?,
        }
        Ok(())
    }

    fn delete(&self, key: &[u8], _sync: bool) -> EResult<()> {
        match &self.db {
            Db::Optimistic(d) => d.delete(key)?,
            Db::Pessimistic(d) => d.delete(key)?,
        }
        Ok(())
    }

    fn get_value(&self, key: &[u8]) -> EResult<Option<Vec<u8>>> {
        Ok(match &self.db {
            Db::Optimistic(d) => d.get(key)?,
            Db::Pessimistic(d) => d.get(key)?,
        })
    }

    fn get(&self, key: &[u8]) -> EResult<Option<usize>> {
        Ok(self.get_value(key)?.map(|v| v.len()))
    }

    fn transact(&self, keys: &[&[u8]], update: &mut Update<'_>) -> EResult<bool> {
        let w = WriteOptions::default();
        // The same steps on either kind of transaction.
        macro_rules! run {
            ($tx:expr) => {{
                let tx = $tx;
                let r = (|| {
                    let values = keys
                        .iter()
                        .map(|k| tx.get_for_update(k, true))
                        .collect::<Result<Vec<_>, _>>()?;
                    for (i, v) in update(&values) {
                        tx.put(keys[i], v)?;
                    }
                    Ok::<_, rocksdb::Error>(())
                })();
                match r.and_then(|()| tx.commit()) {
                    Ok(()) => Ok(true),
                    Err(e) if refused(&e) => Ok(false),
                    Err(e) => Err(e.into()),
                }
            }};
        }
        match &self.db {
            Db::Optimistic(d) => {
                let mut o = OptimisticTransactionOptions::default();
                o.set_snapshot(true);
                run!(d.transaction_opt(&w, &o))
            }
            Db::Pessimistic(d) => {
                let mut o = TransactionOptions::default();
                o.set_deadlock_detect(true);
                run!(d.transaction_opt(&w, &o))
            }
        }
    }

    fn read_at_once(&self, keys: &[&[u8]], transaction: bool) -> EResult<usize> {
        let w = WriteOptions::default();
        let mut found = 0;
        macro_rules! reads {
            ($view:expr) => {{
                let v = $view;
                for k in keys {
                    found += usize::from(v.get(k)?.is_some());
                }
                v
            }};
        }
        match (&self.db, transaction) {
            (Db::Optimistic(d), true) => {
                let mut o = OptimisticTransactionOptions::default();
                o.set_snapshot(true);
                reads!(d.transaction_opt(&w, &o)).commit()?;
            }
            (Db::Pessimistic(d), true) => {
                let mut o = TransactionOptions::default();
                o.set_snapshot(true);
                reads!(d.transaction_opt(&w, &o)).commit()?;
            }
            (Db::Optimistic(d), false) => {
                reads!(d.snapshot());
            }
            (Db::Pessimistic(d), false) => {
                reads!(d.snapshot());
            }
        }
        Ok(found)
    }

    fn scan(&self, _start: Option<&[u8]>, _limit: u64, _reverse: bool) -> EResult<(u64, u64)> {
        Err("the transactional RocksDB adapter runs no scans".into())
    }

    fn range(&self, _lo: &[u8], _hi: &[u8]) -> EResult<(u64, u64)> {
        Err("the transactional RocksDB adapter runs no range reads".into())
    }

    fn flush(&self) -> EResult<()> {
        match &self.db {
            Db::Optimistic(d) => Ok(d.flush()?),
            Db::Pessimistic(_) => Err("the rocksdb crate's TransactionDB has no flush".into()),
        }
    }

    fn compact(&self) -> EResult<()> {
        match &self.db {
            Db::Optimistic(d) => {
                d.compact_range::<&[u8], &[u8]>(None, None);
                Ok(())
            }
            Db::Pessimistic(_) => Err("the rocksdb crate's TransactionDB has no compaction call".into()),
        }
    }

    fn wait_for_background(&self) -> EResult<()> {
        Err("the transactional RocksDB adapter does not wait for its background work".into())
    }

    fn stats_text(&self) -> String {
        String::new()
    }
}
