//! NVIDIA PMA PC-sampling streams (as produced by the PC sampler through the PMA ring and decoded
//! by tinygrad): 32-byte packets carry byte streams per TPC; each TPC's stream is a sequence of
//! fixed-size sample records (8 bytes up to Hopper, 9 bytes on Blackwell).
//!
//! [`PmaDecoder`] is streaming: input may arrive in chunks of any size; it keeps at most one
//! partial packet and, per TPC, one partial record between calls (bounded memory, allocated once).

mod layout;
mod sample;

pub use sample::{PmaSample, PmaStats, StallReason};

use layout::{
    PacketHeader, SampleLayout, EIGHT_BYTE, HEADER_OFFSET, HEADER_SIZE, MAX_PAYLOAD,
    MAX_SAMPLE_SIZE, NINE_BYTE, PACKET_SIZE, TPC_ID_COUNT,
};

/// The record format of a GPU generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleFormat {
    /// 8-byte records: Ampere, Ada, Hopper.
    EightByte,
    /// 9-byte records: Blackwell.
    NineByte,
}

/// The first `sm_version` (driver-packed compute capability) with a known PMA layout: sm_80.
pub const FIRST_SUPPORTED_SM_VERSION: u32 = 0x800;

/// The first `sm_version` that writes 9-byte records: the RTX 5090's `0xa04`.
///
/// tinygrad has two thresholds: its decoder (`decode()`) switches to 9-byte records at `0xa04`,
/// its raw packet dump (`print_packets()`) at `0x890`. We follow the decoder: it is the only path
/// checked against CUPTI's own PC samples, on both generations that have captures (Ampere `0x800`
/// with 8-byte records, RTX 5090 `0xa04` with 9-byte records), and the 9-byte field layout was
/// introduced together with the `0xa04` threshold; `0x890` predates the 9-byte layout and only
/// survived in the debugging dump. Ada (`0x890`), Hopper (`0x900`) and sm_100 (`0xa00`) therefore
/// decode as 8-byte records, which no capture has confirmed (NV_PMA.md §5, §8).
pub const FIRST_NINE_BYTE_SM_VERSION: u32 = 0xa04;

impl SampleFormat {
    /// The format of a device, or `None` before Ampere (no known layout).
    pub fn for_sm_version(sm_version: u32) -> Option<SampleFormat> {
        match sm_version {
            v if v < FIRST_SUPPORTED_SM_VERSION => None,
            v if v < FIRST_NINE_BYTE_SM_VERSION => Some(SampleFormat::EightByte),
            _ => Some(SampleFormat::NineByte),
        }
    }

    /// Bytes per sample record.
    pub fn sample_size(self) -> usize {
        self.layout().size
    }

    /// The stall reason a raw stall key maps to (keys without an entry map to OTHER).
    pub fn stall_reason(self, stall_key: u8) -> StallReason {
        self.layout().stall_reason(stall_key)
    }

    fn layout(self) -> &'static SampleLayout {
        match self {
            SampleFormat::EightByte => &EIGHT_BYTE,
            SampleFormat::NineByte => &NINE_BYTE,
        }
    }
}

/// Why [`PmaDecoder::feed`] did not decode its whole input cleanly.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum FeedError<E> {
    /// The sample consumer returned an error: decoding stopped right there; the samples of the
    /// current packet not yet delivered and the rest of the chunk are lost.
    #[error("the sample consumer stopped the decoding")]
    Stopped(E),
    /// Packets claimed more than 28 payload bytes; each was skipped (voiding its TPC's partial
    /// record) and every other packet of the chunk was decoded.
    #[error("{0} malformed packet(s) skipped")]
    MalformedPackets(u64),
}

/// Bytes of a TPC's stream not yet forming a whole record.
#[derive(Clone, Copy, Default)]
struct PartialRecord {
    bytes: [u8; MAX_SAMPLE_SIZE - 1],
    len: u8,
}

/// Streaming decoder of one PMA byte stream.
pub struct PmaDecoder {
    format: SampleFormat,
    partial_records: Box<[PartialRecord; TPC_ID_COUNT]>,
    partial_packet: [u8; PACKET_SIZE],
    partial_packet_len: usize,
    stats: PmaStats,
}

impl PmaDecoder {
    pub fn new(format: SampleFormat) -> Self {
        PmaDecoder {
            format,
            partial_records: Box::new([PartialRecord::default(); TPC_ID_COUNT]),
            partial_packet: [0; PACKET_SIZE],
            partial_packet_len: 0,
            stats: PmaStats::default(),
        }
    }

    pub fn format(&self) -> SampleFormat {
        self.format
    }

