//! A table's key projection: the number a range filter (of either kind) indexes each user key
//! by, and how the bounds of a range read map to an interval of those numbers.
//!
//! A projection is `(o, w, P)`: `x(k)` is the `w` bytes `k[o .. o+w]` (zero-padded past the
//! key's end) read as a big-endian number, so `x` never decreases in key order among keys
//! sharing their first `o` bytes, and `w`-byte strings that follow one another are numbers that
//! follow one another.
//!
//! - **Per table** (the default; `range_filter.key_offset = 0`): `P` is the table's common prefix
//!   (its first `o ≤ 255` bytes, stored), and the window ends at `E` (`w = E − o`, 1..=8): where
//!   99% of the tree's sampled range reads have their bounds apart (one past the first byte
//!   where `lo` and `hi` differ) — a window ending sooner would project a read's bounds onto
//!   the same number, one ending later stretches every range by 256 per byte. Without samples
//!   the keys decide: `E = min(8, longest key)` when every two adjacent keys differ within
//!   their first 8 bytes (the fixed projection's end), else `min(o + 8, longest key)`. Keys `user:00012345` project to the digits after their common prefix, 16-byte keys
//!   `u64 ‖ suffix` to the number's low bytes, short keys right-aligned. Bounds outside `P`'s
//!   keys clamp: a lower bound below them starts at 0, an upper bound above them ends at
//!   `2^(8w) − 1`, and a range that misses them is empty.
//! - **Decimal** (per table, flag bit 1): when every key of the table has ASCII digits in
//!   `k[o .. E']` and `E'` reaches as far as the window above would (`E' − o` ≤ 19 digits: the
//!   run of digits all keys have after `P`, or the sampled reads' end), `x(k)` is the number
//!   those digits write. Zero-padded decimal ids then keep their distances (a range of 16 ids is
//!   16 numbers, where bytes stretch a range crossing a carry by 246 per digit), and ids wider
//!   than 8 digits fit. A bound's bytes map to the nearest digit strings: a byte below `'0'`
//!   (or the bound's end) continues with the smallest digits, one above `'9'` with the largest.
//! - **Fixed** (`range_filter.key_offset = o > 0`, and every Rosetta block of version 1): `w = 8`,
//!   no `P`; the keys need not share their first `o` bytes, so the filter answers only ranges
//!   whose bounds share them (for such a range every key within shares them too).
//!
//! Serialized form (ahead of a range-filter body; `docs/format/sst.md`):
//! ```text
//! o:u8 ‖ w:u8 (1..=8; decimal 1..=19) ‖ flags:u8 (bit 0: P stored; bit 1: decimal, only with
//! P; others 0) ‖ reserved:u8 = 0 ‖ P (o bytes, if stored)
//! ```

use crate::iter::KeyBounds;
use std::cmp::Ordering;
use std::ops::Bound;

/// Bytes of the serialized form before `P`.
const HEADER: usize = 4;
/// The longest stored prefix.
pub const MAX_OFFSET: usize = 255;

/// A table's key projection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Projection {
    offset: usize,
    width: usize,
    /// `Some(P)`: every key of the table starts with these `offset` bytes.
    prefix: Option<Box<[u8]>>,
    /// The window is `width` ASCII digits, read as a decimal number.
    decimal: bool,
}

/// The most digits a decimal window holds (`10^19 − 1 < 2^64`).
const MAX_DIGITS: usize = 19;

/// `10^n` for `n ≤ 19`.
#[inline]
fn pow10(n: usize) -> u64 {
    10u64.pow(n as u32)
}

/// Where a bound lies against the keys that start with `P`.
enum Side {
    Below,
    Within,
    Above,
}

impl Projection {
    /// The fixed projection: the 8 bytes after `offset`, for keys that need not share them.
    pub fn fixed(offset: usize) -> Self {
        Projection {
            offset,
            width: 8,
            prefix: None,
            decimal: false,
        }
    }

    /// Whether the window is read as decimal digits.
    pub fn is_decimal(&self) -> bool {
        self.decimal
    }

    /// Bytes skipped before the window.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Bytes in the window (1..=8; decimal 1..=19).
    pub fn width(&self) -> usize {
        self.width
    }

    /// The table's common prefix, when the projection records it.
    pub fn prefix(&self) -> Option<&[u8]> {
        self.prefix.as_deref()
    }

    /// The largest projection.
    pub fn max_value(&self) -> u64 {
        if self.decimal {
            pow10(self.width) - 1
        } else {
            u64::MAX >> (64 - 8 * self.width)
        }
    }

