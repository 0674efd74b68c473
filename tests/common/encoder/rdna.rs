//! RDNA nibble streams, token by token. A token's pattern and length are what the decoder's
//! token table of the stream's generation says (`arch::rdna::gfx1x::ARCH.tokens`, gfx12.5's
//! `gfx1250::TABLE`), its time delta is the table's delta field, the other fields come from the
//! generation's field table (`ARCH.fields`) and REG tokens from the decoder's own [`RegWrite`].
//! The fields every generation shares (HEADER, MISC, EVENT, REG_INIT, the slot masks) are the
//! decoder's `arch::rdna::fields`.

use rocprof_trace_decoder::arch::rdna::fields::{event, misc, reg_init, SLOT_MASK};
use rocprof_trace_decoder::arch::rdna::{gfx10, gfx11, gfx12, gfx1250, RegWrite};
use rocprof_trace_decoder::arch::table::{
    bits, token_shapes, Field, RdnaFields, TimestampFields, TokenKind, TokenShapes, TokenSlot,
    TokenTable, UnitFields,
};

use super::bits::Bits;

/// HEADER fields: the decoder's, with the version's place from the header recognition.
mod header {
    pub use rocprof_trace_decoder::arch::rdna::fields::header::*;
    use rocprof_trace_decoder::arch::table::{bits, Field};
    use rocprof_trace_decoder::stream::header::RDNA_VERSION_BITS;
    pub const VERSION: Field = bits(RDNA_VERSION_BITS.0, RDNA_VERSION_BITS.1);
}

/// MISC flag bit 16: packet loss on gfx10, an SPM sample later.
pub const MISC_PACKET_LOST_OR_SPM: u64 = misc::PACKET_LOST_OR_SPM;
/// MISC flag bit 17: a GC rinse.
pub const MISC_GC_RINSE: u64 = misc::GC_RINSE;
/// MISC flag bit 19: a context save begins.
pub const MISC_SAVE_CONTEXT: u64 = misc::SAVE_CONTEXT;

/// A TIME token advances the clock by its field plus this (gfx10-12).
const TIME_BIAS: u64 = 4;

/// The HEADER token that starts a stream; the target unit is the traced one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Header {
    /// 1-2 gfx10, 3 gfx11, 4 gfx12, 5 gfx12.5.
    pub version: u64,
    pub target_simd: u64,
    pub target_wgp: u64,
    pub target_sa: u64,
    pub dprate: u64,
    pub dp_derate: u64,
    /// gfx12: the stitcher may find token-less `s_barrier_wait` lines.
    pub exclude_barrier_wait: bool,
}

impl Header {
    /// Tracing SIMD 0 of WGP 0, SA 0.
    pub fn version(version: u64) -> Self {
        Header {
            version,
            ..Header::default()
        }
    }

    /// The HEADER token, whatever its version (every table has HEADER's pattern).
    pub fn word(self) -> u64 {
        let pattern = pattern(&gfx10::ARCH.tokens, TokenKind::Header);
        let barrier_wait = gfx12::ARCH
            .header_exclude_barrier_wait
            .expect("gfx12 has the HEADER bit");
        let raw = [
            (header::VERSION, self.version),
            (header::TARGET_SIMD, self.target_simd),
            (header::TARGET_WGP, self.target_wgp),
            (header::TARGET_SA, self.target_sa),
            (header::DPRATE, self.dprate),
            (header::DP_DERATE, self.dp_derate),
            (barrier_wait, u64::from(self.exclude_barrier_wait)),
        ]
        .iter()
        .fold(u128::from(pattern), |raw, &(field, value)| {
            raw | place(field, value)
        });
        raw as u64
    }
}

/// The HEADER `word` (say, of a real trace) with `version` instead of its own.
pub fn with_version(word: u64, version: u64) -> u64 {
    let field = header::VERSION;
    let mask = ((1u64 << field.width) - 1) << field.lo;
    word & !mask | place(field, version) as u64
}

/// Where a wave runs; [`Unit::wave`] is on the traced SIMD 0 of WGP 0, SA 0.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unit {
    pub sa: u64,
    pub wgp: u64,
    pub simd: u64,
    pub wave: u64,
}

impl Unit {
    pub fn wave(wave: u64) -> Self {
        Unit {
            wave,
            ..Unit::default()
        }
    }

    pub fn simd(self, simd: u64) -> Self {
        Unit { simd, ..self }
    }

    pub fn wgp(self, wgp: u64) -> Self {
        Unit { wgp, ..self }
    }
}

