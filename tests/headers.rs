//! The committed C headers must be exactly what build.rs generates from the Rust definitions.

use std::fs;
use std::path::Path;

#[test]
fn committed_headers_match_the_generated_ones() {
    let generated = Path::new(env!("RTD_GENERATED_INCLUDE")).join("rocprof_trace_decoder");
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/rocprof_trace_decoder");
    for name in [
        "rocprof_trace_decoder.h",
        "trace_decoder_types.h",
        "trace_decoder_instrument.h",
    ] {
        let want = fs::read_to_string(generated.join(name)).expect("generated header");
        let have = fs::read_to_string(committed.join(name)).expect("committed header");
        assert!(
            want == have,
            "include/rocprof_trace_decoder/{name} is stale: run `RTD_UPDATE_HEADERS=1 cargo build`"
        );
    }
}
