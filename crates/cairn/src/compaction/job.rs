//! Executes a flush or compaction: writes the kept entries of a merged input stream, and the
//! range tombstones that still matter, into new tables. Outputs are cut at `target_file_size`,
//! or aligned to the next level's file boundaries (`cuts.rs`), but never between two versions
//! of one user key, so the files of a sorted level never share
//! a user key. A cut after user key `a` also cuts the tombstones at `a ‖ 0x00`: each output
//! holds the part of them within its own key range (`range_del/`), and the outputs stay
//! disjoint. Tombstones with no entry left beside them make an output of their own.

use super::cuts::Cuts;
use super::iter::{Decision, Retention};
use super::rewrite::Rewriter;
use crate::env::FileSystem;
use crate::error::Result;
use crate::format::ikey::{self, InternalKey, ValueKind};
use crate::merge::MergeOperator;
use crate::iter::InternalIterator;
use crate::range_del::{self, Fragments};
use crate::sst::{TableBuilder, TableOptions, TableSummary};
use crate::stats::IoStats;
use crate::version::FileMeta;
use std::path::Path;
use std::sync::Arc;

/// Where and how outputs are written.
pub struct Outputs<'a> {
    /// File system.
    pub fs: &'a dyn FileSystem,
    /// Database directory.
    pub dir: &'a Path,
    /// Table options (filter decision included).
    pub table: TableOptions,
    /// Size at which an output is closed (`u64::MAX`: one file).
    pub target_file_size: u64,
    /// First user keys of the files of the level below the output level, to which outputs
    /// are aligned (`cuts.rs`; empty: cut at the target).
    pub grandparents: Vec<Vec<u8>>,
    /// Write accounting.
    pub stats: Arc<IoStats>,
    /// Allocates a file number (registered as a pending output by the caller).
    pub new_file_number: &'a mut dyn FnMut() -> u64,
    /// The merge operator, which folds merge operands (`None`: they are written as they are).
    pub merge: Option<Arc<dyn MergeOperator>>,
}

impl std::fmt::Debug for Outputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outputs")
            .field("dir", &self.dir)
            .field("target_file_size", &self.target_file_size)
            .finish()
    }
}

/// What a job wrote.
#[derive(Debug, Default)]
pub struct JobOutput {
    /// New files, in key order.
    pub files: Vec<FileMeta>,
    /// Bytes written.
    pub bytes_written: u64,
    /// Entries read from the input.
    pub entries_in: u64,
    /// Entries written.
    pub entries_out: u64,
    /// Values expired, or removed or changed by the compaction filter.
    pub rewritten: super::rewrite::Rewritten,
}

/// The manifest entry of table `number` that `s` summarizes.
pub(crate) fn meta(number: u64, s: &TableSummary) -> FileMeta {
    let p = &s.properties;
    FileMeta {
        number,
        size: s.file_size,
        smallest: p.smallest_key.clone(),
        largest: p.largest_key.clone(),
        smallest_seqno: p.smallest_seqno,
        largest_seqno: p.largest_seqno,
        entries: p.entries,
        tombstones: p.tombstones,
        filter_policy: p.filter.policy.clone(),
        filter_bpk: p.filter.total_bpk(),
        segments: p.segments.len() as u64,
        l0_group: 0,
        range_deletions: p.range_deletions,
        min_deadline: s.min_deadline,
        global_seqno: 0,
    }
}

