//! Measured false-positive rates of Bloom filter units against the model, on 1M keys, and the
//! multiplicativity of independent units (ElasticBF's separability). Prints a table; run with
//! `cargo test --profile ci -p cairn --test bloom_fpr -- --nocapture`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

use cairn::filter::bloom::{self, expected_fpr, model_fpr, BloomFilter};
use cairn::filter::key_hash;

const KEYS: u64 = 1_000_000;
const PROBES: u64 = 1_000_000;

fn member_hashes() -> Vec<u64> {
    (0..KEYS).map(|i| key_hash(format!("user{i:012}").as_bytes())).collect()
}

/// Absent keys: a disjoint key space.
fn absent(i: u64) -> u64 {
    key_hash(format!("miss{i:012}").as_bytes())
}

fn measured_fpr(filters: &[&BloomFilter]) -> f64 {
    let fp = (0..PROBES)
        .filter(|&i| {
            let h = absent(i);
            filters.iter().all(|f| f.may_contain_hash(h))
        })
        .count();
    fp as f64 / PROBES as f64
}

fn filter(hashes: &[u64], bpk: f64, seed: u64) -> BloomFilter {
    let f = BloomFilter::decode(bloom::build(hashes, bpk, seed)).unwrap();
    assert!(hashes.iter().all(|&h| f.may_contain_hash(h)), "false negative");
    f
}

#[test]
fn fpr_matches_the_model() {
    let hashes = member_hashes();
    println!("| bits/key | probes k | measured FPR | expected (integer k) | model e^-(ln2)^2·b |");
    println!("|---|---|---|---|---|");
    for bpk in [1.0, 2.0, 4.0, 6.0, 10.0] {
        let f = filter(&hashes, bpk, 0);
        let m = measured_fpr(&[&f]);
        let e = expected_fpr(bpk);
        println!(
            "| {bpk} | {} | {m:.5} | {e:.5} | {:.5} |",
            f.num_probes(),
            model_fpr(bpk)
        );
        // 1M probes: the relative standard error at the smallest rate (~0.8%) is ~1.1%.
        assert!((m - e).abs() / e < 0.06, "bpk {bpk}: measured {m} vs expected {e}");
    }
}

#[test]
fn independent_units_multiply() {
    let hashes = member_hashes();
    let u0 = filter(&hashes, 4.0, 0);
    let u1 = filter(&hashes, 4.0, 1);
    let one8 = filter(&hashes, 8.0, 0);
    let (f0, f1) = (measured_fpr(&[&u0]), measured_fpr(&[&u1]));
    let both = measured_fpr(&[&u0, &u1]);
    let eight = measured_fpr(&[&one8]);
    println!("| filter | measured FPR |");
    println!("|---|---|");
    println!("| unit 0 (4 b/k) | {f0:.5} |");
    println!("| unit 1 (4 b/k) | {f1:.5} |");
    println!("| product f0·f1 | {:.5} |", f0 * f1);
    println!("| units 0+1 probed together | {both:.5} |");
    println!("| one 8 b/k filter | {eight:.5} |");
    assert!((both - f0 * f1).abs() / (f0 * f1) < 0.06, "units are not independent");
    assert!(
        (both - eight).abs() / eight < 0.10,
        "two 4-bit units ≉ one 8-bit filter"
    );
}
