//! The gfx9 token stream (SQTT_FORMAT §1.7): little-endian 16-bit words whose low 4 bits give
//! the token type, and the type alone gives the length. Field layouts are declared as data.

pub use crate::arch::table::{bits, Field};
use crate::error::ErrorKind;

/// The sixteen token types, in the order of their numbers (the low 4 bits of a token's first
/// word).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Misc,
    Time,
    Reg,
    WaveStart,
    WaveAlloc,
    RegCs,
    WaveEnd,
    Event,
    EventCs,
    EventGfx1,
    Inst,
    InstPc,
    ShaderData,
    Issue,
    Perf,
    RegCsPriv,
}

/// Type number -> (kind, length in 16-bit words).
const TOKEN_TABLE: [(Kind, usize); 16] = [
    (Kind::Misc, 1),
    (Kind::Time, 4),
    (Kind::Reg, 4),
    (Kind::WaveStart, 2),
    (Kind::WaveAlloc, 1),
    (Kind::RegCs, 3),
    (Kind::WaveEnd, 1),
    (Kind::Event, 1),
    (Kind::EventCs, 1),
    (Kind::EventGfx1, 1),
    (Kind::Inst, 1),
    (Kind::InstPc, 4),
    (Kind::ShaderData, 3),
    (Kind::Issue, 2),
    (Kind::Perf, 4),
    (Kind::RegCsPriv, 3),
];

/// [`TOKEN_TABLE`]'s lengths packed four bits per type (type 0 lowest): the next token's position
/// depends on this one's length, and a shift of a constant is quicker than a table load.
const WORDS_BY_TYPE: u64 = {
    let mut packed = 0u64;
    let mut t = 0;
    while t < 16 {
        packed |= (TOKEN_TABLE[t].1 as u64) << (4 * t);
        t += 1;
    }
    packed
};

/// The 8-byte software header before the token words (SQTT_FORMAT §1.1).
pub mod header {
    use super::{bits, Field};
    use crate::stream::header::GFX9_VERSION_BITS;
    /// 4 = MI200 or older (gfx90a), 5 = MI300 (gfx942), 6 = MI350 (gfx950).
    pub const VERSION: Field = bits(GFX9_VERSION_BITS.0, GFX9_VERSION_BITS.1);
    pub const TARGET_CU: Field = bits(20, 5);
    pub const DOUBLE_BUFFER: Field = bits(32, 1);
}

/// Time increment of every type but MISC (bit 4), in units of 4 cycles.
pub const DELTA: Field = bits(4, 1);
/// MISC: 8-bit time increment, the `sh` bit and the misc type.
pub mod misc {
    use super::{bits, Field};
    pub const DELTA: Field = bits(4, 8);
    pub const TYPE: Field = bits(13, 3);
    pub const TIME_RESET: u64 = 1;
    pub const PACKET_LOST: u64 = 2;
    pub const TT_STALL_BEGIN: u64 = 4;
    pub const TT_STALL_END: u64 = 5;
    pub const SAVE_CONTEXT: u64 = 6;
}
/// TIME: the 48-bit absolute shader clock.
pub const TIME_VALUE: Field = bits(16, 48);
/// WAVE_START / WAVE_ALLOC / WAVE_END, and the location part of SHADERDATA.
pub mod wave {
    use super::{bits, Field};
    pub const SH: Field = bits(5, 1);
    pub const CU: Field = bits(6, 4);
    pub const SLOT: Field = bits(10, 4);
    pub const SIMD: Field = bits(14, 2);
    pub const PIPE: Field = bits(16, 2);
    pub const ME: Field = bits(18, 2);
    pub const COUNT: Field = bits(22, 7);
    pub const WORKGROUP: Field = bits(29, 3);
}
/// REG (64 bits).
pub mod reg {
    use super::{bits, Field};
    pub const PIPE: Field = bits(5, 2);
    pub const ME: Field = bits(7, 2);
    pub const ENABLE: Field = bits(15, 1);
    pub const ADDR: Field = bits(16, 16);
    pub const DATA: Field = bits(32, 32);
}
/// REG_CS / REG_CS_PRIV (48 bits): compute-block-relative address.
pub mod reg_cs {
    use super::{bits, Field};
    pub const PIPE: Field = bits(5, 2);
    pub const ME: Field = bits(7, 2);
    pub const ADDR: Field = bits(9, 7);
    pub const DATA: Field = bits(16, 32);
}
/// INST (16 bits) and INST_PC (64 bits).
pub mod inst {
    use super::{bits, Field};
    pub const SLOT: Field = bits(5, 4);
    pub const SIMD: Field = bits(9, 2);
    pub const TYPE: Field = bits(11, 5);
    pub const PC: Field = bits(16, 48);
}
/// SHADERDATA payload.
pub const SHADER_DATA: Field = bits(16, 32);
/// ISSUE (32 bits): the SIMD and a 2-bit status per wave slot from bit 8.
pub mod issue {
    use super::{bits, Field};
    pub const SIMD: Field = bits(5, 2);
    /// Ten 2-bit statuses, wave slot 0 lowest.
    pub const STATUSES: Field = bits(8, 20);
}
/// PERF (64 bits).
pub mod perf {
    use super::{bits, Field};
    pub const SH: Field = bits(5, 1);
    pub const CU: Field = bits(6, 4);
    pub const BANK: Field = bits(10, 2);
    pub const COUNTERS: [Field; 4] = [bits(12, 13), bits(25, 13), bits(38, 13), bits(51, 13)];
}

