//! gfx9 dispatch register state per (me, pipe), the code objects announced over
//! `SQ_THREAD_TRACE_USERDATA_2` ([`CodeObjects`]) and the gfx9 realtime samples over
//! `USERDATA_3` (SQTT_FORMAT §2.2–§2.3, ERRATA part 2 G1).

use super::table::Field;
use super::userdata::{protocol, CodeObjects, UserdataEvent};
use crate::records::{
    Dispatch, Pc, DISPATCH_FLAG_IS_CTX_RESTORE, DISPATCH_FLAG_SCALAR_CACHE_INVALIDATE,
    DISPATCH_FLAG_SCRATCH_ENABLED, DISPATCH_FLAG_VECTOR_CACHE_INVALIDATE,
};

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

/// The fields of `COMPUTE_PGM_RSRC1` and `COMPUTE_PGM_RSRC2` a DISPATCH record reports.
pub mod rsrc {
    use crate::arch::table::{bits, Field};

    pub const VGPRS: Field = bits(0, 6);
    pub const SGPRS: Field = bits(7, 3);
    pub const SCALAR_CACHE_INVALIDATE: Field = bits(10, 1);
    pub const VECTOR_CACHE_INVALIDATE: Field = bits(11, 1);
    pub const IS_CTX_RESTORE: Field = bits(14, 1);
    /// RSRC2.
    pub const SCRATCH_ENABLED: Field = bits(0, 1);
    pub const USER_SGPRS: Field = bits(1, 5);
    pub const LDS_SIZE: Field = bits(15, 9);
}

/// The register that carries gfx9 realtime samples (USERDATA_2 is in [`super::userdata`]).
pub const USERDATA_3: u64 = 0xC343;

const OPCODE_RT_TIMESTAMP: u32 = 5;
const OPCODE_RT_TIMESTAMP_LO32: u32 = 7;

/// Dispatchers tracked: `(me & 1) << 2 | pipe`.
pub const DISPATCHERS: usize = 8;

/// Register state of one SE buffer (or of a scanned chunk). Like the reference's tracker, the
/// program and dispatch-packet addresses are kept per dispatcher while thread dimensions and
/// resource words are shared by all of them.
#[derive(Clone, Default)]
pub struct Registers {
    /// `PGM_HI << 32 | PGM_LO` per dispatcher.
    programs: [u64; DISPATCHERS],
    /// `DISPATCH_PKT_HI << 32 | DISPATCH_PKT_LO` per dispatcher.
    dispatch_packets: [u64; DISPATCHERS],
    pub num_threads: [u32; 3],
    pub rsrc1: u32,
    pub rsrc2: u32,
    pub rsrc3: u32,
    pub code_objects: CodeObjects,
    realtime: RealtimeProtocol,
}

pub fn dispatcher_index(me: u8, pipe: u8) -> usize {
    ((me as usize & 1) << 2) | (pipe as usize & 3)
}

fn set_low(pair: &mut u64, data: u32) {
    *pair = (*pair & !0xFFFF_FFFF) | u64::from(data);
}

fn set_high(pair: &mut u64, data: u32) {
    *pair = (*pair & 0xFFFF_FFFF) | u64::from(data) << 32;
}

impl Registers {
    /// A compute register write.
    #[inline]
    pub fn write_cs(&mut self, me: u8, pipe: u8, addr: u16, data: u32) {
        if Self::tracks_cs(addr) {
            self.write_tracked_cs(me, pipe, addr, data);
        }
    }

    /// Whether a write to compute register `addr` is kept. Most writes are to registers nobody
    /// tracks: one test rejects them.
    #[inline(always)]
    pub fn tracks_cs(addr: u16) -> bool {
        const TRACKED: u64 = 1 << cs::NUM_THREAD_X
            | 1 << cs::NUM_THREAD_Y
            | 1 << cs::NUM_THREAD_Z
            | 1 << cs::PGM_LO
            | 1 << cs::PGM_HI
            | 1 << cs::DISPATCH_PKT_LO
            | 1 << cs::DISPATCH_PKT_HI
            | 1 << cs::PGM_RSRC1
            | 1 << cs::PGM_RSRC2
            | 1 << cs::PGM_RSRC3;
        addr < 64 && TRACKED >> addr & 1 != 0
    }

