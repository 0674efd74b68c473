//! gfx12.5 / MI400 (HEADER version 5): overrides of the gfx12 tables. Only the scanner reads
//! this stream so far.

use super::{gfx10, gfx11, gfx12};
use crate::arch::table::{build_tokens, token, TokenKind, TokenRow, TokenTable, NO_DELTA};

/// Every token is a whole number of bytes.
pub const TOKENS: &[TokenRow] = &[
    token(TokenKind::Inst, 0b0010, 4, 24, (4, 6)),
    token(TokenKind::ValuInst, 0b011, 3, 8, (4, 8)),
    token(TokenKind::Nop, 0b0000, 4, 8, NO_DELTA),
    token(TokenKind::ImmOne, 0b1101, 4, 16, (7, 10)),
    token(TokenKind::WaveEnd, 0b1000001, 7, 24, (7, 10)),
    token(TokenKind::LdsConfig, 0b00100110, 8, 24, (8, 10)),
    token(TokenKind::Misc, 0b1010001, 7, 24, (7, 10)),
    token(TokenKind::Time, 0b1110, 4, 8, (4, 8)),
    token(TokenKind::MediumTime, 0b10100110, 8, 16, (8, 16)),
];

pub static TABLE: TokenTable = build_tokens(&[gfx10::TOKENS, gfx11::TOKENS, gfx12::TOKENS, TOKENS]);
