//! Declarative token and instruction tables for the RDNA nibble stream (SQTT_FORMAT §1.3, §3.1).
//!
//! Each architecture lists rows; later rows (and later layers) override earlier ones. The rows are
//! folded at compile time into 256-entry lookups: token type by the low 8 bits of the window,
//! instruction effect by the INST id.

use crate::records::Category;

/// RDNA token types (names follow the reference where it has them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TokenKind {
    // The kinds the walk itself handles come first: one range test separates them from the kinds
    // handed to the token handler.
    Nop,
    Time,
    Timestamp,
    NewPc,
    /// An unassigned slot: consumed as 8 bits without time, never looped on.
    Unknown,
    Reg,
    ImmOne,
    Inst,
    ValuInst,
    AluExec,
    VmemExec,
    Immediate,
    WaveReady,
    WaveAlloc,
    WaveEnd,
    WaveStart,
    WaveStartExt,
    ShaderData,
    ShaderDataShort,
    Header,
    UtilCounter,
    Misc,
    /// The walk's own, in the gfx12 table read after a WAVE_START_EXT ([`extension_tokens`]):
    /// a byte that ends the extension bytes, read again with the main table. (Its place keeps
    /// the numbers the gfx10/11 walk tests by range.)
    ExtensionEnd,
    RegInit,
    Event,
    EventSync,
    ExecPopcount1,
    ExecPopcount3,
    /// MI400 only (time only).
    LdsConfig,
    MediumTime,
}

impl TokenKind {
    pub const COUNT: usize = TokenKind::MediumTime as usize + 1;
}

/// One table row: tokens whose low `plen` bits equal `pattern` are `bits` long and carry their
/// time delta in bits `[delta_lo, delta_hi)` of the raw token (empty range: no delta).
#[derive(Clone, Copy, Debug)]
pub struct TokenRow {
    pub kind: TokenKind,
    pub pattern: u8,
    pub plen: u8,
    pub bits: u8,
    pub delta_lo: u8,
    pub delta_hi: u8,
}

/// A table row. A token's delta field is at most 16 bits wide: that bounds what the RDNA walk's
/// deltas add up to in a buffer (`arch::rdna::clock_wrap_nibbles`).
pub const fn token(kind: TokenKind, pattern: u8, plen: u8, bits: u8, delta: (u8, u8)) -> TokenRow {
    assert!(delta.0 <= delta.1 && delta.1 - delta.0 <= 16);
    TokenRow {
        kind,
        pattern,
        plen,
        bits,
        delta_lo: delta.0,
        delta_hi: delta.1,
    }
}

pub const NO_DELTA: (u8, u8) = (0, 0);

/// What the lookup says about a window (8 bytes: one load per token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct TokenSlot {
    pub kind: TokenKind,
    pub bits: u8,
    pub delta_shift: u8,
    pub delta_mask: u16,
    /// Where the nibble after the token starts in its window (the token's length in bits) when
    /// that is inside the window, else 0: a token's first nibble is never zero (a zero nibble
    /// is a NOP, `walk_token_shapes`), so the test for padding after it
    /// ([`Self::padding_follows`]) then fails.
    pub padding_shift: u8,
}

impl TokenSlot {
    const UNKNOWN: TokenSlot = TokenSlot {
        kind: TokenKind::Unknown,
        bits: 8,
        delta_shift: 0,
        delta_mask: 0,
        padding_shift: 8,
    };

    /// The same length and time-delta field as `other`.
    pub const fn same_shape(&self, other: &TokenSlot) -> bool {
        self.bits == other.bits
            && self.delta_shift == other.delta_shift
            && self.delta_mask == other.delta_mask
    }

    /// The token's length in nibbles.
    #[inline]
    pub fn nibbles(&self) -> usize {
        usize::from(self.bits / 4)
    }

    /// The nibble after the token (whose first 64 bits are `window`) is zero: padding.
    #[inline(always)]
    pub fn padding_follows(&self, window: u64) -> bool {
        (window >> self.padding_shift) & 0xF == 0
    }

    /// The token's time delta, read from the raw window.
    #[inline]
    pub fn delta(&self, window: u64) -> u64 {
        (window >> self.delta_shift) & u64::from(self.delta_mask)
    }
}

