//! Bad input and faulty callbacks through the C functions: absurd sizes, lying SE callbacks,
//! truncated traces, trace callbacks that fail, ISA callbacks that fail, answer nothing, lie
//! about sizes or ask for more room forever. Every case ends with a documented status, without
//! a fault or an endless loop, and what was decoded before the damage is still delivered.
//! The built-in disassembly's function, given bad pointers, sizes and targets, likewise.

#[path = "common/client.rs"]
mod client;

use client::{
    corpus, headers, parse_v1, parse_v1_feed, parse_v2, read_corpus, Delivery, IsaMode,
    OwnedHandle, SeFeed, Transcript, SAMPLE_TRACES,
};
use std::ffi::{c_char, c_void, CStr};

use rocprof_trace_decoder::ffi::caught_panics;
use rocprof_trace_decoder::ffi::disasm::rocprof_trace_decoder_builtin_disassemble;
use rocprof_trace_decoder::records::{InfoCode, RecordKind};

const SUCCESS: i32 = 0;
const INVALID_ARGUMENT: i32 = 3;
const INVALID_SHADER_DATA: i32 = 4;
const NOT_IMPLEMENTED: i32 = 5;

fn samples() -> Vec<(&'static str, Vec<u8>)> {
    let Some(corpus) = corpus() else {
        return Vec::new();
    };
    SAMPLE_TRACES
        .iter()
        .map(|name| (*name, read_corpus(&corpus, name)))
        .collect()
}

fn waves(transcript: &Transcript) -> Vec<&Delivery> {
    transcript.of_kind(RecordKind::Wave).collect()
}

fn has_info(transcript: &Transcript, code: InfoCode) -> bool {
    let text = format!("{};", code as u32);
    transcript.of_kind(RecordKind::Info).any(|d| d.text == text)
}

/// Asserts that two runs delivered the same callbacks, naming the first difference.
fn assert_same(got: &[Delivery], expected: &[Delivery], case: &str) {
    if let Some(i) = (0..got.len().max(expected.len())).find(|&i| got.get(i) != expected.get(i)) {
        let show = |d: Option<&Delivery>| {
            d.map(|d| format!("type {} x{}: {:.300}", d.kind, d.count, d.text))
        };
        panic!(
            "{case}: callback {i} of {}/{} differs\n got      {:?}\n expected {:?}",
            got.len(),
            expected.len(),
            show(got.get(i)),
            show(expected.get(i))
        );
    }
}

#[test]
fn absurd_sizes_and_null_data_are_argument_errors_or_empty() {
    let handle = OwnedHandle::new();
    let mut script = client::IsaScript::new(IsaMode::Nop);
    assert_eq!(handle.set_isa(&mut script), SUCCESS);
    let byte = [0u8; 1];
    for size in [u64::MAX, 1 << 63, (isize::MAX as u64) + 1] {
        let mut transcript = Transcript::keeping();
        assert_eq!(
            handle.parse_raw(byte.as_ptr(), size, &mut transcript),
            INVALID_ARGUMENT
        );
        assert!(transcript.deliveries.is_empty());
    }
    // NULL data with a size, and data with size 0: nothing to parse (API.md §8.2).
    for (pointer, size) in [
        (std::ptr::null(), 100u64),
        (std::ptr::null(), u64::MAX),
        (byte.as_ptr(), 0),
    ] {
        let mut transcript = Transcript::keeping();
        assert_eq!(handle.parse_raw(pointer, size, &mut transcript), SUCCESS);
        assert!(transcript.deliveries.is_empty());
    }
}

#[test]
fn headers_with_absurd_declared_fields_decode_to_a_status() {
    // Every header with all non-identifying bits set, then runs of 0xFF and 0x00 tokens.
    for (name, header) in headers() {
        let word = u64::from_le_bytes(header);
        let identifying = if name.starts_with("mi") {
            0xFFFF
        } else {
            0x1FFF
        };
        for fill in [0x00u8, 0xFF] {
            let mut trace = (word | !identifying).to_le_bytes().to_vec();
            trace.extend(std::iter::repeat_n(fill, 1 << 16));
            let (status, transcript, _) = parse_v2(&trace, Transcript::keeping(), IsaMode::Nop);
            assert!(
                matches!(status, SUCCESS | INVALID_SHADER_DATA),
                "{name}: {status}"
            );
            assert!(
                transcript.violations.is_empty(),
                "{name}: {:?}",
                transcript.violations
            );
        }
    }
}

