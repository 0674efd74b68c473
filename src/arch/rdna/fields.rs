//! The bit fields of the RDNA tokens whose layout every generation shares (SQTT_FORMAT §1.5):
//! HEADER, REG, REG_INIT, EVENT, MISC and the slot masks. Written once, for the decoder, the
//! quick scan and the test encoders; the fields that move between generations are in each
//! generation's [`RdnaFields`](crate::arch::table::RdnaFields).

use crate::arch::table::{bits, Field};

/// HEADER: the traced unit and the VALU rates.
pub mod header {
    use super::{bits, Field};
    // The version's place belongs to the header recognition: `stream::header::RDNA_VERSION_BITS`.
    pub const TARGET_SIMD: Field = bits(13, 2);
    pub const TARGET_WGP: Field = bits(15, 3);
    pub const TARGET_SA: Field = bits(19, 1);
    /// The DP rate's exponent + 1 (0: rate 1); generations read 3 or 4 of its bits.
    pub const DPRATE: Field = bits(28, 4);
    /// The exponent of the DP derate.
    pub const DP_DERATE: Field = bits(33, 3);
    /// gfx12: occupancy is handed over in batches of 65,536 (double-buffered capture).
    pub const DOUBLE_BUFFER: Field = bits(43, 1);
}

/// REG: a register write by dispatcher `(me & 1, pipe)`.
pub mod reg {
    use super::{bits, Field};
    pub const PIPE: Field = bits(7, 2);
    pub const ME: Field = bits(9, 1);
    /// The address is relative to the compute register block.
    pub const COMPUTE: Field = bits(15, 1);
    pub const ADDRESS: Field = bits(16, 16);
    pub const DATA: Field = bits(32, 32);
}

/// REG_INIT: a register's value at the start of a dispatch.
pub mod reg_init {
    use super::{bits, Field};
    pub const PIPE: Field = bits(14, 2);
    pub const ME: Field = bits(16, 1);
    pub const TYPE: Field = bits(18, 2);
    pub const DATA: Field = bits(20, 32);
    /// The REG_INIT type of COMPUTE_DISPATCH_INITIATOR writes.
    pub const DISPATCH_INITIATOR: u64 = 2;
}

/// EVENT (and EVENT_SYNC): a pipeline event of dispatcher `(me & 1, pipe)`.
pub mod event {
    use super::{bits, Field};
    pub const BOP: Field = bits(11, 1);
    pub const ME: Field = bits(14, 1);
    pub const PIPE: Field = bits(16, 2);
    pub const ID: Field = bits(18, 6);
}

/// MISC: a bit per reported condition from bit 16.
pub mod misc {
    use super::{bits, Field};
    pub const FLAGS: Field = bits(16, 8);
    /// Flag 0 (bit 16): packet loss on gfx10, an SPM sample later.
    pub const PACKET_LOST_OR_SPM: u64 = 1;
    /// Flag 1 (bit 17): a GC rinse, the usual report.
    pub const GC_RINSE: u64 = 1 << 1;
    /// Flag 2 (bit 18) never reports anything.
    pub const REPORTED: u64 = 0xFB;
    /// Flag 3 (bit 19): a context save begins.
    pub const SAVE_CONTEXT: u64 = 1 << 3;
}

/// IMMEDIATE and WAVE_READY: a mask of wave slots.
pub const SLOT_MASK: Field = bits(8, 16);
