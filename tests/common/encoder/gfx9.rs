//! gfx9 16-bit word streams (SQTT_FORMAT §1.1, §1.7), token by token, with the clock the tokens
//! have moved. Type numbers, lengths and fields are the decoder's (`arch::gfx9::tokens`).

use rocprof_trace_decoder::arch::gfx9::tokens::{
    header, inst, issue, misc, reg, reg_cs, wave, words, Kind,
};
use rocprof_trace_decoder::arch::table::{bits, Field};
use rocprof_trace_decoder::stream::header::GFX9_LEGACY_VERSION_BITS;

/// Header fields the decoder does not read (it recognises the legacy version with the header).
mod header_extra {
    use super::{bits, Field, GFX9_LEGACY_VERSION_BITS};
    /// Must be 0 or 0x11.
    pub const LEGACY_VERSION: Field = bits(GFX9_LEGACY_VERSION_BITS.0, GFX9_LEGACY_VERSION_BITS.1);
    pub const TRACED_SIMDS: Field = bits(16, 4);
}

/// REG fields the decoder does not read.
mod reg_extra {
    use super::{bits, Field};
    pub const TYPE: Field = bits(10, 3);
    /// The REG type of userdata writes.
    pub const USERDATA: u64 = 3;
}

/// Register tokens carry `me` as `(me + 1) & 1`.
fn me_raw(me: u64) -> u64 {
    (me + 1) & 1
}

/// The software header.
#[derive(Clone, Copy, Debug)]
pub struct Header {
    pub legacy_version: u64,
    pub version: u64,
    pub traced_simds: u64,
    pub target_cu: u64,
}

impl Header {
    /// Legacy version 0x11, all SIMDs of `target_cu` traced.
    pub fn new(version: u64, target_cu: u64) -> Self {
        Header {
            legacy_version: 0x11,
            version,
            traced_simds: 0xF,
            target_cu,
        }
    }

    /// Nothing but the version: legacy version 0, no SIMD traced, CU 0.
    pub fn bare(version: u64) -> Self {
        Header {
            legacy_version: 0,
            version,
            traced_simds: 0,
            target_cu: 0,
        }
    }

    pub fn word(self) -> u64 {
        [
            (header_extra::LEGACY_VERSION, self.legacy_version),
            (header::VERSION, self.version),
            (header_extra::TRACED_SIMDS, self.traced_simds),
            (header::TARGET_CU, self.target_cu),
        ]
        .iter()
        .fold(0, |raw, &(field, value)| raw | place(field, value))
    }
}

/// One SE buffer: the header, then the tokens written, with the clock they have moved.
pub struct Gfx9 {
    pub bytes: Vec<u8>,
    pub now: i64,
}

impl Gfx9 {
    /// A buffer starting with `header`.
    pub fn new(header: Header) -> Self {
        Gfx9 {
            bytes: header.word().to_le_bytes().to_vec(),
            now: 0,
        }
    }

    /// Writes a token of `kind` with `fields`; its time increment bit (bit 4) stays clear.
    fn token(&mut self, kind: Kind, fields: &[(Field, u64)]) -> &mut Self {
        let raw = fields.iter().fold(kind as u64, |raw, &(field, value)| {
            raw | place(field, value)
        });
        let len = 2 * words(kind as u8);
        assert!(len == 8 || raw >> (8 * len) == 0, "{kind:?} fields fit");
        self.bytes.extend_from_slice(&raw.to_le_bytes()[..len]);
        self
    }

    /// MISC TIME tokens (misc type 0) until the clock reads `t`; each adds 4·delta.
    pub fn at(&mut self, t: i64) -> &mut Self {
        assert!(t >= self.now && t % 4 == 0, "time {t} after {}", self.now);
        while self.now < t {
            let delta = ((t - self.now) / 4).min(255);
            self.token(Kind::Misc, &[(misc::DELTA, delta as u64)]);
            self.now += 4 * delta;
        }
        self
    }

