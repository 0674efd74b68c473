//! Dispatch register state per (me, pipe) and ROCm's instrumentation protocol over
//! `SQ_THREAD_TRACE_USERDATA_2/3` (SQTT_FORMAT §2.2–§2.3, ERRATA part 2 G1).

use crate::records::Pc;

/// Compute registers the parser tracks (addresses relative to the compute register block).
pub mod cs {
    pub const DISPATCH_INITIATOR: u16 = 0x00;
    pub const NUM_THREAD_X: u16 = 0x07;
    pub const NUM_THREAD_Y: u16 = 0x08;
    pub const NUM_THREAD_Z: u16 = 0x09;
    pub const PGM_LO: u16 = 0x0C;
    pub const PGM_HI: u16 = 0x0D;
    pub const DISPATCH_PKT_LO: u16 = 0x0E;
    pub const DISPATCH_PKT_HI: u16 = 0x0F;
    pub const PGM_RSRC1: u16 = 0x12;
    pub const PGM_RSRC2: u16 = 0x13;
    pub const PGM_RSRC3: u16 = 0x2D;
    /// gfx9 "COMPUTE_NOWHERE": event markers.
    pub const NOWHERE: u16 = 0x7F;
    /// Value written to NOWHERE for a CS partial flush.
    pub const EVENT_CS_PARTIAL_FLUSH: u32 = 7;
}

/// Absolute addresses of the userdata registers.
pub const USERDATA_2: u16 = 0xC342;
pub const USERDATA_3: u16 = 0xC343;

/// `'\0','R','O','C'` read as a little-endian word: switches the protocol on.
const ROCM_MAGIC: u32 = u32::from_le_bytes([0, b'R', b'O', b'C']);

const OPCODE_CODEOBJ: u32 = 4;
const OPCODE_RT_TIMESTAMP: u32 = 5;
const OPCODE_AGENT_INFO: u32 = 6;
const OPCODE_RT_TIMESTAMP_LO32: u32 = 7;

/// Code-object payload kinds (the `type` of an opcode-4 header).
const PAYLOAD_TAIL: u32 = 0;
const PAYLOAD_SIZE_LO: u32 = 1;
const PAYLOAD_ADDR_LO: u32 = 2;
const PAYLOAD_ADDR_HI: u32 = 3;
const PAYLOAD_SIZE_HI: u32 = 4;
const PAYLOAD_ID_LO: u32 = 5;
const PAYLOAD_ID_HI: u32 = 6;

/// Register values of one (me, pipe) dispatcher.
#[derive(Clone, Copy, Default, Debug)]
pub struct PipeRegs {
    pub pgm_lo: u32,
    pub pgm_hi: u32,
    pub dispatch_pkt_lo: u32,
    pub dispatch_pkt_hi: u32,
    pub num_threads: [u32; 3],
    pub rsrc1: u32,
    pub rsrc2: u32,
    pub rsrc3: u32,
    /// Code-object fields latched by the protocol until the TAIL word.
    co_addr: u64,
    co_size: u64,
    co_id: u64,
}

impl PipeRegs {
    /// Kernel entry: `((PGM_HI << 32 | PGM_LO) << 8)` within 48 bits.
    pub fn entry_address(&self) -> u64 {
        (((self.pgm_hi as u64) << 32 | self.pgm_lo as u64) << 8) & ((1 << 48) - 1)
    }
}

/// One loaded code object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CodeObject {
    addr: u64,
    size: u64,
    id: u64,
    from_start: bool,
}

/// What a userdata word changed, for the EVENT records of the 0.3.0 ABI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolEvent {
    None,
    CodeObjectLoad(u64),
    CodeObjectUnload(u64),
    /// AGENT_INFO announced the realtime clock frequency (Hz).
    RealtimeFrequency(u64),
    /// AGENT_INFO announced the perf-counter sampling interval (cycles).
    CounterInterval(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Header,
    Payload(u32),
}

