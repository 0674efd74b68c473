//! Helpers shared by the fuzz targets: the Rust-written C client of the robustness tests, and
//! the decoding of a fuzz input's leading control bytes.

#[path = "../../tests/common/client.rs"]
pub mod client;

use client::{headers, IsaMode};

/// Splits off the control byte that picks what goes in front of the fuzz bytes: 0 means the
/// input is a whole trace (corpus seeds), any other value one of the known architecture headers.
pub fn with_header(selector: u8, payload: &[u8]) -> Vec<u8> {
    let known = headers();
    let mut trace = Vec::with_capacity(payload.len() + 8);
    if selector != 0 {
        trace.extend_from_slice(&known[usize::from(selector - 1) % known.len()].1);
    }
    trace.extend_from_slice(payload);
    trace
}

/// The ISA behaviour a control byte picks: mostly well-behaved scripts, sometimes faulty ones.
/// (Empty answers, which make every wave walk its full line limit, are left to the tests: they
/// would slow the fuzzer down a hundredfold.)
pub fn isa_mode(control: u8) -> IsaMode {
    match control % 8 {
        0 => IsaMode::Nop,
        1..=4 => IsaMode::Mixed { seed: control },
        5 => IsaMode::Fail(1),
        6 => IsaMode::AlwaysMore {
            size: u64::from(control) << 4,
        },
        _ => IsaMode::Lying {
            size: u64::from(control) << 8,
            memory_size: u64::from(control >> 3),
        },
    }
}
