//! Whether the engine may still run, in one place: closing, the poison a failed durable write
//! leaves (docs/design.md §4: never retried, the database read-only from then on), the
//! background threads and the directory lock.

use crate::env::FileLock;
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::thread::JoinHandle;

#[derive(Default)]
pub(crate) struct Lifecycle {
    /// Set by close (or a failed open): background loops end, reads and writes fail with
    /// `Closed`. Atomic.
    shutdown: AtomicBool,
    /// Why the database turned read-only; set once by the first failed durable write, never
    /// cleared. Lock-free to read.
    poison: OnceLock<String>,
    /// The background threads, joined at close (own lock, held only to add or take them).
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The directory lock, released at close; `None` in a read-only open (own lock).
    dir_lock: Mutex<Option<Box<dyn FileLock>>>,
    /// Opened with `Db::open_read_only`: no lock, no background work, nothing written.
    read_only: bool,
}

impl Lifecycle {
    /// A running engine holding `dir_lock` (`None`: opened read-only).
    pub(crate) fn new(dir_lock: Option<Box<dyn FileLock>>) -> Lifecycle {
        Lifecycle {
            read_only: dir_lock.is_none(),
            dir_lock: Mutex::new(dir_lock),
            ..Lifecycle::default()
        }
    }

    pub(crate) fn is_read_only(&self) -> bool {
        self.read_only
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Ends the background loops (they see it at their next wake-up).
    pub(crate) fn shut_down(&self) {
        self.shutdown.store(true, Ordering::Release);
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.poison.get().is_some()
    }

    /// Records the first failed durable write; true when this call poisoned the database.
    pub(crate) fn poison(&self, e: &Error) -> bool {
        let first = self.poison.set(e.to_string()).is_ok();
        if first {
            tracing::error!(error = %e, "durable write failed; the database is now read-only");
        }
        first
    }

    /// `Closed` after close.
    pub(crate) fn check_open(&self) -> Result<()> {
        match self.is_shut_down() {
            true => Err(Error::Closed),
            false => Ok(()),
        }
    }

    /// `Poisoned` once a durable write has failed (also during close and read-only).
    pub(crate) fn check_poisoned(&self) -> Result<()> {
        match self.poison.get() {
            Some(why) => Err(Error::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    /// What a write needs: open, writable and not poisoned.
    pub(crate) fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        self.check_poisoned()
    }

    /// Keeps a background thread to join at close.
    pub(crate) fn add_thread(&self, t: JoinHandle<()>) {
        self.threads.lock().push(t);
    }

    /// Joins every background thread (after `shut_down` and a wake-up).
    pub(crate) fn join_threads(&self) {
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }

    /// Releases the directory lock (the last step of close).
    pub(crate) fn release_lock(&self) {
        self.dir_lock.lock().take();
    }

    /// Whether close has run to its end: shut down, threads joined, lock released.
    pub(crate) fn is_closed(&self) -> bool {
        self.is_shut_down() && self.threads.lock().is_empty() && self.dir_lock.lock().is_none()
    }
}
