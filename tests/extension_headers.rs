//! The committed C headers of the extras beyond the 0.3.0 API (PMA decoding, built-in
//! disassembly) must be what cbindgen generates from the sources. Run with
//! `EXTENSION_HEADERS_BLESS=1` to rewrite them after changing an API.

use std::path::Path;

/// Checks one header: its path, its cbindgen configuration and the sources it is generated from.
fn check(header: &str, config: &str, sources: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join(config))
        .unwrap_or_else(|e| panic!("{config} is not a valid cbindgen configuration: {e}"));
    let builder = sources.iter().fold(
        cbindgen::Builder::new().with_config(config),
        |builder, source| builder.with_src(root.join(source)),
    );
    let mut generated = Vec::new();
    builder
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen cannot generate {header}: {e}"))
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("cbindgen writes UTF-8");
    let path = root.join(header);
    if std::env::var_os("EXTENSION_HEADERS_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("header is writable");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{header} is stale: regenerate it with EXTENSION_HEADERS_BLESS=1 cargo test --test extension_headers"
    );
}

#[test]
fn pma_header_matches_the_sources() {
    check(
        "include/rocprof_trace_decoder/nv_pma_decoder.h",
        "cbindgen/nv_pma_decoder.toml",
        &["src/pma/mod.rs", "src/ffi/pma.rs"],
    );
}

#[test]
fn disasm_header_matches_the_sources() {
    check(
        "include/rocprof_trace_decoder/rocprof_trace_decoder_disasm.h",
        "cbindgen/rocprof_trace_decoder_disasm.toml",
        &["src/ffi/disasm.rs"],
    );
}
