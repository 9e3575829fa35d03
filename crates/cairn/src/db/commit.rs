//! Group commit: writers queue their batches; the writer at the front leads a group (the
//! batches queued behind it, up to [`MAX_GROUP_BYTES`]), commits it with one WAL append and at
//! most one sync, and hands the result to every writer of the group. The others wait: they spin
//! for a few microseconds first (a group takes 2–10 µs here), then sleep. A transaction's batch
//! carries the check its commit must pass ([`Validation`]); one that fails is left out of the
//! group and only its writer gets the error.

use super::txn::Validation;
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::options::WriteOptions;
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A group is closed at this many bytes (unless its leader alone is larger).
const MAX_GROUP_BYTES: usize = 1 << 20;

/// How long a waiting writer spins before it sleeps.
const SPIN_WAIT: Duration = Duration::from_micros(50);

/// One writer's batch in a group.
#[derive(Debug)]
pub(crate) struct Pending {
    pub batch: WriteBatch,
    pub opts: WriteOptions,
    /// A transaction's check, run against the database and the group's earlier batches.
    pub check: Option<Validation>,
    /// Why the batch was left out of its group (its check failed).
    pub refused: Option<Error>,
}

#[derive(Debug, Default)]
struct Queue {
    tickets: VecDeque<u64>,
    batches: BTreeMap<u64, Pending>,
    results: BTreeMap<u64, Result<()>>,
    next_ticket: u64,
}

#[derive(Debug, Default)]
pub(crate) struct CommitPipeline {
    /// The writers waiting, their batches and the results handed back (own lock, held only
    /// to enqueue, to take a group, and to hand results back; taken before `wal`).
    queue: Mutex<Queue>,
    /// Wakes the writers sleeping on `queue` when a group is done.
    done_cv: Condvar,
    /// Bumped by each leader when its group is done (results posted, the queue's front
    /// moved), under `queue`: what a waiting writer spins on before it sleeps.
    groups_done: AtomicU64,
}

impl CommitPipeline {
    /// Commits `batch` (if it passes `check`) in a group: `commit` runs once per group,
    /// called by the group's leader with every batch of the group; its result is each
    /// writer's, or the reason a batch was refused.
    pub(crate) fn submit(
        &self,
        batch: WriteBatch,
        opts: &WriteOptions,
        check: Option<Validation>,
        commit: impl FnOnce(&mut [Pending]) -> Result<()>,
    ) -> Result<()> {
        let mut q = self.queue.lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.tickets.push_back(ticket);
        q.batches.insert(
            ticket,
            Pending {
                batch,
                opts: opts.clone(),
                check,
                refused: None,
            },
        );
        loop {
            if let Some(r) = q.results.remove(&ticket) {
                return r;
            }
            if q.tickets.front() == Some(&ticket) {
                break;
            }
            // A futex sleep and wake per write was a third of two writers' time: spin first,
            // and sleep only if the group takes longer. The state is checked again under the
            // lock.
            let seen = self.groups_done.load(Ordering::Acquire);
            if parking_lot::MutexGuard::unlocked(&mut q, || spin_until_changed(&self.groups_done, seen)) {
                continue;
            }
            // Leaders bump the counter under this lock: unchanged here means the group is
            // still running and its notification is still to come.
            if self.groups_done.load(Ordering::Acquire) == seen {
                self.done_cv.wait(&mut q);
            }
        }
        // Leader: take a group from the front of the queue.
        let mut group = Vec::new();
        let mut bytes = 0usize;
        for &t in q.tickets.iter() {
            let Some(p) = q.batches.get(&t) else {
                break;
            };
            if !group.is_empty() && bytes + p.batch.size_bytes() > MAX_GROUP_BYTES {
                break;
            }
            bytes += p.batch.size_bytes();
            group.push(t);
        }
        let mut batches: Vec<_> = group.iter().filter_map(|t| q.batches.remove(t)).collect();
        drop(q);

        let result = commit(&mut batches);

        let mut q = self.queue.lock();
        let mut mine = None;
        for (&t, p) in group.iter().zip(&mut batches) {
            q.tickets.pop_front();
            let r = match p.refused.take() {
                Some(e) if result.is_ok() => Err(e),
                _ => result.clone(),
            };
            if t == ticket {
                mine = Some(r);
            } else {
                q.results.insert(t, r);
            }
        }
        self.groups_done.fetch_add(1, Ordering::Release);
        self.done_cv.notify_all();
        mine.unwrap_or(result)
    }
}

/// Spins (then yields) until `counter` differs from `seen`, for at most [`SPIN_WAIT`]: true if
/// it changed.
fn spin_until_changed(counter: &AtomicU64, seen: u64) -> bool {
    let start = Instant::now();
    let mut i = 0u32;
    loop {
        if counter.load(Ordering::Acquire) != seen {
            return true;
        }
        i += 1;
        if i < 64 {
            std::hint::spin_loop();
            continue;
        }
        // Past the first microsecond or so, give the core to the leader if it wants it.
        if start.elapsed() >= SPIN_WAIT {
            return false;
        }
        std::thread::yield_now();
    }
}