/// Truncating a trace keeps the waves that ended before the cut: the WAVE records of the cut
/// trace are a prefix of the full decode's, followed only by waves the cut left unfinished,
/// which are announced by INFO WAVE_INCOMPLETE.
#[test]
fn truncated_traces_deliver_a_prefix_of_the_full_waves() {
    for (name, data) in samples() {
        let (status, full, _) = parse_v2(&data, Transcript::keeping(), IsaMode::Nop);
        assert_eq!(status, SUCCESS, "{name}");
        let full_waves = waves(&full);
        assert!(!full_waves.is_empty(), "{name} has waves");
        let mut previous_prefix = 0;
        for step in 1..=16 {
            let cut = data.len() * step / 16;
            let (status, cut_decode, _) =
                parse_v2(&data[..cut], Transcript::keeping(), IsaMode::Nop);
            assert!(
                matches!(status, SUCCESS | INVALID_SHADER_DATA),
                "{name} at {cut}: {status}"
            );
            assert!(
                cut_decode.violations.is_empty(),
                "{:?}",
                cut_decode.violations
            );
            let cut_waves = waves(&cut_decode);
            let prefix = cut_waves
                .iter()
                .zip(&full_waves)
                .take_while(|(a, b)| a == b)
                .count();
            let unfinished = cut_waves.len() - prefix;
            if unfinished > 0 {
                assert!(
                    has_info(&cut_decode, InfoCode::WaveIncomplete),
                    "{name} cut at {cut}: {unfinished} unfinished waves without WAVE_INCOMPLETE"
                );
            }
            assert!(
                prefix >= previous_prefix,
                "{name} cut at {cut}: a longer cut lost complete waves ({prefix} < {previous_prefix})"
            );
            previous_prefix = prefix;
        }
        assert_eq!(previous_prefix, full_waves.len(), "{name}: the whole trace");
    }
}

/// V1 with an SE callback handing over small or empty chunks and NULL buffers: a 0-byte chunk
/// or a NULL buffer ends the parse normally; 1- and 7-byte chunks that start no header (zeroes:
/// the first bytes of a real header would decode, as the reference reads a cut header) stop it
/// with INVALID_SHADER_DATA. Either way everything decoded from earlier buffers was delivered.
#[test]
fn lying_se_callbacks_keep_the_records_of_earlier_buffers() {
    for (name, data) in samples() {
        let (status, mut whole) = parse_v1(&[&data], Transcript::keeping(), IsaMode::Nop);
        assert_eq!(status, SUCCESS, "{name}");
        let whole = std::mem::take(&mut whole.transcript.deliveries);
        let good = (data.as_ptr() as *mut u8, data.len() as u64);
        let zeroes = [0u8; 7];
        let cases: [((*mut u8, u64), i32); 5] = [
            ((data.as_ptr() as *mut u8, 0), SUCCESS),
            ((std::ptr::null_mut(), 4096), SUCCESS),
            ((std::ptr::null_mut(), 0), SUCCESS),
            ((zeroes.as_ptr() as *mut u8, 1), INVALID_SHADER_DATA),
            ((zeroes.as_ptr() as *mut u8, 7), INVALID_SHADER_DATA),
        ];
        for (bad, expected) in cases {
            let feed = SeFeed {
                buffers: vec![good, bad, good],
                next: 0,
            };
            let (status, client) = parse_v1_feed(feed, Transcript::keeping(), IsaMode::Nop);
            assert_eq!(status, expected, "{name} with chunk {bad:?}");
            assert_eq!(
                client.feed.next, 2,
                "{name}: the parse stops at the bad chunk"
            );
            assert_same(
                &client.transcript.deliveries,
                &whole,
                &format!("{name} with chunk {bad:?}"),
            );
        }
    }
}

/// A garbage buffer after a good one: INVALID_SHADER_DATA, the good buffer's records intact.
#[test]
fn a_corrupt_buffer_after_a_good_one_keeps_the_good_records() {
    for (name, data) in samples() {
        let (_, whole) = parse_v1(&[&data], Transcript::keeping(), IsaMode::Nop);
        let garbage = vec![0xA5u8; 4096];
        let (status, client) = parse_v1(&[&data, &garbage], Transcript::keeping(), IsaMode::Nop);
        assert_eq!(status, INVALID_SHADER_DATA, "{name}");
        assert_same(
            &client.transcript.deliveries,
            &whole.transcript.deliveries,
            name,
        );
    }
}