    #[inline(always)]
    fn write_tracked_cs(&mut self, me: u8, pipe: u8, addr: u16, data: u32) {
        let d = dispatcher_index(me, pipe);
        match addr {
            cs::NUM_THREAD_X => self.num_threads[0] = data,
            cs::NUM_THREAD_Y => self.num_threads[1] = data,
            cs::NUM_THREAD_Z => self.num_threads[2] = data,
            cs::PGM_LO => set_low(&mut self.programs[d], data),
            cs::PGM_HI => set_high(&mut self.programs[d], data),
            cs::DISPATCH_PKT_LO => set_low(&mut self.dispatch_packets[d], data),
            cs::DISPATCH_PKT_HI => set_high(&mut self.dispatch_packets[d], data),
            cs::PGM_RSRC1 => self.rsrc1 = data,
            cs::PGM_RSRC2 => self.rsrc2 = data,
            cs::PGM_RSRC3 => self.rsrc3 = data,
            _ => {}
        }
    }

    /// The `PGM_HI:PGM_LO` pair of a dispatcher (the kernel address >> 8).
    pub fn program(&self, dispatcher: usize) -> u64 {
        self.programs[dispatcher & (DISPATCHERS - 1)]
    }

    /// The dispatch packet address of a dispatcher.
    pub fn dispatch_packet(&self, dispatcher: usize) -> u64 {
        self.dispatch_packets[dispatcher & (DISPATCHERS - 1)]
    }

    /// Kernel entry of (me, pipe): `PGM << 8` within 48 bits.
    pub fn entry_address(&self, me: u8, pipe: u8) -> u64 {
        (self.program(dispatcher_index(me, pipe)) << 8) & ((1 << 48) - 1)
    }

    /// The kernel entry of a wave starting on (me, pipe), translated to its code object.
    pub fn wave_start_pc(&self, me: u8, pipe: u8) -> Pc {
        self.translate(self.entry_address(me, pipe))
    }

    /// The DISPATCH record of a dispatch initiated on (me, pipe) (SQTT_FORMAT §2.5).
    /// `trace_version` is the RDNA HEADER version, 0 for gfx9: it selects how SGPRs are counted
    /// (from RSRC1 up to version 1, else 128), the gfx10.1 LDS granule and the doubled MI400
    /// VGPR / LDS granules. `byte_offset` is where the dispatch's token starts in its buffer.
    pub fn dispatch(
        &self,
        time: i64,
        me: u8,
        pipe: u8,
        trace_version: u8,
        byte_offset: u64,
    ) -> Dispatch {
        let (rsrc1, rsrc2) = (u64::from(self.rsrc1), u64::from(self.rsrc2));
        let mut lds_size = rsrc::LDS_SIZE.get(rsrc2) as u32 * 512;
        let mut vgprs = rsrc::VGPRS.get(rsrc1) as u32 * 8 + 8;
        if trace_version == 1 {
            lds_size = lds_size * 10 / 4;
        }
        if trace_version >= 5 {
            lds_size *= 2;
            vgprs *= 2;
        }
        let flag = |field: Field, word: u64, flag: i32| if field.get(word) != 0 { flag } else { 0 };
        Dispatch {
            size: std::mem::size_of::<Dispatch>() as u64,
            time,
            me_id: me & 1,
            pipe_id: pipe & 3,
            user_sgprs: rsrc::USER_SGPRS.get(rsrc2) as u16,
            flags: flag(
                rsrc::SCALAR_CACHE_INVALIDATE,
                rsrc1,
                DISPATCH_FLAG_SCALAR_CACHE_INVALIDATE,
            ) | flag(
                rsrc::VECTOR_CACHE_INVALIDATE,
                rsrc1,
                DISPATCH_FLAG_VECTOR_CACHE_INVALIDATE,
            ) | flag(rsrc::IS_CTX_RESTORE, rsrc1, DISPATCH_FLAG_IS_CTX_RESTORE)
                | flag(rsrc::SCRATCH_ENABLED, rsrc2, DISPATCH_FLAG_SCRATCH_ENABLED),
            vgprs,
            sgprs: if trace_version <= 1 {
                rsrc::SGPRS.get(rsrc1) as u32 * 16 + 16
            } else {
                128
            },
            lds_size,
            thread_dim_x: self.num_threads[0],
            thread_dim_y: self.num_threads[1],
            thread_dim_z: self.num_threads[2],
            dispatch_pkt_addr: self.dispatch_packet(dispatcher_index(me, pipe)),
            byte_offset,
            entry_point: self.wave_start_pc(me, pipe),
        }
    }

    /// `{address − base, id}` inside a loaded code object, else the raw address with id 0.
    pub fn translate(&self, address: u64) -> Pc {
        self.code_objects.translate(address)
    }

    /// Late resolution of a raw start address against the code objects loaded "from start".
    pub fn translate_from_start(&self, address: u64) -> Pc {
        self.code_objects
            .translate_from_start(address)
            .unwrap_or(Pc::new(address, 0))
    }