    /// MISC PACKET_LOST.
    pub fn packet_lost(&mut self) -> &mut Self {
        self.token(Kind::Misc, &[(misc::TYPE, misc::PACKET_LOST)])
    }

    /// MISC SAVE_CONTEXT.
    pub fn save_context(&mut self) -> &mut Self {
        self.token(Kind::Misc, &[(misc::TYPE, misc::SAVE_CONTEXT)])
    }

    /// WAVE_START of `slot` on `simd` of `cu`, dispatcher `(me, 0)`; `count` above 64 is
    /// context save/restore traffic.
    pub fn wave_start(&mut self, cu: u64, simd: u64, slot: u64, me: u64, count: u64) -> &mut Self {
        self.token(
            Kind::WaveStart,
            &[
                (wave::CU, cu),
                (wave::SLOT, slot),
                (wave::SIMD, simd),
                (wave::ME, me),
                (wave::COUNT, count),
            ],
        )
    }

    pub fn wave_end(&mut self, cu: u64, simd: u64, slot: u64) -> &mut Self {
        self.token(
            Kind::WaveEnd,
            &[(wave::CU, cu), (wave::SLOT, slot), (wave::SIMD, simd)],
        )
    }

    /// ISSUE: `status` (1 stall, 2 instruction, 3 immediate) for one wave slot.
    pub fn issue(&mut self, simd: u64, slot: u64, status: u64) -> &mut Self {
        let status_field = bits(issue::STATUSES.lo + 2 * slot as u8, 2);
        self.token(Kind::Issue, &[(issue::SIMD, simd), (status_field, status)])
    }

    /// INST of INST type `inst_type`.
    pub fn inst(&mut self, simd: u64, slot: u64, inst_type: u64) -> &mut Self {
        self.token(
            Kind::Inst,
            &[
                (inst::SLOT, slot),
                (inst::SIMD, simd),
                (inst::TYPE, inst_type),
            ],
        )
    }

    /// INST_PC: the byte address `pc` the wave continues at.
    pub fn inst_pc(&mut self, simd: u64, slot: u64, pc: u64) -> &mut Self {
        self.token(
            Kind::InstPc,
            &[(inst::SLOT, slot), (inst::SIMD, simd), (inst::PC, pc >> 2)],
        )
    }

    fn reg_cs_fields(me: u64, pipe: u64, addr: u64, data: u64) -> [(Field, u64); 4] {
        [
            (reg_cs::PIPE, pipe),
            (reg_cs::ME, me_raw(me)),
            (reg_cs::ADDR, addr),
            (reg_cs::DATA, data),
        ]
    }

    /// REG_CS: dispatcher `(me, pipe)` writes `data` to compute register `addr`.
    pub fn reg_cs(&mut self, me: u64, pipe: u64, addr: u64, data: u64) -> &mut Self {
        self.token(Kind::RegCs, &Self::reg_cs_fields(me, pipe, addr, data))
    }

    /// REG_CS_PRIV: as [`Gfx9::reg_cs`], the type that carries the COMPUTE_* registers.
    pub fn reg_cs_priv(&mut self, me: u64, pipe: u64, addr: u64, data: u64) -> &mut Self {
        self.token(Kind::RegCsPriv, &Self::reg_cs_fields(me, pipe, addr, data))
    }

    /// REG (enabled): a userdata write of dispatcher `(me, pipe)` to register `addr`.
    pub fn userdata(&mut self, me: u64, pipe: u64, addr: u64, data: u32) -> &mut Self {
        self.token(
            Kind::Reg,
            &[
                (reg::PIPE, pipe),
                (reg::ME, me_raw(me)),
                (reg_extra::TYPE, reg_extra::USERDATA),
                (reg::ENABLE, 1),
                (reg::ADDR, addr),
                (reg::DATA, u64::from(data)),
            ],
        )
    }
}

/// `value` at `field`'s position; it must fit the field.
fn place(field: Field, value: u64) -> u64 {
    assert!(
        field.width >= 64 || value >> field.width == 0,
        "{value:#x} fits {field:?}"
    );
    value << field.lo
}
