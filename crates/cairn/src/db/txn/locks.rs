//! Pessimistic transactions' key locks: a striped table of `(tree, key) → owner`. A lock wait
//! has a timeout, and a wait that would close a cycle of waiters is refused as a deadlock.
//! Each transaction waits for at most one lock at a time, so the waits form chains: a new wait
//! follows the chain from the holder, and finding the waiter on it is a cycle.

use crate::error::{Error, Result};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const STRIPES: usize = 64;

#[derive(Debug, Default)]
struct Stripe {
    held: Mutex<HashMap<(u32, Vec<u8>), u64>>,
    released: Condvar,
}

/// Lock-wait outcomes, for `Db::stats`.
#[derive(Debug, Default)]
pub(crate) struct LockCounters {
    pub waits: AtomicU64,
    pub timeouts: AtomicU64,
    pub deadlocks: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct LockTable {
    stripes: Box<[Stripe]>,
    hasher: std::collections::hash_map::RandomState,
    /// Waiter → the owner of the lock it waits for.
    waits: Mutex<HashMap<u64, u64>>,
    next_owner: AtomicU64,
    pub counters: LockCounters,
}

impl Default for LockTable {
    fn default() -> Self {
        LockTable {
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
            hasher: Default::default(),
            waits: Mutex::default(),
            next_owner: AtomicU64::new(1),
            counters: LockCounters::default(),
        }
    }
}

impl LockTable {
    /// A new owner id (one per pessimistic transaction).
    pub(crate) fn owner(&self) -> u64 {
        self.next_owner.fetch_add(1, Ordering::Relaxed)
    }

    fn stripe(&self, tree: u32, key: &[u8]) -> &Stripe {
        &self.stripes[self.hasher.hash_one((tree, key)) as usize % STRIPES]
    }

    /// Locks `key` of `tree` for `owner`, waiting up to `timeout`: `true` when newly taken,
    /// `false` when `owner` held it already.
    ///
    /// # Errors
    /// `LockTimeout` when the holder kept it past `timeout`; `Deadlock` when the holder
    /// waits, directly or through others, for a lock `owner` holds.
    pub(crate) fn lock(&self, owner: u64, tree: u32, key: &[u8], timeout: Duration) -> Result<bool> {
        let stripe = self.stripe(tree, key);
        let deadline = Instant::now() + timeout;
        let mut held = stripe.held.lock();
        let mut waited = false;
        loop {
            let holder = match held.get(&(tree, key.to_vec())) {
                None => {
                    held.insert((tree, key.to_vec()), owner);
                    if waited {
                        self.waits.lock().remove(&owner);
                    }
                    return Ok(true);
                }
                Some(&o) if o == owner => return Ok(false),
                Some(&o) => o,
            };
            {
                let mut waits = self.waits.lock();
                let mut at = holder;
                // A chain longer than the waiters cannot be: bounded even if edges are stale.
                for _ in 0..=waits.len() {
                    if at == owner {
                        waits.remove(&owner);
                        self.counters.deadlocks.fetch_add(1, Ordering::Relaxed);
                        return Err(Error::Deadlock {
                            tree,
                            key: key.to_vec(),
                        });
                    }
                    match waits.get(&at) {
                        Some(&next) => at = next,
                        None => break,
                    }
                }
                waits.insert(owner, holder);
            }
            if !waited {
                self.counters.waits.fetch_add(1, Ordering::Relaxed);
                waited = true;
            }
            if stripe.released.wait_until(&mut held, deadline).timed_out()
                && held.get(&(tree, key.to_vec())).is_some_and(|&o| o != owner)
            {
                self.waits.lock().remove(&owner);
                self.counters.timeouts.fetch_add(1, Ordering::Relaxed);
                return Err(Error::LockTimeout {
                    tree,
                    key: key.to_vec(),
                    waited: timeout,
                });
            }
        }
    }

    /// Releases `owner`'s locks on `keys` and wakes their waiters.
    pub(crate) fn unlock<'a>(&self, owner: u64, keys: impl IntoIterator<Item = &'a (u32, Vec<u8>)>) {
        for k in keys {
            let stripe = self.stripe(k.0, &k.1);
            let mut held = stripe.held.lock();
            if held.get(k) == Some(&owner) {
                held.remove(k);
                stripe.released.notify_all();
            }
        }
        self.waits.lock().remove(&owner);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;
    use std::sync::{Arc, Barrier};

    #[test]
    fn a_lock_is_held_until_released_and_a_wait_times_out() {
        let t = LockTable::default();
        let (a, b) = (t.owner(), t.owner());
        assert!(t.lock(a, 0, b"k", Duration::ZERO).unwrap());
        assert!(!t.lock(a, 0, b"k", Duration::ZERO).unwrap());
        assert!(
            t.lock(b, 1, b"k", Duration::ZERO).unwrap(),
            "another tree's key is another lock"
        );
        let e = t.lock(b, 0, b"k", Duration::from_millis(1)).unwrap_err();
        assert!(matches!(e, Error::LockTimeout { .. }), "{e}");
        t.unlock(a, &[(0, b"k".to_vec())]);
        assert!(t.lock(b, 0, b"k", Duration::ZERO).unwrap());
        assert_eq!(t.counters.timeouts.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn two_owners_waiting_for_each_other_are_a_deadlock_not_a_hang() {
        // a holds x and asks for y; b holds y and asks for x. Whichever wait comes second
        // closes the cycle and is refused; its owner gives its lock up (as a rollback does) and
        // the other gets it. The waits are long: a missed detection hangs the test.
        let t = Arc::new(LockTable::default());
        let (a, b) = (t.owner(), t.owner());
        t.lock(a, 0, b"x", Duration::ZERO).unwrap();
        t.lock(b, 0, b"y", Duration::ZERO).unwrap();
        let start = Arc::new(Barrier::new(2));
        let ask = |t: &LockTable, me: u64, mine: &[u8], theirs: &[u8]| {
            let r = t.lock(me, 0, theirs, Duration::from_secs(600));
            if r.is_err() {
                t.unlock(me, &[(0, mine.to_vec())]);
            }
            r
        };
        let other = {
            let (t, start) = (t.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                ask(&t, a, b"x", b"y")
            })
        };
        start.wait();
        let rb = ask(&t, b, b"y", b"x");
        let ra = other.join().unwrap();
        let deadlocks = [&ra, &rb]
            .iter()
            .filter(|r| matches!(r, Err(Error::Deadlock { .. })))
            .count();
        let granted = [&ra, &rb].iter().filter(|r| matches!(r, Ok(true))).count();
        assert_eq!((deadlocks, granted), (1, 1), "{ra:?} {rb:?}");
        assert_eq!(t.counters.deadlocks.load(Ordering::Relaxed), 1);
    }
}