/// Register state of one SE buffer.
pub struct Registers {
    pipes: [PipeRegs; 8],
    rocm_format: bool,
    expect: Expect,
    code_objects: Vec<CodeObject>,
    realtime: RealtimeProtocol,
}

impl Default for Registers {
    fn default() -> Self {
        Registers {
            pipes: [PipeRegs::default(); 8],
            rocm_format: false,
            expect: Expect::Header,
            code_objects: Vec::new(),
            realtime: RealtimeProtocol::default(),
        }
    }
}

fn pipe_index(me: u8, pipe: u8) -> usize {
    ((me as usize & 1) << 2) | (pipe as usize & 3)
}

impl Registers {
    pub fn pipe(&self, me: u8, pipe: u8) -> &PipeRegs {
        &self.pipes[pipe_index(me, pipe)]
    }

    /// A compute register write.
    pub fn write_cs(&mut self, me: u8, pipe: u8, addr: u16, data: u32) {
        let regs = &mut self.pipes[pipe_index(me, pipe)];
        match addr {
            cs::NUM_THREAD_X => regs.num_threads[0] = data,
            cs::NUM_THREAD_Y => regs.num_threads[1] = data,
            cs::NUM_THREAD_Z => regs.num_threads[2] = data,
            cs::PGM_LO => regs.pgm_lo = data,
            cs::PGM_HI => regs.pgm_hi = data,
            cs::DISPATCH_PKT_LO => regs.dispatch_pkt_lo = data,
            cs::DISPATCH_PKT_HI => regs.dispatch_pkt_hi = data,
            cs::PGM_RSRC1 => regs.rsrc1 = data,
            cs::PGM_RSRC2 => regs.rsrc2 = data,
            cs::PGM_RSRC3 => regs.rsrc3 = data,
            _ => {}
        }
    }

    /// The kernel entry of a wave starting on (me, pipe), translated to its code object.
    pub fn wave_start_pc(&self, me: u8, pipe: u8) -> Pc {
        self.translate(self.pipe(me, pipe).entry_address())
    }

    /// `{address − base, id}` inside a loaded code object, else the raw address with id 0.
    pub fn translate(&self, address: u64) -> Pc {
        self.code_objects
            .iter()
            .rev()
            .find(|co| address.wrapping_sub(co.addr) < co.size)
            .map_or(Pc::new(address, 0), |co| Pc::new(address - co.addr, co.id))
    }

    /// Late resolution of a raw start address against the code objects loaded "from start".
    pub fn translate_from_start(&self, address: u64) -> Pc {
        self.code_objects
            .iter()
            .rev()
            .filter(|co| co.from_start)
            .find(|co| address.wrapping_sub(co.addr) < co.size)
            .map_or(Pc::new(address, 0), |co| Pc::new(address - co.addr, co.id))
    }

    /// A write to `USERDATA_2`: the instrumentation protocol.
    pub fn write_userdata2(&mut self, me: u8, pipe: u8, word: u32) -> ProtocolEvent {
        if word == ROCM_MAGIC {
            self.rocm_format = true;
            self.expect = Expect::Header;
            return ProtocolEvent::None;
        }
        if !self.rocm_format {
            return ProtocolEvent::None;
        }
        match self.expect {
            Expect::Payload(kind) => {
                self.expect = Expect::Header;
                self.payload(pipe_index(me, pipe), kind, word)
            }
            Expect::Header => {
                let (opcode, kind, data20) = split_header(word);
                match opcode {
                    OPCODE_AGENT_INFO if kind == 0 => {
                        ProtocolEvent::RealtimeFrequency(data20 as u64 * 1000)
                    }
                    OPCODE_AGENT_INFO if kind == 1 => ProtocolEvent::CounterInterval(data20 as u64),
                    OPCODE_CODEOBJ if data20 == 0 => {
                        self.expect = Expect::Payload(kind);
                        ProtocolEvent::None
                    }
                    // Other opcodes (1 = protocol version right after the enable) carry nothing.
                    _ => ProtocolEvent::None,
                }
            }
        }
    }

