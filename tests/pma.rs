//! PMA decoding of streams built by the test encoder from the documented layout.

mod pma_encoder;

use std::convert::Infallible;

use pma_encoder::{
    documented_reason, encode_8, encode_9, hex, interleave, packet, packet_with_len, packetize,
    random_fields, Fields, Rng,
};
use rocprof_trace_decoder::pma::{FeedError, PmaDecoder, PmaSample, SampleFormat, StallReason};

fn decode_chunks(
    format: SampleFormat,
    chunks: &[&[u8]],
) -> (Vec<PmaSample>, PmaDecoder, Vec<Option<u64>>) {
    let mut decoder = PmaDecoder::new(format);
    let mut samples = Vec::new();
    let mut malformed = Vec::new();
    for chunk in chunks {
        let outcome = decoder.feed(chunk, |sample| {
            samples.push(*sample);
            Ok::<(), Infallible>(())
        });
        malformed.push(match outcome {
            Ok(()) => None,
            Err(FeedError::MalformedPackets(count)) => Some(count),
            Err(FeedError::Stopped(never)) => match never {},
        });
    }
    (samples, decoder, malformed)
}

fn decode(format: SampleFormat, data: &[u8]) -> Vec<PmaSample> {
    let (samples, _, malformed) = decode_chunks(format, &[data]);
    assert_eq!(malformed, [None]);
    samples
}

fn fields_of(sample: &PmaSample) -> Fields {
    Fields {
        pc_raw: sample.pc_offset >> 4,
        stall_key: sample.stall_key,
        wave_id: sample.wave_id,
        active: sample.active == 1,
    }
}

#[test]
fn documented_eight_byte_vector() {
    // NV_PMA.md §6, checked with tinygrad's decode(): two records split 12 + 4 over two packets.
    let data = hex(concat!(
        "341200000c2300020020154034120000000000000000000000000000000000000020154004230002",
        "000000000000000000000000000000000000000000000000",
    ));
    let samples = decode(SampleFormat::EightByte, &data);
    assert_eq!(samples.len(), 2);
    for sample in samples {
        assert_eq!(sample.pc_offset, 0x12340);
        assert_eq!(sample.stall_key, 9);
        assert_eq!(sample.stall_reason, StallReason::MemoryDependency);
        assert_eq!(
            (sample.wave_id, sample.active, sample.tpc_id),
            (5, 1, 0x123)
        );
        assert_eq!((sample.gpc, sample.tpc, sample.sm), (9, 1, 1));
    }
}

#[test]
fn documented_nine_byte_vector() {
    // NV_PMA.md §6, checked with tinygrad's decode() at sm 0xa04.
    let data = hex("8b34120009050000000000007800000000000000000000000000000000000000");
    let samples = decode(SampleFormat::NineByte, &data);
    assert_eq!(samples.len(), 1);
    let sample = samples[0];
    assert_eq!(sample.pc_offset, 0x12340);
    assert_eq!(
        (sample.stall_key, sample.stall_reason),
        (0x0b, StallReason::PipeBusy)
    );
    assert_eq!((sample.wave_id, sample.active, sample.tpc_id), (39, 1, 5));
}

#[test]
fn the_format_threshold_is_the_decoders_not_the_raw_dumps() {
    // Ada (0x890) sits between tinygrad's two thresholds: an 8-byte stream must decode as such.
    let fields = [
        Fields {
            pc_raw: 0x1234,
            stall_key: 9,
            wave_id: 5,
            active: true,
        },
        Fields {
            pc_raw: 0x5678,
            stall_key: 18,
            wave_id: 7,
            active: false,
        },
    ];
    let bytes: Vec<u8> = fields.iter().flat_map(|f| encode_8(*f)).collect();
    let data = interleave(&[packetize(1, &bytes, &[16])]);
    let format = SampleFormat::for_sm_version(0x890).expect("Ada is supported");
    let decoded: Vec<Fields> = decode(format, &data).iter().map(fields_of).collect();
    assert_eq!(decoded, fields);
}

