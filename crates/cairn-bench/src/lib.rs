//! Shared pieces of cairn's benchmark binaries.

pub mod engine;
pub mod keys;
pub mod plot;
pub mod report;
pub mod timeline;
pub mod ycsb;

/// Peak resident set size of this process in bytes (Linux `VmHWM`), if known.
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// gflags-style boolean flag values, as db_bench takes them: `1`/`0`, `true`/`false`, `yes`/`no`.
pub fn flag_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "y" => Ok(true),
        "0" | "false" | "f" | "no" | "n" => Ok(false),
        _ => Err(format!("{s} is not a boolean (1/0, true/false)")),
    }
}