/// Writes `input` (positioned by this function) through `filter`, and the range tombstones
/// `range_dels`, into new tables, then syncs the directory so the files are durable before a
/// manifest edit names them. With a merge operator, each chain of merge operands every reader
/// sees in full (`Retention`) is folded: into a value when what lies below it is known
/// (a value, a deletion, or nothing at the bottom), else into one operand by a partial merge;
/// a chain the operator cannot fold is written as it is.
///
/// # Errors
/// Read, write and corruption errors; files already written are reported through
/// `out.files` being discarded by the caller (their numbers stay pending until deleted).
pub fn write_outputs(
    input: &mut dyn InternalIterator,
    filter: &mut Retention<'_>,
    rw: &mut Rewriter,
    range_dels: &Fragments,
    out: &mut Outputs<'_>,
) -> Result<JobOutput> {
    let cuts = Cuts::new(out.target_file_size, std::mem::take(&mut out.grandparents));
    let mut w = Writer {
        out,
        cuts,
        range_dels,
        result: JobOutput::default(),
        builder: None,
        last_user_key: Vec::new(),
        lower: None,
    };
    let merge = w.out.merge.clone();
    input.seek_to_first();
    while input.valid() {
        w.result.entries_in += 1;
        let (key, value) = rw.apply(input.key(), input.value());
        if !filter.keep(&key) {
            input.next();
            continue;
        }
        match (&merge, ikey::split(&key)) {
            (Some(op), Some((uk, seq, ValueKind::Merge))) if seq <= filter.oldest_snapshot() => {
                let (uk, first) = (uk.to_vec(), (key.to_vec(), value.to_vec()));
                input.next();
                fold_merges(input, filter, rw, &**op, &uk, seq, first, &mut w)?;
            }
            _ => {
                w.add(&key, &value)?;
                input.next();
            }
        }
    }
    input.status()?;
    w.result.rewritten = rw.counts;
    w.finish()
}

/// What lies below a chain of merge operands.
enum Base {
    /// Not seen: it may lie in a deeper level.
    Unknown,
    /// A value, or nothing (a deletion, a range tombstone, or the bottom).
    Known(Option<Vec<u8>>),
    /// A value that expires: the chain cannot be folded into it (before the deadline the
    /// operands apply to it, after it to nothing).
    Expiring,
}

/// Folds the chain of merge operands of `uk` that starts with `first` (the newest version
/// every reader sees, at `seq`; `input` stands after it) and writes the result; leaves `input`
/// after the chain and its base.
#[allow(clippy::too_many_arguments, reason = "one call site; the pieces of a job's state")]
fn fold_merges(
    input: &mut dyn InternalIterator,
    filter: &mut Retention<'_>,
    rw: &mut Rewriter,
    op: &dyn MergeOperator,
    uk: &[u8],
    seq: u64,
    first: (Vec<u8>, Vec<u8>),
    w: &mut Writer<'_, '_>,
) -> Result<()> {
    // The chain, newest first: (internal key, operand).
    let mut chain = vec![first];
    let mut base = Base::Unknown;
    // The entry that ended the chain, when kept (written again if the chain is not folded
    // into it).
    let mut base_entry: Option<(Vec<u8>, Vec<u8>)> = None;
    while input.valid() && ikey::user_key(input.key()) == uk {
        w.result.entries_in += 1;
        let (key, value) = rw.apply(input.key(), input.value());
        let kind = ikey::split(&key).map(|(_, _, k)| k);
        let decision = filter.decide(&key);
        match (decision, kind) {
            (Decision::Keep, Some(ValueKind::Merge)) => chain.push((key.to_vec(), value.to_vec())),
            (Decision::Keep, Some(ValueKind::Put)) => base = Base::Known(Some(value.to_vec())),
            (Decision::Keep, Some(ValueKind::Expiring)) => base = Base::Expiring,
            (Decision::Keep | Decision::Deleted, _) => base = Base::Known(None),
            (Decision::Shadowed, _) => {}
        }
        let ended = !matches!(base, Base::Unknown);
        if decision == Decision::Keep && ended {
            base_entry = Some((key.to_vec(), value.to_vec()));
        }
        input.next();
        if ended {
            break;
        }
    }
    if matches!(base, Base::Unknown) && filter.bottommost(uk) {
        base = Base::Known(None);
    }
    let operands: Vec<&[u8]> = chain.iter().rev().map(|(_, v)| v.as_slice()).collect();
    let folded = match &base {
        Base::Known(b) => op
            .full_merge(uk, b.as_deref(), &operands)
            .map(|v| (InternalKey::new(uk, seq, ValueKind::Put), v)),
        Base::Unknown | Base::Expiring if operands.len() > 1 => op
            .partial_merge(uk, &operands)
            .map(|v| (InternalKey::new(uk, seq, ValueKind::Merge), v)),
        Base::Unknown | Base::Expiring => None,
    };
    match folded {
        Some((k, v)) => {
            w.add(k.encoded(), &v)?;
            // A full merge took the base in; after a partial merge the base entry (an
            // expiring value) stays below the operand.
            match base_entry {
                Some((k, v)) if !matches!(base, Base::Known(_)) => w.add(&k, &v),
                _ => Ok(()),
            }
        }
        None => {
            // Not folded: the chain, and what ended it, as they were.
            for (k, v) in chain.iter().chain(base_entry.iter()) {
                w.add(k, v)?;
            }
            Ok(())
        }
    }
}