fn round_trip(format: SampleFormat, seed: u64, payload_sizes: &[usize]) {
    let (pc_bits, key_bits, encode): (u32, u32, fn(Fields) -> Vec<u8>) = match format {
        SampleFormat::EightByte => (45, 5, encode_8),
        SampleFormat::NineByte => (53, 6, encode_9),
    };
    let mut rng = Rng(seed);
    let fields: Vec<Fields> = (0..200)
        .map(|_| random_fields(&mut rng, pc_bits, key_bits))
        .collect();
    let bytes: Vec<u8> = fields.iter().flat_map(|f| encode(*f)).collect();
    let data = interleave(&[packetize(0x2a, &bytes, payload_sizes)]);
    let samples = decode(format, &data);
    let decoded: Vec<Fields> = samples.iter().map(fields_of).collect();
    assert_eq!(decoded, fields);
    assert!(samples
        .iter()
        .all(|s| s.tpc_id == 0x2a && s.reserved == [0; 6]));
}

#[test]
fn samples_split_across_packets_round_trip() {
    for format in [SampleFormat::EightByte, SampleFormat::NineByte] {
        round_trip(format, 1, &[28]);
        round_trip(format, 2, &[1]);
        round_trip(format, 3, &[5, 13, 28, 2, 7]);
        round_trip(format, 4, &[9, 8, 27]);
    }
}

#[test]
fn extreme_field_values_round_trip() {
    let cases = [
        (SampleFormat::EightByte, (1u64 << 45) - 1, 31u8),
        (SampleFormat::NineByte, (1u64 << 53) - 1, 63u8),
    ];
    for (format, pc_raw, stall_key) in cases {
        let fields = [
            Fields {
                pc_raw,
                stall_key,
                wave_id: 63,
                active: true,
            },
            Fields {
                pc_raw: 0,
                stall_key: 0,
                wave_id: 0,
                active: false,
            },
        ];
        let encode = match format {
            SampleFormat::EightByte => encode_8,
            SampleFormat::NineByte => encode_9,
        };
        let bytes: Vec<u8> = fields.iter().flat_map(|f| encode(*f)).collect();
        let samples = decode(format, &interleave(&[packetize(0, &bytes, &[28])]));
        let decoded: Vec<Fields> = samples.iter().map(fields_of).collect();
        assert_eq!(decoded, fields);
        assert_eq!(samples[0].pc_offset, pc_raw << 4);
    }
}

#[test]
fn uninterpreted_bits_are_exposed() {
    // 8-byte: bits 56-61 and 63; 9-byte: bits 61-66.
    let mut eight = encode_8(Fields {
        pc_raw: 1,
        stall_key: 0,
        wave_id: 0,
        active: false,
    });
    eight[7] |= 0b1011_1111;
    let mut nine = encode_9(Fields {
        pc_raw: 1,
        stall_key: 0,
        wave_id: 0,
        active: false,
    });
    nine[7] |= 0b1110_0000;
    nine[8] |= 0b0000_0111;
    let decoded_eight = decode(SampleFormat::EightByte, &packet(3, &eight, false));
    let decoded_nine = decode(SampleFormat::NineByte, &packet(3, &nine, false));
    assert_eq!(decoded_eight[0].uninterpreted_bits, 0x7f);
    assert_eq!(decoded_nine[0].uninterpreted_bits, 0x3f);
    for sample in [decoded_eight[0], decoded_nine[0]] {
        assert_eq!(
            (sample.pc_offset, sample.stall_key, sample.wave_id),
            (0x10, 0, 0)
        );
        assert_eq!(sample.active, 0);
    }
}

#[test]
fn every_stall_key_maps_as_documented() {
    for (format, key_count) in [
        (SampleFormat::EightByte, 32u8),
        (SampleFormat::NineByte, 64),
    ] {
        let nine_byte = format == SampleFormat::NineByte;
        let encode = if nine_byte { encode_9 } else { encode_8 };
        let bytes: Vec<u8> = (0..key_count)
            .flat_map(|stall_key| {
                encode(Fields {
                    pc_raw: u64::from(stall_key),
                    stall_key,
                    wave_id: 1,
                    active: true,
                })
            })
            .collect();
        let samples = decode(format, &interleave(&[packetize(9, &bytes, &[28])]));
        assert_eq!(samples.len(), usize::from(key_count));
        for (stall_key, sample) in (0..key_count).zip(&samples) {
            assert_eq!(sample.stall_key, stall_key);
            assert_eq!(
                sample.stall_reason as u8,
                documented_reason(nine_byte, stall_key),
                "{format:?} key {stall_key}"
            );
            assert_eq!(format.stall_reason(stall_key), sample.stall_reason);
        }
    }
}

