//! Recognising the first 8 bytes of a shader-engine buffer (SQTT_FORMAT §1.2).

use crate::error::ErrorKind;

/// The family of one SE buffer, as told by its first 8 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    /// gfx9 (CDNA): the 8-byte software header, skipped before the 16-bit word stream.
    Gfx9 { header: u64 },
    /// gfx10+ (RDNA): the hardware HEADER token starts the nibble stream; `version` is its
    /// 6-bit version field (1–2 gfx10, 3 gfx11, 4 gfx12, 5 gfx12.5).
    Rdna { version: u8 },
}

impl TraceKind {
    /// The gfx major reported in the GFXIP record.
    pub fn gfxip(self) -> u32 {
        match self {
            TraceKind::Gfx9 { .. } => 9,
            TraceKind::Rdna { version: 1 | 2 } => 10,
            TraceKind::Rdna { version: 3 } => 11,
            TraceKind::Rdna { .. } => 12,
        }
    }
}

/// The RDNA HEADER token pattern: its low 7 bits.
const RDNA_HEADER_PATTERN: u64 = 0x11;

/// Where the RDNA HEADER token holds its version: (lowest bit, width).
pub const RDNA_VERSION_BITS: (u8, u8) = (7, 6);

/// Where the gfx9 software header holds its legacy version (0 or 0x11) and its version.
pub const GFX9_LEGACY_VERSION_BITS: (u8, u8) = (0, 13);
pub const GFX9_VERSION_BITS: (u8, u8) = (13, 3);

/// The first 8 bytes of a buffer as a little-endian word; a shorter buffer is read as if
/// zeroes followed it: the reference reads the header's 8 bytes whatever the buffer's length.
pub fn header_word(data: &[u8]) -> u64 {
    let mut first = [0u8; 8];
    let present = data.len().min(8);
    first[..present].copy_from_slice(&data[..present]);
    u64::from_le_bytes(first)
}

/// The family a buffer's header word names, the one place a header is recognised (the decoder
/// and the quick scan both ask here).
pub fn family(h: u64) -> Option<TraceKind> {
    let bits = |(lo, width): (u8, u8)| (h >> lo) & ((1 << width) - 1);
    let legacy_version = bits(GFX9_LEGACY_VERSION_BITS);
    let gfx9_version2 = bits(GFX9_VERSION_BITS);
    if (legacy_version == 0 || legacy_version == 0x11) && (4..=6).contains(&gfx9_version2) {
        return Some(TraceKind::Gfx9 { header: h });
    }
    if h & 0x7F != RDNA_HEADER_PATTERN {
        return None;
    }
    match bits(RDNA_VERSION_BITS) as u8 {
        v @ 1..=5 => Some(TraceKind::Rdna { version: v }),
        _ => None,
    }
}

/// The family of the buffer `data`. A cut RDNA header whose first bytes still carry the HEADER
/// pattern and a version decodes as an empty stream of that generation (status SUCCESS), while
/// a gfx9 buffer needs at least one byte past its header. A buffer that ends before a
/// recognised header with tokens after it is [`ErrorKind::Truncated`].
pub fn detect(data: &[u8]) -> Result<TraceKind, ErrorKind> {
    match family(header_word(data)) {
        Some(TraceKind::Gfx9 { .. }) if data.len() <= 8 => Err(ErrorKind::Truncated),
        Some(kind) => Ok(kind),
        None if data.len() < 8 => Err(ErrorKind::Truncated),
        None => Err(ErrorKind::UnknownHeader),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_each_family() {
        assert_eq!(
            detect(&0x6890_0191u64.to_le_bytes()),
            Ok(TraceKind::Rdna { version: 3 })
        );
        let gfx12 = 0x0913_1008_6870_0211u64.to_le_bytes();
        assert_eq!(detect(&gfx12), Ok(TraceKind::Rdna { version: 4 }));
        let mut mi300 = (0x11u64 | 5 << 13 | 0xF << 16).to_le_bytes().to_vec();
        assert_eq!(
            detect(&mi300),
            Err(ErrorKind::Truncated),
            "header alone carries no tokens"
        );
        mi300.extend_from_slice(&[0; 8]);
        assert!(matches!(detect(&mi300), Ok(TraceKind::Gfx9 { .. })));
    }

    #[test]
    fn rejects_garbage_and_short_input() {
        assert_eq!(detect(&[0xA5; 64]), Err(ErrorKind::UnknownHeader));
        assert_eq!(detect(&[0; 64]), Err(ErrorKind::UnknownHeader));
        assert_eq!(detect(&[]), Err(ErrorKind::Truncated));
        // A cut header: the version bits that are left decide (bit 7 alone is version 1).
        assert_eq!(detect(&[0x11; 7]), Err(ErrorKind::Truncated));
        assert_eq!(detect(&[0x91]), Ok(TraceKind::Rdna { version: 1 }));
        assert_eq!(detect(&[0x91, 0x01]), Ok(TraceKind::Rdna { version: 3 }));
        assert_eq!(detect(&[0x11, 0x02]), Ok(TraceKind::Rdna { version: 4 }));
        assert_eq!(detect(&[0x11]), Err(ErrorKind::Truncated));
        // Version bits 1..5 without the HEADER pattern is mid-stream data, not a trace start.
        assert_eq!(
            detect(&(0x78c0_0140_0200u64).to_le_bytes()),
            Err(ErrorKind::UnknownHeader)
        );
    }
}