pub type TokenTable = [TokenSlot; 256];

/// Each kind's shape (length and delta field); `None` for kinds the table does not hold.
pub type TokenShapes = [Option<TokenSlot>; TokenKind::COUNT];

/// The shape of each kind in `table`. Every slot of a kind has the same ([`build_tokens`]).
pub const fn token_shapes(table: &TokenTable) -> TokenShapes {
    let mut shapes: TokenShapes = [None; TokenKind::COUNT];
    let mut i = 0;
    while i < 256 {
        let slot = table[i];
        // The RDNA walk reads each token from one 64-bit window; only NEW_PC reads on.
        assert!(slot.bits <= 64 || matches!(slot.kind, TokenKind::NewPc));
        let k = slot.kind as usize;
        match shapes[k] {
            None => shapes[k] = Some(slot),
            Some(shape) => assert!(shape.same_shape(&slot)),
        }
        i += 1;
    }
    shapes
}

/// [`token_shapes`] of a table the RDNA walk reads, which checks that a zero nibble is a 4-bit
/// NOP there: the walk takes one after a token without a table load (`walk::take_padding`).
pub const fn walk_token_shapes(table: &TokenTable) -> TokenShapes {
    let mut i = 0;
    while i < 256 {
        let slot = table[i];
        assert!(i & 0xF != 0 || (matches!(slot.kind, TokenKind::Nop) && slot.bits == 4));
        i += 1;
    }
    token_shapes(table)
}

/// The bytes of one kind's tokens, told by a mask and value on a token's first byte, so that a
/// test on the window needs no table load.
#[derive(Clone, Copy, Debug)]
pub struct KindPattern {
    mask: u8,
    value: u8,
    /// The kind's shape.
    pub slot: TokenSlot,
}

impl KindPattern {
    /// The pattern of `kind` in `table`: a mask and value of the first byte that hold for
    /// exactly the kind's slots. A kind without one, or without one shape, fails the build.
    pub const fn of(table: &TokenTable, kind: TokenKind) -> KindPattern {
        Self::of_kinds(table, &[kind])
    }

    /// The pattern of the slots of any of `kinds`, which share one shape.
    pub const fn of_kinds(table: &TokenTable, kinds: &[TokenKind]) -> KindPattern {
        const fn is_one_of(kind: TokenKind, kinds: &[TokenKind]) -> bool {
            let mut k = 0;
            while k < kinds.len() {
                if kinds[k] as u8 == kind as u8 {
                    return true;
                }
                k += 1;
            }
            false
        }
        let shapes = token_shapes(table);
        let Some(slot) = shapes[kinds[0] as usize] else {
            panic!("a kind without one shape has no pattern")
        };
        let mut k = 1;
        while k < kinds.len() {
            match shapes[kinds[k] as usize] {
                Some(other) => assert!(other.same_shape(&slot)),
                None => panic!("a kind without one shape has no pattern"),
            }
            k += 1;
        }
        let mut first = 0;
        while first < 256 && !is_one_of(table[first].kind, kinds) {
            first += 1;
        }
        let mut mask = 1u32;
        while mask < 256 {
            let (mask8, value) = (mask as u8, first as u8 & mask as u8);
            let mut exact = true;
            let mut i = 0;
            while i < 256 {
                exact &= ((i as u8 & mask8) == value) == is_one_of(table[i].kind, kinds);
                i += 1;
            }
            if exact {
                return KindPattern {
                    mask: mask8,
                    value,
                    slot,
                };
            }
            mask += 1;
        }
        panic!("the kinds' slots are not one bit pattern of the first byte")
    }

    #[inline(always)]
    pub fn matches(&self, window: u64) -> bool {
        window & u64::from(self.mask) == u64::from(self.value)
    }
}

/// The kinds most gfx10/11 tokens are, which the walk tells by pattern before its table load;
/// and the instruction tokens (VALU_INST, INST) and execution reports (ALU_EXEC, VMEM_EXEC)
/// after them, which the gfx12 walk takes together (`RdnaDecoder::take_instructions`).
#[derive(Clone, Copy, Debug)]
pub struct FrequentKinds {
    pub reg: KindPattern,
    pub time: KindPattern,
    pub misc: KindPattern,
    pub exec: KindPattern,
    pub valu: KindPattern,
    pub inst: KindPattern,
}

