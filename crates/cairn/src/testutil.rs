//! Data-driven tests (docs/design.md §6): a text file of cases
//!
//! ```text
//! # comment
//! command arg=value ...
//! input line
//! ----
//! expected output
//! (blank line)
//! ```
//! run through a closure `(command, args, input) -> output`, and golden files compared whole.
//! With `CAIRN_REWRITE=1` both are rewritten with the actual outputs (review the diff; for a
//! golden on-disk format, only with a format version bump).
//!
//! Built for the crate's own tests and, with the `test-util` feature, for integration tests.

#![allow(clippy::panic, reason = "a test helper fails its test by panicking")]

use std::collections::BTreeMap;
use std::path::Path;

/// One case.
#[derive(Debug)]
pub struct Case {
    /// The first word of the command line.
    pub command: String,
    /// `key=value` (or bare `key`, with an empty value) words after it.
    pub args: BTreeMap<String, String>,
    /// Lines between the command and `----`.
    pub input: Vec<String>,
}

/// Whether golden files are rewritten (`CAIRN_REWRITE` set).
pub fn rewrite() -> bool {
    std::env::var_os("CAIRN_REWRITE").is_some()
}

/// The path of `testdata/<file>`.
pub fn testdata(file: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(file)
}

/// Compares `actual` with the golden file `testdata/<file>` (rewritten under `CAIRN_REWRITE`).
///
/// # Panics
/// When they differ, or the file cannot be read or written.
pub fn check_golden(file: &str, actual: &str) {
    let path = testdata(file);
    if rewrite() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        golden == actual,
        "{} differs from the golden file:\n--- golden\n{golden}\n--- actual\n{actual}",
        path.display()
    );
}

/// `bytes` as lowercase hex, 32 bytes a line (the form of binary golden files).
pub fn hex_lines(bytes: &[u8]) -> String {
    bytes
        .chunks(32)
        .map(|c| c.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
        .collect()
}

impl Case {
    /// Argument `key` parsed as `T`, or `default`.
    pub fn arg<T: std::str::FromStr>(&self, key: &str, default: T) -> T {
        self.args.get(key).and_then(|v| v.parse().ok()).unwrap_or(default)
    }
}

/// Runs every case of `testdata/<file>` through `run`, comparing outputs.
///
/// # Panics
/// When an output differs (all differences are listed), or the file cannot be read.
pub fn run_file(file: &str, mut run: impl FnMut(&Case) -> String) {
    let path = testdata(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rewrite = rewrite();
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    let mut failures = Vec::new();
    while let Some(line) = lines.next() {
        if line.trim().is_empty() || line.starts_with('#') {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let mut parts = line.split_whitespace();
        let command = parts.next().unwrap_or_default().to_string();
        let args = parts
            .map(|p| match p.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (p.to_string(), String::new()),
            })
            .collect();
        out.push_str(line);
        out.push('\n');
        let mut input = Vec::new();
        for l in lines.by_ref() {
            if l == "----" {
                break;
            }
            out.push_str(l);
            out.push('\n');
            input.push(l.to_string());
        }
        let mut expected = String::new();
        while let Some(l) = lines.peek() {
            if l.is_empty() {
                break;
            }
            expected.push_str(l);
            expected.push('\n');
            lines.next();
        }
        let case = Case { command, args, input };
        let mut actual = run(&case);
        if !actual.ends_with('\n') {
            actual.push('\n');
        }
        out.push_str("----\n");
        out.push_str(&actual);
        if actual != expected {
            failures.push(format!("{line}\nexpected:\n{expected}actual:\n{actual}"));
        }
    }
    if rewrite {
        std::fs::write(&path, out).unwrap_or_else(|e| panic!("{e}"));
    } else if !failures.is_empty() {
        panic!(
            "{}: {} case(s) differ:\n{}",
            path.display(),
            failures.len(),
            failures.join("\n")
        );
    }
}