#[test]
fn interleaved_tpcs_keep_separate_streams() {
    let tpc_ids = [0x000u16, 0x123, 0x7ff, 0x400];
    let mut rng = Rng(7);
    let per_tpc: Vec<Vec<Fields>> = tpc_ids
        .iter()
        .map(|_| (0..40).map(|_| random_fields(&mut rng, 45, 5)).collect())
        .collect();
    let streams: Vec<Vec<[u8; 32]>> = tpc_ids
        .iter()
        .zip(&per_tpc)
        .enumerate()
        .map(|(index, (&tpc_id, fields))| {
            let bytes: Vec<u8> = fields.iter().flat_map(|f| encode_8(*f)).collect();
            packetize(tpc_id, &bytes, &[3 + index * 5, 28, 11])
        })
        .collect();
    let samples = decode(SampleFormat::EightByte, &interleave(&streams));
    assert_eq!(samples.len(), 160);
    for (&tpc_id, fields) in tpc_ids.iter().zip(&per_tpc) {
        let decoded: Vec<Fields> = samples
            .iter()
            .filter(|s| s.tpc_id == tpc_id)
            .map(fields_of)
            .collect();
        assert_eq!(&decoded, fields, "TPC {tpc_id:#x}");
        let sample = samples
            .iter()
            .find(|s| s.tpc_id == tpc_id)
            .expect("TPC has samples");
        let split = (sample.gpc, sample.tpc, sample.sm);
        assert_eq!(
            split,
            (
                (tpc_id >> 5) as u8,
                ((tpc_id >> 1) & 0xf) as u8,
                (tpc_id & 1) as u8
            )
        );
    }
}

#[test]
fn dropped_flag_discards_only_that_tpcs_partial_record() {
    let first = Fields {
        pc_raw: 0x111,
        stall_key: 3,
        wave_id: 1,
        active: true,
    };
    let lost = Fields {
        pc_raw: 0x222,
        stall_key: 7,
        wave_id: 2,
        active: true,
    };
    let after = Fields {
        pc_raw: 0x333,
        stall_key: 12,
        wave_id: 3,
        active: false,
    };
    let other = Fields {
        pc_raw: 0x444,
        stall_key: 18,
        wave_id: 4,
        active: true,
    };
    let lost_bytes = encode_8(lost);
    let other_bytes = encode_8(other);

    let mut data = Vec::new();
    // TPC 1: a whole record plus 5 bytes of the next; TPC 2: 3 bytes of a record.
    let mut payload = encode_8(first);
    payload.extend_from_slice(&lost_bytes[..5]);
    data.extend_from_slice(&packet(1, &payload, false));
    data.extend_from_slice(&packet(2, &other_bytes[..3], false));
    // TPC 1 drops: its 5 held bytes go, the new record starts fresh.
    data.extend_from_slice(&packet(1, &encode_8(after), true));
    data.extend_from_slice(&packet(2, &other_bytes[3..], false));

    let (samples, decoder, malformed) = decode_chunks(SampleFormat::EightByte, &[&data]);
    assert_eq!(malformed, [None]);
    let decoded: Vec<(u16, Fields)> = samples.iter().map(|s| (s.tpc_id, fields_of(s))).collect();
    assert_eq!(decoded, [(1, first), (1, after), (2, other)]);
    let stats = decoder.stats();
    assert_eq!((stats.packets, stats.samples), (4, 3));
    assert_eq!((stats.dropped_packets, stats.discarded_bytes), (1, 5));
    assert_eq!(stats.buffered_bytes, 0);
}

#[test]
fn dropped_flag_on_an_empty_queue_loses_nothing() {
    let fields = Fields {
        pc_raw: 0x55,
        stall_key: 9,
        wave_id: 9,
        active: true,
    };
    let samples = decode(SampleFormat::NineByte, &packet(4, &encode_9(fields), true));
    assert_eq!(samples.iter().map(fields_of).collect::<Vec<_>>(), [fields]);
}

fn mixed_stream(format: SampleFormat) -> Vec<u8> {
    let mut rng = Rng(99);
    let (pc_bits, key_bits, encode): (u32, u32, fn(Fields) -> Vec<u8>) = match format {
        SampleFormat::EightByte => (45, 5, encode_8),
        SampleFormat::NineByte => (53, 6, encode_9),
    };
    let streams: Vec<Vec<[u8; 32]>> = (0..5u16)
        .map(|tpc| {
            let bytes: Vec<u8> = (0..30)
                .flat_map(|_| encode(random_fields(&mut rng, pc_bits, key_bits)))
                .collect();
            packetize(tpc * 37, &bytes, &[1 + usize::from(tpc) * 6, 28, 4])
        })
        .collect();
    interleave(&streams)
}

