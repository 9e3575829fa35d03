//! Data-driven tests (DESIGN §9): a text file of cases
//!
//! ```text
//! # comment
//! command arg=value ...
//! input line
//! ----
//! expected output
//! (blank line)
//! ```
//! run through a closure `(command, args, input) -> output`. With `CAIRN_REWRITE=1` the file is
//! rewritten with the actual outputs (review the diff).

use std::collections::BTreeMap;
use std::path::Path;

/// One case.
pub struct Case {
    pub command: String,
    pub args: BTreeMap<String, String>,
    pub input: Vec<String>,
}

impl Case {
    /// Argument `key` parsed as `T`, or `default`.
    pub fn arg<T: std::str::FromStr>(&self, key: &str, default: T) -> T {
        self.args.get(key).and_then(|v| v.parse().ok()).unwrap_or(default)
    }
}

/// Runs every case of `testdata/<file>` through `run`, comparing outputs.
pub fn run_file(file: &str, mut run: impl FnMut(&Case) -> String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rewrite = std::env::var_os("CAIRN_REWRITE").is_some();
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
