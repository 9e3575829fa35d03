//! Measures the real memory cost of memtable entries (RSS growth per entry) against the bytes
//! the memtable charges. `cargo run --release -p cairn --example memtable_overhead`

use cairn::format::ValueKind;
use cairn::memtable::Memtable;

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let n = 1_000_000u64;
    let m = Memtable::new();
    let before = rss_kb();
    let value = [7u8; 100];
    for i in 0..n {
        let mut k = [b'0'; 16];
        k[..8].copy_from_slice(&(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_be_bytes());
        m.insert(&k, i, ValueKind::Put, &value, 1);
    }
    let grown = (rss_kb() - before) * 1024;
    println!(
        "{n} entries of 16 B key + 100 B value: RSS grew {:.1} B/entry; charged {:.1} B/entry (payload 124 B)",
        grown as f64 / n as f64,
        m.approximate_bytes() as f64 / n as f64
    );
}
