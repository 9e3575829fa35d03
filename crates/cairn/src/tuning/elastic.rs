//! ElasticBF's run-time adjustment (DESIGN §6.3; Li et al., ATC '19, §3.3–3.4): which filter
//! units to load and which to unload, given every segment's hotness and the filter memory.
//! Pure: the engine (`db/control/elastic_adjuster.rs`) gathers the segments' states, then reads and frees units
//! as told.
//!
//! - Expected extra I/O `E = Σ f_s · fpr(k_s)`, with `f_s` the segment's access count and
//!   `fpr(k) = r^k` for `k` loaded units of false-positive rate `r` each (separability).
//! - An accessed segment gets one more unit per access when that lowers `E` by more than
//!   `min_gain · E`. Memory for it comes first from the free budget (the largest gain per byte
//!   first, as the accesses of one round are decided together), then from **expired**
//!   segments (`now > last_access + life_time`): the multi-queue Q1..QU holds the segments by
//!   loaded units, each in LRU order, and the victim is the least recently used expired segment
//!   of the queue whose demotion raises `E` least — taken only when the net change lowers `E`.
//!   No expired segment: the adjustment is skipped (unexpired segments are never demoted).
//! - A segment seen for the first time with an inherited count (a compaction output) is
//!   treated as accessed as often as it has units (as many as pay), before anything else; one
//!   without history then loads `initial_units` from free memory (the units loaded when a table
//!   opens), before this round's accesses.
//! - Over budget (the memory was shrunk): demote at once, expired segments first, each time the
//!   demotion that raises `E` least.
//! - Combined mode: a segment with a target (from the optimum, [`targets`]) first moves to it
//!   (unloads, then loads in order of benefit per byte while memory is free); the rule above
//!   then handles the accesses between solves.

use super::bpk::{sort_and_search, SolverFile};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

/// One segment as the decider sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// Accesses so far, inherited ones included (ElasticBF's access frequency).
    pub freq: f64,
    /// Logical time (Gets) of its last access.
    pub last_access: u64,
    /// Accesses since the previous adjustment (each may load one more unit).
    pub accesses: u32,
    /// Units loaded now.
    pub loaded: u32,
    /// Units it has on disk.
    pub units: u32,
    /// Bytes one loaded unit takes.
    pub unit_bytes: u64,
    /// First adjustment since the segment appeared.
    pub fresh: bool,
    /// Its count was inherited (a compaction output), not only counted since it appeared.
    pub inherited: bool,
    /// The combined mode's target unit count (none: plain ElasticBF).
    pub target: Option<u32>,
}

/// The adjustment's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Logical time now.
    pub now: u64,
    /// Gets after its last access at which a segment expires.
    pub life_time: u64,
    /// Filter memory in bytes.
    pub budget: u64,
    /// False-positive rate of one unit.
    pub unit_fpr: f64,
    /// Units a segment without history gets, from free memory.
    pub initial_units: u32,
    /// A load must lower `E` by more than this share of `E` (1e-4 in the design).
    pub min_gain: f64,
}

/// What to do, in order (each step assumes the ones before it are done).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Load the next unit of segment `i` (its `loaded`-th, counting from 0).
    Load(usize),
    /// Unload the last loaded unit of segment `i`.
    Unload(usize),
}

struct State<'a> {
    segs: &'a [Segment],
    p: Params,
    k: Vec<u32>,
    used: u64,
    e: f64,
    /// Q1..QU: (last access, segment) of the segments with that many units loaded.
    queues: Vec<BTreeSet<(u64, usize)>>,
    actions: Vec<Action>,
}

