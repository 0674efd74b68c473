//! `quick_scan` and `build_standalone` (API.md §4.13–§4.14, SQTT_FORMAT §6): walk only token
//! boundaries, keep the rare register-write and event tokens, and replay them through the
//! register tracker that the full decoders use. Scalar code; no CPU feature is required.

pub mod chunks;
pub mod standalone;

use std::ops::ControlFlow;

use crate::arch::gfx9::tokens::{self as gfx9_tokens, Kind as Gfx9Kind};
use crate::arch::rdna::{dispatch_initiator, event_record, gfx12, gfx1250, RegWrite};
use crate::arch::registers::{cs, Registers};
use crate::arch::table::TokenKind;
use crate::arch::userdata::USERDATA_2;
use crate::error::{DecodeError, ErrorKind};
use crate::records::{Event, EventKind};
use crate::sink::{Emitter, Record};
use crate::stream::header::{self, TraceKind};
use crate::stream::nibble::NibbleStream;

/// The trace families the scanner supports, told by a chunk's 8-byte header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanArch {
    /// gfx9 software header; the 16-bit word stream follows it.
    Gfx9,
    /// RDNA HEADER version 4: nibble stream.
    Gfx12,
    /// RDNA HEADER version 5 (MI400): byte stream.
    Gfx1250,
}

impl ScanArch {
    /// The family of a trace header word ([`header::family`]); gfx10/gfx11 and unknown headers
    /// give `None`.
    pub fn from_header(header: u64) -> Option<Self> {
        match header::family(header)? {
            TraceKind::Gfx9 { .. } => Some(ScanArch::Gfx9),
            TraceKind::Rdna { version: 4 } => Some(ScanArch::Gfx12),
            TraceKind::Rdna { version: 5 } => Some(ScanArch::Gfx1250),
            TraceKind::Rdna { .. } => None,
        }
    }

    /// The RDNA trace version the dispatch fields depend on (0 for gfx9).
    fn trace_version(self) -> u8 {
        match self {
            ScanArch::Gfx9 => 0,
            ScanArch::Gfx12 => 4,
            ScanArch::Gfx1250 => 5,
        }
    }
}

pub use crate::stream::header::header_word;

/// The rare tokens the replay acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RareKind {
    /// gfx9 REG_CS / REG_CS_PRIV: compute register write.
    Gfx9RegCs,
    /// gfx9 REG: userdata register write.
    Gfx9Reg,
    RdnaReg,
    RdnaRegInit,
    RdnaEvent,
}

/// One rare token: its contents (bit 0 = the token's first bit) and its byte offset in the
/// scanned buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RareToken {
    pub kind: RareKind,
    pub contents: u64,
    pub offset: u64,
}

/// Calls `visit` for every rare token of `data`, in stream order, until it breaks.
pub fn scan<B>(
    arch: ScanArch,
    data: &[u8],
    visit: impl FnMut(RareToken) -> ControlFlow<B>,
) -> ControlFlow<B> {
    match arch {
        ScanArch::Gfx9 => scan_gfx9(data, visit),
        ScanArch::Gfx12 => scan_gfx12(data, visit),
        ScanArch::Gfx1250 => scan_mi400(data, visit),
    }
}

/// gfx9: the type nibble of each token's first word gives its length.
fn scan_gfx9<B>(data: &[u8], mut visit: impl FnMut(RareToken) -> ControlFlow<B>) -> ControlFlow<B> {
    let mut offset = 0usize;
    // Unlike the parser, the scan reports no token cut by the end of the buffer.
    while let Some(token) =
        gfx9_tokens::read_at(data, offset).filter(|t| offset + t.byte_len() <= data.len())
    {
        let kind = match token.kind() {
            Gfx9Kind::RegCs | Gfx9Kind::RegCsPriv => Some(RareKind::Gfx9RegCs),
            Gfx9Kind::Reg => Some(RareKind::Gfx9Reg),
            _ => None,
        };
        if let Some(kind) = kind {
            visit(RareToken {
                kind,
                contents: token.value,
                offset: offset as u64,
            })?;
        }
        offset += token.byte_len();
    }
    ControlFlow::Continue(())
}

fn rare_rdna_kind(kind: TokenKind) -> Option<RareKind> {
    match kind {
        TokenKind::Reg => Some(RareKind::RdnaReg),
        TokenKind::RegInit => Some(RareKind::RdnaRegInit),
        TokenKind::Event => Some(RareKind::RdnaEvent),
        _ => None,
    }
}