impl FrequentKinds {
    pub const fn of(table: &TokenTable) -> FrequentKinds {
        FrequentKinds {
            reg: KindPattern::of(table, TokenKind::Reg),
            time: KindPattern::of(table, TokenKind::Time),
            misc: KindPattern::of(table, TokenKind::Misc),
            exec: KindPattern::of_kinds(table, &[TokenKind::AluExec, TokenKind::VmemExec]),
            valu: KindPattern::of(table, TokenKind::ValuInst),
            inst: KindPattern::of(table, TokenKind::Inst),
        }
    }
}

/// Folds row layers into the lookup: every index whose low `plen` bits match gets the row's
/// kind; every index of a kind gets the shape of the kind's last row. A newer layer's row for a
/// kind with a longer pattern so leaves the older row's other bytes to the kind, in the new
/// shape, as the reference's lookup does (rdna.md §1).
pub const fn build_tokens(layers: &[&[TokenRow]]) -> TokenTable {
    let mut table = [TokenSlot::UNKNOWN; 256];
    let mut l = 0;
    while l < layers.len() {
        let rows = layers[l];
        let mut r = 0;
        while r < rows.len() {
            let row = rows[r];
            let mut i = row.pattern as usize;
            while i < 256 {
                table[i].kind = row.kind;
                i += 1 << row.plen;
            }
            let shape = TokenSlot {
                kind: row.kind,
                bits: row.bits,
                delta_shift: row.delta_lo,
                delta_mask: ((1u32 << (row.delta_hi - row.delta_lo)) - 1) as u16,
                padding_shift: if row.bits < 64 { row.bits } else { 0 },
            };
            let mut i = 0;
            while i < 256 {
                if table[i].kind as usize == row.kind as usize {
                    table[i] = shape;
                }
                i += 1;
            }
            r += 1;
        }
        l += 1;
    }
    table
}

/// The table the gfx12 walk reads after a WAVE_START_EXT, from the main `table`: a byte with
/// bit 0 set is an extension byte, skipped as 8 bits without time (an [`TokenKind::Unknown`]
/// slot); padding is read as ever and leaves the walk in this table; any other byte ends the
/// extension ([`TokenKind::ExtensionEnd`]) and is read again with the main table. Kept apart,
/// the extension state costs the other tokens no test.
pub const fn extension_tokens(table: &TokenTable) -> TokenTable {
    let end = TokenSlot {
        kind: TokenKind::ExtensionEnd,
        bits: 0,
        delta_shift: 0,
        delta_mask: 0,
        padding_shift: 0,
    };
    let mut after = [end; 256];
    let mut i = 0;
    while i < 256 {
        if i & 1 != 0 {
            after[i] = TokenSlot::UNKNOWN;
        } else if matches!(table[i].kind, TokenKind::Nop) {
            after[i] = table[i];
        }
        i += 1;
    }
    after
}

/// What an INST id does to the traced wave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstEffect {
    /// Unlisted id: only the time advances.
    Ignore,
    /// An instruction of the wave with this category.
    Wave(Category),
    /// An immediate-class instruction (barrier); timed like IMM_ONE.
    Immed,
    /// s_setpc / s_swappc / s_call: a SALU instruction after which NEW_PC pins the next PC.
    Jump,
    /// Trap entry: recording stops until the return from trap.
    Trap,
    /// Return from trap: recording resumes with a new PC slot.
    ReturnFromTrap,
    /// An instruction of another SIMD of the same WGP: an INST_OTHER_SIMD record.
    OtherSimd(Category),
}

/// How an INST id's cycle count scales with the header's DP rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CycleScale {
    One,
    DpRate,
    DpRateDerate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstInfo {
    pub effect: InstEffect,
    pub cycles: u8,
    pub scale: CycleScale,
}

impl InstInfo {
    const IGNORE: InstInfo = InstInfo {
        effect: InstEffect::Ignore,
        cycles: 0,
        scale: CycleScale::One,
    };
}

/// Ids `first..=last` have `effect`; the cycle count starts at `cycles` and grows by `step` per id.
#[derive(Clone, Copy, Debug)]
pub struct InstRow {
    pub first: u8,
    pub last: u8,
    pub effect: InstEffect,
    pub cycles: u8,
    pub step: u8,
    pub scale: CycleScale,
}

