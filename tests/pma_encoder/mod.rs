//! A PMA stream encoder written from the documented layout (NV_PMA.md §2-§3), independent of the
//! decoder's tables: tests build streams with it and check that decoding gives the fields back.

#![allow(dead_code)] // each test crate uses a different part

/// The fields one sample record carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    pub pc_raw: u64,
    pub stall_key: u8,
    pub wave_id: u8,
    pub active: bool,
}

/// 8-byte record: pc 0-44, stall key 45-49, wave 50-55, active 62.
pub fn encode_8(fields: Fields) -> Vec<u8> {
    assert!(fields.pc_raw < 1 << 45 && fields.stall_key < 32 && fields.wave_id < 64);
    let word = fields.pc_raw
        | u64::from(fields.stall_key) << 45
        | u64::from(fields.wave_id) << 50
        | u64::from(fields.active) << 62;
    word.to_le_bytes().to_vec()
}

/// 9-byte record: stall key 0-5, wave high 2 bits 6-7, pc 8-60, active 67, wave low 4 bits 68-71.
pub fn encode_9(fields: Fields) -> Vec<u8> {
    assert!(fields.pc_raw < 1 << 53 && fields.stall_key < 64 && fields.wave_id < 64);
    let word = u128::from(fields.stall_key)
        | u128::from(fields.wave_id >> 4) << 6
        | u128::from(fields.pc_raw) << 8
        | u128::from(fields.active) << 67
        | u128::from(fields.wave_id & 0xf) << 68;
    word.to_le_bytes()[..9].to_vec()
}

/// One 32-byte packet: payload bytes 0-3, header, payload bytes 4-27. `num_bytes` may exceed
/// the payload (malformed packets); the unused payload bytes are filled with 0xEE so that a
/// decoder reading past `num_bytes` would be noticed.
pub fn packet_with_len(tpc_id: u16, payload: &[u8], num_bytes: u32, dropped: bool) -> [u8; 32] {
    assert!(payload.len() <= 28 && tpc_id < 1 << 11 && num_bytes < 32);
    let header = num_bytes
        | u32::from(tpc_id & 0xff) << 8
        | u32::from(tpc_id >> 8) << 25
        | u32::from(dropped) << 28;
    let mut packet = [0xEE; 32];
    packet[4..8].copy_from_slice(&header.to_le_bytes());
    for (index, &byte) in payload.iter().enumerate() {
        let position = if index < 4 { index } else { index + 4 };
        packet[position] = byte;
    }
    packet
}

pub fn packet(tpc_id: u16, payload: &[u8], dropped: bool) -> [u8; 32] {
    packet_with_len(tpc_id, payload, payload.len() as u32, dropped)
}

/// Splits one TPC's byte stream into packets, with payload sizes cycling through `sizes`.
pub fn packetize(tpc_id: u16, bytes: &[u8], sizes: &[usize]) -> Vec<[u8; 32]> {
    let mut packets = Vec::new();
    let mut rest = bytes;
    for &size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (payload, tail) = rest.split_at(size.clamp(1, 28).min(rest.len()));
        packets.push(packet(tpc_id, payload, false));
        rest = tail;
    }
    packets
}

/// Interleaves per-TPC packet lists round-robin into one stream.
pub fn interleave(streams: &[Vec<[u8; 32]>]) -> Vec<u8> {
    let longest = streams.iter().map(Vec::len).max().unwrap_or(0);
    let mut data = Vec::new();
    for index in 0..longest {
        for stream in streams {
            if let Some(packet) = stream.get(index) {
                data.extend_from_slice(packet);
            }
        }
    }
    data
}

pub use rocprof_trace_decoder::testing::Rng;

/// Random fields with a `pc_bits`-bit PC and a `key_bits`-bit stall key.
pub fn random_fields(rng: &mut Rng, pc_bits: u32, key_bits: u32) -> Fields {
    Fields {
        pc_raw: rng.next_u64() & ((1 << pc_bits) - 1),
        stall_key: rng.below(1 << key_bits) as u8,
        wave_id: rng.below(64) as u8,
        active: rng.next_u64() & 1 == 1,
    }
}

/// Stall key -> reason of NV_PMA.md §4, as CUPTI numbers; unlisted keys are OTHER (11).
pub fn documented_reason(nine_byte: bool, stall_key: u8) -> u8 {
    const MEMORY_THROTTLE: u8 = 9;
    const CONSTANT_MEMORY: u8 = 7;
    const SYNC: u8 = 6;
    const INST_FETCH: u8 = 2;
    const EXEC_DEPENDENCY: u8 = 3;
    const MEMORY_DEPENDENCY: u8 = 4;
    const PIPE_BUSY: u8 = 8;
    const OTHER: u8 = 11;
    const NONE: u8 = 1;
    if nine_byte {
        match stall_key {
            0x01 | 0x0e => MEMORY_THROTTLE,
            0x02 => SYNC,
            0x05 | 0x0a => INST_FETCH,
            0x06 | 0x09 => EXEC_DEPENDENCY,
            0x08 => MEMORY_DEPENDENCY,
            0x0b | 0x0f => PIPE_BUSY,
            0x11 => NONE,
            _ => OTHER,
        }
    } else {
        match stall_key {
            1 | 15 => MEMORY_THROTTLE,
            2 => CONSTANT_MEMORY,
            3 => SYNC,
            6 | 11 => INST_FETCH,
            7 | 10 => EXEC_DEPENDENCY,
            9 => MEMORY_DEPENDENCY,
            12 => PIPE_BUSY,
            18 => NONE,
            _ => OTHER,
        }
    }
}

pub fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|index| u8::from_str_radix(&text[index..index + 2], 16).expect("hex digits"))
        .collect()
}