/// The trace callback's return value is ignored by the full parse (API.md §8.4).
#[test]
fn failing_trace_callbacks_do_not_stop_the_parse() {
    for (name, data) in samples() {
        let (status, expected, _) = parse_v2(&data, Transcript::keeping(), IsaMode::Nop);
        for answer in [1, 2, 3, 4, -1, i32::MAX] {
            let transcript = Transcript::keeping().answering(answer);
            let (got, transcript, _) = parse_v2(&data, transcript, IsaMode::Nop);
            assert_eq!(got, status, "{name} answering {answer}");
            assert_same(
                &transcript.deliveries,
                &expected.deliveries,
                &format!("{name} answering {answer}"),
            );
            let (got, client) = parse_v1(&[&data], transcript_answering(answer), IsaMode::Nop);
            assert_eq!(got, status);
            assert_same(
                &client.transcript.deliveries,
                &expected.deliveries,
                &format!("V1 {name}"),
            );
        }
    }
}

fn transcript_answering(answer: i32) -> Transcript {
    Transcript::keeping().answering(answer)
}

/// Lines one wave's PC walk visits without placing a record before it gives up
/// (`MAX_LINES_WITHOUT_PROGRESS` in src/wave/stitch/mod.rs): an ISA callback whose lines never match
/// (empty text) costs up to twice that many calls per wave (each line and its look-ahead).
const WALK_LIMIT: u64 = 100_001;

/// The ISA callback is offered 64 bytes at a parse call's first question, then the largest size
/// it asked for; the next parse call on the thread starts at 64 again, as the reference's does.
#[test]
fn each_parse_call_offers_the_first_capacity_then_the_largest_asked_for() {
    let mut asked = 0;
    for (name, data) in samples() {
        for call in 0..2 {
            let mode = IsaMode::Long { size: 100 };
            let (status, _, script) = parse_v2(&data, Transcript::default(), mode);
            assert_eq!(status, SUCCESS, "{name}");
            let Some((&first, later)) = script.offers.split_first() else {
                continue;
            };
            asked += 1;
            assert_eq!(first, 64, "{name}, parse call {call}");
            assert!(later.iter().all(|&offer| offer == 100), "{name}: {later:?}");
        }
    }
    assert!(asked >= 2, "no sample asked the ISA callback");
}

/// Faulty ISA callbacks: the parse still succeeds with every wave, no OUT_OF_RESOURCES answer
/// is retried more than once, and the number of calls stays bounded by the instructions and
/// waves seen.
#[test]
fn faulty_isa_callbacks_end_with_a_status() {
    let faults = [
        IsaMode::Fail(1),
        IsaMode::Fail(3),
        IsaMode::Fail(-7),
        IsaMode::Empty,
        IsaMode::AlwaysMore { size: 0 },
        IsaMode::AlwaysMore { size: 65 },
        IsaMode::AlwaysMore { size: 1 << 40 },
        IsaMode::AlwaysMore { size: u64::MAX },
        IsaMode::Shrinking {
            first: 4096,
            second: 8,
        },
        IsaMode::Shrinking {
            first: 128,
            second: 1 << 50,
        },
        IsaMode::Lying {
            size: 1 << 40,
            memory_size: 4,
        },
        IsaMode::Lying {
            size: u64::MAX,
            memory_size: 0,
        },
        IsaMode::Lying {
            size: 5,
            memory_size: u64::MAX,
        },
        IsaMode::Lying {
            size: 5,
            memory_size: 1 << 33,
        },
        IsaMode::Lying {
            size: 5,
            memory_size: 3,
        },
    ];
    for (name, data) in samples() {
        let (_, nop, _) = parse_v2(&data, Transcript::keeping(), IsaMode::Nop);
        let nop_waves = waves(&nop);
        let instructions_seen: usize = nop_waves.iter().map(|w| w.instructions.len()).sum();
        for mode in faults {
            for v1 in [false, true] {
                let (status, transcript, script) = if v1 {
                    let (status, client) = parse_v1(&[&data], Transcript::keeping(), mode);
                    (status, client.transcript, client.isa)
                } else {
                    parse_v2(&data, Transcript::keeping(), mode)
                };
                let case = format!("{name} {mode:?} v1={v1}");
                assert_eq!(status, SUCCESS, "{case}");
                assert!(
                    transcript.violations.is_empty(),
                    "{case}: {:?}",
                    transcript.violations
                );
                assert_eq!(waves(&transcript).len(), nop_waves.len(), "{case}");
                assert!(
                    script.largest_offer <= 1 << 20,
                    "{case}: offered {}",
                    script.largest_offer
                );
                assert!(
                    script.longest_retry_chain <= 1,
                    "{case}: retried {}",
                    script.longest_retry_chain
                );
                assert!(
                    script.calls
                        <= 4 * (instructions_seen as u64 + 16)
                            + 2 * WALK_LIMIT * nop_waves.len() as u64,
                    "{case}: {} ISA calls for {instructions_seen} instructions",
                    script.calls
                );
            }
        }
    }
}