/// The output tables being written.
struct Writer<'a, 'b> {
    out: &'a mut Outputs<'b>,
    cuts: Cuts,
    range_dels: &'a Fragments,
    result: JobOutput,
    builder: Option<(u64, TableBuilder)>,
    last_user_key: Vec<u8>,
    /// Where the current output's share of the tombstones starts (`None`: the first output).
    lower: Option<Vec<u8>>,
}

impl Writer<'_, '_> {
    fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let uk = ikey::user_key(key);
        // Asked once per user key (every version of a key stays in one output).
        let new_key = self.result.entries_out == 0 || uk != self.last_user_key.as_slice();
        let size = self.builder.as_ref().map_or(0, |(_, b)| b.estimated_size());
        let cut = new_key && self.cuts.cut_before(uk, size) && self.builder.is_some();
        if cut {
            let upper = range_del::successor(&self.last_user_key);
            self.close(Some(upper.clone()))?;
            self.lower = Some(upper);
        }
        if self.builder.is_none() {
            self.open()?;
        }
        if let Some((_, b)) = self.builder.as_mut() {
            b.add(key, value)?;
        }
        self.result.entries_out += 1;
        self.last_user_key.clear();
        self.last_user_key.extend_from_slice(uk);
        Ok(())
    }

    fn open(&mut self) -> Result<()> {
        let n = (self.out.new_file_number)();
        let f = self.out.fs.create(&crate::filename::table(self.out.dir, n))?;
        self.builder = Some((n, TableBuilder::new(f, n, self.out.table.clone(), self.out.stats.clone())));
        Ok(())
    }

    /// Finishes the current output with its share of the tombstones, up to `upper`.
    fn close(&mut self, upper: Option<Vec<u8>>) -> Result<()> {
        let Some((n, mut b)) = self.builder.take() else {
            return Ok(());
        };
        if !self.range_dels.is_empty() {
            b.set_range_dels(self.range_dels.clipped(self.lower.as_deref(), upper.as_deref()));
        }
        let s = b.finish()?;
        self.result.bytes_written += s.file_size;
        self.result.files.push(meta(n, &s));
        Ok(())
    }

    fn finish(mut self) -> Result<JobOutput> {
        // Tombstones with no entry beside them make an output of their own.
        if self.builder.is_none() && !self.range_dels.is_empty() && self.lower.is_none() {
            self.open()?;
        }
        self.close(None)?;
        if !self.result.files.is_empty() {
            self.out.fs.sync_dir(self.out.dir)?;
            self.out.stats.record_sync();
        }
        Ok(self.result)
    }
}

/// An iterator restricted to the user keys in `[lo, hi)` (`None`: unbounded): one
/// subcompaction's share of a merged input. Every version of a user key falls in one range, so
/// the outputs of consecutive ranges never share a user key.
#[derive(Debug)]
pub struct RangeIter<I> {
    inner: I,
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
    /// Whether `inner` is on an entry in range: checked once per move, not per `key`/`value`
    /// (merges ask for both several times per entry).
    on: bool,
}

impl<I: InternalIterator> RangeIter<I> {
    /// `inner` restricted to `[lo, hi)`.
    pub fn new(inner: I, lo: Option<Vec<u8>>, hi: Option<Vec<u8>>) -> Self {
        RangeIter {
            inner,
            lo,
            hi,
            on: false,
        }
    }

    fn settle(&mut self) {
        self.on = self.inner.valid() && {
            let uk = ikey::user_key(self.inner.key());
            self.lo.as_deref().is_none_or(|lo| uk >= lo) && self.hi.as_deref().is_none_or(|hi| uk < hi)
        };
    }

    /// The first internal key of the range.
    fn first(&self) -> Option<ikey::InternalKey> {
        self.lo.as_deref().map(|lo| ikey::InternalKey::for_seek(lo, ikey::MAX_SEQNO))
    }

    /// Whether `inner` is at or past `hi`.
    fn past_hi(&self) -> bool {
        self.inner.valid() && self.hi.as_deref().is_some_and(|hi| ikey::user_key(self.inner.key()) >= hi)
    }
}