impl<'a> State<'a> {
    fn new(segs: &'a [Segment], p: Params) -> Self {
        let k: Vec<u32> = segs.iter().map(|s| s.loaded.min(s.units)).collect();
        let max = segs.iter().map(|s| s.units).max().unwrap_or(0) as usize;
        let mut queues = vec![BTreeSet::new(); max + 1];
        for (i, s) in segs.iter().enumerate() {
            queues[k[i] as usize].insert((s.last_access, i));
        }
        let used = segs.iter().zip(&k).map(|(s, &k)| u64::from(k) * s.unit_bytes).sum();
        let mut st = State {
            segs,
            p,
            k,
            used,
            e: 0.0,
            queues,
            actions: Vec::new(),
        };
        st.e = (0..segs.len()).map(|i| segs[i].freq * st.fpr(st.k[i])).sum();
        st
    }

    fn fpr(&self, k: u32) -> f64 {
        self.p.unit_fpr.powi(k as i32)
    }

    /// How much one more unit of `i` lowers `E`.
    fn gain(&self, i: usize) -> f64 {
        self.segs[i].freq * (self.fpr(self.k[i]) - self.fpr(self.k[i] + 1))
    }

    /// [`gain`](Self::gain) per byte of the unit.
    fn gain_per_byte(&self, i: usize) -> f64 {
        self.gain(i) / self.segs[i].unit_bytes.max(1) as f64
    }

    /// How much one unit less of `i` raises `E`.
    fn cost(&self, i: usize) -> f64 {
        self.segs[i].freq * (self.fpr(self.k[i] - 1) - self.fpr(self.k[i]))
    }

    fn expired(&self, i: usize) -> bool {
        self.p.now > self.segs[i].last_access.saturating_add(self.p.life_time)
    }

    fn set(&mut self, i: usize, k: u32) {
        let at = (self.segs[i].last_access, i);
        self.queues[self.k[i] as usize].remove(&at);
        self.queues[k as usize].insert(at);
        let b = self.segs[i].unit_bytes;
        self.used = self.used - u64::from(self.k[i]) * b + u64::from(k) * b;
        self.e += self.segs[i].freq * (self.fpr(k) - self.fpr(self.k[i]));
        self.k[i] = k;
    }

    fn load(&mut self, i: usize) {
        self.set(i, self.k[i] + 1);
        self.actions.push(Action::Load(i));
    }

    fn unload(&mut self, i: usize) {
        self.set(i, self.k[i] - 1);
        self.actions.push(Action::Unload(i));
    }

    /// The demotion that raises `E` least among the LRU ends of Q1..QU (expired ones only, or
    /// any), never `except`.
    fn victim(&self, expired_only: bool, except: usize) -> Option<usize> {
        let mut best: Option<(f64, usize)> = None;
        for q in self.queues.iter().skip(1) {
            // The LRU end; the accessed segment itself is skipped.
            let Some(&(_, i)) = q.iter().find(|&&(_, i)| i != except) else {
                continue;
            };
            if expired_only && !self.expired(i) {
                continue;
            }
            let c = self.cost(i);
            if best.is_none_or(|(bc, _)| c < bc) {
                best = Some((c, i));
            }
        }
        best.map(|(_, i)| i)
    }

    fn free(&self) -> u64 {
        self.p.budget.saturating_sub(self.used)
    }

    /// Demotes until the loaded units fit the budget.
    fn fit(&mut self) {
        while self.used > self.p.budget {
            let Some(v) = self.victim(true, usize::MAX).or_else(|| self.victim(false, usize::MAX)) else {
                return;
            };
            self.unload(v);
        }
    }

    /// Moves targeted segments to their targets: unloads first, then loads (largest benefit
    /// per byte first) while memory is free.
    fn reach_targets(&mut self) {
        let mut up = Vec::new();
        for i in 0..self.segs.len() {
            let Some(t) = self.segs[i].target else { continue };
            let t = t.min(self.segs[i].units);
            while self.k[i] > t {
                self.unload(i);
            }
            if self.k[i] < t {
                up.push(i);
            }
        }
        up.sort_by(|&a, &b| {
            self.gain_per_byte(b)
                .total_cmp(&self.gain_per_byte(a))
                .then(a.cmp(&b))
        });
        for i in up {
            let t = self.segs[i].target.unwrap_or(0).min(self.segs[i].units);
            while self.k[i] < t && self.segs[i].unit_bytes <= self.free() {
                self.load(i);
            }
        }
    }

