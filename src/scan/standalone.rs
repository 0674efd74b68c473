//! `build_standalone` (API.md §4.14, SQTT_FORMAT §6): a self-contained trace for a byte range
//! of a chunk, `[8-byte header][register writes restoring the context][verbatim slice]`.

use super::chunks::ScanChunks;
use super::ScanArch;
use crate::arch::rdna::RegWrite;
use crate::arch::registers::{cs, Registers, DISPATCHERS};
use crate::arch::userdata::{
    ADDR_HI, ADDR_LO, ENABLE, ID_HI, ID_LO, OPCODE_CODEOBJ, SIZE_HI, SIZE_LO, TAIL, USERDATA_2,
};
use crate::error::{DecodeError, ErrorKind};

/// gfx9 token types (SQTT_FORMAT §1.7) of the synthetic writes.
const GFX9_REG: u64 = 2;
const GFX9_REG_CS: u64 = 5;

/// One synthetic token: its bits and its length in bytes.
#[derive(Clone, Copy)]
struct SyntheticToken {
    bits: u64,
    bytes: usize,
}

/// A register write as a token of `arch`: a compute register (`Some` CS-relative address)
/// or `USERDATA_2`.
fn register_token(
    arch: ScanArch,
    me: u8,
    pipe: u8,
    compute: Option<u16>,
    data: u32,
) -> SyntheticToken {
    match arch {
        ScanArch::Gfx9 => {
            // The gfx9 `me` field holds `1 − me` (the decoder adds one modulo 2).
            let raw_me = u64::from(1 - (me & 1));
            let routing = u64::from(pipe & 3) << 5 | raw_me << 7;
            match compute {
                Some(addr) => SyntheticToken {
                    bits: GFX9_REG_CS
                        | routing
                        | u64::from(addr & 0x7F) << 9
                        | u64::from(data) << 16,
                    bytes: 6,
                },
                None => SyntheticToken {
                    bits: GFX9_REG | routing | 1 << 15 | USERDATA_2 << 16 | u64::from(data) << 32,
                    bytes: 8,
                },
            }
        }
        ScanArch::Gfx12 | ScanArch::Gfx1250 => SyntheticToken {
            bits: RegWrite {
                me,
                pipe,
                compute: compute.is_some(),
                address: compute.map_or(USERDATA_2, u64::from),
                data,
            }
            .encode(),
            bytes: 8,
        },
    }
}

/// The register writes that recreate `registers` from a fresh state, in the reference's
/// order: per dispatcher its program and dispatch packet, then the shared dispatch
/// registers, then the instrumentation enable word and every loaded code object.
fn context_tokens(arch: ScanArch, registers: &Registers) -> Vec<SyntheticToken> {
    let mut out = Vec::new();
    let compute = |me, pipe, addr, data| register_token(arch, me, pipe, Some(addr), data);
    for dispatcher in 0..DISPATCHERS {
        let (me, pipe) = ((dispatcher >> 2) as u8, (dispatcher & 3) as u8);
        let program = registers.program(dispatcher);
        if program != 0 {
            out.push(compute(me, pipe, cs::PGM_LO, program as u32));
            out.push(compute(me, pipe, cs::PGM_HI, (program >> 32) as u32));
        }
        let packet = registers.dispatch_packet(dispatcher);
        if packet != 0 {
            out.push(compute(me, pipe, cs::DISPATCH_PKT_LO, packet as u32));
            out.push(compute(
                me,
                pipe,
                cs::DISPATCH_PKT_HI,
                (packet >> 32) as u32,
            ));
        }
    }
    let shared = [
        (cs::NUM_THREAD_X, registers.num_threads[0]),
        (cs::NUM_THREAD_Y, registers.num_threads[1]),
        (cs::NUM_THREAD_Z, registers.num_threads[2]),
        (cs::PGM_RSRC1, registers.rsrc1),
        (cs::PGM_RSRC2, registers.rsrc2),
        (cs::PGM_RSRC3, registers.rsrc3),
    ];
    for (addr, data) in shared {
        out.push(compute(0, 0, addr, data));
    }
    if registers.code_objects.enabled() {
        let userdata = |data| register_token(arch, 0, 0, None, data);
        out.push(userdata(ENABLE));
        for (id, base, size) in registers.code_objects.loaded() {
            // TAIL: load (bit 0 clear), "from start" (bit 1), id from ID_LO/ID_HI.
            let fields = [
                (ID_LO, id as u32),
                (ID_HI, (id >> 32) as u32),
                (SIZE_LO, size as u32),
                (SIZE_HI, (size >> 32) as u32),
                (ADDR_LO, base as u32),
                (ADDR_HI, (base >> 32) as u32),
                (TAIL, 0b10),
            ];
            for (kind, payload) in fields {
                out.push(userdata(OPCODE_CODEOBJ | (kind as u32) << 8));
                out.push(userdata(payload));
            }
        }
    }
    out
}

/// A standalone trace ready to be written: the header word, the context tokens and the slice.
pub struct Standalone<'a> {
    header: u64,
    tokens: Vec<SyntheticToken>,
    slice: &'a [u8],
}

impl Standalone<'_> {
    /// The total size in bytes.
    pub fn size(&self) -> usize {
        8 + self.tokens.iter().map(|t| t.bytes).sum::<usize>() + self.slice.len()
    }

    /// Writes the trace into `out`, which must hold exactly [`Standalone::size`] bytes.
    pub fn write_to(&self, out: &mut [u8]) {
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            if let Some(dst) = out.get_mut(at..at + bytes.len()) {
                dst.copy_from_slice(bytes);
            }
            at += bytes.len();
        };
        put(&self.header.to_le_bytes());
        for token in &self.tokens {
            put(&token.bits.to_le_bytes()[..token.bytes]);
        }
        put(self.slice);
    }
}

/// Prepares the standalone trace for `data[begin..end]` of chunk `chunk_index`. The caller
/// has checked `8 < data.len()` and `begin + 8 < end <= data.len()`. Fails with
/// [`ErrorKind::MissingPreviousChunk`] when no entry state is published for the chunk, and
/// [`ErrorKind::UnsupportedArch`] for a family other than gfx9, gfx12 and gfx1250.
pub fn build<'a>(
    chunks: &ScanChunks,
    chunk_index: u64,
    data: &'a [u8],
    begin: usize,
    end: usize,
) -> Result<Standalone<'a>, DecodeError> {
    let (arch, header, entry) = chunks.standalone_context(chunk_index, data);
    let error = |kind| DecodeError::new(kind, chunk_index as usize, 0);
    let mut registers = entry.ok_or(error(ErrorKind::MissingPreviousChunk))?;
    let arch = arch.ok_or(error(ErrorKind::UnsupportedArch))?;
    // Chunk 0 of a gfx9 trace starts with the software header, which is not token data.
    let token_start = if chunk_index == 0 && arch == ScanArch::Gfx9 {
        8
    } else {
        0
    };
    let begin = begin.max(token_start);
    let prefix = data.get(token_start..begin).unwrap_or_default();
    // Without an emitter no client can stop the replay.
    let replayed = super::replay(arch, &mut registers, prefix, chunk_index as usize, 0, None);
    debug_assert!(replayed.is_ok());
    Ok(Standalone {
        header,
        tokens: context_tokens(arch, &registers),
        slice: data.get(begin..end).unwrap_or_default(),
    })
}
