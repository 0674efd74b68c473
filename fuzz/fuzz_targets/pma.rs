//! PMA decoding of arbitrary bytes: never panics, and feeding the stream in chunks gives exactly
//! the samples and counters of feeding it whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocprof_trace_decoder::pma::{FeedError, PmaDecoder, PmaSample, PmaStats, SampleFormat};

fn decode<'a>(
    format: SampleFormat,
    chunks: impl Iterator<Item = &'a [u8]>,
) -> (Vec<PmaSample>, PmaStats) {
    let mut decoder = PmaDecoder::new(format);
    let mut samples = Vec::new();
    for chunk in chunks {
        let outcome = decoder.feed(chunk, |sample| {
            samples.push(*sample);
            Ok::<(), ()>(())
        });
        assert!(matches!(
            outcome,
            Ok(()) | Err(FeedError::MalformedPackets(_))
        ));
    }
    (samples, decoder.stats())
}

fuzz_target!(|input: &[u8]| {
    let Some((&control, data)) = input.split_first() else {
        return;
    };
    let format = if control & 1 == 0 {
        SampleFormat::EightByte
    } else {
        SampleFormat::NineByte
    };
    let chunk_size = usize::from(control >> 1) + 1;
    let whole = decode(format, std::iter::once(data));
    let chunked = decode(format, data.chunks(chunk_size));
    assert_eq!(whole, chunked);
});
