//! The randomized conformance suite every [`InternalIterator`] passes: random seeks in both
//! directions followed by random next/prev walks, compared step by step with a `BTreeMap`.

use super::InternalIterator;
use crate::format::ikey::InternalKey;
use rand::Rng;
use std::collections::BTreeMap;
use std::ops::Bound;

/// Full scans both ways, then `walks` random seeks (targets from `target`) each followed by up
/// to `max_steps` random moves.
pub(crate) fn check(
    it: &mut dyn InternalIterator,
    model: &BTreeMap<InternalKey, Vec<u8>>,
    rng: &mut impl Rng,
    walks: usize,
    max_steps: usize,
    mut target: impl FnMut(&mut dyn rand::RngCore) -> InternalKey,
) {
    it.seek_to_first();
    for (k, v) in model {
        assert!(it.valid(), "scan ended early: {:?}", it.status());
        assert_eq!((it.key(), it.value()), (k.encoded(), &v[..]));
        it.next();
    }
    assert!(!it.valid());
    it.seek_to_last();
    for k in model.keys().rev() {
        assert_eq!(it.key(), k.encoded());
        it.prev();
    }
    assert!(!it.valid() && it.status().is_ok());
    for _ in 0..walks {
        let t = target(rng);
        let mut pos = if rng.gen_bool(0.5) {
            it.seek(t.encoded());
            model.range(&t..).next().map(|(k, _)| k.clone())
        } else {
            it.seek_for_prev(t.encoded());
            model.range(..=&t).next_back().map(|(k, _)| k.clone())
        };
        for _ in 0..rng.gen_range(0..=max_steps) {
            assert_eq!(it.valid(), pos.is_some(), "{:?}", it.status());
            let Some(p) = pos.clone() else { break };
            assert_eq!(it.key(), p.encoded());
            assert_eq!(it.value(), &model[&p][..]);
            if rng.gen_bool(0.5) {
                it.next();
                pos = model
                    .range((Bound::Excluded(&p), Bound::Unbounded))
                    .next()
                    .map(|(k, _)| k.clone());
            } else {
                it.prev();
                pos = model.range(..&p).next_back().map(|(k, _)| k.clone());
            }
        }
        assert!(it.status().is_ok());
    }
}

/// One step of a data-driven walk (`testdata/iter/`): `first`, `last`, `seek K`,
/// `seek-for-prev K`, `next`, `prev`, with `target` reading a seek's key.
pub(crate) fn step(it: &mut dyn InternalIterator, op: &str, target: impl Fn(&str) -> InternalKey) {
    let mut w = op.split_whitespace();
    match w.next() {
        Some("first") => it.seek_to_first(),
        Some("last") => it.seek_to_last(),
        Some("seek") => it.seek(target(w.next().unwrap_or("")).encoded()),
        Some("seek-for-prev") => it.seek_for_prev(target(w.next().unwrap_or("")).encoded()),
        Some("next") => it.next(),
        Some("prev") => it.prev(),
        other => panic!("unknown step {other:?}"),
    }
}
