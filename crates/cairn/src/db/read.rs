//! Point reads: memtables → L0 newest first → one file per sorted level. Each table probe is
//! recorded per level and per file (the access records of DESIGN §6.2).

use super::DbInner;
use crate::error::Result;
use crate::format::ikey::ValueKind;
use crate::sst::UnitSelection;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub(super) fn get(inner: &Arc<DbInner>, tree: u32, key: &[u8], snapshot: Option<u64>) -> Result<Option<Vec<u8>>> {
    if inner.shutdown.load(Ordering::Acquire) {
        return Err(crate::Error::InvalidArgument("the database is closed".into()));
    }
    let sv = inner.super_version(tree)?;
    let seq = snapshot.unwrap_or_else(|| inner.last_seq.load(Ordering::Acquire));
    inner.stats.record_get(tree as usize);
    let lookup = crate::format::LookupKey::new(key, seq);
    for m in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        if let Some((kind, v)) = m.lookup(&lookup) {
            inner.stats.record_memtable_hit(tree as usize);
            return Ok((kind == ValueKind::Put).then_some(v));
        }
    }
    let Some(tv) = sv.version.trees.get(tree as usize) else {
        return Ok(None);
    };
    // Some(answer) once a table holds a version of the key.
    let probe = |level: usize, f: &crate::version::FileMeta| -> Result<Option<Option<Vec<u8>>>> {
        let out = inner.open_table(f)?.lookup(&lookup, UnitSelection::All)?;
        inner.stats.record_probe(tree as usize, level, f.number, &out);
        Ok(out
            .found
            .map(|found| (found.kind == ValueKind::Put).then_some(found.value)))
    };
    for f in tv
        .level(0)
        .iter()
        .filter(|f| f.smallest_user_key() <= key && f.largest_user_key() >= key)
    {
        if let Some(answer) = probe(0, f)? {
            return Ok(answer);
        }
    }
    for level in 1..tv.levels.len() {
        if let Some(f) = tv.file_for_key(level, key) {
            if let Some(answer) = probe(level, f)? {
                return Ok(answer);
            }
        }
    }
    Ok(None)
}
