//! gfx10 / RDNA1-2 (HEADER versions 1 and 2): the base token table and field layouts that gfx11
//! and gfx12 override.

use crate::arch::table::{
    bits, build_insts, build_tokens, counting, ids, scaled, token, walk_token_shapes, CycleScale,
    FrequentKinds, InstEffect, InstRow, RdnaArch, RdnaFields, ShaderDataFields, TimestampFields,
    TokenKind as K, TokenRow, TokenTable, UnitFields, NO_DELTA,
};
use crate::records::Category as C;
use InstEffect::{Immed, Jump, ReturnFromTrap, Trap, Wave};

pub const TOKENS: &[TokenRow] = &[
    token(K::Nop, 0b0000, 4, 4, NO_DELTA),
    token(K::Time, 0b1000, 4, 8, (4, 8)),
    token(K::Reg, 0b1001, 4, 64, (4, 7)),
    token(K::ImmOne, 0b1101, 4, 12, (4, 7)),
    token(K::Inst, 0b010, 3, 20, (4, 7)),
    token(K::ValuInst, 0b011, 3, 12, (3, 6)),
    token(K::AluExec, 0b1110, 4, 8, (4, 6)),
    token(K::VmemExec, 0b1111, 4, 8, (4, 6)),
    token(K::Immediate, 0b00100, 5, 24, (5, 8)),
    token(K::WaveReady, 0b10100, 5, 24, (5, 8)),
    token(K::WaveAlloc, 0b00101, 5, 20, (5, 8)),
    token(K::WaveEnd, 0b10101, 5, 20, (5, 8)),
    token(K::WaveStart, 0b01100, 5, 32, (5, 7)),
    token(K::WaveStartExt, 0b11100, 5, 48, (5, 7)),
    token(K::ShaderData, 0b00110, 5, 52, (5, 8)),
    token(K::ShaderDataShort, 0b10110, 5, 28, (5, 8)),
    token(K::Timestamp, 0b0000001, 7, 64, NO_DELTA),
    token(K::Header, 0b0010001, 7, 64, NO_DELTA),
    token(K::NewPc, 0b0100001, 7, 64, (8, 11)),
    token(K::UtilCounter, 0b0110001, 7, 64, (7, 9)),
    token(K::Misc, 0b1010001, 7, 24, (7, 16)),
    token(K::RegInit, 0b1110001, 7, 64, (7, 10)),
    token(K::Event, 0b01100001, 8, 24, (8, 11)),
    token(K::EventSync, 0b11100001, 8, 32, (8, 11)),
];

/// INST ids shared by every RDNA generation (gfx11/12 override parts of them).
pub const COMMON_INSTS: &[InstRow] = &[
    ids(0, 0, Wave(C::Salu), 1),
    ids(1, 2, Wave(C::Smem), 1),
    ids(3, 3, Wave(C::Jump), 1),
    ids(4, 4, Wave(C::Next), 1),
    ids(5, 5, Jump, 1),
    ids(6, 6, Trap, 1),
    ids(7, 7, Wave(C::Salu), 1),
    ids(8, 8, Wave(C::Context), 1),
    ids(9, 9, Wave(C::Message), 1),
    ids(10, 10, Wave(C::Valu), 1),
    ids(11, 11, Wave(C::Valu), 4),
    ids(18, 18, Wave(C::Valu), 1),
    ids(19, 19, Immed, 1),
    ids(41, 41, Wave(C::Lds), 1),
    counting(42, 46, Wave(C::Lds), 1),
    counting(47, 48, Wave(C::Vmem), 1),
    counting(49, 54, Wave(C::Vmem), 1),
    counting(55, 66, Wave(C::Vmem), 1),
    counting(68, 71, Wave(C::Vmem), 1),
    counting(72, 78, Wave(C::Vmem), 2),
    ids(103, 103, Wave(C::Bvh), 8),
    ids(104, 104, Wave(C::Bvh), 9),
    ids(105, 105, Wave(C::Bvh), 11),
    ids(106, 106, Wave(C::Bvh), 12),
    ids(110, 111, Wave(C::Lds), 1),
    ids(112, 113, Wave(C::Salu), 1),
    ids(117, 117, ReturnFromTrap, 1),
];

/// gfx10 ids (other-SIMD ids 79–102 are reported but dropped by the reference: not listed).
const INSTS: &[InstRow] = &[
    scaled(12, Wave(C::Valu), 1, CycleScale::DpRate),
    scaled(13, Wave(C::Valu), 2, CycleScale::DpRate),
    scaled(14, Wave(C::Valu), 4, CycleScale::DpRate),
    scaled(15, Wave(C::Valu), 16, CycleScale::DpRate),
    scaled(16, Wave(C::Valu), 1, CycleScale::DpRate),
    scaled(17, Wave(C::Valu), 1, CycleScale::DpRate),
    ids(30, 30, Wave(C::Flat), 1),
    counting(31, 34, Wave(C::Flat), 2),
    ids(35, 35, Wave(C::Vmem), 1),
    counting(36, 40, Wave(C::Vmem), 1),
];

pub const UNIT_GFX10: UnitFields =
    UnitFields::new(bits(7, 1), bits(8, 2), bits(10, 3), bits(13, 5));
pub const WAVE_END_GFX10: UnitFields =
    UnitFields::new(bits(8, 1), bits(9, 2), bits(11, 3), bits(15, 5));

pub const FIELDS: RdnaFields = RdnaFields {
    wave_start: UNIT_GFX10,
    wave_start_pipe: bits(21, 2),
    wave_start_me: bits(23, 1),
    wave_start_count: bits(25, 7),
    wave_end: WAVE_END_GFX10,
    inst_wave: bits(8, 5),
    inst_id: bits(13, 7),
    valu_wave: bits(7, 5),
    valu_wave64: bits(6, 1),
    imm_one_wave: bits(7, 5),
    new_pc_skip: 0,
    new_pc_wave: bits(11, 5),
    new_pc_address: bits(16, 46),
    timestamp: TimestampFields::Kind {
        kind: bits(14, 2),
        value: bits(16, 48),
    },
    shader_data: ShaderDataFields {
        unit: WAVE_END_GFX10,
        data: bits(20, 32),
        short_data: bits(20, 8),
        invalid: None,
        privileged: None,
    },
    misc_reports_packet_loss: true,
};

const TABLE: TokenTable = build_tokens(&[TOKENS]);

pub static ARCH: RdnaArch = RdnaArch {
    tokens: TABLE,
    after_wave_start_ext: None,
    shapes: walk_token_shapes(&TABLE),
    frequent: FrequentKinds::of(&TABLE),
    insts: build_insts(&[COMMON_INSTS, INSTS]),
    fields: FIELDS,
    reorder_wave_ready: true,
    stop_at_buffer_end: false,
    average_realtime_in_tail: true,
    header_exclude_barrier_wait: None,
    dprate_mask: 0xF,
    gfx12_stitch: false,
    reg_all_userdata: true,
};