/// Me as the parser uses it: the raw 2-bit field plus one, modulo 2.
pub fn me_from_raw(raw: u64) -> u8 {
    ((raw + 1) & 1) as u8
}

/// One token as it sits in the buffer: two words, passed in registers. Its type and so its
/// length are in the value's low 4 bits.
#[derive(Clone, Copy, Debug)]
pub struct RawToken {
    /// The token's words assembled little-endian; bits beyond its length are zero.
    pub value: u64,
    /// Byte offset of the token within the token area (after the 8-byte header).
    pub offset: usize,
}

impl RawToken {
    #[inline]
    pub fn kind(&self) -> Kind {
        TOKEN_TABLE[(self.value & 0xF) as usize].0
    }

    /// Length in bytes.
    #[inline]
    pub fn byte_len(&self) -> usize {
        words(self.value as u8) * 2
    }

    /// Time increment in cycles.
    #[inline]
    pub fn delta(&self) -> i64 {
        // MISC's increment field is 8 bits wide, every other type's is bit 4.
        let field = if self.value & 0xF == MISC {
            misc::DELTA
        } else {
            DELTA
        };
        (field.get(self.value) * 4) as i64
    }

    /// (The reader tells a TIME_RESET by its word; the tests' token-by-token model by this.)
    #[cfg(test)]
    pub fn is_time_reset(&self) -> bool {
        self.value & 0xF == MISC && misc::TYPE.get(self.value) == misc::TIME_RESET
    }
}

/// Reads the token starting at `offset`, or `None` when the buffer ends before it starts. A
/// token cut by the end of the buffer reads as if zeroes followed: the reference decodes every
/// token that starts inside the buffer.
#[inline]
pub fn read_at(data: &[u8], offset: usize) -> Option<RawToken> {
    match data.get(offset..).and_then(|rest| rest.first_chunk::<8>()) {
        // Fast path: one load; the bytes beyond the token are masked off.
        Some(eight) => Some(token_from(u64::from_le_bytes(*eight), offset)),
        None => {
            let rest = data.get(offset..).filter(|rest| !rest.is_empty())?;
            let value = rest.iter().rev().fold(0u64, |v, &b| v << 8 | b as u64);
            Some(token_from(value, offset))
        }
    }
}

/// The 8 bytes from `pos`, little-endian, read without a bound check.
///
/// # Safety
/// `pos + 8 <= data.len()`.
#[inline(always)]
unsafe fn window_at(data: &[u8], pos: usize) -> u64 {
    // SAFETY: the caller keeps the 8 bytes inside `data`.
    u64::from_le_bytes(unsafe { data.as_ptr().add(pos).cast::<[u8; 8]>().read_unaligned() })
}

/// Length of a token type in 16-bit words.
#[inline]
pub fn words(token_type: u8) -> usize {
    ((WORDS_BY_TYPE >> (4 * (token_type & 0xF))) & 0xF) as usize
}

/// The token whose first eight bytes (or all of its bytes) are `bytes`, little-endian.
#[inline]
fn token_from(bytes: u64, offset: usize) -> RawToken {
    let len = words(bytes as u8) * 2;
    RawToken {
        value: bytes & (u64::MAX >> (64 - 8 * len)),
        offset,
    }
}