    /// Units segment `i` may gain this round: one per access; a new segment with an inherited
    /// count as many as pay.
    fn allowance(&self, i: usize) -> u32 {
        let s = &self.segs[i];
        let n = if s.fresh && s.inherited { s.units } else { s.accesses };
        n.min(s.units.saturating_sub(self.k[i]))
    }

    /// Whether one more unit of `i` is worth its read: it lowers `E` by more than `min_gain · E`.
    fn pays(&self, i: usize) -> bool {
        self.gain(i) > self.p.min_gain * self.e
    }

    /// A new segment without history gets `initial_units` first, from free memory, in order
    /// (the units the paper loads when a table is opened).
    fn initial(&mut self) {
        for i in 0..self.segs.len() {
            let s = self.segs[i];
            if !s.fresh || s.inherited {
                continue;
            }
            while self.k[i] < self.p.initial_units.min(s.units) && s.unit_bytes <= self.free() {
                self.load(i);
            }
        }
    }

    /// Loads into free memory, the largest gain per byte first.
    fn fill(&mut self, left: &mut [u32]) {
        // Non-negative floats order like their bit patterns.
        let key = |st: &Self, i: usize| st.gain_per_byte(i).max(0.0).to_bits();
        let mut heap: BinaryHeap<(u64, Reverse<usize>)> = (0..self.segs.len())
            .filter(|&i| left[i] > 0)
            .map(|i| (key(self, i), Reverse(i)))
            .collect();
        while let Some((_, Reverse(i))) = heap.pop() {
            if self.k[i] >= self.segs[i].units || !self.pays(i) || self.segs[i].unit_bytes > self.free() {
                continue;
            }
            self.load(i);
            left[i] -= 1;
            if left[i] > 0 {
                heap.push((key(self, i), Reverse(i)));
            }
        }
    }

    /// The multi-queue exchange for accessed segments whose units did not fit: each more unit
    /// takes the room of expired segments' units worth less together (largest gain first).
    fn exchange(&mut self, left: &mut [u32]) {
        let mut order: Vec<usize> = (0..self.segs.len())
            .filter(|&i| left[i] > 0 && self.segs[i].freq > 0.0)
            .collect();
        order.sort_by(|&a, &b| self.gain(b).total_cmp(&self.gain(a)).then(a.cmp(&b)));
        for i in order {
            while left[i] > 0 && self.k[i] < self.segs[i].units && self.pays(i) {
                if !self.take_room(i) {
                    break;
                }
                self.load(i);
                left[i] -= 1;
            }
        }
    }

    /// Demotes expired segments until one more unit of `i` fits, if the demotions together are
    /// worth less than that unit; otherwise changes nothing.
    fn take_room(&mut self, i: usize) -> bool {
        let gain = self.gain(i);
        let (mut lost, mut demoted) = (0.0, Vec::new());
        while self.segs[i].unit_bytes > self.free() {
            match self.victim(true, i) {
                Some(v) if lost + self.cost(v) < gain => {
                    lost += self.cost(v);
                    self.unload(v);
                    demoted.push(v);
                }
                _ => {
                    for v in demoted.into_iter().rev() {
                        self.set(v, self.k[v] + 1);
                        self.actions.pop();
                    }
                    return false;
                }
            }
        }
        true
    }
}

/// The loads and unloads that apply ElasticBF's rule to `segs` under `p`.
pub fn adjust(segs: &[Segment], p: &Params) -> Vec<Action> {
    let mut st = State::new(segs, *p);
    st.fit();
    st.reach_targets();
    let mut left: Vec<u32> = (0..segs.len()).map(|i| st.allowance(i)).collect();
    // Inherited hotness first (compaction outputs), then the initial units of new segments
    // without history, then this round's accesses.
    let mut inherited: Vec<u32> = (0..segs.len())
        .map(|i| if segs[i].fresh && segs[i].inherited { left[i] } else { 0 })
        .collect();
    st.fill(&mut inherited);
    st.initial();
    for i in 0..segs.len() {
        if segs[i].fresh && segs[i].inherited {
            left[i] = inherited[i];
        }
    }
    st.fill(&mut left);
    st.exchange(&mut left);
    st.actions
}

