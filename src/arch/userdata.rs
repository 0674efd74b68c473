//! The ROCm instrumentation protocol over `SQ_THREAD_TRACE_USERDATA_2` (SQTT_FORMAT §2.3):
//! code-object load/unload markers and agent info, and the PC translation they define.

use crate::records::Pc;

/// The register that carries the protocol words.
pub const USERDATA_2: u64 = 0xC342;

/// `'\0','R','O','C'`, low byte first.
pub const ENABLE: u32 = 0x434F_5200;

/// A protocol header word: `{opcode:8, type:4, data:20}`.
pub mod protocol {
    use crate::arch::table::{bits, Field};

    pub const OPCODE: Field = bits(0, 8);
    pub const TYPE: Field = bits(8, 4);
    pub const DATA: Field = bits(12, 20);
}

pub const OPCODE_CODEOBJ: u32 = 4;
const OPCODE_AGENT_INFO: u32 = 6;

/// Payload meanings of a CODEOBJ header's `type`.
pub const TAIL: usize = 0;
pub const SIZE_LO: usize = 1;
pub const ADDR_LO: usize = 2;
pub const ADDR_HI: usize = 3;
pub const SIZE_HI: usize = 4;
pub const ID_LO: usize = 5;
pub const ID_HI: usize = 6;

/// What one protocol word announced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserdataEvent {
    CodeObjectLoad(u64),
    CodeObjectUnload(u64),
    /// AGENT_INFO type 0: the realtime clock frequency in Hz.
    RealtimeFrequency(u64),
    /// AGENT_INFO type 1: the performance counter interval in cycles (gfx9).
    CounterInterval(u64),
}

#[derive(Clone, Copy, Debug)]
struct Range {
    base: u64,
    size: u64,
    id: u64,
}

/// Protocol state of one SE buffer and the code-object ranges it announced.
#[derive(Clone, Default)]
pub struct CodeObjects {
    enabled: bool,
    /// The payload type the next word carries, after a CODEOBJ header.
    pending_payload: Option<usize>,
    /// LO/HI payload words latched per dispatcher (`me & 1`, pipe).
    latched: [[u32; 7]; 8],
    /// The active code objects, in load order (also those the tables turned away).
    loaded: Vec<Range>,
    /// The translation table: the loaded ranges that overlapped none already in it.
    table: Vec<Range>,
    /// The same for the objects loaded "from start".
    from_start: Vec<Range>,
}

impl CodeObjects {
    /// Feeds one USERDATA_2 word written by dispatcher `me_pipe` (`(me & 1) << 2 | pipe`).
    pub fn write(&mut self, word: u32, me_pipe: usize) -> Option<UserdataEvent> {
        if word == ENABLE {
            self.enabled = true;
            self.pending_payload = None;
            return None;
        }
        if !self.enabled {
            return None;
        }
        let latched = &mut self.latched[me_pipe & 7];
        if let Some(kind) = self.pending_payload.take() {
            if kind != TAIL {
                latched[kind] = word;
                return None;
            }
            let id = match u64::from(word >> 2) {
                0 => u64::from(latched[ID_HI]) << 32 | u64::from(latched[ID_LO]),
                legacy => legacy,
            };
            let range = Range {
                base: u64::from(latched[ADDR_HI]) << 32 | u64::from(latched[ADDR_LO]),
                size: u64::from(latched[SIZE_HI]) << 32 | u64::from(latched[SIZE_LO]),
                id,
            };
            let unload = word & 1 != 0;
            let from_start = word & 2 != 0;
            return if unload {
                if let Some(k) = self.loaded.iter().position(|r| r.id == id) {
                    let base = self.loaded.remove(k).base;
                    // The table forgets the range that holds the object's base address.
                    if let Some(k) = self.table.iter().position(|r| r.contains(base)) {
                        self.table.remove(k);
                    }
                }
                self.from_start.retain(|r| r.id != id);
                Some(UserdataEvent::CodeObjectUnload(id))
            } else if self.loaded.iter().any(|r| r.id == id) {
                None
            } else {
                self.loaded.push(range);
                insert_disjoint(&mut self.table, range);
                if from_start {
                    insert_disjoint(&mut self.from_start, range);
                }
                Some(UserdataEvent::CodeObjectLoad(id))
            };
        }
        let header = u64::from(word);
        let opcode = protocol::OPCODE.get(header) as u32;
        let kind = protocol::TYPE.get(header) as usize;
        let data20 = protocol::DATA.get(header);
        match opcode {
            OPCODE_CODEOBJ if data20 == 0 && kind <= ID_HI => {
                self.pending_payload = Some(kind);
                None
            }
            OPCODE_AGENT_INFO if kind == 0 => Some(UserdataEvent::RealtimeFrequency(data20 * 1000)),
            OPCODE_AGENT_INFO if kind == 1 => Some(UserdataEvent::CounterInterval(data20)),
            // Unknown opcodes announce nothing that is skipped (ERRATA gfx9 G1).
            _ => None,
        }
    }

    /// The code objects currently loaded, in load order: `(id, base, size)`.
    pub fn loaded(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.loaded.iter().map(|r| (r.id, r.base, r.size))
    }

    /// The `\0ROC` enable word has been seen.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// `{address − base, id}` inside a range of the translation table, else the raw address
    /// with id 0.
    pub fn translate(&self, address: u64) -> Pc {
        Self::lookup(&self.table, address).unwrap_or(Pc::new(address, 0))
    }

    /// Translation against the objects loaded "from start" (late resolution of wave starts).
    pub fn translate_from_start(&self, address: u64) -> Option<Pc> {
        Self::lookup(&self.from_start, address)
    }