/// Type numbers of the two most frequent token types that the parser sees.
const INST: u64 = Kind::Inst as u64;
const ISSUE: u64 = Kind::Issue as u64;
/// Type numbers of MISC (its own increment field; the most frequent type of all, most of its
/// tokens pure time) and TIME: the two types a TIME_RESET's search may consume.
const MISC: u64 = Kind::Misc as u64;
const TIME: u64 = Kind::Time as u64;
/// Type numbers of the compute register writes, most of a dispatch preamble's tokens.
const REG_CS: u64 = Kind::RegCs as u64;
const REG_CS_PRIV: u64 = Kind::RegCsPriv as u64;

/// The types [`TimedReader::take_quiet`] is entered for: MISC (not time only), TIME, REG,
/// REG_CS and REG_CS_PRIV, the tokens of dispatch preambles and TIME_RESET/TIME pairs.
const QUIET_TYPES: u64 = 1 << MISC
    | 1 << TIME
    | 1 << Kind::Reg as u64
    | 1 << Kind::RegCs as u64
    | 1 << Kind::RegCsPriv as u64;

/// A MISC token of misc type 0 carries nothing but its time increment: its type and misc type
/// bits are all zero.
const PURE_TIME_MASK: u64 = 0xE00F;

/// The time increment in cycles of a token other than MISC, whose first bytes are `word`: bit 4,
/// in units of 4 cycles.
#[inline(always)]
fn increment(word: u64) -> i64 {
    DELTA.get(word) as i64 * 4
}

/// The time increment in cycles of a MISC token, whose first bytes are `word`: its 8-bit field,
/// in units of 4 cycles.
#[inline(always)]
fn misc_increment(word: u64) -> i64 {
    misc::DELTA.get(word) as i64 * 4
}

/// Takes the token of `kind` (one whose increment is bit 4) from the 8 bytes `word` at `pos`;
/// returns its value and the bytes after it. Inlined where `kind` and so its length are
/// constants.
#[inline(always)]
fn take_hot(kind: Kind, word: u64, pos: &mut usize, clock: &mut i64) -> (u64, u64) {
    let len = words(kind as u8) * 2;
    *pos += len;
    *clock += increment(word);
    (word & (u64::MAX >> (64 - 8 * len)), word >> (8 * len))
}

/// Takes the tokens at `pos`, whose first words are the low 16 and next 16 bits of `next`,
/// while they are pure-time MISC tokens. Without a branch: an ISSUE or INST is often followed
/// by one or two, but which is hard to predict.
#[inline(always)]
fn absorb_pure_time(next: u64, pos: &mut usize, clock: &mut i64) {
    let first = u64::from(next & PURE_TIME_MASK == 0);
    let second = first & u64::from((next >> 16) & PURE_TIME_MASK == 0);
    *pos += 2 * (first + second) as usize;
    let cycles = misc::DELTA.get(next) * first + misc::DELTA.get(next >> 16) * second;
    *clock += (cycles * 4) as i64;
}

/// Whether the 16 bits at the start of `word`, a MISC token, carry only time for the parser (see
/// [`TimedReader::take`]): not a TIME_RESET, and none of the types the parser reports.
#[inline(always)]
fn is_time_only_misc(word: u64) -> bool {
    !matches!(
        misc::TYPE.get(word),
        misc::TIME_RESET
            | misc::PACKET_LOST
            | misc::TT_STALL_BEGIN
            | misc::TT_STALL_END
            | misc::SAVE_CONTEXT
    )
}

/// [`PURE_TIME_MASK`] in each of four 16-bit words.
const PURE_TIME_WORDS: u64 = PURE_TIME_MASK * 0x0001_0001_0001_0001;

/// The increment in cycles of the four pure-time MISC tokens of the 8 bytes `word` (words of
/// zeros add nothing).
#[inline(always)]
fn window_increments(word: u64) -> i64 {
    // Each word's 8-bit increment in its low byte; the multiplication sums the four words'
    // into the top word (at most 4 × 255).
    let increments = (word >> misc::DELTA.lo) & 0x00FF_00FF_00FF_00FF;
    ((increments.wrapping_mul(0x0001_0001_0001_0001) >> 48) * 4) as i64
}

/// The run of pure-time MISC tokens at the start of the 8 bytes `word` (its first word is one):
/// how many (1 to 4) and their increment in cycles. Runs are common in quiet stretches; taken
/// four at a time, the next read waits for one position update instead of four.
#[inline(always)]
fn pure_time_run(word: u64) -> (usize, i64) {
    let words = ((word & PURE_TIME_WORDS).trailing_zeros() / 16) as usize;
    let kept = u64::MAX >> (64 - 16 * words);
    (words, window_increments(word & kept))
}