/// gfx12: the nibble walk with the gfx12 token table; WAVE_START_EXT is followed by extension
/// bytes while their low bit is set.
fn scan_gfx12<B>(
    data: &[u8],
    mut visit: impl FnMut(RareToken) -> ControlFlow<B>,
) -> ControlFlow<B> {
    let table = &gfx12::ARCH.tokens;
    let stream = NibbleStream::new(data);
    let total = stream.len();
    let mut pos = 0usize;
    let mut ext = false;
    while pos < total {
        let window = stream.window(pos);
        if ext && window & 1 != 0 {
            pos += 2;
            continue;
        }
        let slot = table[(window & 0xFF) as usize];
        if slot.kind == TokenKind::Nop {
            pos += 1;
            continue;
        }
        ext = slot.kind == TokenKind::WaveStartExt;
        let length = usize::from(slot.bits / 4).max(1);
        if let Some(kind) = rare_rdna_kind(slot.kind).filter(|_| pos + length <= total) {
            visit(RareToken {
                kind,
                contents: window,
                offset: (pos / 2) as u64,
            })?;
        }
        pos += length;
    }
    ControlFlow::Continue(())
}

/// MI400: the byte walk; NOP and unknown slots skip one byte.
fn scan_mi400<B>(
    data: &[u8],
    mut visit: impl FnMut(RareToken) -> ControlFlow<B>,
) -> ControlFlow<B> {
    let mut pos = 0usize;
    let mut ext = false;
    while let Some(&first) = data.get(pos) {
        if ext {
            if first & 1 != 0 {
                pos += 1;
                continue;
            }
            // The extension chain ends at the first byte without the continuation bit.
            ext = false;
        }
        let slot = gfx1250::TABLE[first as usize];
        if matches!(slot.kind, TokenKind::Nop | TokenKind::Unknown) {
            pos += 1;
            continue;
        }
        ext = slot.kind == TokenKind::WaveStartExt;
        let length = usize::from(slot.bits).div_ceil(8);
        if let Some(kind) = rare_rdna_kind(slot.kind) {
            if let Some(bytes) = data.get(pos..pos + length) {
                visit(RareToken {
                    kind,
                    contents: header_word(bytes),
                    offset: pos as u64,
                })?;
            }
        }
        pos += length;
    }
    ControlFlow::Continue(())
}

