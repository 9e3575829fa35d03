//! What a flush or compaction writes in place of an entry, before `Retention` decides whether
//! to keep it: an expired value becomes a tombstone at its sequence number (it reads as one
//! already), and the user's compaction filter may remove or change the newest version of a key
//! when no snapshot sees it (RocksDB's rule: a snapshot never sees a filter's effect). Entries
//! must arrive in internal-key order.

use crate::compaction_filter::{CompactionFilter, FilterContext, FilterDecision};
use crate::format::ikey::{self, InternalKey, ValueKind};
use std::borrow::Cow;
use std::sync::Arc;

pub use crate::stats::Rewritten;

/// The user's filter and where it runs.
#[derive(Debug, Clone)]
pub struct UserFilter {
    pub filter: Arc<dyn CompactionFilter>,
    pub tree: Arc<str>,
    pub level: usize,
    /// The newest live snapshot's sequence number (0: none): versions at or below it may be
    /// what a snapshot sees, and are not filtered.
    pub newest_snapshot: u64,
}

/// Rewrites entries one by one (see the module comment).
#[derive(Debug)]
pub struct Rewriter {
    now_ms: u64,
    user: Option<UserFilter>,
    /// The user key of the previous entry (only a key's first, newest, version is filtered).
    current: Vec<u8>,
    pub counts: Rewritten,
}

/// An entry as it is to be written.
pub type Entry<'a> = (Cow<'a, [u8]>, Cow<'a, [u8]>);

impl std::ops::AddAssign for Rewritten {
    fn add_assign(&mut self, o: Rewritten) {
        self.expired += o.expired;
        self.removed += o.removed;
        self.changed += o.changed;
    }
}

impl Rewriter {
    /// Expiry judged at `now_ms`; `user`: the compaction filter, if any.
    pub fn new(now_ms: u64, user: Option<UserFilter>) -> Self {
        Rewriter {
            now_ms,
            user,
            current: Vec::new(),
            counts: Rewritten::default(),
        }
    }

    /// The entry to write for `key → value`.
    pub fn apply<'a>(&mut self, key: &'a [u8], value: &'a [u8]) -> Entry<'a> {
        let Some((uk, seq, kind)) = ikey::split(key) else {
            return (Cow::Borrowed(key), Cow::Borrowed(value));
        };
        let newest = self.current != uk;
        if newest {
            self.current.clear();
            self.current.extend_from_slice(uk);
        }
        let (deadline, user_value) = match kind {
            ValueKind::Expiring => match crate::ttl::split(value) {
                Some((d, v)) if d > self.now_ms => (Some(d), v),
                // Expired (or too short to hold a deadline, which reads as expired too).
                _ => {
                    self.counts.expired += 1;
                    return tombstone(uk, seq);
                }
            },
            ValueKind::Put => (None, value),
            _ => return (Cow::Borrowed(key), Cow::Borrowed(value)),
        };
        let Some(user) = self.user.as_ref().filter(|u| newest && seq > u.newest_snapshot) else {
            return (Cow::Borrowed(key), Cow::Borrowed(value));
        };
        let ctx = FilterContext {
            tree: &user.tree,
            level: user.level,
        };
        match user.filter.filter(&ctx, uk, user_value) {
            FilterDecision::Keep => (Cow::Borrowed(key), Cow::Borrowed(value)),
            FilterDecision::Remove => {
                self.counts.removed += 1;
                tombstone(uk, seq)
            }
            FilterDecision::ChangeValue(v) => {
                self.counts.changed += 1;
                let v = match deadline {
                    Some(d) => [&d.to_le_bytes()[..], &v].concat(),
                    None => v,
                };
                (Cow::Borrowed(key), Cow::Owned(v))
            }
        }
    }
}

fn tombstone(uk: &[u8], seq: u64) -> Entry<'static> {
    let k = InternalKey::new(uk, seq, ValueKind::Delete);
    (Cow::Owned(k.encoded().to_vec()), Cow::Borrowed(&[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct DropOdd;
    impl CompactionFilter for DropOdd {
        fn name(&self) -> &str {
            "drop-odd"
        }
        fn filter(&self, ctx: &FilterContext<'_>, _key: &[u8], value: &[u8]) -> FilterDecision {
            assert_eq!((ctx.tree, ctx.level), ("t", 3));
            match value {
                b"odd" => FilterDecision::Remove,
                b"old" => FilterDecision::ChangeValue(b"new".to_vec()),
                _ => FilterDecision::Keep,
            }
        }
    }

    fn show(r: &mut Rewriter, entries: &[(&str, u64, ValueKind, &[u8])]) -> Vec<String> {
        entries
            .iter()
            .map(|(k, s, kind, v)| {
                let key = InternalKey::new(k.as_bytes(), *s, *kind);
                let (k2, v2) = r.apply(key.encoded(), v);
                let (uk, seq, kind) = ikey::split(&k2).unwrap();
                format!("{}@{seq}{kind:?}={}", String::from_utf8_lossy(uk), String::from_utf8_lossy(&v2))
            })
            .collect()
    }

    fn expiring(deadline: u64, v: &[u8]) -> Vec<u8> {
        [&deadline.to_le_bytes()[..], v].concat()
    }

    #[test]
    fn expired_values_become_tombstones_live_ones_stay() {
        let mut r = Rewriter::new(100, None);
        let (live, dead) = (expiring(101, b"x"), expiring(100, b"y"));
        let out = show(
            &mut r,
            &[
                ("a", 5, ValueKind::Expiring, &live),
                ("a", 4, ValueKind::Expiring, &dead),
                ("b", 3, ValueKind::Expiring, b"short"),
                ("c", 2, ValueKind::Put, b"v"),
            ],
        );
        assert_eq!(out[0], format!("a@5Expiring={}", String::from_utf8_lossy(&live)));
        assert_eq!(&out[1..], ["a@4Delete=", "b@3Delete=", "c@2Put=v"]);
        assert_eq!(r.counts, Rewritten { expired: 2, removed: 0, changed: 0 });
    }

    #[test]
    fn the_filter_sees_newest_versions_no_snapshot_sees() {
        let user = UserFilter {
            filter: Arc::new(DropOdd),
            tree: Arc::from("t"),
            level: 3,
            newest_snapshot: 10,
        };
        // The newest snapshot at 10: a@12 is the newest version and no snapshot sees it
        // (removed: a tombstone at 12 hides a@9 from readers above 12 only); a@9 is what the
        // snapshot sees (not asked about); e@8 is the newest version of e but the snapshot sees
        // it; of c only the operand is the newest, and operands are not asked about.
        let mut r = Rewriter::new(0, Some(user));
        let old = expiring(50, b"old");
        let out = show(
            &mut r,
            &[
                ("a", 12, ValueKind::Put, b"odd"),
                ("a", 9, ValueKind::Put, b"odd"),
                ("b", 16, ValueKind::Expiring, &old),
                ("c", 15, ValueKind::Merge, b"odd"),
                ("c", 14, ValueKind::Put, b"odd"),
                ("d", 13, ValueKind::Put, b"keep"),
                ("e", 8, ValueKind::Put, b"odd"),
            ],
        );
        let changed = format!("b@16Expiring={}", String::from_utf8_lossy(&expiring(50, b"new")));
        assert_eq!(
            out,
            [
                "a@12Delete=",
                "a@9Put=odd",
                changed.as_str(),
                "c@15Merge=odd",
                "c@14Put=odd",
                "d@13Put=keep",
                "e@8Put=odd"
            ]
        );
        assert_eq!(r.counts, Rewritten { expired: 0, removed: 1, changed: 1 });
    }
}
