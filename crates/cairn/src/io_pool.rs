//! A pool of threads for reads that overlap: the chunk a long scan reads ahead
//! (`sst/prefetch.rs`) and the lookups of a `multi_get` that need storage (`db/multi_get.rs`).
//!
//! Its threads spend their time blocked in reads, not on the CPU, so there are more of them
//! than cores: eight, enough to keep several reads in flight per caller on a small machine.
//! The pool is shared by every database in the process and started on first use; a job that
//! cannot be queued (no thread could be started) runs on the caller's thread.

use parking_lot::Mutex;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, OnceLock};

/// Work for the pool.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The pool's threads.
pub(crate) const THREADS: usize = 8;

/// Runs `job` on the pool (on this thread when the pool has none).
pub(crate) fn spawn(job: Job) {
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
                    .spawn(move || loop {
                        // The lock is held only while waiting for a job, not while running it.
                        let job = rx.lock().recv();
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    })
                    .is_ok()
            })
            .count();
        (started > 0).then_some(tx)
    })
    .as_ref()
}
