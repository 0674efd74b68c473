//! Bit layouts of the PMA stream as data: the packet header and the two sample formats, each a
//! table of bit fields, plus the stall-key maps. Bit numbers count from the least significant bit
//! of the little-endian record.

use super::sample::{PmaSample, StallReason};

/// A run of `width` bits starting at bit `low`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BitField {
    low: u32,
    width: u32,
}

impl BitField {
    const fn new(low: u32, width: u32) -> Self {
        BitField { low, width }
    }

    fn extract(self, raw: u128) -> u64 {
        let mask = (1u64 << self.width) - 1;
        (raw >> self.low) as u64 & mask
    }
}

/// Concatenates `fields` (most significant piece first) into one value.
fn concat(fields: &[BitField], raw: u128) -> u64 {
    fields
        .iter()
        .fold(0, |value, field| value << field.width | field.extract(raw))
}

/// Every packet is 32 bytes: payload bytes 0-3, a 32-bit header, payload bytes 4-27.
pub(crate) const PACKET_SIZE: usize = 32;
pub(crate) const HEADER_OFFSET: usize = 4;
pub(crate) const HEADER_SIZE: usize = 4;
pub(crate) const MAX_PAYLOAD: usize = PACKET_SIZE - HEADER_SIZE;

/// Header fields (little-endian u32 at `HEADER_OFFSET`).
pub(crate) struct PacketHeader {
    /// Valid payload bytes in this packet; values above `MAX_PAYLOAD` make the packet malformed.
    pub payload_len: usize,
    pub tpc_id: u16,
    /// The hardware lost data of this TPC before this packet: its partial record is void.
    pub dropped: bool,
}

const HEADER_PAYLOAD_LEN: BitField = BitField::new(0, 5);
const HEADER_TPC_ID: [BitField; 2] = [BitField::new(25, 3), BitField::new(8, 8)];
const HEADER_DROPPED: BitField = BitField::new(28, 1);

/// The TPC id as tinygrad's driver enumerates SMs (`gpc << 5 | tpc << 1 | sm`); the CUDA driver
/// numbers them differently, so the split is only meaningful for such captures.
const TPC_ID_GPC: BitField = BitField::new(5, 6);
const TPC_ID_TPC: BitField = BitField::new(1, 4);
const TPC_ID_SM: BitField = BitField::new(0, 1);

/// Number of distinct TPC ids (11 bits).
pub(crate) const TPC_ID_COUNT: usize = 1 << 11;

impl PacketHeader {
    pub fn read(packet: &[u8; PACKET_SIZE]) -> Self {
        let mut word = [0u8; HEADER_SIZE];
        word.copy_from_slice(&packet[HEADER_OFFSET..HEADER_OFFSET + HEADER_SIZE]);
        let raw = u128::from(u32::from_le_bytes(word));
        PacketHeader {
            payload_len: HEADER_PAYLOAD_LEN.extract(raw) as usize,
            tpc_id: concat(&HEADER_TPC_ID, raw) as u16,
            dropped: HEADER_DROPPED.extract(raw) != 0,
        }
    }
}

/// The record size and field positions of one generation of the PC sampler.
#[derive(Debug)]
pub(crate) struct SampleLayout {
    pub size: usize,
    pc: BitField,
    stall_key: BitField,
    /// Wave id pieces, most significant first.
    wave_id: &'static [BitField],
    active: BitField,
    /// Bits no known decoder interprets, most significant first; exposed for investigation.
    uninterpreted: &'static [BitField],
    stall_reasons: [StallReason; 64],
}

/// The largest record size of all layouts.
pub(crate) const MAX_SAMPLE_SIZE: usize = 9;

/// `pc_offset = pc_raw << 4` in both layouts.
const PC_SHIFT: u32 = 4;

const fn stall_map(keys: &[(u8, StallReason)]) -> [StallReason; 64] {
    let mut map = [StallReason::Other; 64];
    let mut index = 0;
    while index < keys.len() {
        map[keys[index].0 as usize] = keys[index].1;
        index += 1;
    }
    map
}

/// 8-byte records (Ampere, Ada, Hopper).
pub(crate) static EIGHT_BYTE: SampleLayout = SampleLayout {
    size: 8,
    pc: BitField::new(0, 45),
    stall_key: BitField::new(45, 5),
    wave_id: &[BitField::new(50, 6)],
    active: BitField::new(62, 1),
    uninterpreted: &[BitField::new(63, 1), BitField::new(56, 6)],
    stall_reasons: stall_map(&[
        (1, StallReason::MemoryThrottle),
        (15, StallReason::MemoryThrottle),
        (2, StallReason::ConstantMemory),
        (3, StallReason::Sync),
        (6, StallReason::InstFetch),
        (11, StallReason::InstFetch),
        (7, StallReason::ExecDependency),
        (10, StallReason::ExecDependency),
        (9, StallReason::MemoryDependency),
        (12, StallReason::PipeBusy),
        (17, StallReason::Other),
        (20, StallReason::Other),
        (18, StallReason::None),
    ]),
};

/// 9-byte records (Blackwell).
pub(crate) static NINE_BYTE: SampleLayout = SampleLayout {
    size: 9,
    pc: BitField::new(8, 53),
    stall_key: BitField::new(0, 6),
    wave_id: &[BitField::new(6, 2), BitField::new(68, 4)],
    active: BitField::new(67, 1),
    uninterpreted: &[BitField::new(61, 6)],
    stall_reasons: stall_map(&[
        (0x01, StallReason::MemoryThrottle),
        (0x0e, StallReason::MemoryThrottle),
        (0x02, StallReason::Sync),
        (0x05, StallReason::InstFetch),
        (0x0a, StallReason::InstFetch),
        (0x06, StallReason::ExecDependency),
        (0x09, StallReason::ExecDependency),
        (0x08, StallReason::MemoryDependency),
        (0x0b, StallReason::PipeBusy),
        (0x0f, StallReason::PipeBusy),
        (0x10, StallReason::Other),
        (0x13, StallReason::Other),
        (0x11, StallReason::None),
    ]),
};

impl SampleLayout {
    /// Decodes one record of exactly `self.size` bytes (shorter input reads as zero bits).
    pub fn decode(&self, record: &[u8], tpc_id: u16) -> PmaSample {
        let mut bytes = [0u8; 16];
        let len = record.len().min(self.size);
        bytes[..len].copy_from_slice(&record[..len]);
        let raw = u128::from_le_bytes(bytes);
        let stall_key = self.stall_key.extract(raw) as u8;
        PmaSample {
            pc_offset: self.pc.extract(raw) << PC_SHIFT,
            tpc_id,
            wave_id: concat(self.wave_id, raw) as u8,
            stall_key,
            stall_reason: self.stall_reason(stall_key),
            active: self.active.extract(raw) as u8,
            gpc: TPC_ID_GPC.extract(u128::from(tpc_id)) as u8,
            tpc: TPC_ID_TPC.extract(u128::from(tpc_id)) as u8,
            sm: TPC_ID_SM.extract(u128::from(tpc_id)) as u8,
            uninterpreted_bits: concat(self.uninterpreted, raw) as u8,
            reserved: [0; 6],
        }
    }

    pub fn stall_reason(&self, stall_key: u8) -> StallReason {
        self.stall_reasons
            .get(usize::from(stall_key))
            .copied()
            .unwrap_or(StallReason::Other)
    }
}