    /// `x(key)` (decimal: of the nearest digit string at or above the key's window).
    #[inline]
    pub fn project(&self, key: &[u8]) -> u64 {
        if self.decimal {
            let rest = key.get(self.offset..).unwrap_or(&[]);
            return decimal_at_least(rest, self.width).unwrap_or(self.max_value());
        }
        window(key, self.offset, self.width)
    }

    /// `x(key)` for a point lookup, or `None` when the table cannot hold `key` (it does not
    /// start with the table's common prefix, or, decimal, has no digits in the window).
    #[inline]
    pub fn of_key(&self, key: &[u8]) -> Option<u64> {
        match &self.prefix {
            Some(p) if !key.starts_with(p) => None,
            _ if self.decimal => {
                let digits = key.get(self.offset..self.offset + self.width)?;
                digits.iter().all(u8::is_ascii_digit).then(|| decimal(digits))
            }
            _ => Some(self.project(key)),
        }
    }

    /// Whether `rest` (a key's bytes after the offset) is the smallest key with its projection:
    /// every key below it (with the same first `o` bytes) projects lower.
    fn smallest_of_its_projection(&self, rest: &[u8]) -> bool {
        rest.len() <= self.width && rest.last() != Some(&0)
    }

    /// The smallest key with projection `x`, after `prefix`: the window's bytes without
    /// trailing zeros.
    pub fn smallest_key_of(&self, prefix: &[u8], x: u64) -> Vec<u8> {
        if self.decimal {
            // The number's digits, zero-padded to the window: a key with more bytes is larger.
            let mut k = prefix.to_vec();
            k.extend(format!("{x:0w$}", w = self.width).bytes());
            return k;
        }
        let bytes = x.to_be_bytes();
        let w = &bytes[8 - self.width..];
        let len = w.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let mut k = Vec::with_capacity(prefix.len() + len);
        k.extend_from_slice(prefix);
        k.extend_from_slice(&w[..len]);
        k
    }

    fn side(&self, p: &[u8], key: &[u8]) -> Side {
        let n = key.len().min(p.len());
        match key[..n].cmp(&p[..n]) {
            Ordering::Less => Side::Below,
            Ordering::Greater => Side::Above,
            // A proper prefix of P sorts before every key that starts with P.
            Ordering::Equal if key.len() < p.len() => Side::Below,
            Ordering::Equal => Side::Within,
        }
    }

    /// The projection interval `[a, b]` of a range read and the key prefix its keys share, or
    /// `None` when this projection cannot answer for these bounds. `Some(None)`: no key the
    /// table can hold lies within them.
    pub fn interval<'a>(&'a self, bounds: &'a KeyBounds) -> Option<Option<(&'a [u8], u64, u64)>> {
        self.interval_of(bounds.lo.as_ref().map(Vec::as_slice), bounds.hi.as_ref().map(Vec::as_slice))
    }

    /// [`interval`](Self::interval) of borrowed bounds.
    pub fn interval_of<'a>(&'a self, lo: Bound<&'a [u8]>, hi: Bound<&'a [u8]>) -> Option<Option<(&'a [u8], u64, u64)>> {
        let Some(p) = &self.prefix else {
            return self.fixed_interval(lo, hi);
        };
        let a = match lo {
            Bound::Unbounded => 0,
            Bound::Included(k) | Bound::Excluded(k) => match self.side(p, k) {
                Side::Below => 0,
                Side::Above => return Some(None),
                Side::Within if self.decimal => match decimal_at_least(&k[p.len()..], self.width) {
                    Some(x) => x,
                    None => return Some(None),
                },
                Side::Within => self.project(k),
            },
        };
        let b = match hi {
            Bound::Unbounded => self.max_value(),
            Bound::Included(k) | Bound::Excluded(k) => match self.side(p, k) {
                Side::Below => return Some(None),
                Side::Above => self.max_value(),
                Side::Within if self.decimal => {
                    let excluded = matches!(hi, Bound::Excluded(_));
                    match decimal_at_most(&k[p.len()..], self.width, excluded) {
                        Some(x) => x,
                        None => return Some(None),
                    }
                }
                Side::Within => {
                    let x = self.project(k);
                    if matches!(hi, Bound::Excluded(_)) && self.smallest_of_its_projection(&k[p.len()..]) {
                        match x.checked_sub(1) {
                            Some(x) => x,
                            None => return Some(None),
                        }
                    } else {
                        x
                    }
                }
            },
        };
        Some((a <= b).then_some((&p[..], a, b)))
    }

    /// The fixed projection's interval: both bounds given and sharing the first `o` bytes.
    fn fixed_interval<'a>(&self, lo: Bound<&'a [u8]>, hi: Bound<&'a [u8]>) -> Option<Option<(&'a [u8], u64, u64)>> {
        let o = self.offset;
        let (Bound::Included(lo) | Bound::Excluded(lo)) = lo else {
            return None;
        };
        let (hi, hi_excluded) = match hi {
            Bound::Included(h) => (h, false),
            Bound::Excluded(h) => (h, true),
            Bound::Unbounded => return None,
        };
        if lo.len() < o || hi.len() < o || lo[..o] != hi[..o] {
            return None;
        }
        let a = self.project(lo);
        let mut b = self.project(hi);
        if hi_excluded && self.smallest_of_its_projection(&hi[o..]) {
            match b.checked_sub(1) {
                Some(x) => b = x,
                None => return Some(None),
            }
        }
        Some((a <= b).then_some((&lo[..o], a, b)))
    }

    /// Appends the serialized form.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[
            self.offset as u8,
            self.width as u8,
            u8::from(self.prefix.is_some()) | (u8::from(self.decimal) << 1),
            0,
        ]);
        if let Some(p) = &self.prefix {
            out.extend_from_slice(p);
        }
    }

    /// Decodes the serialized form at the start of `bytes`: the projection and the bytes it
    /// took.
    ///
    /// # Errors
    /// A short description of the first field that is invalid.
    pub fn decode(bytes: &[u8]) -> Result<(Self, usize), &'static str> {
        let [o, w, flags, reserved] = *bytes
            .first_chunk::<HEADER>()
            .ok_or("range filter shorter than its projection")?;
        let (offset, width) = (usize::from(o), usize::from(w));
        if (flags != 0 && flags != 1 && flags != 3) || reserved != 0 {
            return Err("range filter projection flags or reserved byte not zero");
        }
        let decimal = flags == 3;
        if !(1..=if decimal { MAX_DIGITS } else { 8 }).contains(&width) {
            return Err("range filter projection width outside 1..=8 (decimal 1..=19)");
        }
        if flags == 0 {
            return Ok((
                Projection {
                    offset,
                    width,
                    prefix: None,
                    decimal,
                },
                HEADER,
            ));
        }
        let p = bytes
            .get(HEADER..HEADER + offset)
            .ok_or("range filter projection prefix past the block")?;
        Ok((
            Projection {
                offset,
                width,
                prefix: Some(p.into()),
                decimal,
            },
            HEADER + offset,
        ))
    }
}

