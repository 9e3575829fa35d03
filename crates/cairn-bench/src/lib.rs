//! Shared pieces of cairn's benchmark binaries.

pub mod engine;
pub mod keys;
pub mod plot;
pub mod report;
pub mod timeline;
pub mod ycsb;

/// Parses the command line, also returning the ids of the arguments given on it (not
/// defaulted), for `EngineArgs::given`.
pub fn parse_args<P: clap::Parser>() -> (P, std::collections::BTreeSet<String>) {
    let m = P::command().get_matches();
    let given = m
        .ids()
        .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| id.to_string())
        .collect();
    match P::from_arg_matches(&m) {
        Ok(p) => (p, given),
        Err(e) => e.exit(),
    }
}

/// Peak resident set size of this process in bytes (Linux `VmHWM`), if known.
pub fn peak_rss_bytes() -> Option<u64> {
    rss_bytes("VmHWM")
}

/// A memory figure of this process from `/proc/self/status` (`VmRSS`: resident now).
pub fn rss_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s
        .lines()
        .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Bytes this process caused to be written to storage so far (Linux `/proc/self/io`
/// `write_bytes`: counted when page-cache pages are dirtied or direct writes issued), if known.
pub fn process_write_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/io").ok()?;
    let line = s.lines().find(|l| l.starts_with("write_bytes:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU seconds (user + system, all threads) this process has used so far, if known.
pub fn process_cpu_secs() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = s.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // In clock ticks of USER_HZ, which Linux fixes at 100 for user space.
    Some(ticks as f64 / 100.0)
}

/// The median of `v` (sorts it; NaN when empty): what every experiment reports over rounds.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// gflags-style boolean flag values, as db_bench takes them: `1`/`0`, `true`/`false`, `yes`/`no`.
pub fn flag_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "y" => Ok(true),
        "0" | "false" | "f" | "no" | "n" => Ok(false),
        _ => Err(format!("{s} is not a boolean (1/0, true/false)")),
    }
}

/// `name` in the directory of the running binary (the experiment binaries drive `db_bench` and
/// `ycsb` built next to them).
pub fn sibling_exe(name: &str) -> Option<std::path::PathBuf> {
    let me = std::env::current_exe().ok()?;
    Some(me.parent()?.join(name))
}

/// A tree of several levels of small files at laptop scale (T = 4, 4 MiB buffers, files and
/// L1), the shape the filter experiments run on.
pub const SMALL_TREE_FLAGS: [&str; 4] = [
    "--write_buffer_size=4194304",
    "--target_file_size_base=4194304",
    "--max_bytes_for_level_base=4194304",
    "--max_bytes_for_level_multiplier=4",
];

/// The db_bench flags the equal-memory experiments (`filter_grid`, `elastic_grid`,
/// `equal_memory`) share: `num` keys of 16 B with 100 B values, uncompressed, O_DIRECT, index and
/// filters charged to the block cache, and the small tree.
pub fn equal_memory_flags(num: u64) -> Vec<String> {
    let mut f = vec![
        format!("--num={num}"),
        "--key_size=16".into(),
        "--value_size=100".into(),
        "--compression_type=none".into(),
        "--use_direct_reads=1".into(),
        "--cache_index_and_filter_blocks=1".into(),
    ];
    f.extend(SMALL_TREE_FLAGS.map(String::from));
    f
}

/// Writes an experiment's `results.md` (`md`) and `results.json` (`data`) into `out`.
///
/// # Errors
/// A file could not be written (with its path).
pub fn write_results<T: serde::Serialize + ?Sized>(out: &std::path::Path, md: &str, data: &T) -> Result<(), String> {
    let write = |name: &str, text: &str| {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    write("results.md", md)?;
    write("results.json", &serde_json::to_string_pretty(data).unwrap_or_default())
}

/// [`run_db_bench`] with the report in a temporary file named after the calling binary and
/// its process (the experiment grids keep only what they summarize).
///
/// # Errors
/// As [`run_db_bench`].
pub fn run_db_bench_temp(exe: &std::path::Path, args: &[String]) -> Result<report::RunReport, String> {
    let me = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "cairn_bench".into());
    let json = std::env::temp_dir().join(format!("{me}_{}.json", std::process::id()));
    run_db_bench(exe, args, &json)
}

/// Runs our `db_bench` with `args` and `--json=json`, and reads the report it wrote.
///
/// # Errors
/// The process could not start or failed (with its stderr), or the report is unreadable.
pub fn run_db_bench(
    exe: &std::path::Path,
    args: &[String],
    json: &std::path::Path,
) -> Result<report::RunReport, String> {
    let out = std::process::Command::new(exe)
        .args(args)
        .arg(format!("--json={}", json.display()))
        .output()
        .map_err(|e| format!("{}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "db_bench {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = std::fs::read_to_string(json).map_err(|e| format!("{}: {e}", json.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json.display()))
}
