//! The background threads: one flush thread and `compaction_threads` compaction threads, each a
//! loop that waits for work under the state lock, runs it outside the lock, and wakes whoever
//! waits for progress.

use super::compact;
use super::flush;
use super::inner::{DbInner, State};
use crate::error::{Error, Result};
use std::sync::Arc;
use std::time::Duration;

/// Starts the flush thread and the compaction threads.
pub(super) fn start_threads(inner: &Arc<DbInner>) -> Result<()> {
    let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name)
            .spawn(f)
            .map_err(|e| Error::io("spawn thread", &inner.dir, e))
    };
    let threads = &inner.life;
    let i = inner.clone();
    threads.add_thread(spawn("cairn-flush".into(), Box::new(move || flush_loop(i)))?);
    let i = inner.clone();
    threads.add_thread(spawn("cairn-wal".into(), Box::new(move || wal_loop(i)))?);
    if inner.opts.filters.policy.units().is_some_and(|u| u.interval_ms > 0) {
        let i = inner.clone();
        threads.add_thread(spawn("cairn-elastic".into(), Box::new(move || adjuster_loop(i)))?);
    }
    if inner.memory.range_filters.capacity() != usize::MAX && inner.opts.range_filter.round_ms > 0 {
        let i = inner.clone();
        threads.add_thread(spawn("cairn-range-mem".into(), Box::new(move || range_memory_loop(i)))?);
    }
    if inner.tuner.is_some() {
        let i = inner.clone();
        threads.add_thread(spawn("cairn-tuner".into(), Box::new(move || tuner_loop(i)))?);
    }
    let i = inner.clone();
    threads.add_thread(spawn("cairn-readahead".into(), Box::new(move || readahead_loop(i)))?);
    for n in 0..inner.opts.background.compaction_threads {
        let i = inner.clone();
        threads.add_thread(spawn(
            format!("cairn-compact-{n}"),
            Box::new(move || compaction_loop(i)),
        )?);
    }
    Ok(())
}

/// Head of a background thread's loop: waits on `bg_cv` until `find` yields work; `None` at
/// shutdown. Nothing is picked while the database is poisoned.
fn wait_for_work<T>(
    inner: &DbInner,
    mut find: impl FnMut(&mut State) -> Option<T>,
    timeout: impl Fn(&State) -> Option<Duration>,
) -> Option<T> {
    let mut st = inner.state.lock();
    loop {
        if inner.life.is_shut_down() {
            return None;
        }
        if !inner.life.is_poisoned() {
            if let Some(job) = find(&mut st) {
                return Some(job);
            }
        }
        match timeout(&st) {
            Some(t) => {
                inner.bg_cv.wait_for(&mut st, t);
            }
            None => inner.bg_cv.wait(&mut st),
        }
    }
}

/// The WAL thread: keeps a spare WAL ready for the next memtable switch (`State::spare_wal`):
/// created and its header synced under the temporary name, so the switch only renames it. Its
/// number is taken when it is made (above every live WAL's); its header has no first sequence
/// number (the 16-byte form; recovery checks its first batch's). A failure poisons the
/// database, as it would at the switch.
fn wal_loop(inner: Arc<DbInner>) {
    while let Some(n) = wait_for_work(
        &inner,
        |st| {
            (st.spare_wanted && st.spare_wal.is_none()).then(|| {
                st.spare_wanted = false;
                st.versions.new_file_number()
            })
        },
        |_| None,
    ) {
        let path = crate::filename::wal(&inner.dir, n);
        match crate::wal::WalWriter::create_unnamed(&*inner.fs, &path, n, inner.db_id, None) {
            Ok(w) => {
                let mut st = inner.state.lock();
                if n > st.wal_number {
                    st.spare_wal = Some(w);
                    inner.done_cv.notify_all();
                    continue;
                }
                // A switch came first and made its own log: this one must never follow it
                // (logs replay in number order). Its temporary file goes (or goes at the open).
                st.spare_wanted = true;
                drop((st, w));
                let _ = inner.fs.remove_file(&crate::filename::temp(&path));
            }
            Err(e) => inner.set_poison(&e),
        }
    }
}

