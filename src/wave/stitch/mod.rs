//! PC reconstruction ("stitching", SQTT_FORMAT §3.6 with ERRATA G2, G3, G6, G7, G9).
//!
//! The trace gives each instruction a category but no address. Starting from the PCs the trace
//! pins (wave start, NEW_PC), the walk follows the code in execution order and gives each record
//! the address of the first line whose text class matches it. The rules are in
//! docs/timing/stitch.md.
//!
//! * `line`: what a line's text says, classified once, and what it accepts under the rules.
//! * `cache`: the thread's lines across parse calls, asked for again once per call, and the
//!   links between consecutive lines.
//! * `walk`: the reference walk, every rule record by record ([`SharedStitch::stitch`]).
//! * `fast`: the walk's common steps (plain matches, token-less lines, plain misses, IMMED
//!   absorptions and their cancellations) taken without the full rules, and over linked lines
//!   without a query; they place every record as the reference walk does
//!   (`tests/fast_paths.rs` compares the two on random code).

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

/// The stitching rules not every architecture has, each named after what it does
/// (docs/timing/stitch.md, docs/timing/gfx9.md S4–S6); [`StitchRules::rdna`] and
/// [`StitchRules::GFX9`] say which apply where.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StitchRules {
    /// A VALU record matched to a `v_mov_b64*` line lasts at least `stall + 2` cycles (the move
    /// issues twice; gfx12).
    pub v_mov_b64_issues_twice: bool,
    /// A first record without a pinned PC is looked for at the null PC instead of ending the
    /// walk (gfx12).
    pub first_record_at_null_pc: bool,
    /// An `s_barrier_wait` line may have produced no token: the walk tests for it and reports
    /// the token-less lines (gfx12 header bit 59). Implies `tokenless_marks_hold`.
    pub find_tokenless_barrier_waits: bool,
    /// An `s_barrier_wait` line found token-less earlier in the parse call matches no record,
    /// also where `find_tokenless_barrier_waits` is off (gfx12).
    pub tokenless_marks_hold: bool,
    /// An IMMED record is absorbed by a VMEM, FLAT, LDS or VALU line, and an `s_waitcnt` line
    /// met after an absorption cancels one and takes the record at hand (RDNA, ERRATA G3).
    pub absorb_immediates: bool,
    /// An `s_barrier` line takes the barrier's IMMED record, or its MESSAGE record and the
    /// IMMED after it (gfx9).
    pub barrier_takes_message_and_immed: bool,
    /// A VALU record at a `v_mfma_scale*` line is moved earlier and stretched for its scale
    /// load (gfx9, docs/timing/gfx9.md S5).
    pub mfma_scale_loads_early: bool,
    /// Two adjacent records that match the next two lines in swapped order are swapped back
    /// (gfx9).
    pub swap_overtaken_records: bool,
}

impl StitchRules {
    /// gfx9: no immediate absorption; the barrier, MFMA-scale and swap rules.
    pub const GFX9: StitchRules = StitchRules {
        v_mov_b64_issues_twice: false,
        first_record_at_null_pc: false,
        find_tokenless_barrier_waits: false,
        tokenless_marks_hold: false,
        absorb_immediates: false,
        barrier_takes_message_and_immed: true,
        mfma_scale_loads_early: true,
        swap_overtaken_records: true,
    };

    /// RDNA, with gfx12's line rules if `gfx12`. Whether `s_barrier_wait` lines may be
    /// token-less is the trace header's (`find_tokenless_barrier_waits`, set per SE buffer).
    pub const fn rdna(gfx12: bool) -> StitchRules {
        StitchRules {
            v_mov_b64_issues_twice: gfx12,
            first_record_at_null_pc: gfx12,
            find_tokenless_barrier_waits: false,
            tokenless_marks_hold: gfx12,
            absorb_immediates: true,
            barrier_takes_message_and_immed: false,
            mfma_scale_loads_early: false,
            swap_overtaken_records: false,
        }
    }

    /// Whether the walk looks at `s_barrier_wait` lines (their token-less marks).
    const fn barrier_waits_matter(&self) -> bool {
        self.find_tokenless_barrier_waits || self.tokenless_marks_hold
    }
}

/// Begin and end time of the wave being stitched (the MFMA-scale adjustment's bounds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaveSpan {
    pub begin: i64,
    pub end: i64,
}
