//! Many point lookups in one call: one read view, keys in sorted order, and the lookups that
//! must wait for the device overlapped on the I/O pool (`io_pool.rs`).
//!
//! The keys are looked up in key order on the caller's thread while the caches answer them
//! (neighbouring keys share their blocks, and a cached lookup costs less than a hand-off to
//! another thread). Once a lookup had to wait for the device (its reads from storage took at
//! least `DEVICE_WAIT_NANOS`: a read the page cache answers does not count), the keys left are
//! likely to as well: they are split into contiguous runs of sorted keys, one per pool thread and one for
//! the caller, and run at once, so their reads are in flight together. Every lookup reads at
//! the same sequence number through the same super-version, so the answers are one consistent
//! view whichever thread found them; each has its own result, so one lookup's error loses no
//! other answer.
//!
//! Not yet: probing a table's filter and index once for all the keys that fall in it, and
//! io_uring (the reads overlap through threads).

use super::inner::{DbInner, SuperVersion};
use super::read::lookup;
use crate::cache::Ticket;
use crate::error::Result;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;

/// A lookup whose reads from storage took this long waited for the device (a read the page
/// cache answers takes a few µs, an SSD's 45–60 µs here): the keys left go to the pool. Below
/// it, a hand-off to other threads would cost more than it saves.
const DEVICE_WAIT_NANOS: u64 = 20_000;

/// One lookup's answer.
pub(super) type Answer = Result<Option<Vec<u8>>>;

/// The keys' answers, in the keys' order, from tree `tree` at `snapshot` (or now).
///
/// # Errors
/// `Closed`, an unknown or dropped tree; each lookup's own errors are in its answer.
pub(super) fn multi_get<K: AsRef<[u8]>>(
    inner: &Arc<DbInner>,
    tree: u32,
    keys: &[K],
    snapshot: Option<u64>,
) -> Result<Vec<Answer>> {
    inner.life.check_open()?;
    // Tickets before the read view, as for one lookup (`cache/kv.rs`).
    let tickets: Vec<Option<Ticket>> = keys
        .iter()
        .map(|k| inner.kv.as_ref().map(|kv| kv.ticket(tree, k.as_ref())))
        .collect();
    let sv = inner.super_version(tree)?;
    let seq = snapshot.unwrap_or_else(|| inner.last_seq.load(Ordering::Acquire));
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| keys[a].as_ref().cmp(keys[b].as_ref()));
    let view = View {
        inner: Arc::clone(inner),
        sv,
        seq,
        at_snapshot: snapshot.is_some(),
    };
    let mut answers: Vec<Option<Answer>> = (0..keys.len()).map(|_| None).collect();
    let mut next = 0;
    while next < order.len() {
        let i = order[next];
        next += 1;
        // A key asked for twice is looked up once.
        if next >= 2 && keys[order[next - 2]].as_ref() == keys[i].as_ref() {
            answers[i] = answers[order[next - 2]].clone();
            continue;
        }
        let (answer, waited) = crate::sst::timing_storage(|| view.get(keys[i].as_ref(), tickets[i]));
        answers[i] = Some(answer);
        if waited >= DEVICE_WAIT_NANOS && order.len() - next >= 2 {
            break;
        }
    }
    let rest = &order[next..];
    if !rest.is_empty() {
        overlapped(&view, keys, &tickets, rest, &mut answers);
    }
    // Every index gets its answer above; a pool thread that ended without sending its answers
    // would leave one out.
    let lost = || {
        crate::Error::io(
            "multi_get",
            &inner.dir,
            std::io::Error::other("a lookup's thread ended without an answer"),
        )
    };
    Ok(answers.into_iter().map(|a| a.unwrap_or_else(|| Err(lost()))).collect())
}

/// The read view every lookup of one call shares.
#[derive(Clone)]
struct View {
    inner: Arc<DbInner>,
    sv: Arc<SuperVersion>,
    seq: u64,
    at_snapshot: bool,
}

impl View {
    fn get(&self, key: &[u8], ticket: Option<Ticket>) -> Answer {
        let mut value = Vec::new();
        let found = lookup(
            &self.inner,
            &self.sv,
            key,
            self.seq,
            self.at_snapshot,
            ticket,
            &mut value,
        )?;
        Ok(found.then_some(value))
    }
}

/// Looks up the keys `rest` names (indexes into `keys`, in key order) in contiguous runs at
/// once: one per pool thread that has keys to take, and the first on this thread.
fn overlapped<K: AsRef<[u8]>>(
    view: &View,
    keys: &[K],
    tickets: &[Option<Ticket>],
    rest: &[usize],
    answers: &mut [Option<Answer>],
) {
    let runs = rest.len().min(crate::io_pool::THREADS + 1);
    let per = rest.len().div_ceil(runs);
    let mut chunks = rest.chunks(per);
    let mine = chunks.next().unwrap_or(&[]);
    let (tx, rx) = mpsc::channel::<(usize, Answer)>();
    let mut sent = 0;
    for chunk in chunks {
        let job: Vec<(usize, Vec<u8>, Option<Ticket>)> = chunk
            .iter()
            .map(|&i| (i, keys[i].as_ref().to_vec(), tickets[i]))
            .collect();
        sent += job.len();
        let (view, tx) = (view.clone(), tx.clone());
        crate::io_pool::spawn(Box::new(move || {
            for (i, key, ticket) in job {
                // The caller waits for every answer: it cannot be gone.
                let _ = tx.send((i, view.get(&key, ticket)));
            }
        }));
    }
    drop(tx);
    for &i in mine {
        answers[i] = Some(view.get(keys[i].as_ref(), tickets[i]));
    }
    for (i, answer) in rx.iter().take(sent) {
        answers[i] = Some(answer);
    }
}
