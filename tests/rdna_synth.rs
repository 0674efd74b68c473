//! RDNA decoding of streams synthesized here: the gfx10/11 reorder queue past its bound, and the
//! buffers a thread keeps between parse calls (pools, wave builders, location tables), which must
//! carry no state from one buffer to the next.

use rocprof_trace_decoder::decode::Session;
use rocprof_trace_decoder::isa::NoIsa;
use rocprof_trace_decoder::records::{EventKind, Occupancy, RecordKind};
use rocprof_trace_decoder::sink::check::Checked;
use rocprof_trace_decoder::sink::{Emitter, Filter, Record};

#[path = "common/client.rs"]
mod client;
use client::encoder::rdna::{
    Header, Rdna, Unit, MISC_GC_RINSE as GC_RINSE, MISC_PACKET_LOST_OR_SPM, MISC_SAVE_CONTEXT,
};
use client::{parse_v1, IsaMode, Transcript};

/// A stream: HEADER of `version` (tracing SIMD 0 of WGP 0, SA 0), then what `tokens` writes.
fn stream(version: u64, tokens: impl FnOnce(&mut Rdna)) -> Vec<u8> {
    let mut b = Rdna::new(Header::version(version));
    tokens(&mut b);
    b.padded()
}

/// Decodes one buffer on its own, every delivered record checked, handing each to `each`.
fn decode_each(data: &[u8], mut each: impl FnMut(Record<'_>)) {
    let mut sink = |r: Record<'_>| {
        each(r);
        0
    };
    let mut isa = NoIsa;
    let mut sink = Checked(&mut sink);
    let mut session = Session::new(Emitter::new(&mut sink, Filter::default()), &mut isa);
    session.decode_buffer(data).expect("decodes");
}

/// The OCCUPANCY records of one buffer decoded on its own.
fn occupancy(data: &[u8]) -> Vec<Occupancy> {
    let mut out = Vec::new();
    decode_each(data, |r| {
        if let Record::Occupancy(batch) = r {
            out.extend_from_slice(batch);
        }
    });
    out
}