/// What the parser does with the tokens it sees. ISSUE and INST, most of a busy stream, have
/// methods of their own; `Err` rejects a token and says why.
pub trait Visitor {
    fn issue(&mut self, value: u64, time: i64);
    fn inst(&mut self, value: u64, time: i64) -> Result<(), ErrorKind>;
    /// Any other token.
    fn other(&mut self, token: RawToken, time: i64) -> Result<(), ErrorKind>;
    /// A compute register write (REG_CS, REG_CS_PRIV) among the quiet stretches' tokens, where
    /// most of a dispatch preamble's tokens are: a visitor may take it without dispatching on
    /// the type again.
    fn register_write(&mut self, token: RawToken, time: i64) -> Result<(), ErrorKind> {
        self.other(token, time)
    }
}

/// The token reader with the shader clock: every token adds its increment when it is taken
/// from the stream; a TIME_RESET makes the clock jump to the next TIME token's value at once.
pub struct TimedReader<'a> {
    data: &'a [u8],
    /// `TIME value − clock` fixed at the first TIME update of the buffer.
    base: Option<i64>,
    /// Offset of a token the TIME_RESET search consumed (the TIME token, or a second TIME_RESET
    /// whose increment is lost), skipped when the reader reaches it; `usize::MAX` when none.
    consumed_at: usize,
}

