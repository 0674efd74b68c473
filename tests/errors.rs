//! The errors of the safe API say what went wrong, in which buffer (or chunk) and at which
//! byte: corrupt, unknown, truncated and unsupported streams of gfx9 and RDNA, encoded here, and
//! the quick scanner's chunk errors. Every offset is computed from the encoder's own lengths.

use rocprof_trace_decoder::scan::chunks::ScanChunks;
use rocprof_trace_decoder::sink::{Filter, Record as SinkRecord};
use rocprof_trace_decoder::{DecodeError, Decoder, ErrorKind, NoIsa, QuickScanner, Record};

#[path = "common/encoder/mod.rs"]
mod encoder;
use encoder::gfx9::{self, Gfx9};
use encoder::rdna::{self, Rdna, Unit};

/// COMPUTE_DISPATCH_INITIATOR (compute-relative address 0) with COMPUTE_SHADER_EN set.
const DISPATCH_INITIATOR: u64 = 0;
const SHADER_EN: u32 = 1;

/// Decodes `buffers` as one capture; returns the result and how many waves were delivered.
fn parse(buffers: &[&[u8]]) -> (Result<(), DecodeError>, usize) {
    let mut waves = 0;
    let result = Decoder::new(NoIsa).parse(buffers.iter().copied(), |record| {
        if let Record::Wave(_) = record {
            waves += 1;
        }
    });
    (result, waves)
}

fn error(kind: ErrorKind, buffer: usize, offset: usize) -> Result<(), DecodeError> {
    Err(DecodeError {
        kind,
        buffer,
        offset,
    })
}

/// A gfx950 buffer with one complete wave in slot `slot` of SIMD 0 of the traced CU 0.
fn gfx9_one_wave(slot: u64) -> Gfx9 {
    let mut s = Gfx9::new(gfx9::Header::new(6, 0));
    s.at(16)
        .wave_start(0, 0, slot, 1, 0)
        .at(32)
        .issue(0, slot, 2)
        .inst(0, slot, 0)
        .at(48)
        .wave_end(0, 0, slot)
        .at(64);
    s
}

#[test]
fn gfx9_a_wave_token_naming_slot_12_is_an_invalid_slot_at_its_byte_of_its_buffer() {
    let clean = gfx9_one_wave(0);
    let mut corrupt = gfx9_one_wave(1);
    let at = corrupt.bytes.len();
    corrupt.wave_end(0, 2, 12).at(80);
    let (result, waves) = parse(&[&clean.bytes, &corrupt.bytes, &clean.bytes]);
    assert_eq!(result, error(ErrorKind::InvalidWaveSlot, 1, at));
    assert_eq!(
        waves, 2,
        "the waves before the damage are delivered, the later buffer not"
    );
    let message = result.unwrap_err().to_string();
    assert!(
        message.ends_with(&format!("(buffer 1, byte {at})")),
        "{message}"
    );
}

#[test]
fn gfx9_an_inst_naming_slot_11_is_an_invalid_slot_at_its_byte() {
    let mut s = gfx9_one_wave(3);
    s.issue(0, 3, 2);
    let at = s.bytes.len();
    // INST tokens take the reader's fast path: the offset must survive it.
    s.inst(1, 11, 0).at(96);
    let (result, _) = parse(&[&s.bytes]);
    assert_eq!(result, error(ErrorKind::InvalidWaveSlot, 0, at));
}

#[test]
fn gfx9_unknown_header_and_header_without_tokens() {
    let clean = gfx9_one_wave(0);
    // Version 7 is no gfx9 generation; the legacy word 0x11 leaves no RDNA version either.
    let mut unknown = Gfx9::new(gfx9::Header::new(7, 0));
    unknown.at(16);
    let (result, waves) = parse(&[&clean.bytes, &unknown.bytes]);
    assert_eq!(result, error(ErrorKind::UnknownHeader, 1, 0));
    assert_eq!(waves, 1);

    let header_only = Gfx9::new(gfx9::Header::new(6, 0));
    assert_eq!(header_only.bytes.len(), 8);
    let (result, _) = parse(&[&clean.bytes, &clean.bytes, &header_only.bytes]);
    assert_eq!(result, error(ErrorKind::Truncated, 2, 8));
}

