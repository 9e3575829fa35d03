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
//! With `CAIRN_REWRITE=1` both are rewritten with the actual outputs (review the diff). The
//! harness forgives nothing a rewrite would record: an argument that does not parse, one the
//! case never reads, or a command the closure does not know ([`Case::unknown`]) fails the test
//! whatever the switch. Golden files of on-disk bytes have their own switch
//! ([`check_format_golden`]).
//!
//! Built for the crate's own tests and, with the `test-util` feature, for integration tests.

#![allow(clippy::panic, reason = "a test helper fails its test by panicking")]

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One case.
#[derive(Debug)]
pub struct Case {
    /// The first word of the command line.
    pub command: String,
    /// `key=value` (or bare `key`, with an empty value) words after it.
    args: BTreeMap<String, String>,
    /// The arguments the closure read.
    read: RefCell<BTreeSet<String>>,
    /// Lines between the command and `----`.
    pub input: Vec<String>,
}

/// `text` parsed as `T`, for the values of a case's input lines.
///
/// # Panics
/// When it does not parse: a typo in a test file fails the test instead of reading as 0.
pub fn num<T: std::str::FromStr>(text: &str) -> T {
    text.parse()
        .unwrap_or_else(|_| panic!("{text:?} is not a {}", std::any::type_name::<T>()))
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

/// Whether golden files of on-disk bytes are rewritten (`CAIRN_REWRITE_GOLDEN` set; not
/// `CAIRN_REWRITE`, which rewrites outputs of deciders and reports).
pub fn rewrite_format_goldens() -> bool {
    std::env::var_os("CAIRN_REWRITE_GOLDEN").is_some()
}

/// Compares on-disk bytes (`actual`, as [`hex_lines`]) with the golden `testdata/<file>`,
/// whose first line records the format versions they were written with (`# versions: …`).
/// `CAIRN_REWRITE_GOLDEN` rewrites it only when `versions` differ from the recorded ones: bytes
/// that change while the versions stay are a format change without a version bump, which
/// fails (a reader of the old version is needed, and a new version for the new bytes).
///
/// # Panics
/// When the bytes or the versions differ (and may not be rewritten), or on I/O errors.
pub fn check_format_golden(file: &str, versions: &str, actual: &str) {
    let path = testdata(file);
    let golden = std::fs::read_to_string(&path).unwrap_or_default();
    let (recorded, body) = match golden.split_once('\n') {
        Some((first, rest)) if first.starts_with("# versions: ") => (&first["# versions: ".len()..], rest),
        _ => ("", golden.as_str()),
    };
    if recorded == versions && body == actual {
        return;
    }
    if rewrite_format_goldens() {
        assert!(
            recorded != versions,
            "{}: the bytes changed but the format versions did not ({versions}): bump the version of the \
             structure that changed, and keep a reader for the old one",
            path.display()
        );
        std::fs::write(&path, format!("# versions: {versions}\n{actual}"))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    panic!(
        "{} differs (recorded versions: {recorded:?}, now: {versions:?}); a format change needs a version bump, \
         then CAIRN_REWRITE_GOLDEN=1:\n--- golden\n{body}\n--- actual\n{actual}",
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
    /// Argument `key` parsed as `T`, or `default` when absent.
    ///
    /// # Panics
    /// When it is present and does not parse.
    pub fn arg<T: std::str::FromStr>(&self, key: &str, default: T) -> T {
        match self.get(key) {
            None => default,
            Some(v) => v
                .parse()
                .unwrap_or_else(|_| panic!("{}: argument {key}={v:?} does not parse", self.command)),
        }
    }

    /// Argument `key` as written, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.read.borrow_mut().insert(key.to_string());
        self.args.get(key).map(String::as_str)
    }

    /// Argument `key`, which the command needs.
    ///
    /// # Panics
    /// When it is absent.
    pub fn required(&self, key: &str) -> &str {
        self.get(key)
            .unwrap_or_else(|| panic!("{}: argument {key} is required", self.command))
    }

    /// Every argument's name, in order (each counts as read).
    pub fn arg_names(&self) -> Vec<String> {
        let names: Vec<String> = self.args.keys().cloned().collect();
        self.read.borrow_mut().extend(names.iter().cloned());
        names
    }

    /// Whether argument `key` is present (a bare flag).
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Fails the test: the closure does not know this command.
    ///
    /// # Panics
    /// Always.
    pub fn unknown(&self) -> ! {
        panic!("unknown command {:?}", self.command)
    }

    /// The arguments given that the closure never read.
    fn unread(&self) -> Vec<&str> {
        let read = self.read.borrow();
        self.args
            .keys()
            .filter(|k| !read.contains(*k))
            .map(String::as_str)
            .collect()
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
        let case = Case {
            command,
            args,
            read: RefCell::default(),
            input,
        };
        let mut actual = run(&case);
        let unread = case.unread();
        assert!(
            unread.is_empty(),
            "{}: {line}: arguments never read: {unread:?}",
            path.display()
        );
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