/// Ids `first..=last`, all with the same cycle count.
pub const fn ids(first: u8, last: u8, effect: InstEffect, cycles: u8) -> InstRow {
    InstRow {
        first,
        last,
        effect,
        cycles,
        step: 0,
        scale: CycleScale::One,
    }
}

/// Ids `first..=last` whose cycle count is `cycles` for `first` and one more per id.
pub const fn counting(first: u8, last: u8, effect: InstEffect, cycles: u8) -> InstRow {
    InstRow {
        first,
        last,
        effect,
        cycles,
        step: 1,
        scale: CycleScale::One,
    }
}

/// One id whose cycle count is scaled by the DP rate.
pub const fn scaled(id: u8, effect: InstEffect, cycles: u8, scale: CycleScale) -> InstRow {
    InstRow {
        first: id,
        last: id,
        effect,
        cycles,
        step: 0,
        scale,
    }
}

pub type InstTable = [InstInfo; 256];

pub const fn build_insts(layers: &[&[InstRow]]) -> InstTable {
    let mut table = [InstInfo::IGNORE; 256];
    let mut l = 0;
    while l < layers.len() {
        let rows = layers[l];
        let mut r = 0;
        while r < rows.len() {
            let row = rows[r];
            let mut id = row.first as usize;
            while id <= row.last as usize {
                let cycles = row.cycles + row.step * (id - row.first as usize) as u8;
                table[id] = InstInfo {
                    effect: row.effect,
                    cycles,
                    scale: row.scale,
                };
                id += 1;
            }
            r += 1;
        }
        l += 1;
    }
    table
}

/// A bit field `[lo, lo + width)` of a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub lo: u8,
    pub width: u8,
}

pub const fn bits(lo: u8, width: u8) -> Field {
    Field { lo, width }
}

impl Field {
    /// `value` at the field's place in a token, for encoders (the value must fit the field).
    pub const fn place(self, value: u64) -> u64 {
        let mask = if self.width >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        };
        (value & mask) << self.lo
    }

    #[inline]
    pub fn get(self, window: u64) -> u64 {
        let v = window >> self.lo;
        if self.width >= 64 {
            v
        } else {
            v & ((1u64 << self.width) - 1)
        }
    }
}

/// Where a token names its wave's unit.
#[derive(Clone, Copy, Debug)]
pub struct UnitFields {
    pub sa: Field,
    pub simd: Field,
    pub wgp: Field,
    pub wave: Field,
}

impl UnitFields {
    /// The fields of a unit: sa (1 bit), simd (2) and wgp (at most 4) next to each other from
    /// the low bit up, as every RDNA token has them, so that a location is read from the token
    /// as two bit ranges (`rdna::slots::location_of`); a slot of 5 bits.
    pub const fn new(sa: Field, simd: Field, wgp: Field, wave: Field) -> Self {
        assert!(sa.width == 1 && simd.width == 2 && wgp.width <= 4 && wave.width == 5);
        assert!(simd.lo == sa.lo + 1 && wgp.lo == simd.lo + 2);
        UnitFields {
            sa,
            simd,
            wgp,
            wave,
        }
    }

    /// The bits of the unit (sa, simd, wgp) from `sa.lo` on.
    #[inline(always)]
    pub const fn unit_mask(&self) -> u64 {
        (1 << (3 + self.wgp.width)) - 1
    }
}

/// How TIMESTAMP tokens encode long deltas and realtime samples.
#[derive(Clone, Copy, Debug)]
pub enum TimestampFields {
    /// gfx10: kind 1 = long delta, kind 2 = realtime sample.
    Kind { kind: Field, value: Field },
    /// gfx11/12: `rt == 0` long delta (`pl` = packets lost), `rt && !pl` realtime sample.
    Flags {
        packet_lost: Field,
        realtime: Field,
        value: Field,
    },
}

