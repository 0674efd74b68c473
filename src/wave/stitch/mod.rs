//! PC reconstruction ("stitching", SQTT_FORMAT §3.6 with ERRATA G2, G3, G6, G7, G9).
//!
//! The trace gives each instruction a category but no address. Starting from the PCs the trace
//! pins (wave start, NEW_PC), the walk follows the code in execution order and gives each record
//! the address of the first line whose text class matches it.

mod cache;
mod fast;
mod line;
mod walk;

#[cfg(test)]
mod tests;

pub use cache::SharedStitch;

/// Consecutive mismatching lines after which a wave's walk gives up.
const MAX_FAILURES: u32 = 1000;
/// Consecutive lines visited without placing a record (skipped lines included) after which the
/// walk gives up: bounds the work an ISA provider answering for every address can cause.
const MAX_LINES_WITHOUT_PROGRESS: u32 = 100_000;

/// Architecture-specific matching rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StitchRules {
    /// gfx12: `v_mov_b64` lines stretch their VALU record.
    pub gfx12: bool,
    /// gfx12 header bit 59: `s_barrier_wait` may have produced no token.
    pub exclude_barrier_wait: bool,
    /// RDNA rescue rules: IMMED records absorbed by memory/VALU lines, an `s_waitcnt` line
    /// cancelling one absorption and taking the record at hand.
    pub rdna_rescue: bool,
    /// gfx9: `s_barrier` and `v_mfma_scale_*` lines have their own rules, and two adjacent
    /// records that match in swapped order are swapped.
    pub gfx9: bool,
}

/// Begin and end time of the wave being stitched (the MFMA-scale adjustment's bounds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaveSpan {
    pub begin: i64,
    pub end: i64,
}
