//! Time to live: values that expire. A value written with a time to live (`Db::put_with_ttl`,
//! or any put into a tree that `ttl` gives one) is stored as an entry of kind
//! `ValueKind::Expiring` whose value is
//!
//! ```text
//! deadline: u64 LE (milliseconds since the Unix epoch, by the database's clock) ‖ value
//! ```
//!
//! From its deadline on, the version reads as a deletion at its sequence number: gets and
//! iterators skip it and every older version below it, also before any compaction, and flushes
//! and compactions rewrite it as a tombstone (dropped at the bottom like any other). In a
//! `WriteBatch` not yet written the same eight bytes hold the time to live instead; the write
//! turns it into the deadline before the WAL, so recovery replays the deadline, not the delay.
//!
//! A tree's time to live applies when a value is written: changing it later leaves the
//! deadlines already written alone (as Cassandra's `default_time_to_live`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Bytes of the deadline in front of an expiring value.
pub(crate) const DEADLINE_LEN: usize = 8;

/// Where expiry reads the time: wall-clock milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The system's wall clock (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis().try_into().unwrap_or(u64::MAX))
    }
}

/// A clock that moves only when told: for tests of expiry (`Options.clock`).
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock standing at `ms` milliseconds since the epoch.
    pub fn new(ms: u64) -> Self {
        ManualClock(AtomicU64::new(ms))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.0.fetch_add(duration_ms(by), Ordering::SeqCst);
    }

    /// Sets the clock to `ms` (also backwards: values that compaction dropped stay dropped).
    pub fn set(&self, ms: u64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn duration_ms(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

/// An expiring entry's deadline and value; `None` when the entry is too short to hold one
/// (corrupt: readers report it, they never index past the end).
pub(crate) fn split(entry_value: &[u8]) -> Option<(u64, &[u8])> {
    let (d, v) = entry_value.split_first_chunk::<DEADLINE_LEN>()?;
    Some((u64::from_le_bytes(*d), v))
}

/// An expiring entry's value while it lives at `now_ms`; `None` from its deadline on. A value
/// too short to hold a deadline counts as expired (it cannot be returned; checksums make this
/// a bug, not bad bytes).
pub(crate) fn live(entry_value: &[u8], now_ms: u64) -> Option<&[u8]> {
    split(entry_value)
        .filter(|(deadline, _)| *deadline > now_ms)
        .map(|(_, v)| v)
}

/// An expiring entry's value, read into `value`, made the user's: the deadline taken off while
/// it lives at `now_ms` (true), left as is from the deadline on (false). No allocation.
pub(crate) fn strip_if_live(value: &mut Vec<u8>, now_ms: u64) -> bool {
    let alive = live(value, now_ms).is_some();
    if alive {
        value.drain(..DEADLINE_LEN);
    }
    alive
}

/// Times to live by tree name (`ttl`): `NAME=DURATION` pairs separated by commas, durations
/// with a unit (`ms`, `s`, `m`, `h`, `d`; plain numbers are seconds), e.g.
/// `sessions=30m,default=7d`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeTtls(Vec<(String, Duration)>);

impl TreeTtls {
    /// No tree has a time to live.
    pub fn new() -> Self {
        TreeTtls::default()
    }

    /// Gives tree `tree` (`"default"`: the default tree) a time to live, replacing an earlier
    /// one.
    pub fn with(mut self, tree: &str, ttl: Duration) -> Self {
        self.0.retain(|(n, _)| n != tree);
        self.0.push((tree.to_string(), ttl));
        self
    }

    /// The time to live of tree `tree`, if any.
    pub fn get(&self, tree: &str) -> Option<Duration> {
        self.0.iter().find(|(n, _)| n == tree).map(|(_, d)| *d)
    }

    /// Whether no tree has one.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each tree and its time to live.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Duration)> {
        self.0.iter().map(|(n, d)| (n.as_str(), *d))
    }

    pub(crate) fn show(&self) -> String {
        if self.0.is_empty() {
            return "none".into();
        }
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(n, d)| format!("{n}={}", show_duration(*d)))
            .collect();
        parts.join(",")
    }

    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut out = TreeTtls::new();
        let t = text.trim();
        if t.is_empty() || t == "none" {
            return Ok(out);
        }
        for part in t.split(',') {
            let Some((name, d)) = part.split_once('=') else {
                return Err(format!(
                    "{part:?} is not TREE=DURATION (example: sessions=30m,default=7d)"
                ));
            };
            let name = name.trim();
            if name.is_empty() || name.chars().any(|c| c.is_control() || c == ',' || c == '=') {
                return Err(format!("{name:?} is not a tree name"));
            }
            if out.get(name).is_some() {
                return Err(format!("tree {name:?} is given twice"));
            }
            let d = parse_duration(d)?;
            if d.is_zero() {
                return Err(format!("{part:?}: a time to live must be above 0"));
            }
            out = out.with(name, d);
        }
        Ok(out)
    }
}

fn show_duration(d: Duration) -> String {
    let ms = duration_ms(d);
    for (unit, scale) in [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)] {
        if ms % scale == 0 {
            return format!("{}{unit}", ms / scale);
        }
    }
    format!("{ms}ms")
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale: u64 = match unit.trim() {
        "ms" => 1,
        "" | "s" => 1000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(format!(
                "{text:?} is not a duration (examples: 500ms, 90s, 30m, 12h, 7d)"
            ))
        }
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is not a duration (examples: 500ms, 90s, 30m, 12h, 7d)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_ttls_read_and_show_their_text() {
        let t = TreeTtls::parse(" sessions = 30m , default=7d,tiny=1500ms,x=90").unwrap();
        assert_eq!(t.get("sessions"), Some(Duration::from_secs(1800)));
        assert_eq!(t.get("default"), Some(Duration::from_secs(7 * 86_400)));
        assert_eq!(t.get("tiny"), Some(Duration::from_millis(1500)));
        assert_eq!(t.get("x"), Some(Duration::from_secs(90)));
        assert_eq!(t.show(), "sessions=30m,default=7d,tiny=1500ms,x=90s");
        assert_eq!(TreeTtls::parse(&t.show()).unwrap(), t);
        assert_eq!(TreeTtls::parse("none").unwrap(), TreeTtls::new());
        assert_eq!(TreeTtls::new().show(), "none");
        for bad in [
            "a",
            "a=",
            "a=1y",
            "=5s",
            "a=0s",
            "a=1s,a=2s",
            "a=-1s",
            "a=99999999999999999999d",
        ] {
            assert!(TreeTtls::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn deadlines_split_and_expire() {
        let mut e = 1000u64.to_le_bytes().to_vec();
        e.extend_from_slice(b"v");
        assert_eq!(split(&e), Some((1000, &b"v"[..])));
        assert_eq!(live(&e, 999), Some(&b"v"[..]));
        assert_eq!(live(&e, 1000), None);
        assert_eq!(live(b"short", 0), None);
        let mut v = e.clone();
        assert!(strip_if_live(&mut v, 999));
        assert_eq!(v, b"v");
        let mut v = e.clone();
        assert!(!strip_if_live(&mut v, 1000));
        assert_eq!(v, e);
        assert_eq!(split(b"short"), None);
    }

    #[test]
    fn manual_clock_moves_when_told() {
        let c = ManualClock::new(5);
        c.advance(Duration::from_secs(2));
        assert_eq!(c.now_ms(), 2005);
        c.set(7);
        assert_eq!(c.now_ms(), 7);
        assert!(SystemClock.now_ms() > 1_700_000_000_000);
    }
}
