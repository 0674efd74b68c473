//! The 64-bit software header of a gfx9 SE buffer (SQTT_FORMAT §1.1).

use super::tokens::header as field;

/// Byte offset of the token area within the SE buffer.
pub(super) const HEADER_BYTES: usize = 8;

/// The decoded header of one gfx9 buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gfx9Header {
    /// 4 = MI200 or older (gfx90a), 5 = MI300 (gfx942), 6 = MI350 (gfx950).
    pub version: u8,
    /// The CU whose instructions are traced (5 bits; token CU fields have 4).
    pub target_cu: u8,
    pub double_buffer: bool,
}

impl Gfx9Header {
    pub fn parse(h: u64) -> Self {
        Gfx9Header {
            version: field::VERSION.get(h) as u8,
            target_cu: field::TARGET_CU.get(h) as u8,
            double_buffer: field::DOUBLE_BUFFER.get(h) != 0,
        }
    }
}