impl<'a> TimedReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        TimedReader {
            data,
            base: None,
            consumed_at: usize::MAX,
        }
    }

    /// Hands every token the parser sees to `visitor` with its time, until the buffer ends or
    /// the visitor rejects one (`Err` with why and the token's offset); TIME tokens and MISC
    /// tokens that only carry time never reach it. Reads the buffer once, from its start.
    #[inline]
    pub fn visit_all(&mut self, visitor: &mut impl Visitor) -> Result<(), (ErrorKind, usize)> {
        // The position and the shader clock live in locals (registers), handed to the paths out
        // of line and back by value.
        let data = self.data;
        let (mut pos, mut clock) = (0, 0);
        // Positions below `end` have 8 bytes to read; computed once, so the loop tests one bound.
        let end = data.len().saturating_sub(7);
        while pos < end {
            let offset = pos;
            // SAFETY: `offset < data.len() - 7` (a checked read tested the bound twice and cost
            // the small traces 7 % of their instructions: the position did not stay in a
            // register).
            let word = unsafe { window_at(data, offset) };
            // The hot types have arms of their own: the next token's read need not wait for this
            // one's type, and the visitor is not dispatched again. Pure-time MISC, ISSUE and INST
            // tokens are never one a TIME_RESET search consumed.
            match word & 0xF {
                MISC if word & PURE_TIME_MASK == 0 && (word >> 16) & PURE_TIME_MASK != 0 => {
                    pos = offset + 2;
                    clock += misc_increment(word);
                }
                MISC if word & PURE_TIME_MASK == 0 => {
                    let (words, cycles) = pure_time_run(word);
                    pos = offset + 2 * words;
                    clock += cycles;
                }
                MISC if is_time_only_misc(word) => {
                    pos = offset + 2;
                    clock += misc_increment(word);
                }
                ISSUE => {
                    let (value, rest) = take_hot(Kind::Issue, word, &mut pos, &mut clock);
                    visitor.issue(value, clock);
                    absorb_pure_time(rest, &mut pos, &mut clock);
                }
                INST => {
                    let (value, rest) = take_hot(Kind::Inst, word, &mut pos, &mut clock);
                    let result = visitor.inst(value, clock);
                    absorb_pure_time(rest, &mut pos, &mut clock);
                    result.map_err(|kind| (kind, offset))?;
                }
                _ => (pos, clock) = self.take_rare(visitor, word, offset, clock)?,
            }
        }
        self.take_last(visitor, pos, clock)
    }

    /// Takes the last tokens, from `pos` on, with fewer than 8 bytes after them. Out of line:
    /// inlined, its code made the walk's loop keep its buffer pointer on the stack.
    #[inline(never)]
    fn take_last(
        &mut self,
        visitor: &mut impl Visitor,
        mut pos: usize,
        mut clock: i64,
    ) -> Result<(), (ErrorKind, usize)> {
        while let Some(token) = read_at(self.data, pos) {
            match token.kind() {
                Kind::Issue => {
                    clock += token.delta();
                    visitor.issue(token.value, clock);
                }
                Kind::Inst => {
                    clock += token.delta();
                    visitor
                        .inst(token.value, clock)
                        .map_err(|kind| (kind, pos))?;
                }
                _ => {
                    (_, clock) = self.take(visitor, token.value, pos, clock)?;
                }
            }
            pos += token.byte_len();
        }
        Ok(())
    }

    /// Takes the token at `offset` (neither a hot type nor a time-only MISC) whose first 8
    /// bytes are `word`, and with a token of [`QUIET_TYPES`] the stretch it starts; returns the
    /// position after them and the clock there. Out of line: the walk's loop keeps the hot
    /// types' registers.
    #[inline(never)]
    fn take_rare(
        &mut self,
        visitor: &mut impl Visitor,
        word: u64,
        offset: usize,
        clock: i64,
    ) -> Result<(usize, i64), (ErrorKind, usize)> {
        if QUIET_TYPES >> (word & 0xF) & 1 != 0 {
            return self.take_quiet(visitor, offset, clock);
        }
        // A wave, INST_PC, SHADERDATA, PERF or EVENT token among the waves' instructions:
        // never one a TIME_RESET search consumed.
        let token = token_from(word, offset);
        let clock = clock + token.delta();
        visitor.other(token, clock).map_err(|kind| (kind, offset))?;
        Ok((offset + token.byte_len(), clock))
    }

    /// Takes the tokens from `pos` (a token of one of [`QUIET_TYPES`], `clock` the clock before
    /// it) up to the next ISSUE or INST, or to the last 8 bytes; returns where it stopped and
    /// the clock there. The stretches between the waves' instructions (dispatch preambles,
    /// register writes, TIME_RESET and TIME pairs) go through a loop of their own, out of line:
    /// the walk's loop keeps the hot types' registers and pays one call a stretch.
    #[inline(never)]
    fn take_quiet(
        &mut self,
        visitor: &mut impl Visitor,
        mut pos: usize,
        mut clock: i64,
    ) -> Result<(usize, i64), (ErrorKind, usize)> {
        let data = self.data;
        let end = data.len().saturating_sub(7);
        while pos < end {
            // SAFETY: `pos < data.len() - 7`.
            let word = unsafe { window_at(data, pos) };
            match word & 0xF {
                ISSUE | INST => break,
                // A pure-time MISC alone: most of them in dispatch preambles.
                MISC if word & PURE_TIME_MASK == 0 && (word >> 16) & PURE_TIME_MASK != 0 => {
                    pos += 2;
                    clock += misc_increment(word);
                }
                MISC if word & PURE_TIME_MASK == 0 => {
                    // Runs of 7 to 15 are common here: whole windows of time first, whose sum
                    // needs no run length and whose next read waits for nothing, then the
                    // window the run ends in.
                    let mut run = word;
                    loop {
                        if run & PURE_TIME_WORDS != 0 {
                            let (words, cycles) = pure_time_run(run);
                            pos += 2 * words;
                            clock += cycles;
                            break;
                        }
                        pos += 8;
                        clock += window_increments(run);
                        if pos >= end {
                            break;
                        }
                        // SAFETY: `pos < data.len() - 7`, as above.
                        run = unsafe { window_at(data, pos) };
                        if run & PURE_TIME_MASK != 0 {
                            break;
                        }
                    }
                }
                _ => (pos, clock) = self.take(visitor, word, pos, clock)?,
            }
        }
        Ok((pos, clock))
    }

    /// Takes the token at `pos` whose first 8 bytes (or all of its bytes) are `word`, neither
    /// an ISSUE nor an INST, at the clock `clock` before it: applies it to the clock, and passes
    /// it to the visitor if the parser sees it; returns the position and the clock after it.
    /// Told by its type, with each type's length a constant: most of these tokens only move
    /// the clock or write a register, and are taken without building a token.
    #[inline(always)]
    fn take(
        &mut self,
        visitor: &mut impl Visitor,
        word: u64,
        pos: usize,
        clock: i64,
    ) -> Result<(usize, i64), (ErrorKind, usize)> {
        let at = |kind| (kind, pos);
        // Only a TIME or a second TIME_RESET is ever consumed by a search: it moves nothing.
        match word & 0xF {
            TIME if pos == self.consumed_at => {
                self.consumed_at = usize::MAX;
                Ok((pos + 8, clock))
            }
            TIME => Ok((pos + 8, clock + increment(word))),
            MISC => {
                let misc_type = misc::TYPE.get(word);
                if misc_type == misc::TIME_RESET && pos == self.consumed_at {
                    self.consumed_at = usize::MAX;
                    return Ok((pos + 2, clock));
                }
                let clock = clock + misc_increment(word);
                match misc_type {
                    misc::TIME_RESET => Ok((pos + 2, self.search_time(pos + 2, clock))),
                    _ if is_time_only_misc(word) => Ok((pos + 2, clock)),
                    // PACKET_LOST, TT_STALL_BEGIN, TT_STALL_END, SAVE_CONTEXT.
                    _ => {
                        let token = token_from(word, pos);
                        visitor.other(token, clock).map_err(at)?;
                        Ok((pos + 2, clock))
                    }
                }
            }
            REG_CS | REG_CS_PRIV => {
                let mut next = pos;
                let mut clock = clock;
                let (value, _) = take_hot(Kind::RegCs, word, &mut next, &mut clock);
                let token = RawToken { value, offset: pos };
                visitor.register_write(token, clock).map_err(at)?;
                Ok((next, clock))
            }
            // Every other type.
            _ => {
                let token = token_from(word, pos);
                let clock = clock + token.delta();
                visitor.other(token, clock).map_err(at)?;
                Ok((pos + token.byte_len(), clock))
            }
        }
    }

    /// Looks ahead from `offset` for the TIME token that follows a TIME_RESET and returns the
    /// clock it sets (`clock`, the clock at the reset, when there is none); the tokens passed
    /// over are taken later in order, with their own increments. While 8 bytes remain a token
    /// is read with one load, then through [`read_at`].
    fn search_time(&mut self, mut offset: usize, clock: i64) -> i64 {
        let data = self.data;
        let end = data.len().saturating_sub(7);
        while offset < end {
            // SAFETY: `offset < data.len() - 7`.
            let word = unsafe { window_at(data, offset) };
            if let Some(found) = self.search_ends_at(word, offset, clock) {
                return found;
            }
            offset += words(word as u8) * 2;
        }
        while let Some(token) = read_at(data, offset) {
            if let Some(found) = self.search_ends_at(token.value, offset, clock) {
                return found;
            }
            offset += token.byte_len();
        }
        clock
    }

    /// Whether the search of a TIME_RESET at the clock `clock` ends at the token at `offset`
    /// (whose first 8 bytes are `word`), and with which clock: a TIME sets it, a second
    /// TIME_RESET keeps it. Either is consumed.
    #[inline(always)]
    fn search_ends_at(&mut self, word: u64, offset: usize, clock: i64) -> Option<i64> {
        let found = match word & 0xF {
            TIME => self.update(TIME_VALUE.get(word) as i64, clock),
            MISC if misc::TYPE.get(word) == misc::TIME_RESET => clock,
            _ => return None,
        };
        self.consumed_at = offset;
        Some(found)
    }

    /// The clock after a TIME token of value `time` found by a search from the clock `clock`.
    fn update(&mut self, time: i64, clock: i64) -> i64 {
        let base = *self.base.get_or_insert(time - clock + 4);
        if time > base {
            (time - base) & !3
        } else {
            clock
        }
    }
}

