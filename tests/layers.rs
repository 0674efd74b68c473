//! The crate's modules form layers and depend only downwards (CONTRIBUTING.md, "Layout"):
//! a module may use modules of lower layers and its own submodules, never one of its own layer
//! or above. This test reads every `crate::` path in `src/` and fails on the first that climbs.

use std::fs;
use std::path::{Path, PathBuf};

/// Top to bottom. Modules on one line are peers and may not use each other.
const LAYERS: &[&[&str]] = &[
    &["ffi", "api"],
    &["decode", "scan"],
    &["arch"],
    &["wave"],
    // Test support (`cfg(test)` or the `internals` feature): an ISA listing for the tests above.
    &["testing"],
    &["isa", "pma"],
    &["sink"],
    &["records"],
    &["stream", "spare"],
    &["error"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|peers| peers.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None` for lib.rs).
fn owner(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib").then(|| name.to_owned())
}

/// The top-level modules named by `crate::x` paths in `text`.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push((number + 1, name));
            }
            rest = after;
        }
    }
    found
}

#[test]
fn modules_depend_only_on_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut checked = 0;
    let mut climbing = Vec::new();
    for file in &files {
        let Some(module) = owner(&src, file) else {
            continue;
        };
        let Some(own_layer) = layer_of(&module) else {
            climbing.push(format!(
                "{}: module `{module}` is in no layer",
                file.display()
            ));
            continue;
        };
        let text = fs::read_to_string(file).expect("source is readable");
        for (line, used) in crate_paths(&text) {
            checked += 1;
            if used == module {
                continue;
            }
            match layer_of(&used) {
                Some(layer) if layer > own_layer => {}
                _ => climbing.push(format!(
                    "{}:{line}: `{module}` uses `crate::{used}`",
                    file.display()
                )),
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} crate:: paths found under src/"
    );
    assert!(
        climbing.is_empty(),
        "dependencies that do not point down:\n{}",
        climbing.join("\n")
    );
}

#[test]
fn the_checker_sees_an_upward_use() {
    let paths = crate_paths("use crate::decode::Session; // crate::ffi in a comment\n");
    assert_eq!(paths, vec![(1, "decode".to_owned())]);
    assert!(layer_of("decode") < layer_of("arch"));
}
