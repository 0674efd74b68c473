//! Sets the SONAME and generates the three public C headers from the Rust definitions.
//!
//! The headers land in `$OUT_DIR/include/rocprof_trace_decoder/`; `tests/headers.rs` fails when
//! the committed copies in `include/` differ. `RTD_UPDATE_HEADERS=1 cargo build` refreshes them.

use std::path::{Path, PathBuf};
use std::{env, fs};

/// The record payload types of the C API and their C names: every `pub struct` or `pub union` of
/// `src/records.rs` marked `#[doc(alias = "<C name>")]`, the one place the C name is written.
fn record_types(records_rs: &str) -> Vec<(String, String)> {
    let mut types = Vec::new();
    let mut alias = None;
    for line in records_rs.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("#[doc(alias = \"") {
            alias = rest.strip_suffix("\")]").map(str::to_string);
        } else if let Some(c_name) = alias.as_ref() {
            let item = line
                .strip_prefix("pub struct ")
                .or_else(|| line.strip_prefix("pub union "));
            if let Some(item) = item {
                let name = item.split([' ', '{', '<']).next().unwrap().to_string();
                types.push((name, c_name.clone()));
                alias = None;
            } else if !line.starts_with("#[") {
                panic!("#[doc(alias)] in src/records.rs is not on a struct or union: {line}");
            }
        }
    }
    types
}

const RUST_ONLY_CONSTANTS: &[&str] = &[
    "EVENT_FLAG_PER_PIPE",
    "EVENT_FLAG_BOP",
    "RECORD_REQUEST_FLAG_IMMEDIATE",
    "DISPATCH_FLAG_SCALAR_CACHE_INVALIDATE",
    "DISPATCH_FLAG_VECTOR_CACHE_INVALIDATE",
    "DISPATCH_FLAG_IS_CTX_RESTORE",
    "DISPATCH_FLAG_SCRATCH_ENABLED",
    "DISPATCH_FLAG_REALTIME_TS",
];

/// One generated header: its name, the sources cbindgen reads and what it exports.
struct HeaderSpec {
    file: &'static str,
    sources: &'static [&'static str],
    summary: &'static str,
    include_items: Vec<String>,
    exclude_items: Vec<String>,
    includes: Vec<String>,
    extra_text_before: Option<&'static str>,
    trailer: Option<&'static str>,
    function_prefix: Option<&'static str>,
}