/// Filter memory's marginal value after `actions` are applied to `segs`, per unit of access
/// frequency (`E / Σ f_s` per byte): what the best unit not loaded would save, and what the
/// least useful loaded unit saves. The memory tuner scales them by filter probes per operation
/// (its three-way coordinate). `(0, 0)` without segments.
pub fn marginals(segs: &[Segment], actions: &[Action], unit_fpr: f64) -> (f64, f64) {
    let mut k: Vec<u32> = segs.iter().map(|s| s.loaded.min(s.units)).collect();
    for a in actions {
        match *a {
            Action::Load(i) => k[i] += 1,
            Action::Unload(i) => k[i] = k[i].saturating_sub(1),
        }
    }
    let total: f64 = segs.iter().map(|s| s.freq).sum();
    if total <= 0.0 {
        return (0.0, 0.0);
    }
    let fpr = |k: u32| unit_fpr.powi(k as i32);
    let per_byte = |s: &Segment, v: f64| s.freq * v / s.unit_bytes.max(1) as f64 / total;
    let gain = segs
        .iter()
        .zip(&k)
        .filter(|(s, &k)| k < s.units)
        .map(|(s, &k)| per_byte(s, fpr(k) - fpr(k + 1)))
        .fold(0.0, f64::max);
    let loss = segs
        .iter()
        .zip(&k)
        .filter(|(_, &k)| k > 0)
        .map(|(s, &k)| per_byte(s, fpr(k - 1) - fpr(k)))
        .fold(f64::INFINITY, f64::min);
    (gain, if loss.is_finite() { loss } else { 0.0 })
}

/// A segment as the combined mode's solver sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Demand {
    /// Keys its units hold.
    pub keys: f64,
    /// Its estimated empty lookups (Merlin's `z`, the file's share for this segment).
    pub empty: f64,
    /// Units it has on disk.
    pub units: u32,
    /// Bytes one loaded unit takes.
    pub unit_bytes: u64,
}

