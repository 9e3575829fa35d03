//! A pool of threads for reads that overlap: the chunk a long scan reads ahead
//! (`sst/prefetch.rs`) and the lookups of a `multi_get` that need storage (`db/multi_get.rs`).
//!
//! Its threads spend their time blocked in reads, not on the CPU, so there are more of them
//! than cores: eight, enough to keep several reads in flight per caller on a small machine.
//! The pool is shared by every database in the process and started on first use; a job that
//! cannot be queued (no thread could be started), or that a pool thread asks for, runs on the
//! caller's thread.

use parking_lot::Mutex;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, OnceLock};

/// Work for the pool.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The pool's threads.
pub(crate) const THREADS: usize = 8;

thread_local! {
    /// This thread is one of the pool's.
    static IN_POOL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `job` on the pool (on this thread when the pool has none, or when this thread is the
/// pool's: a job that queued work and waited for it could wait behind itself).
pub(crate) fn spawn(job: Job) {
    if IN_POOL.with(std::cell::Cell::get) {
        return job();
    }
    match pool() {
        Some(p) => {
            if let Err(mpsc::SendError(job)) = p.send(job) {
                job();
            }
        }
        None => job(),
    }
}

/// The pool's queue (`None` when no thread could be started).
fn pool() -> Option<&'static Sender<Job>> {
    static POOL: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let started = (0..THREADS)
            .filter(|i| {
                let rx = Arc::clone(&rx);
                std::thread::Builder::new()
                    .name(format!("cairn-io-{i}"))
                    .spawn(move || {
                        IN_POOL.with(|p| p.set(true));
                        loop {
                            // The lock is held only while waiting for a job, not while running it.
                            let job = rx.lock().recv();
                            match job {
                                Ok(job) => job(),
                                Err(_) => return,
                            }
                        }
                    })
                    .is_ok()
            })
            .count();
        (started > 0).then_some(tx)
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Jobs that queue a job of their own and wait for it: with every pool thread waiting,
    /// the inner jobs would never run, unless a pool thread's own jobs run inline.
    #[test]
    fn a_job_that_waits_for_its_own_job_does_not_wait_behind_itself() {
        let (done_tx, done_rx) = mpsc::channel();
        for i in 0..4 * THREADS {
            let done_tx = done_tx.clone();
            spawn(Box::new(move || {
                let (tx, rx) = mpsc::channel();
                spawn(Box::new(move || {
                    let _ = tx.send(i);
                }));
                let _ = done_tx.send(rx.recv().ok());
            }));
        }
        drop(done_tx);
        for _ in 0..4 * THREADS {
            // A deadlock would hang here: the long timeout turns it into a failure.
            let got = done_rx.recv_timeout(Duration::from_secs(120));
            assert!(matches!(got, Ok(Some(_))), "{got:?}");
        }
    }
}