/// When every ISA call fails, waves keep their times, stalls, durations and categories (the
/// categories come from the tokens) and every PC is {0, 0} (REFERENCE_BEHAVIOUR.md §3).
/// The worst case of the bound above on the largest trace, timed for the record.
#[test]
fn empty_isa_answers_on_the_largest_trace_end() {
    let Some(corpus) = corpus() else { return };
    let data = read_corpus(&corpus, client::LARGEST_TRACE);
    let started = std::time::Instant::now();
    let (status, transcript, script) = parse_v2(&data, Transcript::default(), IsaMode::Empty);
    assert_eq!(status, SUCCESS);
    eprintln!(
        "empty ISA answers: {} calls, {} callbacks, {:?}",
        script.calls,
        transcript.callbacks,
        started.elapsed()
    );
}

#[test]
fn failing_isa_keeps_waves_and_zeroes_pcs() {
    for (name, data) in samples() {
        let (_, nop, _) = parse_v2(&data, Transcript::keeping(), IsaMode::Nop);
        let (status, failing, _) = parse_v2(&data, Transcript::keeping(), IsaMode::Fail(1));
        assert_eq!(status, SUCCESS);
        let (nop_waves, failing_waves) = (waves(&nop), waves(&failing));
        assert_eq!(nop_waves.len(), failing_waves.len(), "{name}");
        for (a, b) in nop_waves.iter().zip(&failing_waves) {
            let (a, b) = (&a.instructions, &b.instructions);
            assert_eq!(a.len(), b.len(), "{name}");
            for (x, y) in a.iter().zip(b) {
                assert_eq!(y.pc.address, 0, "{name}");
                assert_eq!(y.pc.code_object_id, 0, "{name}");
                assert_eq!(
                    (x.time, x.duration, x.stall(), x.category()),
                    (y.time, y.duration, y.stall(), y.category()),
                    "{name}"
                );
            }
        }
    }
}

/// What `rocprof_trace_decoder_builtin_disassemble` reported: (address, size, text) per call,
/// with `None` for an unknown dword; after `stop_after` calls the callback answers `stop_status`.
#[derive(Default)]
struct Listing {
    instructions: Vec<(u64, u64, Option<String>)>,
    stop_after: Option<(usize, i32)>,
}

unsafe extern "C" fn on_instruction(
    address: u64,
    size: u64,
    text: *const c_char,
    userdata: *mut c_void,
) -> i32 {
    let listing = &mut *userdata.cast::<Listing>();
    let text = (!text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned());
    listing.instructions.push((address, size, text));
    match listing.stop_after {
        Some((calls, status)) if listing.instructions.len() == calls => status,
        _ => SUCCESS,
    }
}

/// Runs the built-in disassembly with `on_instruction`; returns its status and what it reported.
fn builtin_disassemble(
    target: Option<&CStr>,
    code: *const u8,
    size: u64,
    address: u64,
    stop_after: Option<(usize, i32)>,
) -> (i32, Listing) {
    let mut listing = Listing {
        stop_after,
        ..Listing::default()
    };
    let status = unsafe {
        rocprof_trace_decoder_builtin_disassemble(
            target.map_or(std::ptr::null(), CStr::as_ptr),
            code.cast(),
            size,
            address,
            Some(on_instruction),
            (&raw mut listing).cast(),
        )
    };
    (status, listing)
}