/// The flush thread's work: flushes first (they free memory), then memory merges.
enum FlushWork {
    Flush(usize, crate::memtable::FlushJob),
    Merge(usize, crate::memtable::MergeJob),
}

fn flush_loop(inner: Arc<DbInner>) {
    crate::stats::stripe::Stripe::background();
    while let Some(work) = wait_for_work(
        &inner,
        |st| {
            let run_size = inner.memory.write_buffer_size();
            let work = (0..st.mems.len())
                .find_map(|t| st.mems[t].next_flush().map(|j| FlushWork::Flush(t, j)))
                .or_else(|| {
                    (0..st.mems.len()).find_map(|t| st.mems[t].next_merge(run_size).map(|j| FlushWork::Merge(t, j)))
                });
            st.flushing |= work.is_some();
            work
        },
        |_| None,
    ) {
        let r = match &work {
            FlushWork::Flush(t, job) => flush::flush_one(&inner, *t, job),
            FlushWork::Merge(t, job) => flush::merge_one(&inner, *t, job),
        };
        if let Err(e) = r {
            tracing::error!(error = %e, "flush failed");
            inner.set_poison(&e);
        }
        inner.state.lock().flushing = false;
        inner.done_cv.notify_all();
        inner.bg_cv.notify_all();
    }
}

fn compaction_loop(inner: Arc<DbInner>) {
    crate::stats::stripe::Stripe::background();
    #[cfg(target_os = "linux")]
    if inner.opts.background.compaction_nice > 0 {
        // On Linux the nice value is per thread; subcompaction threads inherit it.
        let nice = inner.opts.background.compaction_nice as libc::c_int;
        // SAFETY: a system call on the calling thread, with no pointers.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } != 0 {
            tracing::warn!(nice, error = %std::io::Error::last_os_error(), "could not lower the compaction thread's priority");
        }
    }
    while let Some(job) = wait_for_work(
        &inner,
        |st| {
            let found = match compact::pick(&inner, st) {
                Ok(job) => job,
                Err(e) => {
                    inner.set_poison(&e);
                    None
                }
            };
            if found.is_none() {
                inner.done_cv.notify_all();
            }
            found
        },
        |st| {
            // Wake up when a file's values expire (checked at least once a minute: the clock may
            // jump).
            let expiry = compact::until_next_expiry(&inner, st);
            // Or when writes will have been quiet long enough for an L0 drain.
            [expiry, compact::until_drain(&inner, st)]
                .into_iter()
                .flatten()
                .min()
                .map(|d| d.clamp(Duration::from_millis(10), Duration::from_secs(60)))
        },
    ) {
        let r = compact::run_and_release(&inner, &job);
        if let Err(e) = r {
            tracing::error!(error = %e, "compaction failed");
            inner.set_poison(&e);
        }
        inner.bg_cv.notify_all();
    }
}

/// Waits until no flush or compaction is pending or running — an L0 drain included, asked for
/// now, unless writes arrive meanwhile (`compact.rs`).
pub(super) fn wait_idle(inner: &Arc<DbInner>) -> Result<()> {
    if inner.life.is_read_only() {
        return Ok(());
    }
    let mut st = inner.state.lock();
    compact::ask_drain(inner, &mut st);
    loop {
        inner.check_writable()?;
        let flush_due = st.flushing || st.mems.iter().any(|m| m.has_flush() || m.merge_waiting());
        // The spare WAL counts too: a switch right after this finds it ready.
        let spare_due = st.spare_wal.is_none();
        if !flush_due && !spare_due && st.running_compactions == 0 && !compact::work_pending(inner, &st) {
            return Ok(());
        }
        inner.bg_cv.notify_all();
        inner.done_cv.wait_for(&mut st, Duration::from_millis(50));
    }
}