    fn payload(&mut self, pipe: usize, kind: u32, word: u32) -> ProtocolEvent {
        let regs = &mut self.pipes[pipe];
        let lo = |v: u64| (v & !0xFFFF_FFFF) | word as u64;
        let hi = |v: u64| (v & 0xFFFF_FFFF) | (word as u64) << 32;
        match kind {
            PAYLOAD_SIZE_LO => regs.co_size = lo(regs.co_size),
            PAYLOAD_SIZE_HI => regs.co_size = hi(regs.co_size),
            PAYLOAD_ADDR_LO => regs.co_addr = lo(regs.co_addr),
            PAYLOAD_ADDR_HI => regs.co_addr = hi(regs.co_addr),
            PAYLOAD_ID_LO => regs.co_id = lo(regs.co_id),
            PAYLOAD_ID_HI => regs.co_id = hi(regs.co_id),
            PAYLOAD_TAIL => {
                let unload = word & 1 != 0;
                let from_start = word & 2 != 0;
                let legacy_id = (word >> 2) as u64;
                let id = if legacy_id != 0 {
                    legacy_id
                } else {
                    regs.co_id
                };
                let co = CodeObject {
                    addr: regs.co_addr,
                    size: regs.co_size,
                    id,
                    from_start,
                };
                let active = self.code_objects.iter().position(|c| c.id == id);
                return match (unload, active) {
                    (false, None) => {
                        self.code_objects.push(co);
                        ProtocolEvent::CodeObjectLoad(id)
                    }
                    (true, Some(i)) => {
                        self.code_objects.remove(i);
                        ProtocolEvent::CodeObjectUnload(id)
                    }
                    _ => ProtocolEvent::None,
                };
            }
            _ => {}
        }
        ProtocolEvent::None
    }

    /// A write to `USERDATA_3`: gfx9 realtime samples; returns the realtime clock value of a
    /// completed sample.
    pub fn write_userdata3(&mut self, word: u32) -> Option<u64> {
        if !self.rocm_format {
            return None;
        }
        self.realtime.word(word)
    }
}

fn split_header(word: u32) -> (u32, u32, u32) {
    (word & 0xFF, (word >> 8) & 0xF, word >> 12)
}

/// The USERDATA_3 realtime groups: a header announcing N words, then the words, the last
/// one completing a sample.
#[derive(Default)]
struct RealtimeProtocol {
    remaining: u32,
    known: bool,
    /// The latest low half, the high half, and the previous low half.
    low: u64,
    high: u64,
    previous_low: u64,
}