impl<I: InternalIterator> InternalIterator for RangeIter<I> {
    fn valid(&self) -> bool {
        self.on
    }
    fn seek_to_first(&mut self) {
        match self.first() {
            Some(k) => self.inner.seek(k.encoded()),
            None => self.inner.seek_to_first(),
        }
        self.settle();
    }
    fn seek_to_last(&mut self) {
        match self.hi.as_deref() {
            // The last internal key before `hi`'s first version.
            Some(hi) => self.inner.seek_for_prev(ikey::InternalKey::for_seek(hi, ikey::MAX_SEQNO).encoded()),
            None => self.inner.seek_to_last(),
        }
        if self.past_hi() {
            self.inner.prev();
        }
        self.settle();
    }
    fn seek(&mut self, target: &[u8]) {
        match self.first() {
            Some(k) if ikey::compare(target, k.encoded()).is_lt() => self.inner.seek(k.encoded()),
            _ => self.inner.seek(target),
        }
        self.settle();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(target);
        if self.past_hi() {
            self.seek_to_last();
        } else {
            self.settle();
        }
    }
    fn next(&mut self) {
        self.inner.next();
        self.settle();
    }
    fn prev(&mut self) {
        self.inner.prev();
        self.settle();
    }
    fn key(&self) -> &[u8] {
        if self.on {
            self.inner.key()
        } else {
            &[]
        }
    }
    fn value(&self) -> &[u8] {
        if self.on {
            self.inner.value()
        } else {
            &[]
        }
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

/// Up to `n - 1` user keys that cut a job's inputs into `n` ranges of about equal data: the
/// block boundaries of every input table (each index entry separates a data block from the
/// next), sorted, taken at even steps. The cuts fall between blocks, so each range holds about
/// as many data blocks of input as the others.
///
/// # Errors
/// Read and corruption errors of an index block read from storage.
pub fn split_points(tables: &[Arc<crate::sst::TableReader>], n: usize) -> crate::error::Result<Vec<Vec<u8>>> {
    if n < 2 {
        return Ok(Vec::new());
    }
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for t in tables {
        t.for_each_block_key(|k| keys.push(k.to_vec()))?;
    }
    keys.sort_unstable();
    keys.dedup();
    let step = keys.len() / n;
    if step == 0 {
        return Ok(Vec::new());
    }
    // A cut at a block's index key k: the range above starts just after it (k may be the
    // block's last user key, whose versions may continue in the next block: it stays below).
    // `k ‖ 0x00` is the least user key greater than `k`.
    let mut cuts: Vec<Vec<u8>> = (1..n)
        .map(|i| {
            let mut k = keys[i * step - 1].clone();
            k.push(0);
            k
        })
        .collect();
    cuts.dedup();
    Ok(cuts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ikey::{InternalKey, ValueKind};
    use crate::memtable::Memtable;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    #[test]
    fn range_iter_conformance() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        let m = Arc::new(Memtable::new());
        let mut all = BTreeMap::new();
        for seq in 1..1500u64 {
            let uk = format!("k{:03}", rng.gen_range(0..300)).into_bytes();
            m.insert(&uk, seq, ValueKind::Put, &seq.to_le_bytes(), 1);
            all.insert(InternalKey::new(&uk, seq, ValueKind::Put), seq.to_le_bytes().to_vec());
        }
        for (lo, hi) in [(None, None), (Some("k100"), Some("k200")), (None, Some("k050")), (Some("k250"), None)] {
            let model: BTreeMap<_, _> = all
                .iter()
                .filter(|(k, _)| {
                    let uk = k.user_key();
                    lo.is_none_or(|l: &str| uk >= l.as_bytes()) && hi.is_none_or(|h: &str| uk < h.as_bytes())
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut it = RangeIter::new(m.iter(), lo.map(|s| s.as_bytes().to_vec()), hi.map(|s| s.as_bytes().to_vec()));
            crate::iter::conformance::check(&mut it, &model, &mut rng, 300, 20, |r| {
                let uk = format!("k{:03}", r.gen_range(0..320)).into_bytes();
                InternalKey::new(&uk, r.gen_range(0..1600), ValueKind::Put)
            });
        }
    }
}
