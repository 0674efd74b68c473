//! The committed C header of the PMA decoder must be what cbindgen generates from the sources.
//! Run with `PMA_HEADER_BLESS=1` to rewrite it after changing the API.

use std::path::Path;

const HEADER: &str = "include/rocprof_trace_decoder/nv_pma_decoder.h";

fn generate() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen/nv_pma_decoder.toml"))
        .expect("cbindgen/nv_pma_decoder.toml is a valid cbindgen configuration");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/pma/mod.rs"))
        .with_src(root.join("src/ffi/pma.rs"))
        .generate()
        .expect("cbindgen generates the PMA header");
    let mut text = Vec::new();
    bindings.write(&mut text);
    String::from_utf8(text).expect("cbindgen writes UTF-8")
}

#[test]
fn committed_header_matches_the_sources() {
    let generated = generate();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(HEADER);
    if std::env::var_os("PMA_HEADER_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("header is writable");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{HEADER} is stale: regenerate it with PMA_HEADER_BLESS=1 cargo test --test pma_header"
    );
}