    fn lookup(ranges: &[Range], address: u64) -> Option<Pc> {
        ranges
            .iter()
            .find(|r| r.contains(address))
            .map(|r| Pc::new(address - r.base, r.id))
    }
}

impl Range {
    /// `base <= address < base + size`, the end wrapping as in 64-bit unsigned arithmetic.
    fn contains(&self, address: u64) -> bool {
        self.base <= address && address < self.base.wrapping_add(self.size)
    }

    /// Either range's base lies inside the other (an empty range overlaps the range that
    /// holds its base).
    fn overlaps(&self, other: &Range) -> bool {
        other.contains(self.base) || self.contains(other.base)
    }
}

/// Adds a code object's range to a translation table unless it overlaps one already there:
/// the first of two overlapping objects keeps the addresses (docs/timing/stitch.md §6).
fn insert_disjoint(table: &mut Vec<Range>, range: Range) {
    if !table.iter().any(|r| r.overlaps(&range)) {
        table.push(range);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(opcode: u32, kind: u32, data20: u32) -> u32 {
        opcode | kind << 8 | data20 << 12
    }

    #[test]
    fn code_object_load_defines_a_translation() {
        let mut c = CodeObjects::default();
        assert_eq!(
            c.write(header(4, 2, 0), 0),
            None,
            "ignored before the enable word"
        );
        assert_eq!(c.write(0x0000_1234, 0), None);
        c.write(ENABLE, 1);
        assert_eq!(c.write(0x0008_0201, 1), None, "opcode 1 carries no payload");
        for (kind, value) in [(2, 0x5940_C000u32), (3, 0x7FA3), (1, 0x5000), (4, 0)] {
            c.write(header(4, kind, 0), 1);
            c.write(value, 1);
        }
        c.write(header(4, 0, 0), 1);
        assert_eq!(c.write(0x12, 1), Some(UserdataEvent::CodeObjectLoad(4)));
        assert_eq!(c.translate(0x7FA3_5940_D800), Pc::new(0x1800, 4));
        assert_eq!(
            c.translate_from_start(0x7FA3_5940_D800),
            Some(Pc::new(0x1800, 4))
        );
        assert_eq!(c.translate(0x1000), Pc::new(0x1000, 0));
        c.write(header(4, 0, 0), 1);
        assert_eq!(c.write(0x13, 1), Some(UserdataEvent::CodeObjectUnload(4)));
        assert_eq!(c.translate(0x7FA3_5940_D800), Pc::new(0x7FA3_5940_D800, 0));
    }

    /// Loads one code object through the protocol: SIZE_LO, SIZE_HI, ADDR_LO, ADDR_HI, TAIL.
    fn load(
        c: &mut CodeObjects,
        id: u32,
        base: u64,
        size_lo: u32,
        size_hi: u32,
    ) -> Option<UserdataEvent> {
        let words = [
            (1, size_lo),
            (4, size_hi),
            (2, base as u32),
            (3, (base >> 32) as u32),
        ];
        for (kind, value) in words {
            c.write(header(4, kind, 0), 0);
            c.write(value, 0);
        }
        c.write(header(4, 0, 0), 0);
        c.write(id << 2 | 2, 0)
    }

    #[test]
    fn a_range_overlapping_an_earlier_one_translates_nothing() {
        let mut c = CodeObjects::default();
        c.write(ENABLE, 0);
        // The rocprofv2-era tool writes the low size again as SIZE_HI: ranges of ~2^47 bytes.
        let first = 0x7F4C_EF62_0000;
        assert_eq!(
            load(&mut c, 2, first, 0x8000, 0x8000),
            Some(UserdataEvent::CodeObjectLoad(2))
        );
        let kernel = 0x7F4C_ED42_0000;
        assert_eq!(
            load(&mut c, 10, kernel, 0x134B1, 0x134B1),
            Some(UserdataEvent::CodeObjectLoad(10)),
            "still loaded (and reported)"
        );
        // The kernel's range overlaps the first one (whose base it holds): not in the tables.
        assert_eq!(c.translate(kernel + 0x8600), Pc::new(kernel + 0x8600, 0));
        assert_eq!(c.translate_from_start(kernel + 0x8600), None);
        assert_eq!(c.translate(first + 0x10), Pc::new(0x10, 2));
        assert_eq!(c.loaded().map(|(id, _, _)| id).collect::<Vec<_>>(), [2, 10]);
        // A disjoint range is added.
        assert_eq!(
            load(&mut c, 11, 0x1000, 0x100, 0),
            Some(UserdataEvent::CodeObjectLoad(11))
        );
        assert_eq!(c.translate(0x1010), Pc::new(0x10, 11));
        // Unloading the first frees its addresses; the kernel's range is not added afterwards.
        c.write(header(4, 0, 0), 0);
        assert_eq!(
            c.write(2 << 2 | 1, 0),
            Some(UserdataEvent::CodeObjectUnload(2))
        );
        assert_eq!(c.translate(first + 0x10), Pc::new(first + 0x10, 0));
        assert_eq!(c.translate(kernel + 0x8600), Pc::new(kernel + 0x8600, 0));
    }

    #[test]
    fn agent_info_reports_the_realtime_frequency() {
        let mut c = CodeObjects::default();
        c.write(ENABLE, 0);
        assert_eq!(
            c.write(header(6, 0, 100_000), 0),
            Some(UserdataEvent::RealtimeFrequency(100_000_000))
        );
        assert_eq!(
            c.write(header(6, 1, 64), 0),
            Some(UserdataEvent::CounterInterval(64))
        );
    }
}