#[test]
fn arbitrary_chunking_gives_the_same_samples() {
    for format in [SampleFormat::EightByte, SampleFormat::NineByte] {
        let data = mixed_stream(format);
        let whole = decode(format, &data);
        assert_eq!(whole.len(), 150);

        let bytewise: Vec<&[u8]> = data.chunks(1).collect();
        assert_eq!(decode_chunks(format, &bytewise).0, whole);

        let mut rng = Rng(5);
        let mut chunks = Vec::new();
        let mut rest = &data[..];
        while !rest.is_empty() {
            let (chunk, tail) = rest.split_at(rng.below(70).min(rest.len()));
            chunks.push(chunk);
            rest = tail;
        }
        assert_eq!(decode_chunks(format, &chunks).0, whole);
    }
}

#[test]
fn trailing_partial_packet_waits_for_more_data() {
    let fields = Fields {
        pc_raw: 0xabc,
        stall_key: 6,
        wave_id: 11,
        active: true,
    };
    let data = packet(8, &encode_8(fields), false);
    let (samples, decoder, _) = decode_chunks(SampleFormat::EightByte, &[&data[..31]]);
    assert!(samples.is_empty());
    assert_eq!(decoder.stats().buffered_bytes, 31);
    assert_eq!(decoder.stats().packets, 0);
}

#[test]
fn malformed_packets_are_skipped_and_reported() {
    let good = Fields {
        pc_raw: 0x10,
        stall_key: 1,
        wave_id: 1,
        active: true,
    };
    let voided = Fields {
        pc_raw: 0x20,
        stall_key: 2,
        wave_id: 2,
        active: true,
    };
    let voided_bytes = encode_8(voided);
    let mut data = Vec::new();
    data.extend_from_slice(&packet(6, &voided_bytes[..4], false));
    for num_bytes in 29..32 {
        data.extend_from_slice(&packet_with_len(6, &[0xAA; 28], num_bytes, false));
    }
    data.extend_from_slice(&packet(6, &encode_8(good), false));

    let (samples, decoder, malformed) = decode_chunks(SampleFormat::EightByte, &[&data]);
    assert_eq!(malformed, [Some(3)]);
    assert_eq!(samples.iter().map(fields_of).collect::<Vec<_>>(), [good]);
    let stats = decoder.stats();
    assert_eq!((stats.malformed_packets, stats.discarded_bytes), (3, 4));
}

#[test]
fn a_stopping_consumer_ends_the_feed() {
    let data = mixed_stream(SampleFormat::EightByte);
    let mut decoder = PmaDecoder::new(SampleFormat::EightByte);
    let mut seen = 0;
    let outcome = decoder.feed(&data, |_| {
        seen += 1;
        if seen == 10 {
            Err("enough")
        } else {
            Ok(())
        }
    });
    assert_eq!(outcome, Err(FeedError::Stopped("enough")));
    assert_eq!(seen, 10);
}

#[test]
fn reset_starts_a_new_stream() {
    let fields = Fields {
        pc_raw: 0x99,
        stall_key: 10,
        wave_id: 12,
        active: false,
    };
    let bytes = encode_8(fields);
    let mut decoder = PmaDecoder::new(SampleFormat::EightByte);
    let mut samples = Vec::new();
    let mut collect = |sample: &PmaSample| {
        samples.push(fields_of(sample));
        Ok::<(), Infallible>(())
    };
    let _ = decoder.feed(&packet(2, &bytes[..6], false), &mut collect);
    let _ = decoder.feed(&[0u8; 10], &mut collect);
    assert_eq!(decoder.stats().buffered_bytes, 16);
    decoder.reset();
    assert_eq!(decoder.stats(), Default::default());
    let _ = decoder.feed(&packet(2, &bytes, false), &mut collect);
    assert_eq!(samples, [fields]);
}

#[test]
fn empty_and_header_only_packets_yield_nothing() {
    let mut data = Vec::new();
    data.extend_from_slice(&packet(0, &[], false));
    data.extend_from_slice(&[0u8; 64]);
    assert!(decode(SampleFormat::NineByte, &data).is_empty());
}