#[cfg(test)]
pub mod encode {
    //! A minimal encoder for the word stream, built from the format document, for tests.
    use super::Field;

    #[derive(Default)]
    pub struct Encoder {
        pub bytes: Vec<u8>,
    }

    impl Encoder {
        /// Appends a token of `type_` with `words` words and the given fields set.
        pub fn token(&mut self, type_: u64, words: usize, fields: &[(Field, u64)]) -> &mut Self {
            let mut value = type_;
            for (f, v) in fields {
                assert_eq!(f.get(*v << f.lo), *v, "value does not fit its field");
                value |= v << f.lo;
            }
            self.bytes
                .extend_from_slice(&value.to_le_bytes()[..words * 2]);
            self
        }

        pub fn misc(&mut self, delta: u64, misc_type: u64) -> &mut Self {
            self.token(
                0,
                1,
                &[(super::misc::DELTA, delta), (super::misc::TYPE, misc_type)],
            )
        }

        pub fn time(&mut self, value: u64) -> &mut Self {
            self.token(1, 4, &[(super::TIME_VALUE, value)])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::encode::Encoder;
    use super::*;

    fn times(data: &[u8]) -> Vec<(Kind, i64)> {
        struct Seen(Vec<(Kind, i64)>);
        impl Visitor for Seen {
            fn issue(&mut self, _: u64, time: i64) {
                self.0.push((Kind::Issue, time));
            }
            fn inst(&mut self, _: u64, time: i64) -> Result<(), ErrorKind> {
                self.0.push((Kind::Inst, time));
                Ok(())
            }
            fn other(&mut self, token: RawToken, time: i64) -> Result<(), ErrorKind> {
                self.0.push((token.kind(), time));
                Ok(())
            }
        }
        let mut seen = Seen(Vec::new());
        let _ = TimedReader::new(data).visit_all(&mut seen);
        seen.0
    }

    /// The reader's clock rules applied one token at a time, as SQTT_FORMAT §1.7 and ERRATA
    /// state them, without the walk's fast paths: what every path of `visit_all` must equal.
    fn times_token_by_token(data: &[u8]) -> Vec<(Kind, i64)> {
        let (mut seen, mut clock, mut base) = (Vec::new(), 0i64, None);
        let mut consumed = None;
        let mut offset = 0;
        while let Some(token) = read_at(data, offset) {
            offset += token.byte_len();
            if consumed == Some(token.offset) {
                consumed = None;
                continue;
            }
            clock += token.delta();
            let kind = token.kind();
            if token.is_time_reset() {
                let mut ahead = offset;
                while let Some(next) = read_at(data, ahead) {
                    if next.is_time_reset() || next.kind() == Kind::Time {
                        consumed = Some(ahead);
                        if next.kind() == Kind::Time {
                            let time = TIME_VALUE.get(next.value) as i64;
                            let base = *base.get_or_insert(time - clock + 4);
                            if time > base {
                                clock = (time - base) & !3;
                            }
                        }
                        break;
                    }
                    ahead += next.byte_len();
                }
            } else if kind != Kind::Time && !(kind == Kind::Misc && is_time_only_misc(token.value))
            {
                seen.push((kind, clock));
            }
        }
        seen
    }

    #[test]
    fn every_path_of_the_walk_keeps_the_clock_of_the_plain_rules() {
        use crate::testing::Rng;
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..400 {
            let mut e = Encoder::default();
            for _ in 0..rng.below(120usize) {
                match rng.below(12u32) {
                    // Runs of pure-time MISC tokens, any length (up to five whole windows).
                    0..=2 => {
                        for _ in 0..rng.below(21u64) + 1 {
                            e.misc(rng.below(256), 0);
                        }
                    }
                    3 => {
                        e.misc(rng.below(256), 1);
                    }
                    4 => {
                        e.misc(rng.below(256), rng.below(8));
                    }
                    5 => {
                        e.time(rng.below(1 << 20));
                    }
                    // ISSUE, INST and the rest, with random contents.
                    6 | 7 => {
                        e.token(13, 2, &[(bits(4, 28), rng.below(1 << 28))]);
                    }
                    8 | 9 => {
                        e.token(10, 1, &[(bits(4, 12), rng.below(1 << 12))]);
                    }
                    _ => {
                        let token_type =
                            [2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 14, 15][rng.below(12usize)];
                        let words = words(token_type as u8);
                        let width = 16 * words as u8 - 4;
                        let value = rng.next_u64() & ((1 << width) - 1);
                        e.token(token_type, words, &[(bits(4, width), value)]);
                    }
                }
            }
            // Cut anywhere, so the last tokens may be cut too.
            let cut = rng.below(e.bytes.len() + 1);
            let data = &e.bytes[..cut];
            assert_eq!(
                times(data),
                times_token_by_token(data),
                "stream {data:02x?}"
            );
        }
    }

    #[test]
    fn lengths_come_from_the_type() {
        let mut e = Encoder::default();
        e.token(3, 2, &[(DELTA, 1)])
            .token(13, 2, &[])
            .token(14, 4, &[])
            .token(6, 1, &[(DELTA, 1)]);
        let kinds = times(&e.bytes);
        assert_eq!(
            kinds,
            vec![
                (Kind::WaveStart, 4),
                (Kind::Issue, 4),
                (Kind::Perf, 4),
                (Kind::WaveEnd, 8)
            ]
        );
    }

    #[test]
    fn time_only_misc_tokens_advance_the_clock_unseen() {
        let mut e = Encoder::default();
        e.misc(3, 0).misc(1, 3).token(6, 1, &[(DELTA, 1)]);
        assert_eq!(times(&e.bytes), vec![(Kind::WaveEnd, 20)]);
    }

    #[test]
    fn runs_of_time_tokens_of_any_length_count_once_each() {
        // Runs of 1 to 20 pure-time MISC tokens (a misc type other than 0 ends one; up to five
        // whole 8-byte windows), each before a WAVE_END: the clock at each WAVE_END is the sum
        // of every increment before it.
        let mut e = Encoder::default();
        let mut expected = Vec::new();
        let mut clock = 0;
        for run in 1..21u64 {
            for k in 0..run {
                e.misc(run * 7 + k, 0);
                clock += 4 * (run * 7 + k) as i64;
            }
            e.misc(1, 4);
            clock += 4;
            expected.push((Kind::Misc, clock));
            e.token(6, 1, &[(DELTA, 1)]);
            clock += 4;
            expected.push((Kind::WaveEnd, clock));
        }
        e.bytes.extend_from_slice(&[0; 8]);
        let seen: Vec<_> = times(&e.bytes).into_iter().take(expected.len()).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn whole_windows_of_time_sum_their_largest_increments() {
        // A TIME starts a quiet stretch; 13 pure-time MISC tokens of the largest increment
        // follow (three whole windows and one more), then a WAVE_END.
        let mut e = Encoder::default();
        e.time(0);
        for _ in 0..13 {
            e.misc(255, 0);
        }
        e.token(6, 1, &[(DELTA, 1)]);
        e.bytes.extend_from_slice(&[0; 8]);
        assert_eq!(times(&e.bytes)[0], (Kind::WaveEnd, 13 * 255 * 4 + 4));
    }

    #[test]
    fn runs_of_time_tokens_after_issue_and_inst_all_count() {
        let mut e = Encoder::default();
        e.token(13, 2, &[(DELTA, 1)])
            .misc(1, 0)
            .misc(2, 0)
            .misc(3, 0)
            .token(10, 1, &[])
            .misc(5, 0)
            .misc(1, 4)
            .token(7, 1, &[(DELTA, 1)])
            .token(10, 1, &[])
            .misc(2, 0)
            .token(13, 2, &[]);
        assert_eq!(
            times(&e.bytes),
            vec![
                (Kind::Issue, 4),
                (Kind::Inst, 28),
                (Kind::Misc, 52),
                (Kind::Event, 56),
                (Kind::Inst, 56),
                (Kind::Issue, 64)
            ]
        );
    }

    #[test]
    fn misc_adds_eight_bit_delta_times_four() {
        let mut e = Encoder::default();
        e.misc(255, 4).misc(3, 5);
        assert_eq!(
            times(&e.bytes),
            vec![(Kind::Misc, 1020), (Kind::Misc, 1032)]
        );
    }

    #[test]
    fn time_reset_jumps_at_the_reset_and_keeps_later_increments() {
        let mut e = Encoder::default();
        // clock 8, then a reset (+1020 = 1028); the TIME two tokens later sets base = T - 1028 + 4.
        e.misc(2, 4)
            .misc(255, 1)
            .misc(1, 4)
            .token(6, 1, &[(DELTA, 1)])
            .time(5000);
        e.misc(1, 4);
        let got = times(&e.bytes);
        // first update: clock = (T - base) & !3 = 1024; later tokens still add their increments.
        assert_eq!(
            got,
            vec![
                (Kind::Misc, 8),
                (Kind::Misc, 1028),
                (Kind::WaveEnd, 1032),
                (Kind::Misc, 1036)
            ]
        );
        // A second reset/TIME pair: the clock follows the TIME value relative to the base.
        let mut e2 = Encoder::default();
        e2.misc(0, 1).time(1000).misc(0, 1).time(1400).misc(1, 4);
        let got = times(&e2.bytes);
        // base = 1000 - 0 + 4 = 1004: the first TIME is not after it, the clock stays 0; then
        // 1400 - 1004 = 396, and the last MISC adds 4.
        assert_eq!(got, vec![(Kind::Misc, 400)]);
    }

    #[test]
    fn a_second_reset_ends_the_search_and_loses_its_increment() {
        let mut e = Encoder::default();
        e.misc(0, 1).misc(1, 4).misc(50, 1).misc(1, 4).time(9999);
        let got = times(&e.bytes);
        // No update happens; the second reset's +200 is dropped; the TIME met later in normal
        // flow only adds its bit-4 increment.
        assert_eq!(got, vec![(Kind::Misc, 4), (Kind::Misc, 8)]);
    }

    #[test]
    fn a_token_cut_by_the_end_reads_as_if_zeroes_followed() {
        let mut e = Encoder::default();
        e.misc(1, 4);
        e.bytes.extend_from_slice(&[0x02, 0x00, 0x00]);
        assert_eq!(times(&e.bytes), vec![(Kind::Misc, 4), (Kind::Reg, 4)]);
        assert!(times(&[]).is_empty());
        assert_eq!(times(&[0x0B]), vec![(Kind::InstPc, 0)]);
    }
}
