//! Where the corpus is: `$RTD_SHARED/corpus`, by default `../shared/corpus` beside the
//! repository. A test that needs it (or an installed disassembler, see [`missing`]) fails,
//! naming what is missing, unless `RTD_ALLOW_MISSING=1` is set: then it says so and passes
//! without testing, which only a machine without the shared data should ever do.

#![allow(dead_code)]

use std::path::PathBuf;

/// The one opt-out for every test that needs data or tools from outside the repository.
pub const ALLOW_MISSING: &str = "RTD_ALLOW_MISSING";

/// The corpus folder, or `None` when it is absent and [`ALLOW_MISSING`] allows that.
pub fn corpus() -> Option<PathBuf> {
    let shared = std::env::var_os("RTD_SHARED").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"),
        PathBuf::from,
    );
    let dir = shared.join("corpus");
    if dir.is_dir() {
        Some(dir)
    } else {
        missing(&format!("the corpus folder {}", dir.display()))
    }
}

/// A test cannot run because `what` is not on this machine: fails, unless [`ALLOW_MISSING`] is
/// set to 1, when it returns `None` after saying what was skipped.
pub fn missing<T>(what: &str) -> Option<T> {
    if std::env::var(ALLOW_MISSING).is_ok_and(|v| v == "1") {
        eprintln!("skipped ({ALLOW_MISSING}=1): {what} is missing");
        None
    } else {
        panic!("{what} is missing (set {ALLOW_MISSING}=1 to skip the tests that need it)");
    }
}

/// Reads a golden file, gzipped (`.json.gz`, through the system's `gzip`) or not.
pub fn read_golden(path: &std::path::Path) -> Vec<u8> {
    if path.extension().is_some_and(|e| e == "gz") {
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(path)
            .output()
            .unwrap_or_else(|e| panic!("gzip -dc {}: {e}", path.display()));
        assert!(out.status.success(), "gzip -dc {} failed", path.display());
        out.stdout
    } else {
        std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// The cases `tests/known_differences.txt` lists for `check` (`real`, `vnop`, `single`,
/// `damaged`, `mode1`): those still known to differ from the reference.
pub fn known_differences(check: &str) -> std::collections::HashSet<String> {
    let list = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/known_differences.txt");
    std::fs::read_to_string(&list)
        .unwrap_or_else(|e| panic!("{}: {e}", list.display()))
        .lines()
        .filter_map(|line| {
            let mut words = line.split('#').next()?.split_whitespace();
            (words.next()? == check).then(|| words.collect::<Vec<_>>().join(" "))
        })
        .collect()
}

/// Holds the examples compared by one check to the known-differences list: `differing` are the
/// examples that did not match. Panics naming every unlisted difference and every listed example
/// that now matches.
pub fn hold_to_known_differences(check: &str, compared: &[String], differing: &[String]) {
    let known = known_differences(check);
    let mut wrong: Vec<String> = differing
        .iter()
        .filter(|example| !known.contains(example.split(' ').next().unwrap_or_default()))
        .map(|example| format!("differs: {example}"))
        .collect();
    for example in compared {
        let listed = known.contains(example);
        let differs = differing
            .iter()
            .any(|d| d.split(' ').next() == Some(example));
        if listed && !differs {
            wrong.push(format!(
                "matches now (take it off the list): {check} {example}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{check}: {} cases against tests/known_differences.txt:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