/// A gfx11 stream with one wave that starts and ends on the traced SIMD.
fn rdna_one_wave() -> Vec<u8> {
    let mut s = Rdna::new(rdna::Header::version(3));
    s.time(8)
        .wave_start(Unit::wave(0))
        .time(8)
        .wave_end(Unit::wave(0))
        .time(8);
    s.padded()
}

#[test]
fn rdna_an_unknown_header_version_is_an_unknown_header_of_its_buffer() {
    let clean = rdna_one_wave();
    let header = rdna::Header::version(3).word();
    let mut unknown = rdna::with_version(header, 6).to_le_bytes().to_vec();
    unknown.extend_from_slice(&clean[8..]);
    let (result, _) = parse(&[&clean, &clean, &unknown]);
    assert_eq!(result, error(ErrorKind::UnknownHeader, 2, 0));
}

#[test]
fn rdna_a_header_cut_before_its_version_is_truncated_where_the_buffer_ends() {
    let clean = rdna_one_wave();
    // gfx12's version (4) has its low bit clear: the first byte alone reads as version 0.
    let gfx12 = Rdna::new(rdna::Header::version(4)).padded();
    let (result, _) = parse(&[&clean, &gfx12[..1]]);
    assert_eq!(result, error(ErrorKind::Truncated, 1, 1));
    // Two bytes carry the version: an empty gfx12 stream.
    assert_eq!(parse(&[&clean, &gfx12[..2]]).0, Ok(()));
}

/// The RDNA decoders reject no token as corrupt: a HEADER version without a decoder (gfx12.5)
/// is the RDNA stream error.
#[test]
fn rdna_gfx12_5_is_an_unsupported_version_at_the_header() {
    let clean = rdna_one_wave();
    let gfx12_5 = Rdna::new(rdna::Header::version(5)).padded();
    let (result, waves) = parse(&[&clean, &gfx12_5, &clean]);
    assert_eq!(result, error(ErrorKind::UnsupportedVersion(5), 1, 0));
    assert_eq!(waves, 1);
}

#[test]
fn scan_a_chunk_shorter_than_a_header_word_and_a_missing_predecessor() {
    let scanner = QuickScanner::new();
    let clean = gfx9_one_wave(0);
    assert_eq!(
        scanner.scan(0, &clean.bytes[..5], |_| {}),
        error(ErrorKind::ChunkTooShort, 0, 5)
    );
    assert_eq!(scanner.scan(0, &[], |_| {}), Ok(()));
    // Chunk 3 waits for chunk 2's state, which no one publishes.
    assert_eq!(
        scanner.scan(3, &clean.bytes[8..], |_| {}),
        error(ErrorKind::MissingPreviousChunk, 3, 0)
    );
}

/// Scans chunk 0 with a callback that answers `status` to the first dispatch.
fn scan_stopping_at_dispatch(data: &[u8], status: i32) -> Result<(), DecodeError> {
    let mut sink = |record: SinkRecord<'_>| match record {
        SinkRecord::Dispatch(_) => status,
        _ => 0,
    };
    ScanChunks::default().quick_scan(0, data, Filter::default(), Some(&mut sink))
}

#[test]
fn scan_a_callback_that_stops_the_scan_is_named_with_its_status_and_the_token() {
    let mut gfx9 = gfx9_one_wave(0);
    let at = gfx9.bytes.len();
    gfx9.reg_cs(1, 0, DISPATCH_INITIATOR, SHADER_EN.into())
        .at(80);
    assert_eq!(
        scan_stopping_at_dispatch(&gfx9.bytes, 9),
        error(ErrorKind::StoppedByCallback(9), 0, at)
    );
    assert_eq!(scan_stopping_at_dispatch(&gfx9.bytes, 0), Ok(()));

    let mut gfx12 = Rdna::new(rdna::Header::version(4));
    gfx12.time(8);
    let at = gfx12.nibble_len() / 2;
    assert_eq!(gfx12.nibble_len() % 2, 0, "the token starts on a byte");
    gfx12.dispatch_initiator(1, 0, SHADER_EN).time(8);
    assert_eq!(
        scan_stopping_at_dispatch(&gfx12.padded(), -4),
        error(ErrorKind::StoppedByCallback(-4), 0, at)
    );
}