impl TimestampFields {
    /// The delta of a TIMESTAMP that only advances the shader clock (no realtime sample, no
    /// packet loss) by less than [`Self::inline_delta_limit`], the common kind, which the walk
    /// takes; `None` for the others.
    #[inline(always)]
    pub fn plain_delta(self, window: u64) -> Option<u64> {
        match self {
            TimestampFields::Kind { kind, value } => {
                let tested = kind.place(u64::MAX) | Self::high_value_bits(value);
                (window & tested == kind.place(1)).then(|| value.get(window))
            }
            TimestampFields::Flags {
                packet_lost,
                realtime,
                value,
            } => {
                let flags = packet_lost.place(1) | realtime.place(1);
                (window & (flags | Self::high_value_bits(value)) == 0).then(|| value.get(window))
            }
        }
    }

    /// Where the delta runs to the window's top, the window's bits from 31 on: tested with the
    /// kind or flags (one sign-extended 32-bit mask), they leave the longer deltas to the
    /// out-of-line path, so that the walk's deltas cannot wrap the clock.
    const fn high_value_bits(value: Field) -> u64 {
        if value.lo as u32 + value.width as u32 == 64 {
            u64::MAX << 31
        } else {
            0
        }
    }

    /// [`Self::plain_delta`] takes deltas below this.
    pub const fn inline_delta_limit(self) -> u64 {
        let (TimestampFields::Kind { value, .. } | TimestampFields::Flags { value, .. }) = self;
        if Self::high_value_bits(value) != 0 {
            1 << (31 - value.lo)
        } else {
            1 << value.width
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct ShaderDataFields {
    pub unit: UnitFields,
    pub data: Field,
    pub short_data: Field,
    /// Records with this bit set are skipped (gfx11 `exec`).
    pub invalid: Option<Field>,
    /// Non-zero means trap-handler data (gfx12 `sdt`), for the long and the short form.
    pub privileged: Option<(Field, Field)>,
}

/// Per-architecture field positions of the tokens whose layout differs between generations.
#[derive(Clone, Copy, Debug)]
pub struct RdnaFields {
    pub wave_start: UnitFields,
    pub wave_start_pipe: Field,
    pub wave_start_me: Field,
    pub wave_start_count: Field,
    pub wave_end: UnitFields,
    pub inst_wave: Field,
    pub inst_id: Field,
    pub valu_wave: Field,
    /// VALU_INST of a wave64 wave (`w64h`): its record takes two cycles.
    pub valu_wave64: Field,
    pub imm_one_wave: Field,
    /// NEW_PC: how many nibbles past the token start its contents begin, and its fields.
    pub new_pc_skip: usize,
    pub new_pc_wave: Field,
    pub new_pc_address: Field,
    pub timestamp: TimestampFields,
    pub shader_data: ShaderDataFields,
    /// MISC bit 16 reports lost packets (gfx10 only; it is an SPM sample later).
    pub misc_reports_packet_loss: bool,
}

/// Everything that differs between RDNA generations, as data.
pub struct RdnaArch {
    pub tokens: TokenTable,
    /// gfx12: extension bytes follow a WAVE_START_EXT while the window's bit 0 is set; the
    /// walk reads them with this table ([`extension_tokens`]).
    pub after_wave_start_ext: Option<TokenTable>,
    /// `tokens` by kind.
    pub shapes: TokenShapes,
    pub frequent: FrequentKinds,
    pub insts: InstTable,
    pub fields: RdnaFields,
    /// gfx10/11 move WAVE_READY one cycle earlier and reorder tokens through a deque.
    pub reorder_wave_ready: bool,
    /// gfx12 stops at the first token that starts past the buffer's end (a token cut by the end
    /// is decoded, zero-filled, as the reference does on a truncated buffer); gfx10/11 drain
    /// zero nibbles.
    pub stop_at_buffer_end: bool,
    /// Realtime samples are merged (averaged) in the tail loop (gfx10/11) or the fast loop (gfx12).
    pub average_realtime_in_tail: bool,
    /// gfx12: the stitcher may treat `s_barrier_wait` as token-less (header bit 59).
    pub header_exclude_barrier_wait: Option<Field>,
    /// Mask applied to the header's DPRate field before `dprate = 1 << (d - 1)`.
    pub dprate_mask: u64,
    /// gfx12 stitching post-fix (`v_mov_b64`).
    pub gfx12_stitch: bool,
    /// All REG tokens also feed the user-data protocol (gfx10).
    pub reg_all_userdata: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_rows_override_matching_slots_only() {
        const T: TokenTable = build_tokens(&[
            &[token(TokenKind::Inst, 0b010, 3, 20, (4, 7))],
            &[token(TokenKind::Misc, 0b0000010, 7, 24, (7, 16))],
        ]);
        assert_eq!(T[0x02].kind, TokenKind::Misc);
        assert_eq!(T[0x82].kind, TokenKind::Misc);
        assert_eq!(T[0x0A].kind, TokenKind::Inst);
        assert_eq!(T[0x12].kind, TokenKind::Inst);
        assert_eq!(T[0x0B].kind, TokenKind::Unknown);
        assert_eq!(T[0x0B].bits, 8);
        assert_eq!(T[0x12].delta(0b101_0010), 0b101);
    }

    #[test]
    fn a_kind_pattern_matches_exactly_the_kinds_slots() {
        use crate::arch::rdna::{gfx10, gfx11, gfx12};
        for (name, arch) in [
            ("gfx10", &gfx10::ARCH),
            ("gfx11", &gfx11::ARCH),
            ("gfx12", &gfx12::ARCH),
        ] {
            let f = arch.frequent;
            for (pattern, kind) in [
                (f.reg, TokenKind::Reg),
                (f.time, TokenKind::Time),
                (f.misc, TokenKind::Misc),
                (f.exec, TokenKind::AluExec),
                (f.valu, TokenKind::ValuInst),
                (f.inst, TokenKind::Inst),
            ] {
                assert_eq!(Some(pattern.slot), arch.shapes[kind as usize]);
                for byte in 0..256u64 {
                    // The bits above the first byte play no part.
                    let window = byte | 0xA5A5_5A5A_0F0F_F000;
                    let slot_kind = arch.tokens[byte as usize].kind;
                    // The execution reports' pattern is that of both kinds.
                    let expected = slot_kind == kind
                        || (kind == TokenKind::AluExec && slot_kind == TokenKind::VmemExec);
                    assert_eq!(
                        pattern.matches(window),
                        expected,
                        "{name} {kind:?} {byte:#x}"
                    );
                }
            }
        }
        // Each kind's pattern is a low-bit prefix: REG is 4 bits, MISC 7.
        const T: TokenTable = build_tokens(&[gfx10::TOKENS]);
        assert_eq!(KindPattern::of(&T, TokenKind::Reg).mask, 0xF);
        assert_eq!(KindPattern::of(&T, TokenKind::Misc).mask, 0x7F);
    }

    #[test]
    fn a_kinds_last_row_shapes_every_byte_of_the_kind() {
        const T: TokenTable = build_tokens(&[
            &[
                token(TokenKind::Inst, 0b010, 3, 20, (4, 7)),
                token(TokenKind::Misc, 0b00110, 5, 52, (5, 8)),
            ],
            // A longer row of the same kind: the bytes only the older row names keep the kind
            // and take the new shape.
            &[token(TokenKind::Misc, 0b0000110, 7, 56, (7, 10))],
        ]);
        const S: TokenShapes = token_shapes(&T);
        let inst = S[TokenKind::Inst as usize].expect("the table holds INST");
        assert_eq!((inst.bits, inst.nibbles()), (20, 5));
        assert_eq!(inst.delta(0b101_0010), 0b101);
        for byte in [0x06usize, 0x26, 0x46, 0x86] {
            let slot = T[byte];
            assert_eq!(slot.kind, TokenKind::Misc, "{byte:#x}");
            assert_eq!((slot.bits, slot.delta_shift), (56, 7), "{byte:#x}");
        }
        assert_eq!(S[TokenKind::Unknown as usize].map(|s| s.bits), Some(8));
    }

    #[test]
    fn counting_rows_grow_by_one_cycle_per_id() {
        const I: InstTable =
            build_insts(&[&[counting(10, 13, InstEffect::Wave(Category::Vmem), 2)]]);
        assert_eq!(I[10].cycles, 2);
        assert_eq!(I[13].cycles, 5);
        assert_eq!(I[14].effect, InstEffect::Ignore);
    }

    #[test]
    fn fields_extract_bits() {
        assert_eq!(bits(4, 3).get(0b1011_0000), 0b011);
        assert_eq!(bits(0, 64).get(u64::MAX), u64::MAX);
    }
}
