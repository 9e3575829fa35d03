//! Data-driven tests of the merge policies (`testdata/compaction/*.txt`).
//!
//! Commands:
//! - `policy leveling|garnering T= c= l0= base= levels= [follow]` — sets the policy (`follow`:
//!   level targets that follow write memory).
//! - `lsm deepest=N [write_memory=W]` with lines `L<i> <number>:<lo>-<hi>:<size>[*] ...` (`*` = busy) — sets the view.
//! - `capacities [deepest=N] [bottom=B]` — capacity of each level 1.. for the view's (or given)
//!   L and deepest level's bytes.
//! - `pick` — the decision.

use super::{Garnering, Leveling};
use crate::compaction::policy::{Choice, FileView, LevelView, LsmView, MergePolicy};
use crate::testutil::{run_file, Case};

fn parse_view(c: &Case) -> LsmView {
    let mut v = LsmView {
        levels: Vec::new(),
        deepest: c.arg("deepest", 1),
        write_memory: c.has("write_memory").then(|| c.arg("write_memory", 0u64)),
    };
    for line in &c.input {
        let mut parts = line.split_whitespace();
        let level: usize = parts
            .next()
            .and_then(|l| l.strip_prefix('L'))
            .and_then(|l| l.parse().ok())
            .expect("L<i>");
        if v.levels.len() <= level {
            v.levels.resize_with(level + 1, LevelView::default);
        }
        for f in parts {
            let busy = f.ends_with('*');
            let f = f.trim_end_matches('*');
            let mut it = f.split(':');
            let number = it.next().unwrap().parse().unwrap();
            let (lo, hi) = it.next().unwrap().split_once('-').unwrap();
            let size = it.next().unwrap().parse().unwrap();
            v.levels[level].files.push(FileView {
                number,
                size,
                smallest: lo.into(),
                largest: hi.into(),
                busy,
                group: it.next().map_or(0, |g| g.trim_start_matches('g').parse().unwrap()),
            });
        }
    }
    v
}

fn policy(c: &Case) -> Box<dyn MergePolicy> {
    let t = c.arg("T", 10.0);
    let l0 = c.arg("l0", 4usize);
    let base = c.arg("base", 1000u64);
    let levels = c.arg("levels", 7usize);
    match (c.has("garnering"), c.has("leveling")) {
        (true, false) => Box::new(Garnering {
            t,
            c: c.arg("c", 0.8),
            l0_trigger: l0,
            base_bytes: base,
            max_levels: levels,
        }),
        (false, true) => Box::new(Leveling {
            t,
            l0_trigger: l0,
            base_bytes: base,
            max_levels: levels,
            follow_write_memory: c.has("follow"),
        }),
        _ => panic!("policy: name one of leveling, garnering"),
    }
}

fn run(file: &str) {
    let mut pol: Option<Box<dyn MergePolicy>> = None;
    let mut view = LsmView::default();
    run_file(file, |c| match c.command.as_str() {
        "policy" => {
            pol = Some(policy(c));
            "ok".into()
        }
        "lsm" => {
            view = parse_view(c);
            "ok".into()
        }
        "capacities" => {
            let p = pol.as_ref().expect("policy first");
            let deepest = c.arg("deepest", view.deepest);
            let bottom = c.arg("bottom", view.level(deepest as usize).iter().map(|f| f.size).sum::<u64>());
            (1..8)
                .filter_map(|i| p.capacity(i, deepest, bottom).map(|cap| format!("L{i}: {cap:.1}")))
                .collect::<Vec<_>>()
                .join("\n")
        }
        "pick" => {
            let d = pol.as_ref().expect("policy first").pick(&view);
            let grow = d.deepest.map(|l| format!("deepest -> {l}\n")).unwrap_or_default();
            grow + &match d.choice {
                Choice::DoNothing => "nothing".to_string(),
                Choice::AddLevel => "add a level at L1".to_string(),
                Choice::RemoveLevel => "remove L1".to_string(),
                Choice::Move { from, file } => {
                    format!("move file {file} from L{from} to L{}", from + 1)
                }
                Choice::Merge {
                    level,
                    inputs,
                    output_level,
                    overlaps,
                } => {
                    format!("merge L{level} {inputs:?} into L{output_level} with {overlaps:?}")
                }
            }
        }
        _ => c.unknown(),
    });
}

#[test]
fn leveling_picks() {
    run("compaction/leveling.txt");
}

#[test]
fn garnering_capacities_and_picks() {
    run("compaction/garnering.txt");
}
