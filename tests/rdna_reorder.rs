//! The gfx10/11 reorder queue on a synthesized gfx11 stream whose clock never advances: the queue
//! releases its oldest tokens past its bound, and every token is still handled, in order.

use rocprof_trace_decoder::decode::Session;
use rocprof_trace_decoder::isa::{IsaError, IsaProvider};
use rocprof_trace_decoder::records::{Occupancy, Pc};
use rocprof_trace_decoder::sink::{Emitter, Filter, Record};

#[path = "common/bits.rs"]
mod bits;
use bits::Bits;

struct NoIsa;

impl IsaProvider for NoIsa {
    fn disassemble(&mut self, _: Pc, _: &mut Vec<u8>) -> Result<u64, IsaError> {
        Err(IsaError::UnknownAddress)
    }
}

/// gfx11 HEADER (version 3) tracing SIMD 0 of WGP 0, SA 0.
fn header() -> Bits {
    let mut b = Bits::default();
    b.put(0x11 | 3 << 7, 64);
    b
}

/// WAVE_START (no time delta) of `wave` on `simd` of WGP 1, so no wave is traced.
fn wave_start(b: &mut Bits, simd: u64, wave: u64) {
    b.put(0b01100 | simd << 8 | 1 << 10 | wave << 13, 32);
}

fn occupancy(mut b: Bits) -> Vec<Occupancy> {
    b.bytes.resize(b.bytes.len() + 16, 0);
    let mut out = Vec::new();
    let mut sink = |r: Record<'_>| {
        if let Record::Occupancy(batch) = r {
            out.extend_from_slice(batch);
        }
        0
    };
    let mut isa = NoIsa;
    let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), &mut isa);
    session.decode_buffer(&b.bytes).expect("decodes");
    drop(session);
    out
}

#[test]
fn a_clock_that_never_advances_keeps_every_token_in_order() {
    let mut b = header();
    let count = 3 * 4096 + 7;
    for k in 0..count {
        wave_start(&mut b, k % 4, k / 4 % 32);
    }
    let starts = occupancy(b);
    assert_eq!(starts.len(), count as usize);
    for (k, start) in starts.iter().enumerate() {
        let k = k as u64;
        assert_eq!(
            (start.simd, start.wave_id, start.time),
            ((k % 4) as u8, (k / 4 % 32) as u8, 0),
            "record {k}"
        );
    }
}