/// Replays the rare tokens of `data` into `registers`. With an emitter, DISPATCH and EVENT
/// records (time 0, byte offsets plus `offset_base`) go through it, and a non-zero client
/// status stops the replay: [`ErrorKind::StoppedByCallback`] in chunk `chunk`, at the byte
/// offset of the token whose record the client stopped at.
pub fn replay(
    arch: ScanArch,
    registers: &mut Registers,
    data: &[u8],
    chunk: usize,
    offset_base: u64,
    mut emitter: Option<&mut Emitter<'_>>,
) -> Result<(), DecodeError> {
    let version = arch.trace_version();
    let flow = scan(arch, data, |token| {
        let byte_offset = token.offset + offset_base;
        let status = match token.kind {
            RareKind::Gfx9RegCs => {
                use gfx9_tokens::reg_cs as f;
                let v = token.contents;
                let me = gfx9_tokens::me_from_raw(f::ME.get(v));
                let pipe = f::PIPE.get(v) as u8;
                let addr = f::ADDR.get(v) as u16;
                let data = f::DATA.get(v) as u32;
                registers.write_cs(me, pipe, addr, data);
                match emitter.as_deref_mut() {
                    Some(out) if addr == cs::DISPATCH_INITIATOR && data & 1 != 0 => {
                        let dispatch = registers.dispatch(0, me, pipe, version, byte_offset);
                        out.single(Record::Dispatch(&dispatch))
                    }
                    Some(out) if addr == cs::NOWHERE && data == cs::EVENT_CS_PARTIAL_FLUSH => {
                        let kind = EventKind::CsPartialFlush;
                        let event = Event::new(kind, 0, me, pipe, 0, 0, byte_offset);
                        out.event(&event)
                    }
                    _ => 0,
                }
            }
            RareKind::Gfx9Reg => {
                use gfx9_tokens::reg as f;
                let v = token.contents;
                if f::ENABLE.get(v) != 0 && f::ADDR.get(v) == USERDATA_2 {
                    let me = gfx9_tokens::me_from_raw(f::ME.get(v));
                    registers.write_userdata2(me, f::PIPE.get(v) as u8, f::DATA.get(v) as u32);
                }
                0
            }
            RareKind::RdnaReg => {
                let reg = RegWrite::decode(token.contents);
                if reg.compute {
                    registers.write_cs(reg.me, reg.pipe, reg.address as u16, reg.data);
                } else if reg.address == USERDATA_2 {
                    registers.write_userdata2(reg.me, reg.pipe, reg.data);
                }
                0
            }
            RareKind::RdnaRegInit => {
                match (emitter.as_deref_mut(), dispatch_initiator(token.contents)) {
                    (Some(out), Some((me, pipe))) => {
                        let dispatch = registers.dispatch(0, me, pipe, version, byte_offset);
                        out.single(Record::Dispatch(&dispatch))
                    }
                    _ => 0,
                }
            }
            RareKind::RdnaEvent => match (emitter.as_deref_mut(), event_record(token.contents)) {
                (Some(out), Some(event)) => out.event(&Event {
                    byte_offset,
                    ..event
                }),
                _ => 0,
            },
        };
        if status == 0 {
            ControlFlow::Continue(())
        } else {
            let kind = ErrorKind::StoppedByCallback(status);
            ControlFlow::Break(DecodeError::new(kind, chunk, byte_offset as usize))
        }
    });
    match flow {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rare_tokens(arch: ScanArch, data: &[u8]) -> Vec<RareToken> {
        let mut out = Vec::new();
        let _ = scan::<()>(arch, data, |t| {
            out.push(t);
            ControlFlow::Continue(())
        });
        out
    }

    /// Upstream's MI400 scanner stress stream: a WAVE_START_EXT with two extension bytes and a
    /// NOP, then an event, a register write and a dispatch, and an event at the very end.
    #[test]
    fn mi400_walk_honours_extension_bytes_nops_and_the_tail() {
        let mut data = vec![0u8; 64];
        let wave_start_ext: u64 = 0b11100 | 1 << 5 | 1 << 7 | 3 << 8 | 2 << 10 | 5 << 15;
        data.extend(&wave_start_ext.to_le_bytes()[..5]);
        data.extend([0x01, 0x03, 0x00]);
        use crate::arch::rdna::fields::{event, reg_init};
        // The low bits are the gfx12.5 EVENT and REG_INIT opcodes.
        let event =
            |id: u64| 0b0110_0001 | event::ME.place(1) | event::PIPE.place(2) | event::ID.place(id);
        data.extend(&event(0x07).to_le_bytes()[..3]);
        let reg = RegWrite {
            me: 1,
            pipe: 2,
            compute: true,
            address: cs::NUM_THREAD_X.into(),
            data: 256,
        };
        data.extend(reg.encode().to_le_bytes());
        let dispatch = 0b111_0001
            | reg_init::PIPE.place(2)
            | reg_init::ME.place(1)
            | reg_init::TYPE.place(reg_init::DISPATCH_INITIATOR)
            | reg_init::DATA.place(1);
        data.extend(dispatch.to_le_bytes());
        data.resize(144, 0);
        data.extend(&event(0x36).to_le_bytes()[..3]);

        let tokens = rare_tokens(ScanArch::Gfx1250, &data);
        let kinds: Vec<_> = tokens.iter().map(|t| (t.kind, t.offset)).collect();
        assert_eq!(
            kinds,
            [
                (RareKind::RdnaEvent, 72),
                (RareKind::RdnaReg, 75),
                (RareKind::RdnaRegInit, 83),
                (RareKind::RdnaEvent, 144)
            ]
        );
        assert_eq!(RegWrite::decode(tokens[1].contents), reg);
        assert_eq!(dispatch_initiator(tokens[2].contents), Some((1, 2)));
        assert_eq!(event_record(tokens[3].contents).map(|e| e.kind), Some(11));
    }

    #[test]
    fn truncated_tokens_are_not_reported() {
        let reg = RegWrite {
            me: 0,
            pipe: 0,
            compute: true,
            address: 7,
            data: 1,
        }
        .encode();
        let mut data = (0x11u64 | 4 << 7).to_le_bytes().to_vec();
        data.extend(&reg.to_le_bytes()[..7]);
        assert!(rare_tokens(ScanArch::Gfx12, &data).is_empty());
        assert!(rare_tokens(ScanArch::Gfx1250, &data[8..]).is_empty());
        let gfx9_reg_cs = [0x05u8, 0, 0, 0, 0];
        assert!(rare_tokens(ScanArch::Gfx9, &gfx9_reg_cs).is_empty());
    }

    #[test]
    fn headers_select_the_scanner() {
        assert_eq!(ScanArch::from_header(5 << 13), Some(ScanArch::Gfx9));
        assert_eq!(ScanArch::from_header(0x11 | 6 << 13), Some(ScanArch::Gfx9));
        assert_eq!(ScanArch::from_header(0x11 | 4 << 7), Some(ScanArch::Gfx12));
        assert_eq!(
            ScanArch::from_header(0x11 | 5 << 7),
            Some(ScanArch::Gfx1250)
        );
        assert_eq!(ScanArch::from_header(0x11 | 3 << 7), None, "gfx11");
        assert_eq!(ScanArch::from_header(0x11 | 6 << 7), None);
    }
}