    /// Forgets all partial data and counters, as for a new stream.
    pub fn reset(&mut self) {
        self.partial_records.fill(PartialRecord::default());
        self.partial_packet_len = 0;
        self.stats = PmaStats::default();
    }

    pub fn stats(&self) -> PmaStats {
        let partial_records: u64 = self
            .partial_records
            .iter()
            .map(|partial| u64::from(partial.len))
            .sum();
        PmaStats {
            buffered_bytes: partial_records + self.partial_packet_len as u64,
            ..self.stats
        }
    }

    /// Decodes the next chunk of the stream, handing each sample to `on_sample` in stream order.
    pub fn feed<E>(
        &mut self,
        data: &[u8],
        mut on_sample: impl FnMut(&PmaSample) -> Result<(), E>,
    ) -> Result<(), FeedError<E>> {
        let malformed_before = self.stats.malformed_packets;
        let mut rest = data;

        if self.partial_packet_len > 0 {
            let wanted = PACKET_SIZE - self.partial_packet_len;
            let taken = wanted.min(rest.len());
            self.partial_packet[self.partial_packet_len..][..taken].copy_from_slice(&rest[..taken]);
            self.partial_packet_len += taken;
            rest = &rest[taken..];
            if self.partial_packet_len < PACKET_SIZE {
                return Ok(());
            }
            self.partial_packet_len = 0;
            let packet = self.partial_packet;
            self.decode_packet(&packet, &mut on_sample)
                .map_err(FeedError::Stopped)?;
        }

        let mut packets = rest.chunks_exact(PACKET_SIZE);
        for chunk in &mut packets {
            let mut packet = [0u8; PACKET_SIZE];
            packet.copy_from_slice(chunk);
            self.decode_packet(&packet, &mut on_sample)
                .map_err(FeedError::Stopped)?;
        }
        let tail = packets.remainder();
        self.partial_packet[..tail.len()].copy_from_slice(tail);
        self.partial_packet_len = tail.len();

        match self.stats.malformed_packets - malformed_before {
            0 => Ok(()),
            skipped => Err(FeedError::MalformedPackets(skipped)),
        }
    }

    fn decode_packet<E>(
        &mut self,
        packet: &[u8; PACKET_SIZE],
        on_sample: &mut impl FnMut(&PmaSample) -> Result<(), E>,
    ) -> Result<(), E> {
        let header = PacketHeader::read(packet);
        self.stats.packets += 1;

        let partial = &mut self.partial_records[usize::from(header.tpc_id) % TPC_ID_COUNT];
        if header.dropped {
            self.stats.dropped_packets += 1;
            self.stats.discarded_bytes += u64::from(partial.len);
            partial.len = 0;
        }
        if header.payload_len > MAX_PAYLOAD {
            self.stats.malformed_packets += 1;
            self.stats.discarded_bytes += u64::from(partial.len);
            partial.len = 0;
            return Ok(());
        }

        // The TPC's stream: its held bytes, then this packet's payload (bytes 0-3, 8-31).
        let mut stream = [0u8; MAX_SAMPLE_SIZE - 1 + MAX_PAYLOAD];
        let held = usize::from(partial.len).min(partial.bytes.len());
        stream[..held].copy_from_slice(&partial.bytes[..held]);
        let before_header = header.payload_len.min(HEADER_OFFSET);
        let after_header = header.payload_len - before_header;
        stream[held..][..before_header].copy_from_slice(&packet[..before_header]);
        stream[held + before_header..][..after_header]
            .copy_from_slice(&packet[HEADER_OFFSET + HEADER_SIZE..][..after_header]);
        let stream = &stream[..held + header.payload_len];

        let layout = self.format.layout();
        let records = stream.chunks_exact(layout.size);
        let leftover = records.remainder();
        partial.bytes[..leftover.len()].copy_from_slice(leftover);
        partial.len = leftover.len() as u8;

        for record in records {
            let sample = layout.decode(record, header.tpc_id);
            self.stats.samples += 1;
            on_sample(&sample)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_size_follows_the_decoder_threshold() {
        let size = |sm| SampleFormat::for_sm_version(sm).map(SampleFormat::sample_size);
        assert_eq!(size(0x705), None);
        assert_eq!(size(0x800), Some(8));
        assert_eq!(size(0x890), Some(8));
        assert_eq!(size(0x900), Some(8));
        assert_eq!(size(0xa00), Some(8));
        assert_eq!(size(0xa04), Some(9));
        assert_eq!(size(0xc00), Some(9));
    }

    #[test]
    fn format_round_trips_through_the_decoder() {
        for format in [SampleFormat::EightByte, SampleFormat::NineByte] {
            assert_eq!(PmaDecoder::new(format).format(), format);
        }
    }
}
