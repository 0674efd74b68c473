//! The decoder keeps buffers per thread between parse calls (pools, wave builders, location
//! tables, ISA line facts). A buffer must decode the same whatever the thread decoded before.

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

/// A gfx12 stream whose only token after the header is `token` (`bits` long).
fn gfx12_stream(token: u64, bits: usize) -> Vec<u8> {
    let mut b = Bits::default();
    b.put(0x11 | 4 << 7, 64).put(token, bits);
    b.bytes.resize(b.bytes.len() + 16, 0);
    b.bytes
}

fn occupancy(data: &[u8]) -> Vec<Occupancy> {
    let mut out = Vec::new();
    let mut sink = |r: Record<'_>| {
        if let Record::Occupancy(batch) = r {
            out.extend_from_slice(batch);
        }
        0
    };
    let mut isa = NoIsa;
    let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), &mut isa);
    session.decode_buffer(data).expect("decodes");
    drop(session);
    out
}

#[test]
fn a_wave_started_by_an_earlier_buffer_is_not_running_in_the_next() {
    // WAVE_START and WAVE_END of wave 3 on SIMD 1 (WGP 0, SA 0), in separate buffers.
    let start = gfx12_stream(0b01100 | 1 << 8 | 3 << 15, 32);
    let end = gfx12_stream(0b10101 | 1 << 9 | 3 << 15, 20);
    let fresh = std::thread::scope(|s| s.spawn(|| occupancy(&end)).join().unwrap());
    // An end without a start in its own buffer gets a start record at time 0 first.
    assert_eq!(fresh.len(), 2, "{fresh:?}");
    assert!(fresh[0].is_start() && fresh[0].time == 0 && !fresh[1].is_start());
    assert!(!occupancy(&start).is_empty());
    assert_eq!(
        occupancy(&end),
        fresh,
        "after a buffer that started the wave"
    );
}
