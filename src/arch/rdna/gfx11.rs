//! gfx11 / RDNA3 (HEADER version 3): overrides of the gfx10 tables.

use super::gfx10;
use crate::arch::table::{
    bits, build_insts, build_tokens, counting, ids, scaled, token, walk_token_shapes, CycleScale,
    FrequentKinds, InstEffect, InstRow, RdnaArch, RdnaFields, TimestampFields, TokenKind as K,
    TokenRow, TokenTable, NO_DELTA,
};
use crate::records::Category as C;
use InstEffect::{OtherSimd, Wave};

pub const TOKENS: &[TokenRow] = &[
    token(K::Timestamp, 0b0000001, 7, 48, NO_DELTA),
    token(K::UtilCounter, 0b0110001, 7, 48, (7, 9)),
];

pub const INSTS: &[InstRow] = &[
    scaled(10, Wave(C::Valu), 1, CycleScale::DpRate),
    ids(12, 12, Wave(C::Valu), 1),
    ids(13, 13, Wave(C::Valu), 2),
    ids(14, 14, Wave(C::Valu), 4),
    // valub_16: 16 cycles whatever the DP rate (the v0.1.6 goldens; the published code scales it).
    ids(15, 15, Wave(C::Valu), 16),
    ids(16, 17, Wave(C::Valu), 1),
    ids(28, 28, Wave(C::Flat), 2),
    counting(29, 32, Wave(C::Flat), 3),
    counting(33, 34, Wave(C::Vmem), 1),
    counting(35, 40, Wave(C::Vmem), 1),
    counting(80, 84, OtherSimd(C::Lds), 1),
    counting(85, 89, OtherSimd(C::Flat), 2),
    counting(90, 101, OtherSimd(C::Vmem), 1),
    ids(114, 114, Wave(C::Salu), 1),
    ids(115, 115, Wave(C::Valu), 1),
    ids(116, 116, Wave(C::Valu), 2),
    ids(118, 118, Wave(C::Lds), 6),
    ids(119, 119, OtherSimd(C::Lds), 6),
];

pub const TIMESTAMP: TimestampFields = TimestampFields::Flags {
    packet_lost: bits(8, 1),
    realtime: bits(9, 1),
    value: bits(12, 36),
};

const FIELDS: RdnaFields = RdnaFields {
    timestamp: TIMESTAMP,
    shader_data: crate::arch::table::ShaderDataFields {
        invalid: Some(bits(14, 1)),
        ..gfx10::FIELDS.shader_data
    },
    misc_reports_packet_loss: false,
    ..gfx10::FIELDS
};

const TABLE: TokenTable = build_tokens(&[gfx10::TOKENS, TOKENS]);

pub static ARCH: RdnaArch = RdnaArch {
    tokens: TABLE,
    after_wave_start_ext: None,
    shapes: walk_token_shapes(&TABLE),
    frequent: FrequentKinds::of(&TABLE),
    insts: build_insts(&[gfx10::COMMON_INSTS, INSTS]),
    fields: FIELDS,
    reorder_wave_ready: true,
    stop_at_buffer_end: false,
    average_realtime_in_tail: true,
    header_exclude_barrier_wait: None,
    dprate_mask: 0x7,
    gfx12_stitch: false,
    reg_all_userdata: false,
};