/// Drops the Rust-only side of `#[cfg(not(cbindgen))]` fields: cbindgen reads every field and
/// would otherwise see both the packed Rust storage and the C bit-fields.
fn c_view_of(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut skip_next = false;
    for line in source.lines() {
        if skip_next {
            skip_next = false;
            continue;
        }
        if line.trim() == "#[cfg(not(cbindgen))]" {
            skip_next = true;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn generate(
    root: &Path,
    out_dir: &Path,
    spec: &HeaderSpec,
    record_types: &[(String, String)],
) -> PathBuf {
    let mut config = cbindgen::Config::from_file(root.join("cbindgen/common.toml"))
        .expect("cbindgen/common.toml is valid");
    let mut header = format!("/* {} */", spec.summary);
    if let Some(text) = spec.extra_text_before {
        header.push_str("\n\n");
        header.push_str(text.trim_end());
    }
    config.header = Some(header);
    config.trailer = spec.trailer.map(|t| t.to_string());
    config.includes = spec.includes.clone();
    config.export.include = spec.include_items.clone();
    config.export.exclude = spec.exclude_items.clone();
    // Every header names the record types by their C names.
    config.export.rename.extend(record_types.iter().cloned());
    config.function.prefix = spec.function_prefix.map(|p| p.to_string());

    let view_dir = out_dir.join("cbindgen-src");
    fs::create_dir_all(&view_dir).unwrap();
    let mut builder = cbindgen::Builder::new().with_config(config);
    for source in spec.sources {
        let text = fs::read_to_string(root.join(source)).unwrap();
        let view = view_dir.join(source.replace('/', "_"));
        fs::write(&view, c_view_of(&text)).unwrap();
        builder = builder.with_src(view);
    }
    let dir = out_dir.join("include/rocprof_trace_decoder");
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(spec.file);
    builder
        .generate()
        .expect("cbindgen generates the header")
        .write_to_file(&path);
    path
}

fn main() {
    // SONAME of the shared library: consumers link against the 0.3 ABI.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librocprof-trace-decoder.so.0.3");
    println!("cargo:rerun-if-changed=src/records.rs");
    println!("cargo:rerun-if-changed=src/ffi");
    println!("cargo:rerun-if-changed=cbindgen");
    println!("cargo:rerun-if-env-changed=RTD_UPDATE_HEADERS");

    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let owned = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let instrument_unions = include_str!("cbindgen/instrument_unions.h");
    let api_macro = include_str!("cbindgen/api_macro.h");

    let records = record_types(&fs::read_to_string(root.join("src/records.rs")).unwrap());
    let mut types_items: Vec<String> = records.iter().map(|(name, _)| name.clone()).collect();
    let c_enums = fs::read_to_string(root.join("src/ffi/c_enums.rs")).unwrap();
    types_items.extend(
        c_enums
            .lines()
            .filter_map(|l| l.strip_prefix("pub enum "))
            .map(|l| l.trim_end_matches(" {").to_string()),
    );
    let specs = [
        HeaderSpec {
            file: "trace_decoder_types.h",
            sources: &["src/records.rs", "src/ffi/c_enums.rs"],
            summary: "Record payload types and enums of the rocprof-trace-decoder 0.3.0 API.",
            include_items: types_items,
            exclude_items: owned(RUST_ONLY_CONSTANTS),
            includes: vec![],
            extra_text_before: None,
            trailer: None,
            function_prefix: None,
        },
        HeaderSpec {
            file: "trace_decoder_instrument.h",
            sources: &["src/ffi/c_instrument.rs"],
            summary: "Instrumentation words the profiler writes into the trace (rocprof-trace-decoder 0.3.0).",
            include_items: owned(&[
                "rocprof_trace_decoder_packet_opcode_t",
                "rocprof_trace_decoder_agent_info_type_t",
                "rocprof_trace_decoder_codeobj_marker_type_t",
            ]),
            exclude_items: vec![],
            includes: vec![],
            extra_text_before: None,
            trailer: Some(instrument_unions),
            function_prefix: None,
        },
        HeaderSpec {
            file: "rocprof_trace_decoder.h",
            sources: &[
                "src/ffi/types.rs",
                "src/ffi/info.rs",
                "src/ffi/parse.rs",
                "src/ffi/handle.rs",
                "src/ffi/scan.rs",
            ],
            summary: "rocprof-trace-decoder 0.3.0: decodes AMD GPU thread traces (SQTT / ATT) into records.",
            include_items: owned(&["rocprofiler_thread_trace_decoder_status_t"]),
            exclude_items: owned(&["StatusCode", "StatusArg", "InfoArg", "RecordTypeCode", "UserData"]),
            includes: owned(&["trace_decoder_types.h", "trace_decoder_instrument.h"]),
            extra_text_before: Some(api_macro),
            trailer: None,
            function_prefix: Some("ROCPROF_TRACE_DECODER_API"),
        },
    ];
    for spec in &specs {
        let generated = generate(&root, &out_dir, spec, &records);
        if env::var_os("RTD_UPDATE_HEADERS").is_some() {
            let committed = root.join("include/rocprof_trace_decoder").join(spec.file);
            fs::create_dir_all(committed.parent().unwrap()).unwrap();
            fs::copy(&generated, committed).unwrap();
        }
    }
    println!(
        "cargo:rustc-env=RTD_GENERATED_INCLUDE={}",
        out_dir.join("include").display()
    );
}