impl RealtimeProtocol {
    fn word(&mut self, word: u32) -> Option<u64> {
        if self.remaining == 0 {
            let (opcode, _, data20) = split_header(word);
            match opcode {
                OPCODE_RT_TIMESTAMP => {
                    self.remaining = if data20 != 0 { data20 } else { 3 };
                    self.known = true;
                }
                OPCODE_RT_TIMESTAMP_LO32 => {
                    self.remaining = if data20 != 0 { data20 } else { 1 };
                    self.known = true;
                    self.previous_low = self.low;
                }
                _ => {
                    self.remaining = data20;
                    self.known = false;
                }
            }
            return None;
        }
        self.remaining -= 1;
        if !self.known {
            return None;
        }
        // Words count down to 0: previous low, high, low.
        match self.remaining {
            0 => self.low = word as u64,
            1 => self.high = word as u64,
            2 => self.previous_low = word as u64,
            _ => {}
        }
        if self.remaining > 0 {
            return None;
        }
        if self.low < self.previous_low {
            // The low half wrapped since the previous sample.
            self.high = self.high.wrapping_add(1);
        }
        Some(self.low | self.high << 32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(opcode: u32, kind: u32, data20: u32) -> u32 {
        opcode | kind << 8 | data20 << 12
    }

    fn load(regs: &mut Registers, addr: u64, size: u64, tail: u32) -> ProtocolEvent {
        let words = [
            (PAYLOAD_ADDR_LO, addr as u32),
            (PAYLOAD_ADDR_HI, (addr >> 32) as u32),
            (PAYLOAD_SIZE_LO, size as u32),
            (PAYLOAD_SIZE_HI, (size >> 32) as u32),
        ];
        for (kind, w) in words {
            assert_eq!(
                regs.write_userdata2(1, 0, header(OPCODE_CODEOBJ, kind, 0)),
                ProtocolEvent::None
            );
            regs.write_userdata2(1, 0, w);
        }
        regs.write_userdata2(1, 0, header(OPCODE_CODEOBJ, PAYLOAD_TAIL, 0));
        regs.write_userdata2(1, 0, tail)
    }

    #[test]
    fn code_object_markers_translate_the_kernel_entry() {
        let mut regs = Registers::default();
        let entry = 0x7FA3_5940_D800u64;
        regs.write_cs(1, 0, cs::PGM_LO, (entry >> 8) as u32);
        regs.write_cs(1, 0, cs::PGM_HI, (entry >> 40) as u32);
        assert_eq!(regs.pipe(1, 0).entry_address(), entry);
        assert_eq!(
            regs.wave_start_pc(1, 0),
            Pc::new(entry, 0),
            "no protocol yet: raw address"
        );
        // Markers before the enable word are ignored.
        assert_eq!(
            load(&mut regs, entry & !0xFFF, 0x5000, 0x12),
            ProtocolEvent::None
        );
        regs.write_userdata2(1, 0, ROCM_MAGIC);
        // The version word after the enable carries no payload (ERRATA part 2 G1).
        regs.write_userdata2(1, 0, 0x0008_0201);
        assert_eq!(
            load(&mut regs, entry & !0xFFF, 0x5000, 0x12),
            ProtocolEvent::CodeObjectLoad(4)
        );
        assert_eq!(regs.wave_start_pc(1, 0), Pc::new(entry & 0xFFF, 4));
        assert_eq!(regs.translate_from_start(entry), Pc::new(entry & 0xFFF, 4));
        assert_eq!(regs.wave_start_pc(0, 0), Pc::new(0, 0));
        assert_eq!(
            load(&mut regs, entry & !0xFFF, 0x5000, 0x13),
            ProtocolEvent::CodeObjectUnload(4)
        );
        assert_eq!(regs.wave_start_pc(1, 0), Pc::new(entry, 0));
    }

    #[test]
    fn agent_info_and_realtime_groups() {
        let mut regs = Registers::default();
        assert_eq!(
            regs.write_userdata3(header(OPCODE_RT_TIMESTAMP, 0, 0)),
            None
        );
        regs.write_userdata2(0, 0, ROCM_MAGIC);
        assert_eq!(
            regs.write_userdata2(0, 0, header(OPCODE_AGENT_INFO, 0, 100_000)),
            ProtocolEvent::RealtimeFrequency(100_000_000)
        );
        assert_eq!(
            regs.write_userdata3(header(OPCODE_RT_TIMESTAMP, 0, 0)),
            None
        );
        assert_eq!(regs.write_userdata3(0xFFFF_FFF0), None);
        assert_eq!(regs.write_userdata3(2), None);
        assert_eq!(
            regs.write_userdata3(0xFFFF_FFF8),
            Some(2 << 32 | 0xFFFF_FFF8)
        );
        // LO32 sample that wrapped: the high half is carried.
        assert_eq!(
            regs.write_userdata3(header(OPCODE_RT_TIMESTAMP_LO32, 0, 0)),
            None
        );
        assert_eq!(regs.write_userdata3(5), Some(3 << 32 | 5));
        // Unknown opcode: its words are skipped.
        regs.write_userdata3(header(9, 0, 2));
        assert_eq!(regs.write_userdata3(1), None);
        assert_eq!(regs.write_userdata3(1), None);
    }
}