/// The combined mode's targets: Mnemosyne's sort-and-search optimum over segments for a filter
/// memory of `budget` bytes, each segment's bits per key rounded to the nearest whole number of
/// `unit_bpk`-bit units (at most its units), then trimmed to the budget by dropping the units
/// whose loss raises the expected extra I/O least.
pub fn targets(segs: &[Demand], budget: u64, unit_bpk: f64, decay: f64) -> Vec<u32> {
    let keys: f64 = segs.iter().map(|s| s.keys).sum();
    if segs.is_empty() || keys <= 0.0 || unit_bpk <= 0.0 {
        return vec![0; segs.len()];
    }
    let files: Vec<SolverFile> = segs
        .iter()
        .map(|s| SolverFile {
            entries: s.keys,
            empty: s.empty,
        })
        .collect();
    let avg = budget as f64 * 8.0 / keys;
    let a = sort_and_search(&files, avg, unit_bpk / 2.0, decay);
    let mut t: Vec<u32> = a
        .bpk
        .iter()
        .zip(segs)
        .map(|(b, s)| ((b / unit_bpk).round().max(0.0) as u32).min(s.units))
        .collect();
    let fpr = (-unit_bpk * decay).exp();
    let mut used: u64 = t.iter().zip(segs).map(|(&k, s)| u64::from(k) * s.unit_bytes).sum();
    // Rounding up may overshoot: drop the cheapest units until it fits.
    let mut heap: BTreeSet<(u64, usize)> = BTreeSet::new();
    let loss = |k: u32, s: &Demand| s.empty * (fpr.powi(k as i32 - 1) - fpr.powi(k as i32));
    // Losses are ordered through their bit patterns (non-negative floats order like integers).
    for (i, s) in segs.iter().enumerate() {
        if t[i] > 0 {
            heap.insert((loss(t[i], s).to_bits(), i));
        }
    }
    while used > budget {
        let Some((_, i)) = heap.pop_first() else { break };
        t[i] -= 1;
        used -= segs[i].unit_bytes;
        if t[i] > 0 {
            heap.insert((loss(t[i], &segs[i]).to_bits(), i));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{run_file, Case};

    /// Expected extra I/O `Σ f · fpr(k)` of `segs` with `loaded` units each.
    fn expected_extra_io(segs: &[Segment], loaded: &[u32], unit_fpr: f64) -> f64 {
        segs.iter()
            .zip(loaded)
            .map(|(s, &k)| s.freq * unit_fpr.powi(k as i32))
            .sum()
    }

    #[test]
    fn marginals_of_the_next_and_the_last_unit() {
        let seg = |freq: f64, loaded: u32| Segment {
            freq,
            last_access: 0,
            accesses: 0,
            loaded,
            units: 2,
            unit_bytes: 100,
            fresh: false,
            inherited: false,
            target: None,
        };
        // fpr 0.5 per unit; frequencies 30 and 10 (total 40).
        let segs = [seg(30.0, 1), seg(10.0, 0)];
        let (gain, loss) = marginals(&segs, &[], 0.5);
        // Next units: 30·(0.5−0.25) = 7.5 or 10·(1−0.5) = 5 → 7.5/100/40; last: 30·0.5 = 15.
        assert!((gain - 7.5 / 100.0 / 40.0).abs() < 1e-12, "{gain}");
        assert!((loss - 15.0 / 100.0 / 40.0).abs() < 1e-12, "{loss}");
        // After loading segment 1's first unit: its next is 10·0.25 = 2.5, its last 5.
        let (gain, loss) = marginals(&segs, &[Action::Load(1)], 0.5);
        assert!((gain - 7.5 / 4000.0).abs() < 1e-12 && (loss - 5.0 / 4000.0).abs() < 1e-12);
        assert_eq!(marginals(&[], &[], 0.5), (0.0, 0.0));
    }

    /// `adjust now= life= budget= fpr= [initial=]` with one line per segment:
    /// `freq last accesses loaded units bytes [fresh] [inherited] [target=T]`; the output is the actions and
    /// each segment's units after them.
    ///
    /// `targets budget= unit_bpk=` with one line per segment `keys empty units bytes`.
    #[test]
    fn cases() {
        run_file("tuning/elastic.txt", |c: &Case| match c.command.as_str() {
            "adjust" => {
                let segs: Vec<Segment> = c.input.iter().map(|l| segment(l)).collect();
                let p = Params {
                    now: c.arg("now", 0.0) as u64,
                    life_time: c.arg("life", 20_000.0) as u64,
                    budget: c.arg("budget", 0.0) as u64,
                    unit_fpr: c.arg("fpr", 0.5),
                    initial_units: c.arg("initial", 1.0) as u32,
                    min_gain: 1e-4,
                };
                let actions = adjust(&segs, &p);
                let mut k: Vec<u32> = segs.iter().map(|s| s.loaded).collect();
                let mut out: Vec<String> = Vec::new();
                for a in &actions {
                    match *a {
                        Action::Load(i) => {
                            k[i] += 1;
                            out.push(format!("load {i}"));
                        }
                        Action::Unload(i) => {
                            k[i] -= 1;
                            out.push(format!("unload {i}"));
                        }
                    }
                }
                let used: u64 = segs.iter().zip(&k).map(|(s, &k)| u64::from(k) * s.unit_bytes).sum();
                out.push(format!(
                    "units {:?}, used {used}, E {:.4} -> {:.4}",
                    k,
                    expected_extra_io(&segs, &segs.iter().map(|s| s.loaded).collect::<Vec<_>>(), p.unit_fpr),
                    expected_extra_io(&segs, &k, p.unit_fpr)
                ));
                out.join("\n")
            }
            "targets" => {
                let segs: Vec<Demand> = c
                    .input
                    .iter()
                    .map(|l| {
                        let v: Vec<f64> = l.split_whitespace().map(crate::testutil::num::<f64>).collect();
                        Demand {
                            keys: v.first().copied().unwrap_or(0.0),
                            empty: v.get(1).copied().unwrap_or(0.0),
                            units: v.get(2).copied().unwrap_or(0.0) as u32,
                            unit_bytes: v.get(3).copied().unwrap_or(0.0) as u64,
                        }
                    })
                    .collect();
                let t = targets(
                    &segs,
                    c.arg("budget", 0.0) as u64,
                    c.arg("unit_bpk", 4.0),
                    c.arg("decay", crate::filter::bloom::LN2_SQ),
                );
                let used: u64 = t.iter().zip(&segs).map(|(&k, s)| u64::from(k) * s.unit_bytes).sum();
                format!("{t:?}, used {used}")
            }
            _ => c.unknown(),
        });
    }

    fn segment(l: &str) -> Segment {
        let words: Vec<&str> = l.split_whitespace().collect();
        let num = |i: usize| words.get(i).map_or(0.0, |w| crate::testutil::num::<f64>(w));
        Segment {
            freq: num(0),
            last_access: num(1) as u64,
            accesses: num(2) as u32,
            loaded: num(3) as u32,
            units: num(4) as u32,
            unit_bytes: num(5) as u64,
            fresh: words.contains(&"fresh"),
            inherited: words.contains(&"inherited"),
            target: words
                .iter()
                .find_map(|w| w.strip_prefix("target=").map(crate::testutil::num)),
        }
    }

    /// Random instances: the budget always holds after an adjustment that started within it
    /// (or after one that had to shrink), and no unexpired segment that was not over budget
    /// loses a unit.
    #[test]
    fn never_exceeds_the_budget_nor_demotes_unexpired_segments() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m.max(1)
        };
        for _ in 0..2000 {
            let n = 1 + rnd(12) as usize;
            let now = 1000 + rnd(1000);
            let segs: Vec<Segment> = (0..n)
                .map(|_| {
                    let units = 1 + rnd(6) as u32;
                    Segment {
                        freq: rnd(100) as f64,
                        last_access: rnd(now + 1),
                        accesses: rnd(3) as u32,
                        loaded: rnd(u64::from(units) + 1) as u32,
                        units,
                        unit_bytes: 1 + rnd(100),
                        fresh: rnd(4) == 0,
                        inherited: rnd(2) == 0,
                        target: None,
                    }
                })
                .collect();
            let used: u64 = segs.iter().map(|s| u64::from(s.loaded) * s.unit_bytes).sum();
            let budget = used + rnd(200);
            let p = Params {
                now,
                life_time: 300,
                budget,
                unit_fpr: 0.5,
                initial_units: 1,
                min_gain: 1e-4,
            };
            let mut k: Vec<u32> = segs.iter().map(|s| s.loaded).collect();
            for a in adjust(&segs, &p) {
                match a {
                    Action::Load(i) => {
                        k[i] += 1;
                        assert!(k[i] <= segs[i].units);
                    }
                    Action::Unload(i) => {
                        assert!(now > segs[i].last_access + p.life_time, "unexpired segment {i} demoted");
                        k[i] -= 1;
                    }
                }
                let used: u64 = segs.iter().zip(&k).map(|(s, &k)| u64::from(k) * s.unit_bytes).sum();
                assert!(used <= budget, "{used} > {budget}");
            }
            let before = expected_extra_io(&segs, &segs.iter().map(|s| s.loaded).collect::<Vec<_>>(), 0.5);
            assert!(expected_extra_io(&segs, &k, 0.5) <= before + 1e-9);
        }
    }
}