/// The `w` bytes of `key` after `o`, zero-padded, as a big-endian number.
#[inline]
fn window(key: &[u8], o: usize, w: usize) -> u64 {
    let rest = key.get(o..).unwrap_or(&[]);
    let mut b = [0u8; 8];
    let n = rest.len().min(w);
    b[8 - w..8 - w + n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(b)
}

/// The number ASCII digits `digits` write (at most 19 of them).
fn decimal(digits: &[u8]) -> u64 {
    digits.iter().fold(0, |x, &d| x * 10 + u64::from(d - b'0'))
}

/// The smallest `w`-digit number whose digit string is at or above `rest` (a bound's bytes
/// after the prefix), or `None` when every `w`-digit string is below it.
fn decimal_at_least(rest: &[u8], w: usize) -> Option<u64> {
    let mut x = 0u64;
    for i in 0..w {
        match rest.get(i) {
            Some(c) if c.is_ascii_digit() => x = x * 10 + u64::from(c - b'0'),
            // The bound ends, or continues below every digit: the digits so far, then zeros.
            None => return Some(x * pow10(w - i)),
            Some(&c) if c < b'0' => return Some(x * pow10(w - i)),
            // Above every digit: the next number of `i` digits, then zeros.
            Some(_) => return (x + 1 < pow10(i)).then(|| (x + 1) * pow10(w - i)),
        }
    }
    Some(x)
}

/// The largest `w`-digit number whose digit string is at or below `rest` (below it when
/// `excluded`; keys may continue past the window), or `None` when none is.
fn decimal_at_most(rest: &[u8], w: usize, excluded: bool) -> Option<u64> {
    let mut x = 0u64;
    for i in 0..w {
        match rest.get(i) {
            Some(c) if c.is_ascii_digit() => x = x * 10 + u64::from(c - b'0'),
            // Above every digit: the digits so far, then nines.
            Some(&c) if c > b'9' => return Some((x + 1) * pow10(w - i) - 1),
            // The bound ends, or continues below every digit: a key with these digits and more
            // is above it, so the number before them.
            _ => return (x * pow10(w - i)).checked_sub(1),
        }
    }
    // A key with exactly these digits equals an excluded bound; one with more bytes is above.
    if excluded && rest.len() == w {
        x.checked_sub(1)
    } else {
        Some(x)
    }
}

/// Length of the common prefix of `a` and `b`.
fn lcp(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Positions the window-end histogram counts (`range_ends`): 0..=`MAX_OFFSET + 8`.
pub const END_POSITIONS: usize = MAX_OFFSET + 9;

/// Where a range read's bounds first differ, plus one (capped): the window must reach this far
/// for the read's bounds to project apart, and reaching farther only stretches the range.
pub fn range_end(lo: &[u8], hi: &[u8]) -> usize {
    (lcp(lo, hi) + 1).min(END_POSITIONS - 1)
}

/// Collects a table's keys (in order) and chooses its projection at the end.
#[derive(Debug)]
pub struct Projector {
    /// `Some(o)`: the fixed projection at `o`.
    fixed: Option<usize>,
    first: Vec<u8>,
    prev: Vec<u8>,
    keys: usize,
    longest: usize,
    /// The largest position at which two adjacent keys first differ.
    max_diff: usize,
    /// Each key's 8 bytes after its common prefix with the first key (fixed: its projection).
    windows: Vec<u64>,
    /// `(first key index, common prefix with the first key)` where the latter changes (it
    /// never grows in key order).
    runs: Vec<(usize, usize)>,
    /// Each key's first 19 bytes after its common prefix with the first key, as far as they
    /// are ASCII digits, read as a 19-digit number (zeros after the last digit): a decimal
    /// window's inputs.
    digits: Vec<u64>,
    /// The least position where a key's digits after its common prefix with the first key end.
    digits_end: usize,
}

impl Projector {
    /// A projector choosing per table (`fixed = None`) or fixed at an offset.
    pub fn new(fixed: Option<usize>) -> Self {
        Projector {
            fixed,
            first: Vec::new(),
            prev: Vec::new(),
            keys: 0,
            longest: 0,
            max_diff: 0,
            windows: Vec::new(),
            runs: Vec::new(),
            digits: Vec::new(),
            digits_end: usize::MAX,
        }
    }

    /// The next distinct user key of the table, in key order.
    pub fn add_key(&mut self, key: &[u8]) {
        if let Some(o) = self.fixed {
            let x = window(key, o, 8);
            if self.windows.last() != Some(&x) {
                self.windows.push(x);
            }
            return;
        }
        let l = if self.keys == 0 {
            self.first.extend_from_slice(key);
            key.len()
        } else {
            let d = lcp(&self.prev, key);
            self.max_diff = self.max_diff.max(d);
            // lcp(first, key) = min(lcp(first, prev), lcp(prev, key)) for keys in order.
            self.runs.last().map_or(d, |r| r.1.min(d))
        };
        self.prev.clear();
        self.prev.extend_from_slice(key);
        self.longest = self.longest.max(key.len());
        if self.runs.last().is_none_or(|r| r.1 != l) {
            self.runs.push((self.keys, l));
        }
        self.windows.push(window(key, l, 8));
        let own = key.get(l..).unwrap_or(&[]);
        let run = own.iter().take(MAX_DIGITS).take_while(|c| c.is_ascii_digit()).count();
        self.digits.push(decimal(&own[..run]) * pow10(MAX_DIGITS - run));
        self.digits_end = self.digits_end.min(l + run);
        self.keys += 1;
    }

    /// Each key's common prefix with the first key, in key order.
    fn prefixes(&self) -> impl Iterator<Item = usize> + '_ {
        let mut runs = self.runs.iter().peekable();
        let mut l = 0;
        (0..self.keys).map(move |i| {
            while let Some(&&(start, len)) = runs.peek() {
                if start > i {
                    break;
                }
                l = len;
                runs.next();
            }
            l
        })
    }

    /// The end of the decimal window at `o` for a table whose byte window would end at `end`
    /// (`sampled`: where the reads need it), when every key has digits there and the window
    /// reaches as far; `None` otherwise.
    fn decimal_end(&self, o: usize, end: usize, sampled: bool) -> Option<usize> {
        // The first key's digits after `o` are every key's up to its common prefix with it; a
        // key sharing more than them ends its digits there too (its `l + run` is past them).
        let first = o + self.first.get(o..)?.iter().take_while(|c| c.is_ascii_digit()).count();
        let reach = (o + MAX_DIGITS).min(first).min(self.digits_end);
        let want = if sampled { end } else { reach };
        (want > o && want <= reach && want >= end).then_some(want)
    }

    /// The decimal projections of the keys over `[o, o + w)` (every key has digits there).
    fn decimal_windows(&self, o: usize, w: usize) -> Vec<u64> {
        let mut xs = Vec::with_capacity(self.keys);
        for (l, &own) in self.prefixes().zip(&self.digits) {
            // The first key's digits up to this key's common prefix with it, then its own.
            let shared = l.clamp(o, o + w);
            let rest = o + w - shared;
            let head = decimal(&self.first[o..shared]);
            let x = head * pow10(rest) + own / pow10(MAX_DIGITS - rest);
            if xs.last() != Some(&x) {
                xs.push(x);
            }
        }
        xs
    }

    /// The projection and the table's distinct projections in ascending order. `ends`: the
    /// tree's histogram of [`range_end`] over sampled range reads (when empty or too thin, the
    /// keys decide: their longest length less the bytes they all end with).
    pub fn finish(self, ends: Option<&[u64]>) -> (Projection, Vec<u64>) {
        if let Some(o) = self.fixed {
            let mut xs = self.windows;
            // Keys sharing their projection, or out of its order past the offset (their skipped
            // bytes differ): sorted and counted once.
            xs.sort_unstable();
            xs.dedup();
            return (Projection::fixed(o), xs);
        }
        let common = self.runs.last().map_or(0, |r| r.1);
        let o = common.min(MAX_OFFSET);
        let sampled = ends.and_then(end_of_most_reads);
        let end = sampled.unwrap_or_else(|| {
            // No reads to go by. Keys whose neighbours all differ within their first 8 bytes
            // end the window there, as the fixed projection did (16-byte keys `u64 ‖ suffix`);
            // others take the 8 bytes after their common prefix (string keys). Bytes every key
            // ends with are kept: a constant padding and a number's constant low digits look
            // alike, and a read between two keys needs the latter.
            if self.max_diff < 8 {
                self.longest.min(8)
            } else {
                self.longest.min(common + 8)
            }
        });
        let prefix = Some(self.first[..o].into());
        if let Some(e) = self.decimal_end(o, end, sampled.is_some()) {
            let xs = self.decimal_windows(o, e - o);
            let projection = Projection {
                offset: o,
                width: e - o,
                prefix,
                decimal: true,
            };
            return (projection, xs);
        }
        let width = end.saturating_sub(o).clamp(1, 8);
        let mut xs = Vec::with_capacity(self.windows.len());
        for (l, &win) in self.prefixes().zip(&self.windows) {
            // The window's bytes: the first key's up to this key's common prefix with it, then
            // this key's own (o + w ≤ o + 8 ≤ l + 8: its 8 bytes after l reach the end).
            let own = win.to_be_bytes();
            let mut x = 0u64;
            for j in o..o + width {
                let byte = if j < l { self.first[j] } else { own[j - l] };
                x = (x << 8) | u64::from(byte);
            }
            if xs.last() != Some(&x) {
                xs.push(x);
            }
        }
        let projection = Projection {
            offset: o,
            width,
            prefix,
            decimal: false,
        };
        (projection, xs)
    }
}

/// The window end 99% of the sampled range reads need (`None` under 16 samples).
fn end_of_most_reads(ends: &[u64]) -> Option<usize> {
    let total: u64 = ends.iter().sum();
    if total < 16 {
        return None;
    }
    let want = total - total / 100;
    let mut seen = 0;
    ends.iter().position(|&n| {
        seen += n;
        seen >= want
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn project_all(keys: &[Vec<u8>], fixed: Option<usize>) -> (Projection, Vec<u64>) {
        project_with(keys, fixed, None)
    }

    fn project_with(keys: &[Vec<u8>], fixed: Option<usize>, ends: Option<&[u64]>) -> (Projection, Vec<u64>) {
        let mut p = Projector::new(fixed);
        for k in keys {
            p.add_key(k);
        }
        p.finish(ends)
    }

    fn bounds(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> KeyBounds {
        let own = |b: Bound<&[u8]>| match b {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        KeyBounds {
            lo: own(lo),
            hi: own(hi),
        }
    }

    #[test]
    fn string_keys_project_to_the_bytes_after_their_common_prefix() {
        // One key has a letter after the common prefix: not a window of digits (that is
        // `zero_padded_ids_project_to_their_numbers`), so the window is bytes.
        let mut keys: Vec<Vec<u8>> = [120u32, 130, 145, 1000, 1200]
            .iter()
            .map(|i| format!("user:{i:08}").into_bytes())
            .collect();
        keys.push(b"user:0000z000".to_vec());
        let (p, xs) = project_all(&keys, None);
        // Common prefix "user:0000"; the keys first differ at most at their last byte (12).
        assert!(!p.is_decimal());
        assert_eq!((p.offset(), p.width(), p.prefix()), (9, 4, Some(&b"user:0000"[..])));
        assert_eq!(xs[0], u64::from(u32::from_be_bytes(*b"0120")));
        assert_eq!(xs.len(), 6);
        // A range of ten ids maps to about 10 numbers (one digit carries: 0130..0139).
        let b = bounds(Bound::Included(b"user:00000130"), Bound::Included(b"user:00000139"));
        let (prefix, a, z) = p.interval(&b).unwrap().unwrap();
        assert_eq!((prefix, z - a), (&b"user:0000"[..], 9));
        // Bounds past the table's keys clamp; a range beside them is empty.
        let b = bounds(Bound::Included(b"a"), Bound::Excluded(b"user:0000013"));
        assert_eq!(p.interval(&b), Some(Some((&b"user:0000"[..], 0, p.project(b"user:0000013") - 1))));
        let b = bounds(Bound::Included(b"user:1"), Bound::Unbounded);
        assert_eq!(p.interval(&b), Some(None));
        let b = bounds(Bound::Unbounded, Bound::Excluded(b"user:0000"));
        assert_eq!(p.interval(&b), Some(None), "nothing with the prefix sorts below it");
        let b = bounds(Bound::Unbounded, Bound::Included(b"user:"));
        assert_eq!(p.interval(&b), Some(None), "a proper prefix of P is below every key");
        assert_eq!(p.of_key(b"user:1"), None);
        assert_eq!(p.of_key(b"user:00000145"), Some(p.project(b"user:00000145")));
    }

    #[test]
    fn zero_padded_ids_project_to_their_numbers() {
        let ids = [120u64, 130, 145, 1000, 1095, 1111, 1200];
        let keys: Vec<Vec<u8>> = ids.iter().map(|i| format!("user:{i:010}").into_bytes()).collect();
        let (p, xs) = project_all(&keys, None);
        assert!(p.is_decimal(), "{p:?}");
        assert_eq!((p.offset(), p.width(), p.prefix()), (11, 4, Some(&b"user:000000"[..])));
        assert_eq!(xs, ids);
        let k = |i: u64| format!("user:{i:010}").into_bytes();
        // Ranges keep their length in ids, across a decimal carry too.
        let b = bounds(Bound::Included(&k(130)), Bound::Included(&k(139)));
        assert_eq!(p.interval(&b), Some(Some((&b"user:000000"[..], 130, 139))));
        let b = bounds(Bound::Included(&k(1095)), Bound::Excluded(&k(1112)));
        assert_eq!(p.interval(&b), Some(Some((&b"user:000000"[..], 1095, 1111))));
        // Bytes above '9' continue with the largest digits, below '0' with the smallest.
        let b = bounds(Bound::Included(b"user:0000001:"), Bound::Included(b"user:0000001/"));
        assert_eq!(p.interval(&b), Some(None), "above 1999 and below 1000: nothing");
        let b = bounds(Bound::Excluded(b"user:0000001:"), Bound::Included(b"user:0000002:"));
        assert_eq!(p.interval(&b), Some(Some((&b"user:000000"[..], 2000, 2999))));
        let b = bounds(Bound::Included(b"user:00000011"), Bound::Included(b"user:000000120"));
        assert_eq!(p.interval(&b), Some(Some((&b"user:000000"[..], 1100, 1199))));
        let b = bounds(Bound::Included(b"user:000000"), Bound::Included(b"user:000000:"));
        assert_eq!(p.interval(&b), Some(Some((&b"user:000000"[..], 0, 9999))));
        assert_eq!(p.of_key(&k(1200)), Some(1200));
        assert_eq!(p.of_key(b"user:00000012a0"), None);
        assert_eq!(p.of_key(b"user:000000120"), None);
        assert_eq!(p.smallest_key_of(b"user:000000", 96), b"user:0000000096".to_vec());
        // Ids of 8 bytes of bytes would not fit: 12 varying digits do.
        let wide: Vec<Vec<u8>> = [1u64, 999_999_999_999].iter().map(|i| format!("id{i:012}").into_bytes()).collect();
        let (p, xs) = project_all(&wide, None);
        assert_eq!((p.is_decimal(), p.width(), xs), (true, 12, vec![1, 999_999_999_999]));
        // Numbers of varying length are not one window of digits: bytes.
        let short: Vec<Vec<u8>> = ["user:5", "user:10", "user:200"].iter().map(|k| k.as_bytes().to_vec()).collect();
        assert!(!project_all(&short, None).0.is_decimal());
    }

    #[test]
    fn numeric_keys_with_a_suffix_project_to_the_number() {
        // 8-byte big-endian numbers on a stride of 1024 (their low byte constant) and an 8-byte
        // suffix, constant or not: the window ends with the number, by the keys alone or by
        // where the sampled reads' bounds differ (the number's last byte), and a range keeps
        // its length.
        let numbers = |suffix: fn(u64) -> [u8; 8]| -> Vec<Vec<u8>> {
            (0..100u64)
                .map(|i| [(1_000_000 + i * 1024).to_be_bytes(), suffix(i)].concat())
                .collect()
        };
        let mut ends = vec![0u64; END_POSITIONS];
        ends[range_end(&[0, 0, 0, 0, 0, 0, 0, 1, 9], &[0, 0, 0, 0, 0, 0, 0, 17, 9])] = 100;
        let k = |x: u64| [x.to_be_bytes(), [b'0'; 8]].concat();
        let b = bounds(Bound::Included(&k(1_000_001)), Bound::Excluded(&k(1_000_017)));
        for (keys, ends) in [
            (numbers(|_| [b'0'; 8]), None),
            (numbers(|i| [i as u8; 8]), None),
            (numbers(|i| [i as u8; 8]), Some(&ends[..])),
        ] {
            let (p, xs) = project_with(&keys, None, ends);
            assert_eq!(p.offset() + p.width(), 8, "{p:?}");
            assert_eq!(xs.len(), 100);
            let (_, a, z) = p.interval(&b).unwrap().unwrap();
            assert_eq!(z - a, 16);
        }
        // Reads that tell the suffix apart (a number's keys by timestamp): the window runs into
        // the suffix as far as they need.
        let mut deep = vec![0u64; END_POSITIONS];
        deep[12] = 50;
        let (p, _) = project_with(&numbers(|i| [i as u8; 8]), None, Some(&deep));
        assert_eq!(p.offset() + p.width(), 12, "{p:?}");
    }

    #[test]
    fn fixed_projection_needs_bounds_sharing_the_offset() {
        let p = Projection::fixed(2);
        let b = bounds(Bound::Included(b"u1xx"), Bound::Included(b"u2yy"));
        assert_eq!(p.interval(&b), None);
        let b = bounds(Bound::Included(b"u1xx"), Bound::Included(b"u1yy"));
        assert_eq!(
            p.interval(&b),
            Some(Some((&b"u1"[..], window(b"xx", 0, 8), window(b"yy", 0, 8))))
        );
        let b = bounds(Bound::Included(b""), Bound::Excluded(b""));
        assert_eq!(Projection::fixed(0).interval(&b), Some(None));
    }

    #[test]
    fn serialized_forms_round_trip_and_bad_ones_are_refused() {
        for p in [
            Projection::fixed(3),
            Projection {
                offset: 2,
                width: 5,
                prefix: Some(b"ab"[..].into()),
                decimal: false,
            },
            Projection {
                offset: 1,
                width: 19,
                prefix: Some(b"u"[..].into()),
                decimal: true,
            },
        ] {
            let mut v = p.encode_to_vec();
            v.push(9);
            assert_eq!(Projection::decode(&v).unwrap(), (p.clone(), v.len() - 1));
        }
        assert!(Projection::decode(&[0, 0, 0, 0]).is_err(), "width 0");
        assert!(Projection::decode(&[0, 9, 0, 0]).is_err(), "width 9");
        assert!(Projection::decode(&[0, 8, 2, 0]).is_err(), "decimal without a prefix");
        assert!(Projection::decode(&[0, 8, 4, 0]).is_err(), "flags");
        assert!(Projection::decode(&[0, 9, 3, 0]).is_ok(), "nine digits");
        assert!(Projection::decode(&[0, 20, 3, 0]).is_err(), "twenty digits");
        assert!(Projection::decode(&[3, 8, 1, 0, b'a']).is_err(), "prefix past the end");
        assert!(Projection::decode(&[3, 8, 1]).is_err(), "short");
    }

    impl Projection {
        fn encode_to_vec(&self) -> Vec<u8> {
            let mut v = Vec::new();
            self.encode_to(&mut v);
            v
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Tables of zero-padded decimal ids (with and without a suffix): every key within any
        /// bounds projects into their interval, and the smallest key of a number splits the
        /// keys where their numbers do (what a Rosetta window's bound relies on).
        #[test]
        fn decimal_keys_within_bounds_project_within_the_interval(
            ids in proptest::collection::vec(any::<u64>(), 1..40),
            digits in 1usize..22,
            suffix in proptest::collection::vec(any::<u8>(), 0..3),
            lo in proptest::collection::vec(prop_oneof![4 => b'0'..=b'9', 1 => Just(b'/'), 1 => Just(b':'), 1 => any::<u8>()], 0..24),
            hi in proptest::collection::vec(prop_oneof![4 => b'0'..=b'9', 1 => Just(b'/'), 1 => Just(b':'), 1 => any::<u8>()], 0..24),
            lo_incl in any::<bool>(),
            hi_incl in any::<bool>(),
            x in any::<u64>(),
        ) {
            let id = |i: u64| -> Vec<u8> {
                let d = format!("{i:020}");
                [&b"k:"[..], &d.as_bytes()[20 - digits.min(20)..], &suffix].concat()
            };
            let mut keys: Vec<Vec<u8>> = ids.iter().map(|&i| id(i % 10u64.pow(digits.min(19) as u32))).collect();
            keys.sort();
            keys.dedup();
            let (p, xs) = project_all(&keys, None);
            prop_assert!(xs.windows(2).all(|w| w[0] < w[1]));
            if p.is_decimal() {
                for k in &keys {
                    prop_assert_eq!(p.of_key(k), Some(p.project(k)));
                }
                let (prefix, x) = (p.prefix().unwrap_or(&[]).to_vec(), x % (p.max_value() + 1));
                let s = p.smallest_key_of(&prefix, x);
                for k in &keys {
                    prop_assert_eq!(k >= &s, p.project(k) >= x, "{:?} against {:?}", k, s);
                }
            }
            let with = |b: &Vec<u8>| [&b"k:"[..], b].concat();
            let (lo, hi) = (with(&lo), with(&hi));
            let b = KeyBounds {
                lo: if lo_incl { Bound::Included(lo.clone()) } else { Bound::Excluded(lo.clone()) },
                hi: if hi_incl { Bound::Included(hi.clone()) } else { Bound::Excluded(hi.clone()) },
            };
            let within = |k: &Vec<u8>| {
                (if lo_incl { k >= &lo } else { k > &lo }) && (if hi_incl { k <= &hi } else { k < &hi })
            };
            match p.interval(&b) {
                None => prop_assert!(false, "a per-table projection answers every range"),
                Some(None) => prop_assert!(!keys.iter().any(within), "empty but a key is within"),
                Some(Some((_, a, z))) => {
                    prop_assert!(z <= p.max_value());
                    for k in keys.iter().filter(|k| within(k)) {
                        let x = p.project(k);
                        prop_assert!(a <= x && x <= z, "{:?} projects to {} outside [{}, {}]", k, x, a, z);
                    }
                }
            }
        }


        /// For any table of keys, every key of the table inside any bounds projects into the
        /// bounds' interval (no range filter built on it can then miss a key), and distinct
        /// keys get distinct numbers when the window is narrower than 8 bytes.
        #[test]
        fn keys_within_bounds_project_within_the_interval(
            mut keys in proptest::collection::vec(proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), Just(b'b'), any::<u8>()], 0..12), 1..40),
            common in proptest::collection::vec(any::<u8>(), 0..4),
            lo in proptest::collection::vec(any::<u8>(), 0..14),
            hi in proptest::collection::vec(any::<u8>(), 0..14),
            lo_incl in any::<bool>(),
            hi_incl in any::<bool>(),
            bounded in any::<(bool, bool)>(),
        ) {
            for k in &mut keys {
                k.splice(0..0, common.iter().copied());
            }
            keys.sort();
            keys.dedup();
            let (p, xs) = project_all(&keys, None);
            prop_assert!(xs.windows(2).all(|w| w[0] < w[1]));
            // Keys that differ only in zero bytes past the shorter one's end pad alike.
            if p.width() < 8 && keys.iter().all(|k| !k.contains(&0)) {
                prop_assert_eq!(xs.len(), keys.len());
            }
            let own = |k: &Vec<u8>, incl: bool, on: bool| match (on, incl) {
                (false, _) => Bound::Unbounded,
                (true, true) => Bound::Included(k.clone()),
                (true, false) => Bound::Excluded(k.clone()),
            };
            let b = KeyBounds { lo: own(&lo, lo_incl, bounded.0), hi: own(&hi, hi_incl, bounded.1) };
            let within = |k: &Vec<u8>| {
                (match &b.lo { Bound::Included(l) => k >= l, Bound::Excluded(l) => k > l, Bound::Unbounded => true })
                    && (match &b.hi { Bound::Included(h) => k <= h, Bound::Excluded(h) => k < h, Bound::Unbounded => true })
            };
            match p.interval(&b) {
                None => prop_assert!(false, "a per-table projection answers every range"),
                Some(None) => prop_assert!(!keys.iter().any(within), "empty but a key is within"),
                Some(Some((_, a, z))) => {
                    for k in keys.iter().filter(|k| within(k)) {
                        let x = p.project(k);
                        prop_assert!(a <= x && x <= z, "{:?} projects to {} outside [{}, {}]", k, x, a, z);
                    }
                }
            }
        }
    }
}