#[test]
fn a_gfx11_clock_that_never_advances_keeps_every_token_in_order() {
    let count = 3 * 4096 + 7;
    let data = stream(3, |b| {
        for k in 0..count {
            // WAVE_START (no time delta) of wave k/4 on SIMD k%4 of WGP 1: no wave is traced.
            b.wave_start(Unit::wave(k / 4 % 32).simd(k % 4).wgp(1));
        }
    });
    let starts = occupancy(&data);
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

#[test]
fn a_wave_started_by_an_earlier_buffer_is_not_running_in_the_next() {
    // WAVE_START and WAVE_END of wave 3 on SIMD 1 (WGP 0, SA 0) of gfx12, in separate buffers.
    let start = stream(4, |b| {
        b.wave_start(Unit::wave(3).simd(1));
    });
    let end = stream(4, |b| {
        b.wave_end(Unit::wave(3).simd(1));
    });
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

#[test]
fn a_wave_end_of_the_traced_simd_without_a_running_wave_is_skipped() {
    for version in [3u64, 4] {
        let start = |b: &mut Rdna, simd: u64, wave: u64| {
            b.wave_start(Unit::wave(wave).simd(simd));
        };
        let end = |b: &mut Rdna, simd: u64, wave: u64| {
            b.wave_end(Unit::wave(wave).simd(simd));
        };
        // Traced SIMD 0, slot 2: its start was never seen, then a wave that ends twice.
        let traced = occupancy(&stream(version, |b| {
            end(b, 0, 2);
            start(b, 0, 2);
            end(b, 0, 2);
            end(b, 0, 2);
        }));
        let got: Vec<_> = traced.iter().map(|o| (o.wave_id, o.is_start())).collect();
        assert_eq!(
            got,
            [(2, true), (2, false)],
            "version {version}: {traced:?}"
        );
        // SIMD 1 is not traced: each end without a running wave gets its pair at time 0.
        let other = occupancy(&stream(version, |b| {
            end(b, 1, 2);
            start(b, 1, 2);
            end(b, 1, 2);
            end(b, 1, 2);
        }));
        assert_eq!(other.len(), 6, "version {version}: {other:?}");
        assert_eq!(other.iter().filter(|o| o.is_start()).count(), 3);
    }
}

/// The kinds of the records of one buffer decoded on its own, in delivery order (one entry per
/// callback).
fn delivery_order(data: &[u8]) -> Vec<&'static str> {
    let mut out = Vec::new();
    decode_each(data, |r| {
        out.push(match r {
            Record::Occupancy(_) => "occupancy",
            Record::Wave(_) => "wave",
            Record::Info(_) => "info",
            Record::Gfxip(_) => "gfxip",
            Record::Event(_) => "event",
            _ => "other",
        })
    });
    out
}

#[test]
fn wave_start_ext_starts_no_wave() {
    // Rule (rdna.md §4.9): WAVE_START_EXT is stepped over with its time delta on every version
    // (48 bits on gfx10/11, 40 on gfx12 with no extension bytes: the next window's bit 0 is
    // clear). WAVE_START_EXT of wave 3, then WAVE_START of wave 2, both on SIMD 1 of WGP 0: only
    // wave 2 starts.
    for version in [2u64, 3, 4] {
        let data = stream(version, |b| {
            b.wave_start_ext(Unit::wave(3).simd(1));
            b.wave_start(Unit::wave(2).simd(1));
        });
        let got = occupancy(&data);
        assert_eq!(got.len(), 1, "version {version}: {got:?}");
        assert!(got[0].is_start() && got[0].simd == 1 && got[0].wave_id == 2);
    }
}

#[test]
fn gfx12_extension_bytes_are_skipped_until_a_byte_without_bit_0() {
    // Rule (rdna.md §4.9): on gfx12 the bytes after a WAVE_START_EXT whose bit 0 is set are its
    // extension bytes, 8 bits each without time, padding between them included; the first
    // other byte starts a token. Read as tokens, 0x01 would be a TIMESTAMP (64 bits) and 0x21
    // a NEW_PC (72 bits), either swallowing the WAVE_START after them.
    for padding in [0, 1, 2, 40] {
        let data = stream(4, |b| {
            b.wave_start_ext(Unit::wave(3).simd(1));
            b.extension_bytes(&[0x01, 0xFF]);
            b.padding(padding);
            b.extension_bytes(&[0x21]);
            b.at(20);
            b.wave_start(Unit::wave(2).simd(1));
            // The extension has ended: a byte with bit 0 set is a token again (TIMESTAMP).
            b.packet_lost_timestamp();
            b.wave_end(Unit::wave(2).simd(1));
        });
        let got = occupancy(&data);
        let waves: Vec<(u8, bool, u64)> = got
            .iter()
            .map(|o| (o.wave_id, o.is_start(), o.time))
            .collect();
        assert_eq!(waves, [(2, true, 20), (2, false, 20)], "padding {padding}");
    }
}

/// The occupancy records' times, as delivered.
fn occupancy_times(data: &[u8]) -> Vec<u64> {
    occupancy(data).iter().map(|o| o.time).collect()
}

#[test]
fn occupancy_is_time_sorted_after_long_deltas_wrap_the_clock() {
    // Rule (rdna.md §4.12): occupancy goes out time-sorted; records are pooled in token order,
    // which is time order until the 64-bit clock wraps. Waves 0 and 1 of SIMD 1 (not traced)
    // start at 10 and 20; TIMESTAMP long deltas of 2^N - 1 cycles (the value field's widest)
    // wrap the clock to 5, where wave 0 ends. (gfx11's 36-bit deltas would need 2^28 tokens.)
    for (version, width) in [(2u64, 48u32), (4, 52)] {
        let data = stream(version, |b| {
            b.at(10).wave_start(Unit::wave(0).simd(1));
            b.at(20).wave_start(Unit::wave(1).simd(1));
            let longest = (1u64 << width) - 1;
            let mut left = u64::MAX - 20 + 1 + 5;
            while left > 0 {
                let step = left.min(longest);
                b.long_delta(step);
                left -= step;
            }
            b.wave_end(Unit::wave(0).simd(1));
        });
        assert_eq!(occupancy_times(&data), [5, 10, 20], "version {version}");
    }
}

#[test]
fn occupancy_is_time_sorted_after_a_packet_loss_ends_a_wave_a_cycle_early() {
    // Rule (rdna.md §4.12): a wave start right after a packet loss at a location still running
    // ends that wave a cycle before the token, after the records of its time already pooled:
    // waves 0 and 1 of SIMD 1 start at 10, packets are lost, wave 0 starts again at 10.
    let data = stream(4, |b| {
        b.at(10).wave_start(Unit::wave(0).simd(1));
        b.wave_start(Unit::wave(1).simd(1));
        b.packet_lost_timestamp();
        b.wave_start(Unit::wave(0).simd(1));
    });
    let got: Vec<(u8, bool, u64)> = occupancy(&data)
        .iter()
        .map(|o| (o.wave_id, o.is_start(), o.time))
        .collect();
    assert_eq!(
        got,
        [(0, false, 9), (0, true, 10), (1, true, 10), (0, true, 10)]
    );
}

/// The REALTIME records of one buffer decoded on its own: (shader clock, realtime clock).
fn realtime_records(data: &[u8]) -> Vec<(i64, u64)> {
    let mut out = Vec::new();
    decode_each(data, |r| {
        if let Record::Realtime(batch) = r {
            out.extend(batch.iter().map(|s| (s.shader_clock, s.realtime_clock)));
        }
    });
    out
}

#[test]
fn a_realtime_sample_that_advances_neither_clock_is_averaged_into_the_last() {
    // Rule (rdna.md §4.13): a sample whose realtime value is not above the last pending one, or
    // taken at a shader clock not past the last's, replaces the last by the two's average; gfx12
    // does so in the walk's fast loop, gfx11 only in its tail, so far from the end it keeps all.
    let samples = |b: &mut Rdna| {
        b.at(10).realtime_sample(100);
        b.at(20).realtime_sample(100); // realtime clock not advanced
        b.at(30).realtime_sample(150);
        b.realtime_sample(160); // shader clock not advanced
        b.at(40).realtime_sample(170);
    };
    let gfx12 = stream(4, samples);
    assert_eq!(realtime_records(&gfx12), [(15, 100), (30, 155), (40, 170)]);
    let gfx11 = stream(3, samples);
    assert_eq!(
        realtime_records(&gfx11),
        [(10, 100), (20, 100), (30, 150), (30, 160), (40, 170)]
    );
}

#[test]
fn a_realtime_sample_at_the_buffer_end_is_averaged_on_gfx10_and_gfx11_only() {
    // Rule (rdna.md §4.13), the walk's tail: a buffer that ends with a sample advancing neither
    // clock (no padding after it, so the walk reads it in its tail loop) merges it into the one
    // before on gfx10 and gfx11, not on gfx12.
    for (version, merged) in [(2u64, true), (3, true), (4, false)] {
        let mut b = Rdna::new(Header::version(version));
        b.at(10).realtime_sample(100);
        b.realtime_sample(90);
        let expected: &[(i64, u64)] = if merged {
            &[(10, 95)]
        } else {
            &[(10, 100), (10, 90)]
        };
        assert_eq!(realtime_records(&b.bytes()), expected, "version {version}");
    }
}

#[test]
fn wave_start_counts_past_the_context_masks_start_waves() {
    // Rule (rdna.md §4.6): WAVE_START counts 66-75 are context saves and restores; 76-89 start a
    // wave like any other count. SIMD 1 of WGP 0 (not traced): a save (count 66) gives an end
    // record, a restore (68) a start record, counts 76 and 89 start records.
    for version in [2u64, 3, 4] {
        let data = stream(version, |b| {
            for (wave, count) in [(0u64, 66u64), (1, 68), (2, 76), (3, 89)] {
                b.wave_start_count(Unit::wave(wave).simd(1), count);
            }
        });
        let got = occupancy(&data);
        let waves: Vec<(u8, bool)> = got.iter().map(|o| (o.wave_id, o.is_start())).collect();
        assert_eq!(
            waves,
            [(0, false), (1, true), (2, true), (3, true)],
            "version {version}: {got:?}"
        );
    }
}

#[test]
fn data_lost_is_reported_at_the_end_of_its_buffer() {
    // Rule (rdna.md §4.10): a packet loss (gfx12: a TIMESTAMP with bit 8 set; gfx10: MISC bit
    // 16) is reported by one INFO DATA_LOST after the buffer's other records, however many
    // losses it holds. Wave 0 of the traced SIMD starts, two losses, the wave ends.
    type Loss = fn(&mut Rdna);
    let lost: [(u64, Loss); 2] = [
        (4, |b| {
            b.packet_lost_timestamp();
        }),
        (2, |b| {
            b.misc(MISC_PACKET_LOST_OR_SPM);
        }),
    ];
    for (version, loss) in lost {
        let data = stream(version, |b| {
            b.wave_start(Unit::wave(0));
            loss(b);
            b.time(10);
            loss(b);
            b.wave_end(Unit::wave(0));
        });
        let order = delivery_order(&data);
        let infos: Vec<usize> = (0..order.len()).filter(|&k| order[k] == "info").collect();
        assert_eq!(infos.len(), 1, "version {version}: {order:?}");
        assert!(order.contains(&"wave"), "version {version}: {order:?}");
        // Only the packet-loss events (0.3.0 records) may follow it.
        assert!(
            order[infos[0] + 1..].iter().all(|k| *k == "event"),
            "version {version}: {order:?}"
        );
    }
}

#[test]
fn a_completed_wave_goes_out_at_its_wave_end_between_full_batches() {
    // Rule (docs/timing/stitch.md §6): a traced wave is emitted at its WAVE_END; an
    // INST_OTHER_SIMD batch is handed over when it holds 65 536 records and at the end of the
    // buffer. gfx11 and gfx12 (gfx10 has no other-SIMD ids): wave 0 ends, 65 536 + 3 other-SIMD
    // INST tokens (id 80) come, wave 1 ends after the first 65 536, then a third wave starts and
    // never ends.
    const BATCH: usize = 65_536;
    for version in [3u64, 4] {
        let data = stream(version, |b| {
            let time = |b: &mut Rdna| {
                b.time(10);
            };
            let start = |b: &mut Rdna, wave: u64| {
                b.wave_start(Unit::wave(wave));
            };
            let end = |b: &mut Rdna, wave: u64| {
                b.wave_end(Unit::wave(wave));
            };
            let other_simd = |b: &mut Rdna| {
                b.inst(5, 80);
            };
            time(b);
            start(b, 0);
            start(b, 1);
            time(b);
            end(b, 0);
            time(b);
            for _ in 0..BATCH {
                other_simd(b);
            }
            time(b);
            end(b, 1);
            start(b, 2);
            time(b);
            for _ in 0..3 {
                other_simd(b);
            }
        });
        let mut order = Vec::new();
        decode_each(&data, |r| match r {
            Record::Wave(w) => order.push(format!("WAVE {}", w.wave_id)),
            Record::InstOtherSimd(batch) => order.push(format!("OTHER {}", batch.len())),
            _ => {}
        });
        assert_eq!(
            order,
            ["WAVE 0", "OTHER 65536", "WAVE 1", "OTHER 3", "WAVE 2"],
            "version {version}"
        );
    }
}

#[test]
fn a_second_wave_end_of_a_unit_ends_with_no_pc() {
    // Rule (docs/timing/rdna.md §4.4): a WAVE_END of a unit without a running wave gets a start
    // at time 0 placed first and an end with PC {0, 0}, not the PC of the unit's last wave.
    // Wave 2 on SIMD 1 (not traced) of gfx11 and gfx12 starts from the entry that COMPUTE_PGM_LO
    // 0x10 gives (0x1000), ends, and ends again.
    for version in [3u64, 4] {
        let got = occupancy(&stream(version, |b| {
            b.compute_reg(0x0C, 0x10); // PGM_LO
            b.wave_start(Unit::wave(2).simd(1));
            b.wave_end(Unit::wave(2).simd(1));
            b.wave_end(Unit::wave(2).simd(1));
        }));
        let got: Vec<_> = got
            .iter()
            .map(|o| (o.is_start(), o.pc.address, o.wave_id))
            .collect();
        assert_eq!(
            got,
            [
                (true, 0, 2),
                (true, 0x1000, 2),
                (false, 0x1000, 2),
                (false, 0, 2)
            ],
            "version {version}"
        );
    }
}

/// The (stall, duration, time) of every instruction record of the buffer's waves.
fn instruction_records(data: &[u8]) -> Vec<(u32, i32, i64)> {
    let mut out = Vec::new();
    decode_each(data, |r| {
        if let Record::Wave(w) = r {
            if w.instructions_size > 0 {
                // SAFETY: a delivered WAVE record's array holds `instructions_size` records for
                // the duration of the callback.
                let insts = unsafe {
                    std::slice::from_raw_parts(w.instructions_array, w.instructions_size as usize)
                };
                out.extend(insts.iter().map(|i| (i.stall(), i.duration, i.time)));
            }
        }
    });
    out
}

#[test]
fn near_the_end_a_wave_ready_is_not_moved_ahead_of_its_instruction() {
    // Rule (rdna.md §1): gfx11 WAVE_READY, stamped a cycle early, is moved ahead of the queued
    // tokens of its undelayed time; but the queue is released once before the first token that
    // starts less than 17 nibbles from the end, so a WAVE_READY just past that point is not moved
    // ahead of the tokens read before it. Wave 0 of the traced SIMD starts, TIME (10 cycles), an
    // INST (SALU) of wave 0 and a WAVE_READY of wave 0 with no delta, then zero nibbles up to
    // `total`. The INST has the stall of the WAVE_READY (1 cycle, from its early stamp) unless
    // the release falls between the two.
    for (total, stalled) in [(50usize, true), (48, false), (44, false), (42, true)] {
        let mut b = Rdna::new(Header::version(3));
        b.wave_start(Unit::wave(0)).time(10);
        let inst_start = b.nibble_len();
        b.inst(0, 0);
        let ready_start = b.nibble_len();
        b.wave_ready(1);
        let mut bytes = b.bytes();
        // The WAVE_READY's last nibble shares its byte with a zero one; zero nibbles follow.
        assert!(2 * bytes.len() <= total);
        bytes.resize(total / 2, 0);
        let released_between = inst_start + 17 < total && ready_start + 17 >= total;
        assert_eq!(released_between, !stalled);
        let got = instruction_records(&bytes);
        let expected = if stalled { (1, 2, 9) } else { (0, 1, 10) };
        assert_eq!(got.first(), Some(&expected), "total {total}: {got:?}");
    }
}

#[test]
fn misc_flags_report_their_events_the_same_through_the_c_abi() {
    // Rule (SQTT_FORMAT §2.5): each reported MISC flag (bits 16..24) is one EVENT record at the
    // token's time: the SPM sample first (gfx11/12; packet loss on gfx10), then by bit; bit 18
    // reports nothing. A GC rinse alone, the usual report, is told by one compare in the decoder,
    // and the C ABI hands EVENT records to the client's callback without the sink: both ways
    // must deliver the same records.
    use EventKind as E;
    let reports: [(u64, &[EventKind]); 8] = [
        (GC_RINSE, &[E::GcRinse]),
        (1 << 2, &[]),
        (GC_RINSE | 1 << 2, &[E::GcRinse]),
        (
            MISC_PACKET_LOST_OR_SPM | GC_RINSE,
            &[E::SpmSample, E::GcRinse],
        ),
        (MISC_SAVE_CONTEXT, &[E::SaveContext]),
        (1 << 4 | 1 << 5, &[E::TtStallBegin, E::TtStallEnd]),
        (
            GC_RINSE | 1 << 6 | 1 << 7,
            &[E::GcRinse, E::DidtStallBegin, E::DidtStallEnd],
        ),
        (GC_RINSE, &[E::GcRinse]),
    ];
    for version in [2, 3, 4] {
        let mut expected = Vec::new();
        let data = stream(version, |b| {
            for (k, (flags, kinds)) in reports.iter().enumerate() {
                let t = 100 + 25 * k as u64;
                b.at(t).misc(*flags);
                expected.extend(kinds.iter().map(|&kind| match kind {
                    // gfx10 (version 2): bit 16 is a packet loss, reported when the token leaves
                    // the reorder queue, with the clock then (the next token's time).
                    E::SpmSample if version == 2 => (E::PacketLoss as u32, (t + 25) as i64),
                    kind => (kind as u32, t as i64),
                }));
            }
        });
        let mut events = Vec::new();
        decode_each(&data, |r| {
            if let Record::Event(e) = r {
                events.push(*e);
            }
        });
        let got: Vec<(u32, i64)> = events.iter().map(|e| (e.kind, e.time)).collect();
        assert_eq!(got, expected, "version {version}");
        let (status, client) = parse_v1(&[&data], Transcript::keeping(), IsaMode::Nop);
        assert_eq!(status, 0, "version {version}");
        let delivered: Vec<(u64, &str)> = client
            .transcript
            .of_kind(RecordKind::Event)
            .map(|d| (d.count, d.text.as_str()))
            .collect();
        let records: Vec<String> = events.iter().map(|e| format!("{e:?};")).collect();
        let records: Vec<(u64, &str)> = records.iter().map(|r| (1, r.as_str())).collect();
        assert_eq!(delivered, records, "version {version}");
    }
}
