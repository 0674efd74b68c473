//! The decoded sample and the decoder counters, laid out for the C API.

use std::ffi::CStr;

/// Why the sampled warp was not issuing; numerically equal to CUPTI's
/// `CUpti_ActivityPCSamplingStallReason`. INVALID, TEXTURE, NOT_SELECTED and SLEEPING are never
/// produced by the known stall-key maps.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StallReason {
    Invalid = 0,
    /// Selected (issued).
    None = 1,
    InstFetch = 2,
    ExecDependency = 3,
    MemoryDependency = 4,
    Texture = 5,
    Sync = 6,
    ConstantMemory = 7,
    PipeBusy = 8,
    MemoryThrottle = 9,
    NotSelected = 10,
    Other = 11,
    Sleeping = 12,
}

impl StallReason {
    pub const ALL: [StallReason; 13] = [
        StallReason::Invalid,
        StallReason::None,
        StallReason::InstFetch,
        StallReason::ExecDependency,
        StallReason::MemoryDependency,
        StallReason::Texture,
        StallReason::Sync,
        StallReason::ConstantMemory,
        StallReason::PipeBusy,
        StallReason::MemoryThrottle,
        StallReason::NotSelected,
        StallReason::Other,
        StallReason::Sleeping,
    ];

    /// The CUPTI-style name, e.g. `MEMORY_DEPENDENCY`.
    pub fn name(self) -> &'static str {
        // The names are ASCII literals, so the conversion cannot fail.
        self.c_name().to_str().unwrap_or_default()
    }

    /// [`StallReason::name`] as a NUL-terminated string for C.
    pub fn c_name(self) -> &'static CStr {
        match self {
            StallReason::Invalid => c"INVALID",
            StallReason::None => c"NONE",
            StallReason::InstFetch => c"INST_FETCH",
            StallReason::ExecDependency => c"EXEC_DEPENDENCY",
            StallReason::MemoryDependency => c"MEMORY_DEPENDENCY",
            StallReason::Texture => c"TEXTURE",
            StallReason::Sync => c"SYNC",
            StallReason::ConstantMemory => c"CONSTANT_MEMORY",
            StallReason::PipeBusy => c"PIPE_BUSY",
            StallReason::MemoryThrottle => c"MEMORY_THROTTLE",
            StallReason::NotSelected => c"NOT_SELECTED",
            StallReason::Other => c"OTHER",
            StallReason::Sleeping => c"SLEEPING",
        }
    }

    pub fn from_u32(value: u32) -> Option<StallReason> {
        StallReason::ALL.get(usize::try_from(value).ok()?).copied()
    }
}

/// One PC sample of one warp.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PmaSample {
    /// Sampled program counter (`pc_raw << 4`); its base is unknown, only differences between
    /// samples of one kernel are meaningful.
    pub pc_offset: u64,
    /// The 11-bit TPC id of the packet that carried the sample.
    pub tpc_id: u16,
    /// Warp slot on the SM.
    pub wave_id: u8,
    /// Raw stall key of the record (5 bits in 8-byte records, 6 bits in 9-byte records).
    pub stall_key: u8,
    /// `stall_key` mapped through the generation's stall-key map.
    pub stall_reason: StallReason,
    /// 1 if the warp issued / was executing, 0 if it was resident but not issued.
    pub active: u8,
    /// GPC, TPC and SM split of `tpc_id` as `gpc << 5 | tpc << 1 | sm`: valid only for captures
    /// whose driver programs that enumeration (tinygrad's); the CUDA driver numbers SMs
    /// differently.
    pub gpc: u8,
    pub tpc: u8,
    pub sm: u8,
    /// Record bits no known decoder interprets, packed from bit 0 (8-byte records: bits 56-61,
    /// then bit 63 as bit 6; 9-byte records: bits 61-66).
    pub uninterpreted_bits: u8,
    /// Always zero.
    pub reserved: [u8; 6],
}

/// Counters of one decoder since its creation or last reset.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmaStats {
    /// Complete 32-byte packets read.
    pub packets: u64,
    /// Samples decoded and delivered.
    pub samples: u64,
    /// Packets whose dropped flag was set.
    pub dropped_packets: u64,
    /// Bytes of partial records thrown away because of a dropped flag or a malformed packet.
    pub discarded_bytes: u64,
    /// Packets skipped because their payload length exceeds 28 bytes.
    pub malformed_packets: u64,
    /// Bytes held for the next call: a partial packet plus partial records of every TPC.
    pub buffered_bytes: u64,
}