fn words(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// gfx11 code: s_cbranch_execz 43, v_mov_b32_e32 with a literal (8 bytes), a dword no gfx11
/// encoding has (SOPP opcode 127), s_endpgm.
const GFX11_CODE: [u32; 5] = [
    0xBFA5_002B,
    0x7E00_02FF,
    0x0403_0201,
    0xBFFF_0000,
    0xBFB0_0000,
];

#[test]
fn builtin_disassembly_reports_every_dword_and_leaves_unknown_ones_unattributed() {
    let code = words(&GFX11_CODE);
    let (status, listing) = builtin_disassemble(Some(c"gfx1100"), code.as_ptr(), 20, 0x1000, None);
    assert_eq!(status, SUCCESS);
    let expected = [
        (0x1000, 4, Some("s_cbranch_execz 43")),
        (0x1004, 8, Some("v_mov_b32_e32")),
        (0x100C, 4, None),
        (0x1010, 4, Some("s_endpgm")),
    ];
    let expected: Vec<_> = expected
        .iter()
        .map(|&(address, size, text)| (address, size, text.map(String::from)))
        .collect();
    assert_eq!(listing.instructions, expected);
    // An alias of the same tables, and an instruction cut off by the end of the code.
    let (status, listing) = builtin_disassemble(Some(c"gfx1101"), code[4..].as_ptr(), 4, 0, None);
    assert_eq!(status, SUCCESS);
    assert_eq!(listing.instructions, [(0, 4, None)]);
    assert_eq!(caught_panics(), 0);
}

#[test]
fn builtin_disassembly_checks_its_arguments() {
    let code = words(&GFX11_CODE);
    let gfx1100 = Some(c"gfx1100");
    let bad = [
        (None, code.as_ptr(), 20, 0),
        (gfx1100, std::ptr::null(), 4, 0),
        (gfx1100, std::ptr::null(), u64::MAX, 0),
        (gfx1100, code.as_ptr(), 6, 0),
        (gfx1100, code.as_ptr(), 1 << 63, 0),
        (gfx1100, code.as_ptr(), !3, 0),
        (gfx1100, code.as_ptr(), 20, u64::MAX - 15),
    ];
    for (target, pointer, size, address) in bad {
        let (status, listing) = builtin_disassemble(target, pointer, size, address, None);
        let case = format!("{target:?} {pointer:?} {size} {address:#x}");
        assert_eq!(status, INVALID_ARGUMENT, "{case}");
        assert!(listing.instructions.is_empty(), "{case}");
    }
    let status = unsafe {
        rocprof_trace_decoder_builtin_disassemble(
            c"gfx1100".as_ptr(),
            code.as_ptr().cast(),
            20,
            0,
            None,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(status, INVALID_ARGUMENT);
    // No code is nothing to report, NULL or not; code may end at the top of the address space.
    for pointer in [std::ptr::null(), code.as_ptr()] {
        let (status, listing) = builtin_disassemble(gfx1100, pointer, 0, 0, None);
        assert_eq!((status, listing.instructions.len()), (SUCCESS, 0));
    }
    let (status, listing) = builtin_disassemble(gfx1100, code.as_ptr(), 20, u64::MAX - 20, None);
    assert_eq!((status, listing.instructions.len()), (SUCCESS, 4));
    // Processors without tables: no callback.
    for target in [c"gfx908", c"gfx1100:xnack-", c"", c"GFX1100", c"gfx\xff"] {
        let (status, listing) = builtin_disassemble(Some(target), code.as_ptr(), 20, 0, None);
        assert_eq!(status, NOT_IMPLEMENTED, "{target:?}");
        assert!(listing.instructions.is_empty(), "{target:?}");
    }
    assert_eq!(caught_panics(), 0);
}

#[test]
fn builtin_disassembly_stops_with_the_callbacks_status() {
    let code = words(&GFX11_CODE);
    for stop in [1, 3, -7, 42] {
        let (status, listing) =
            builtin_disassemble(Some(c"gfx1100"), code.as_ptr(), 20, 0, Some((2, stop)));
        assert_eq!((status, listing.instructions.len()), (stop, 2), "{stop}");
    }
    assert_eq!(caught_panics(), 0);
}