/// ElasticBF's adjuster: a round every `filters.elastic_interval_ms` while lookups arrive or tables
/// change.
fn adjuster_loop(inner: Arc<DbInner>) {
    crate::stats::stripe::Stripe::background();
    let mut last = (u64::MAX, 0usize);
    let interval = Duration::from_millis(inner.opts.filters.policy.units().map_or(0, |u| u.interval_ms));
    while wait(&inner, interval) {
        let gets: u64 = inner.counters.trees().iter().map(|t| t.gets()).sum();
        let now = (gets, Arc::as_ptr(&inner.super_versions()) as usize);
        if now != last {
            last = now;
            inner.adjust_filters();
        }
    }
}

/// Range-filter memory's round (`range_filter_round.rs`), and the builds it admits: every
/// `range_filter.round_ms` while range reads arrive or tables change.
fn range_memory_loop(inner: Arc<DbInner>) {
    crate::stats::stripe::Stripe::background();
    let mut last = (u64::MAX, 0usize);
    let period = Duration::from_millis(inner.opts.range_filter.round_ms);
    let mut at = std::time::Instant::now();
    // `bg_cv` wakes it for every background event: a round runs once a period has passed
    // (its scores decay per round, so rounds keep to the period).
    while wait(&inner, period.saturating_sub(at.elapsed())) {
        if at.elapsed() < period {
            continue;
        }
        at = std::time::Instant::now();
        let ranges: u64 = inner.counters.trees().iter().map(|t| t.ranges()).sum();
        let now = (ranges, Arc::as_ptr(&inner.super_versions()) as usize);
        if now != last {
            last = now;
            let builds = inner.keep_range_filters();
            inner.build_range_filters(builds);
        }
    }
}

/// The memory tuner: checks a few times a second whether a cycle is due.
fn tuner_loop(inner: Arc<DbInner>) {
    crate::stats::stripe::Stripe::background();
    let period = inner.tuner.as_ref().map_or(Duration::ZERO, |t| t.period());
    let tick = period.clamp(Duration::from_millis(1), Duration::from_millis(250));
    while wait(&inner, tick) {
        if inner.tuning_due() && !inner.life.is_poisoned() {
            inner.tune_memory();
        }
    }
}

impl DbInner {
    /// One period of the seek-readahead controller (`db/control/readahead.rs`).
    pub(super) fn tune_readahead(&self) {
        // The data blocks read so far, on average (compression and key sizes move them off
        // `table.block_size`).
        let data = self.io.snapshot().data;
        let block = match data.bytes.checked_div(data.reads) {
            Some(b) if b > 0 => b,
            _ => (self.opts.table.block_size + crate::sst::BLOCK_TRAILER_LEN) as u64,
        };
        self.readahead.lock().round(&self.counters.trees(), block);
    }
}

/// The seek-readahead controller: a period every 250 ms.
/// It also wakes the compaction thread when range reads came and a tree holds a lone L0
/// file, which drains once writes are quiet (`compact.rs`, `DRAIN_MIN_FILES`).
fn readahead_loop(inner: Arc<DbInner>) {
    crate::stats::stripe::Stripe::background();
    let period = Duration::from_millis(250);
    let mut at = std::time::Instant::now();
    let mut ranges = compact::range_reads(&inner);
    while wait(&inner, period.saturating_sub(at.elapsed())) {
        if at.elapsed() >= period {
            at = std::time::Instant::now();
            inner.tune_readahead();
            let now = compact::range_reads(&inner);
            let lone_l0 = || {
                let supers = inner.super_versions();
                supers
                    .first()
                    .is_some_and(|sv| sv.version.trees.iter().any(|t| t.level(0).len() == 1))
            };
            if now != ranges && lone_l0() {
                inner.bg_cv.notify_all();
            }
            ranges = now;
        }
    }
}

/// Waits up to `timeout` for a wake-up; false once the database shuts down.
fn wait(inner: &DbInner, timeout: Duration) -> bool {
    let mut st = inner.state.lock();
    if inner.life.is_shut_down() {
        return false;
    }
    inner.bg_cv.wait_for(&mut st, timeout);
    !inner.life.is_shut_down()
}
