//! gfx12 / RDNA4 (HEADER version 4): overrides of the gfx11 tables.

use super::{gfx10, gfx11};
use crate::arch::table::{
    bits, build_insts, build_tokens, counting, extension_tokens, ids, scaled, token,
    walk_token_shapes, CycleScale, FrequentKinds, InstEffect, InstRow, RdnaArch, RdnaFields,
    ShaderDataFields, TimestampFields, TokenKind as K, TokenRow, TokenTable, UnitFields,
};
use crate::records::Category as C;
use InstEffect::{Ignore, OtherSimd, Wave};

pub const TOKENS: &[TokenRow] = &[
    token(K::Inst, 0b010, 3, 20, (3, 6)),
    token(K::ShaderData, 0b0000110, 7, 56, (7, 10)),
    token(K::ShaderDataShort, 0b1000110, 7, 32, (7, 10)),
    token(K::ExecPopcount1, 0b1100110, 7, 24, (7, 10)),
    token(K::ExecPopcount3, 0b010110, 6, 48, (6, 9)),
    // 72 bits: the contents handed on are bits 8..72; the delta is still raw bits 8..11.
    token(K::NewPc, 0b0100001, 7, 72, (8, 11)),
    token(K::WaveStartExt, 0b11100, 5, 40, (5, 7)),
    token(K::WaveAlloc, 0b00101, 5, 24, (5, 8)),
    token(K::Timestamp, 0b0000001, 7, 64, crate::arch::table::NO_DELTA),
];

const INSTS: &[InstRow] = &[
    ids(10, 10, Wave(C::Valu), 1),
    ids(15, 15, Wave(C::Valu), 16),
    ids(16, 17, Ignore, 0),
    ids(90, 101, Ignore, 0),
    ids(112, 113, Ignore, 0),
    ids(118, 118, Wave(C::Bvh), 6),
    ids(120, 120, OtherSimd(C::Lds), 10),
    ids(121, 121, Wave(C::Bvh), 10),
    ids(122, 122, Wave(C::Message), 1),
    ids(135, 137, Wave(C::Salu), 1),
    ids(138, 138, Wave(C::Message), 1),
    ids(140, 140, Wave(C::Valu), 8),
    ids(141, 141, Wave(C::Valu), 16),
    ids(142, 142, Wave(C::Valu), 32),
    ids(143, 143, Wave(C::Valu), 64),
    scaled(146, Wave(C::Valu), 1, CycleScale::DpRate),
    scaled(147, Wave(C::Valu), 1, CycleScale::DpRateDerate),
    ids(150, 151, Wave(C::Smem), 1),
    ids(152, 152, Wave(C::Salu), 3),
    ids(153, 153, Wave(C::Valu), 1),
    ids(155, 155, Wave(C::Salu), 2),
    ids(156, 156, Wave(C::Salu), 5),
    counting(188, 221, OtherSimd(C::Vmem), 1),
    counting(222, 255, Wave(C::Vmem), 1),
];

const WAVE_END: UnitFields = UnitFields::new(bits(8, 1), bits(9, 2), bits(11, 4), bits(15, 5));

const FIELDS: RdnaFields = RdnaFields {
    wave_start: UnitFields::new(bits(7, 1), bits(8, 2), bits(10, 4), bits(15, 5)),
    wave_start_pipe: bits(20, 2),
    wave_start_me: bits(22, 1),
    wave_start_count: bits(25, 7),
    wave_end: WAVE_END,
    inst_wave: bits(7, 5),
    inst_id: bits(12, 8),
    valu_wave: bits(7, 5),
    valu_wave64: bits(6, 1),
    imm_one_wave: bits(7, 5),
    new_pc_skip: 2,
    new_pc_wave: bits(3, 5),
    new_pc_address: bits(8, 55),
    timestamp: TimestampFields::Flags {
        packet_lost: bits(8, 1),
        realtime: bits(7, 1),
        value: bits(12, 52),
    },
    shader_data: ShaderDataFields {
        unit: UnitFields::new(bits(10, 1), bits(11, 2), bits(13, 4), bits(17, 5)),
        data: bits(22, 32),
        short_data: bits(22, 8),
        invalid: None,
        privileged: Some((bits(54, 2), bits(30, 2))),
    },
    misc_reports_packet_loss: false,
};

const TABLE: TokenTable = build_tokens(&[gfx10::TOKENS, gfx11::TOKENS, TOKENS]);

pub static ARCH: RdnaArch = RdnaArch {
    tokens: TABLE,
    after_wave_start_ext: Some(extension_tokens(&TABLE)),
    shapes: walk_token_shapes(&TABLE),
    frequent: FrequentKinds::of(&TABLE),
    insts: build_insts(&[gfx10::COMMON_INSTS, gfx11::INSTS, INSTS]),
    fields: FIELDS,
    reorder_wave_ready: false,
    stop_at_buffer_end: true,
    average_realtime_in_tail: false,
    header_exclude_barrier_wait: Some(bits(59, 1)),
    dprate_mask: 0x7,
    gfx12_stitch: true,
    reg_all_userdata: false,
};