/// One stream of one generation, with the clock its TIME and WAVE_ALLOC tokens have moved.
pub struct Rdna {
    tokens: &'static TokenTable,
    shapes: TokenShapes,
    /// `None` for gfx12.5, whose fields have no table yet (only its token table is known).
    fields: Option<&'static RdnaFields>,
    bits: Bits,
    clock: u64,
}

impl Rdna {
    /// A stream starting with `header`.
    pub fn new(header: Header) -> Self {
        let (tokens, fields) = match header.version {
            1 | 2 => (&gfx10::ARCH.tokens, Some(&gfx10::ARCH.fields)),
            3 => (&gfx11::ARCH.tokens, Some(&gfx11::ARCH.fields)),
            4 => (&gfx12::ARCH.tokens, Some(&gfx12::ARCH.fields)),
            5 => (&gfx1250::TABLE, None),
            version => panic!("no RDNA generation has HEADER version {version}"),
        };
        let mut stream = Rdna {
            tokens,
            shapes: token_shapes(tokens),
            fields,
            bits: Bits::default(),
            clock: 0,
        };
        stream.raw(TokenKind::Header, u128::from(header.word()));
        stream
    }

    /// The stream's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        self.bits.bytes.clone()
    }

    /// The stream's bytes and 16 zero bytes: the decoder reads the last token in its tail loop,
    /// as at the end of a real buffer.
    pub fn padded(&self) -> Vec<u8> {
        let mut bytes = self.bytes();
        bytes.resize(bytes.len() + 16, 0);
        bytes
    }

    /// Bytes written so far (a token that ends inside a byte counts the byte).
    pub fn byte_len(&self) -> u64 {
        self.bits.byte_len()
    }

    /// Nibbles written so far: where the next token starts.
    pub fn nibble_len(&self) -> usize {
        self.bits.bit / 4
    }

    fn fields(&self) -> &'static RdnaFields {
        self.fields
            .expect("the token's fields are only known up to gfx12")
    }

    fn shape(&self, kind: TokenKind) -> TokenSlot {
        self.shapes[kind as usize].unwrap_or_else(|| panic!("no {kind:?} token in this table"))
    }

    /// The token's time delta field.
    fn delta(&self, kind: TokenKind) -> Field {
        let shape = self.shape(kind);
        bits(shape.delta_shift, shape.delta_mask.count_ones() as u8)
    }

    /// Writes a token of `kind` with `fields`: the kind's pattern (the first byte of the table
    /// that names the kind), the fields, as many bits as the kind's length.
    fn token(&mut self, kind: TokenKind, fields: &[(Field, u64)]) -> &mut Self {
        let raw = fields.iter().fold(
            u128::from(pattern(self.tokens, kind)),
            |raw, &(field, value)| raw | place(field, value),
        );
        self.raw(kind, raw)
    }

    /// Writes the whole token `raw`, which must read as `kind`.
    fn raw(&mut self, kind: TokenKind, raw: u128) -> &mut Self {
        assert_eq!(
            self.tokens[(raw & 0xFF) as usize].kind,
            kind,
            "the fields leave the pattern alone"
        );
        let length = usize::from(self.shape(kind).bits);
        assert!(length == 128 || raw >> length == 0, "{kind:?} fields fit");
        self.bits.put(raw as u64, length.min(64));
        if length > 64 {
            self.bits.put((raw >> 64) as u64, length - 64);
        }
        self
    }

    /// TIME: `cycles` (4-19) later.
    pub fn time(&mut self, cycles: u64) -> &mut Self {
        assert!(self.fields.is_some(), "gfx12.5 TIME tokens add 1, not 4");
        let field = self.delta(TokenKind::Time);
        self.clock += cycles;
        self.token(TokenKind::Time, &[(field, cycles - TIME_BIAS)])
    }

    /// WAVE_ALLOC (which records nothing) with a time delta.
    pub fn wave_alloc(&mut self, delta: u64) -> &mut Self {
        let field = self.delta(TokenKind::WaveAlloc);
        self.clock += delta;
        self.token(TokenKind::WaveAlloc, &[(field, delta)])
    }

    /// Moves the clock to `t`: TIME tokens of 4-19 cycles (never leaving 1-3 cycles, which
    /// no TIME can take), then a WAVE_ALLOC for what is left under 4.
    pub fn at(&mut self, t: u64) -> &mut Self {
        assert!(t >= self.clock, "time runs forward");
        let longest = (1 << self.delta(TokenKind::Time).width) - 1 + TIME_BIAS;
        while t - self.clock >= TIME_BIAS {
            let left = t - self.clock;
            let step = match left.min(longest) {
                step if (1..TIME_BIAS).contains(&(left - step)) => left - TIME_BIAS,
                step => step,
            };
            self.time(step);
        }
        if t > self.clock {
            self.wave_alloc(t - self.clock);
        }
        self
    }

    fn unit(fields: &UnitFields, unit: Unit) -> [(Field, u64); 4] {
        [
            (fields.sa, unit.sa),
            (fields.wgp, unit.wgp),
            (fields.simd, unit.simd),
            (fields.wave, unit.wave),
        ]
    }

    pub fn wave_start(&mut self, unit: Unit) -> &mut Self {
        self.wave_start_count(unit, 0)
    }

    /// WAVE_START with `count` (66-75: context save/restore traffic).
    pub fn wave_start_count(&mut self, unit: Unit, count: u64) -> &mut Self {
        let f = self.fields();
        let [a, b, c, d] = Self::unit(&f.wave_start, unit);
        self.token(
            TokenKind::WaveStart,
            &[a, b, c, d, (f.wave_start_count, count)],
        )
    }

    /// WAVE_START_EXT, laid out as WAVE_START (SQTT_FORMAT §1.5); no extension bytes follow.
    pub fn wave_start_ext(&mut self, unit: Unit) -> &mut Self {
        let fields = Self::unit(&self.fields().wave_start, unit);
        self.token(TokenKind::WaveStartExt, &fields)
    }

    /// gfx12: extension bytes after a WAVE_START_EXT, each with its bit 0 set.
    pub fn extension_bytes(&mut self, bytes: &[u8]) -> &mut Self {
        for &byte in bytes {
            assert!(byte & 1 != 0, "an extension byte has bit 0 set");
            self.bits.put(u64::from(byte), 8);
        }
        self
    }

    /// `nibbles` NOPs: padding.
    pub fn padding(&mut self, nibbles: usize) -> &mut Self {
        for _ in 0..nibbles {
            self.bits.put(0, 4);
        }
        self
    }

    pub fn wave_end(&mut self, unit: Unit) -> &mut Self {
        let fields = Self::unit(&self.fields().wave_end, unit);
        self.token(TokenKind::WaveEnd, &fields)
    }

    /// INST `id` of `wave` on the traced SIMD (or, for other-SIMD ids, on another SIMD).
    pub fn inst(&mut self, wave: u64, id: u64) -> &mut Self {
        let f = self.fields();
        self.token(TokenKind::Inst, &[(f.inst_wave, wave), (f.inst_id, id)])
    }

    pub fn valu(&mut self, wave: u64) -> &mut Self {
        let field = self.fields().valu_wave;
        self.token(TokenKind::ValuInst, &[(field, wave)])
    }

    /// VALU_INST of a wave64 wave (the `w64h` bit set).
    pub fn valu_wave64(&mut self, wave: u64) -> &mut Self {
        let f = self.fields();
        self.token(
            TokenKind::ValuInst,
            &[(f.valu_wave, wave), (f.valu_wave64, 1)],
        )
    }

    pub fn imm_one(&mut self, wave: u64) -> &mut Self {
        let field = self.fields().imm_one_wave;
        self.token(TokenKind::ImmOne, &[(field, wave)])
    }

    /// IMMEDIATE of the wave slots in `mask`.
    pub fn immediate(&mut self, mask: u64) -> &mut Self {
        self.token(TokenKind::Immediate, &[(SLOT_MASK, mask)])
    }

    /// WAVE_READY of the wave slots in `mask`.
    pub fn wave_ready(&mut self, mask: u64) -> &mut Self {
        self.token(TokenKind::WaveReady, &[(SLOT_MASK, mask)])
    }

    /// NEW_PC of `wave` pointing at byte address `pc`.
    pub fn new_pc(&mut self, wave: u64, pc: u64) -> &mut Self {
        let f = self.fields();
        // The fields count from where the contents start, `new_pc_skip` nibbles in.
        let skip = 4 * f.new_pc_skip as u8;
        let at = |field: Field| bits(field.lo + skip, field.width);
        self.token(
            TokenKind::NewPc,
            &[(at(f.new_pc_wave), wave), (at(f.new_pc_address), pc >> 2)],
        )
    }

    /// MISC with the flags of bits 16.. ([`MISC_SAVE_CONTEXT`], [`MISC_PACKET_LOST_OR_SPM`]).
    pub fn misc(&mut self, flags: u64) -> &mut Self {
        self.token(TokenKind::Misc, &[(misc::FLAGS, flags)])
    }

    /// A TIMESTAMP that advances the clock by `cycles` (gfx10: kind 1; later: no flag set).
    pub fn long_delta(&mut self, cycles: u64) -> &mut Self {
        self.clock = self.clock.wrapping_add(cycles);
        match self.fields().timestamp {
            TimestampFields::Kind { kind, value } => {
                self.token(TokenKind::Timestamp, &[(kind, 1), (value, cycles)])
            }
            TimestampFields::Flags { value, .. } => {
                self.token(TokenKind::Timestamp, &[(value, cycles)])
            }
        }
    }

    /// A TIMESTAMP that reports realtime clock `value` (gfx10: kind 2; later: the realtime
    /// flag), sampled at the shader clock.
    pub fn realtime_sample(&mut self, value: u64) -> &mut Self {
        match self.fields().timestamp {
            TimestampFields::Kind { kind, value: field } => {
                self.token(TokenKind::Timestamp, &[(kind, 2), (field, value)])
            }
            TimestampFields::Flags {
                realtime,
                value: field,
                ..
            } => self.token(TokenKind::Timestamp, &[(realtime, 1), (field, value)]),
        }
    }

    /// gfx11/12: a TIMESTAMP that reports lost packets.
    pub fn packet_lost_timestamp(&mut self) -> &mut Self {
        let TimestampFields::Flags { packet_lost, .. } = self.fields().timestamp else {
            panic!("gfx10 TIMESTAMP tokens report no packet loss")
        };
        self.token(TokenKind::Timestamp, &[(packet_lost, 1)])
    }

    pub fn reg(&mut self, write: RegWrite) -> &mut Self {
        self.raw(TokenKind::Reg, u128::from(write.encode()))
    }

    /// REG: a write of dispatcher (me 0, pipe 0) to a compute register (`address` relative to
    /// the compute block).
    pub fn compute_reg(&mut self, address: u64, data: u32) -> &mut Self {
        self.reg(RegWrite {
            me: 0,
            pipe: 0,
            compute: true,
            address,
            data,
        })
    }

    /// REG: a write to a register outside the compute block (e.g. the userdata registers).
    pub fn other_reg(&mut self, address: u64, data: u32) -> &mut Self {
        self.reg(RegWrite {
            me: 0,
            pipe: 0,
            compute: false,
            address,
            data,
        })
    }

    /// SHADER_DATA: a 32-bit word written by the wave at `unit`.
    pub fn shader_data(&mut self, unit: Unit, word: u32) -> &mut Self {
        let f = self.fields().shader_data;
        let [a, b, c, d] = Self::unit(&f.unit, unit);
        self.token(
            TokenKind::ShaderData,
            &[a, b, c, d, (f.data, u64::from(word))],
        )
    }

    /// EVENT `id` of dispatcher `(me, pipe)`, a bottom-of-pipe one if `bop`.
    pub fn event(&mut self, id: u64, bop: bool, me: u64, pipe: u64) -> &mut Self {
        self.token(
            TokenKind::Event,
            &[
                (event::ID, id),
                (event::BOP, u64::from(bop)),
                (event::ME, me),
                (event::PIPE, pipe),
            ],
        )
    }

    /// REG_INIT of COMPUTE_DISPATCH_INITIATOR = `data` by dispatcher `(me, pipe)` (bit 0 of
    /// `data` enables the shader: a dispatch).
    pub fn dispatch_initiator(&mut self, me: u64, pipe: u64, data: u32) -> &mut Self {
        self.token(
            TokenKind::RegInit,
            &[
                (reg_init::PIPE, pipe),
                (reg_init::ME, me),
                (reg_init::TYPE, reg_init::DISPATCH_INITIATOR),
                (reg_init::DATA, u64::from(data)),
            ],
        )
    }
}

/// The first byte that `tokens` reads as `kind`: the kind's pattern, zero above it.
fn pattern(tokens: &TokenTable, kind: TokenKind) -> u8 {
    (0..=255u8)
        .find(|&byte| tokens[usize::from(byte)].kind == kind)
        .expect("the table names the kind")
}

/// `value` at `field`'s position; it must fit the field.
fn place(field: Field, value: u64) -> u128 {
    assert!(
        field.width >= 64 || value >> field.width == 0,
        "{value:#x} fits {field:?}"
    );
    u128::from(value) << field.lo
}