    /// A write to `USERDATA_2`: the instrumentation protocol.
    pub fn write_userdata2(&mut self, me: u8, pipe: u8, word: u32) -> Option<UserdataEvent> {
        self.code_objects.write(word, dispatcher_index(me, pipe))
    }

    /// A write to `USERDATA_3`: gfx9 realtime samples; returns the realtime clock value of a
    /// completed sample.
    pub fn write_userdata3(&mut self, word: u32) -> Option<u64> {
        if !self.code_objects.enabled() {
            return None;
        }
        self.realtime.word(word)
    }
}

/// The USERDATA_3 realtime groups: a header announcing N words, then the words, the last
/// one completing a sample.
#[derive(Clone, Default)]
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
            let header = u64::from(word);
            let opcode = protocol::OPCODE.get(header) as u32;
            let data20 = protocol::DATA.get(header) as u32;
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

    const ROCM_MAGIC: u32 = u32::from_le_bytes([0, b'R', b'O', b'C']);

    fn header(opcode: u32, kind: u32, data20: u32) -> u32 {
        opcode | kind << 8 | data20 << 12
    }

    #[test]
    fn code_object_markers_translate_the_kernel_entry() {
        let mut regs = Registers::default();
        let entry = 0x7FA3_5940_D800u64;
        regs.write_cs(1, 0, cs::PGM_LO, (entry >> 8) as u32);
        regs.write_cs(1, 0, cs::PGM_HI, (entry >> 40) as u32);
        assert_eq!(regs.entry_address(1, 0), entry);
        assert_eq!(
            regs.wave_start_pc(1, 0),
            Pc::new(entry, 0),
            "no code object yet"
        );
        regs.write_userdata2(1, 0, ROCM_MAGIC);
        regs.write_userdata2(1, 0, 0x0008_0201);
        let base = entry & !0xFFF;
        for (kind, word) in [
            (2, base as u32),
            (3, (base >> 32) as u32),
            (1, 0x5000),
            (4, 0),
        ] {
            regs.write_userdata2(1, 0, header(4, kind, 0));
            regs.write_userdata2(1, 0, word);
        }
        regs.write_userdata2(1, 0, header(4, 0, 0));
        assert_eq!(
            regs.write_userdata2(1, 0, 0x12),
            Some(UserdataEvent::CodeObjectLoad(4))
        );
        assert_eq!(regs.wave_start_pc(1, 0), Pc::new(0x800, 4));
        assert_eq!(regs.translate_from_start(entry), Pc::new(0x800, 4));
        assert_eq!(
            regs.wave_start_pc(0, 0),
            Pc::new(0, 0),
            "other dispatchers keep their own PGM"
        );
    }

    #[test]
    fn dispatch_fields_follow_the_trace_version() {
        let mut regs = Registers::default();
        // 16 VGPR granules, SGPR field 3, scalar invalidate; scratch, 5 user SGPRs, 4 LDS granules.
        regs.write_cs(1, 3, cs::PGM_RSRC1, 15 | 3 << 7 | 1 << 10);
        regs.write_cs(1, 3, cs::PGM_RSRC2, 1 | 5 << 1 | 4 << 15);
        regs.write_cs(1, 3, cs::NUM_THREAD_Y, 4);
        regs.write_cs(1, 3, cs::DISPATCH_PKT_LO, 0x10);
        regs.write_cs(1, 3, cs::DISPATCH_PKT_HI, 0x2);
        let fields = |version| {
            let d = regs.dispatch(7, 1, 3, version, 0);
            (d.vgprs, d.sgprs, d.lds_size, d.user_sgprs, d.flags)
        };
        let flags = DISPATCH_FLAG_SCALAR_CACHE_INVALIDATE | DISPATCH_FLAG_SCRATCH_ENABLED;
        assert_eq!(fields(0), (128, 64, 2048, 5, flags), "gfx9");
        assert_eq!(fields(1), (128, 64, 5120, 5, flags), "gfx10.1");
        assert_eq!(fields(4), (128, 128, 2048, 5, flags), "gfx12");
        assert_eq!(fields(5), (256, 128, 4096, 5, flags), "MI400");
        let d = regs.dispatch(7, 1, 3, 4, 0);
        assert_eq!((d.time, d.me_id, d.pipe_id, d.size), (7, 1, 3, 80));
        assert_eq!(
            d.thread_dim_y, 4,
            "thread dimensions are shared by all dispatchers"
        );
        assert_eq!(d.dispatch_pkt_addr, 0x2_0000_0010);
        assert_eq!(
            regs.dispatch(0, 0, 0, 4, 0).dispatch_pkt_addr,
            0,
            "packets are per dispatcher"
        );
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
            regs.write_userdata2(0, 0, header(6, 0, 100_000)),
            Some(UserdataEvent::RealtimeFrequency(100_000_000))
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
