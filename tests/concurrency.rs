//! Decoding from many threads through the C functions: separate handles and V1 calls give
//! exactly the sequential results; threads sharing one handle may parse, reconfigure it and
//! destroy it concurrently without a fault, and every parse that started still completes.

#[path = "common/client.rs"]
mod client;

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;

use client::{
    corpus, on_records, parse_v1, read_corpus, Delivery, IsaMode, OwnedHandle, Transcript,
};
use rocprof_trace_decoder::ffi::handle::{
    rocprof_trace_decoder_destroy_handle, rocprof_trace_decoder_set_record_filter,
    rocprof_trace_decoder_set_se_data_callback,
};
use rocprof_trace_decoder::ffi::parse::rocprof_trace_decoder_parse;

const THREADS: usize = 8;

/// SE files of every architecture, a few hundred kilobytes in all.
fn traces() -> Vec<(String, Vec<u8>)> {
    let Some(corpus) = corpus() else {
        return Vec::new();
    };
    let mut names: Vec<String> = Vec::new();
    for se in 0..6 {
        names.push(format!("gfx1100/profile_gemm_run_0/se{se}.att"));
    }
    for se in 0..4 {
        names.push(format!("gfx1200/profile_gemm_run_0/se{se}.att"));
        names.push(format!("gfx950/profile_gemm_run_0/se{se}.att"));
    }
    names.push("gfx1200/profile_ops_run_0/se1.att".into());
    names.push(
        "gfx950/aiter_study_aggregate_load_AL_BM32_BN128_BK512_nS2_nW4_att_orig/se0.att".into(),
    );
    names
        .into_iter()
        .map(|name| {
            let data = read_corpus(&corpus, &name);
            (name, data)
        })
        .collect()
}

fn decode_on(handle: &OwnedHandle, data: &[u8]) -> (i32, Vec<Delivery>) {
    let mut transcript = Transcript::keeping();
    let status = handle.parse(data, &mut transcript);
    assert!(
        transcript.violations.is_empty(),
        "{:?}",
        transcript.violations
    );
    (status, std::mem::take(&mut transcript.deliveries))
}

fn sequential(traces: &[(String, Vec<u8>)]) -> Vec<(i32, Vec<Delivery>)> {
    traces
        .iter()
        .map(|(_, data)| {
            let handle = OwnedHandle::new();
            assert_eq!(handle.set_isa_nop(), 0);
            decode_on(&handle, data)
        })
        .collect()
}

/// Runs `work(index)` for every trace index, spread over `THREADS` threads, and returns the
/// results in trace order.
fn spread<T: Send>(count: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let work = &work;
    let mut results: Vec<(usize, T)> = thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                scope.spawn(move || {
                    (t..count)
                        .step_by(THREADS)
                        .map(|i| (i, work(i)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

fn assert_same_results(
    got: &[(i32, Vec<Delivery>)],
    expected: &[(i32, Vec<Delivery>)],
    traces: &[(String, Vec<u8>)],
    what: &str,
) {
    assert_eq!(got.len(), expected.len());
    for ((g, e), (name, _)) in got.iter().zip(expected).zip(traces) {
        assert_eq!(g.0, e.0, "{what}: status of {name}");
        assert!(
            g.1 == e.1,
            "{what}: records of {name} differ from the sequential run"
        );
    }
}

#[test]
fn separate_handles_in_parallel_match_the_sequential_run() {
    let traces = traces();
    let expected = sequential(&traces);
    for _round in 0..2 {
        let got = spread(traces.len(), |i| {
            let handle = OwnedHandle::new();
            assert_eq!(handle.set_isa_nop(), 0);
            decode_on(&handle, &traces[i].1)
        });
        assert_same_results(&got, &expected, &traces, "separate handles");
    }
}

#[test]
fn v1_calls_in_parallel_match_the_sequential_v2_run() {
    let traces = traces();
    let expected = sequential(&traces);
    let got = spread(traces.len(), |i| {
        let (status, mut client) = parse_v1(&[&traces[i].1], Transcript::keeping(), IsaMode::Nop);
        assert!(client.transcript.violations.is_empty());
        (status, std::mem::take(&mut client.transcript.deliveries))
    });
    assert_same_results(&got, &expected, &traces, "V1");
}

/// One handle, many parsing threads, and one thread rewriting the handle's settings with
/// equivalent values all along: every parse sees a consistent configuration.
#[test]
fn one_shared_handle_parses_and_is_reconfigured_concurrently() {
    let traces = traces();
    let expected = sequential(&traces);
    let handle = OwnedHandle::new();
    assert_eq!(handle.set_isa_nop(), 0);
    let done = AtomicBool::new(false);
    let reconfiguring = AtomicBool::new(false);
    let got = thread::scope(|scope| {
        let reconfigure = scope.spawn(|| loop {
            assert_eq!(handle.set_isa_nop(), 0);
            // SAFETY: NULL resets the default filter.
            assert_eq!(
                unsafe { rocprof_trace_decoder_set_record_filter(handle.0, std::ptr::null()) },
                0
            );
            assert_eq!(
                rocprof_trace_decoder_set_se_data_callback(handle.0, None, std::ptr::null_mut()),
                0
            );
            reconfiguring.store(true, Ordering::Release);
            if done.load(Ordering::Acquire) {
                break;
            }
            thread::yield_now();
        });
        // The parses start once the settings are being rewritten: a parse is over in
        // microseconds, sooner than a new thread may first be scheduled.
        while !reconfiguring.load(Ordering::Acquire) {
            thread::yield_now();
        }
        let got = spread(traces.len(), |i| decode_on(&handle, &traces[i].1));
        done.store(true, Ordering::Release);
        reconfigure.join().expect("reconfiguring thread");
        got
    });
    assert_same_results(&got, &expected, &traces, "shared handle");
}

/// Pauses its parse at the first record until the test has destroyed the handle.
struct PausedParse {
    transcript: Transcript,
    started: mpsc::SyncSender<()>,
    resume: mpsc::Receiver<()>,
    paused: bool,
}

unsafe extern "C" fn pause_once(
    kind: i32,
    pointer: *mut c_void,
    count: u64,
    userdata: *mut c_void,
) -> i32 {
    let paused = &mut *userdata.cast::<PausedParse>();
    if !paused.paused {
        paused.paused = true;
        paused.started.send(()).expect("test thread");
        paused.resume.recv().expect("test thread");
    }
    on_records(
        kind,
        pointer,
        count,
        (&mut paused.transcript as *mut Transcript).cast(),
    )
}

#[test]
fn destroying_a_handle_while_it_parses_lets_the_parse_finish() {
    let traces = traces();
    let Some((name, data)) = traces.last() else {
        return;
    };
    let expected = sequential(std::slice::from_ref(&traces[traces.len() - 1]));
    let handle = OwnedHandle::new();
    assert_eq!(handle.set_isa_nop(), 0);
    let raw = handle.0;
    let (started_tx, started_rx) = mpsc::sync_channel(0);
    let (resume_tx, resume_rx) = mpsc::sync_channel(0);
    let mut paused = PausedParse {
        transcript: Transcript::keeping(),
        started: started_tx,
        resume: resume_rx,
        paused: false,
    };
    let (status, paused) = thread::scope(|scope| {
        let parser = scope.spawn(move || {
            // SAFETY: `data` and `paused` outlive the call.
            let status = unsafe {
                rocprof_trace_decoder_parse(
                    raw,
                    data.as_ptr().cast(),
                    data.len() as u64,
                    Some(pause_once),
                    (&mut paused as *mut PausedParse).cast(),
                )
            };
            (status, paused)
        });
        started_rx
            .recv()
            .expect("the parse reached its first record");
        assert_eq!(rocprof_trace_decoder_destroy_handle(raw), 0);
        let mut late = Transcript::default();
        assert_eq!(
            handle.parse(data, &mut late),
            3,
            "a destroyed handle is an invalid argument"
        );
        resume_tx.send(()).expect("parser");
        parser.join().expect("parser thread")
    });
    std::mem::forget(handle); // already destroyed
    assert_eq!(status, expected[0].0, "{name}");
    assert!(
        paused.transcript.deliveries == expected[0].1,
        "{name}: the parse finished with every record"
    );
}

/// What a trace callback does to the handle whose parse called it.
#[derive(Clone, Copy, Debug)]
enum Reentry {
    SetIsa,
    SetFilter,
    SetSeData,
    Parse,
    Destroy,
}

struct Reentrant {
    handle: rocprof_trace_decoder::ffi::types::Handle,
    action: Reentry,
    data: *const u8,
    size: u64,
    statuses: Vec<i32>,
}

unsafe extern "C" fn reenter(
    _kind: i32,
    _pointer: *mut c_void,
    _count: u64,
    userdata: *mut c_void,
) -> i32 {
    let state = &mut *userdata.cast::<Reentrant>();
    if !state.statuses.is_empty() {
        return 0;
    }
    let status = match state.action {
        Reentry::SetIsa => {
            rocprof_trace_decoder::ffi::handle::rocprof_trace_decoder_set_isa_callback(
                state.handle,
                Some(client::on_isa_nop),
                std::ptr::null_mut(),
            )
        }
        Reentry::SetFilter => {
            rocprof_trace_decoder_set_record_filter(state.handle, std::ptr::null())
        }
        Reentry::SetSeData => {
            rocprof_trace_decoder_set_se_data_callback(state.handle, None, std::ptr::null_mut())
        }
        Reentry::Parse => {
            let mut inner = Transcript::default();
            rocprof_trace_decoder_parse(
                state.handle,
                state.data.cast(),
                state.size,
                Some(on_records),
                (&mut inner as *mut Transcript).cast(),
            )
        }
        Reentry::Destroy => rocprof_trace_decoder_destroy_handle(state.handle),
    };
    state.statuses.push(status);
    0
}

/// A trace callback calling back into the handle that is parsing (settings, a nested parse, or
/// destroying it) gets a status instead of deadlocking on the handle's lock, and the outer parse
/// completes.
#[test]
fn callbacks_reentering_their_own_handle_do_not_deadlock() {
    let traces = traces();
    let Some((name, data)) = traces.first() else {
        return;
    };
    for action in [
        Reentry::SetIsa,
        Reentry::SetFilter,
        Reentry::SetSeData,
        Reentry::Parse,
        Reentry::Destroy,
    ] {
        let handle = OwnedHandle::new();
        assert_eq!(handle.set_isa_nop(), 0);
        let (done_tx, done_rx) = mpsc::channel();
        let raw = handle.0;
        let (pointer, size) = (data.as_ptr() as usize, data.len() as u64);
        thread::spawn(move || {
            let mut state = Reentrant {
                handle: raw,
                action,
                data: pointer as *const u8,
                size,
                statuses: Vec::new(),
            };
            // SAFETY: the corpus bytes outlive the test; `state` outlives the call.
            let status = unsafe {
                rocprof_trace_decoder_parse(
                    raw,
                    pointer as *const c_void,
                    size,
                    Some(reenter),
                    (&mut state as *mut Reentrant).cast(),
                )
            };
            let _ = done_tx.send((status, state.statuses));
        });
        let (status, inner) = done_rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{name}: {action:?} from inside the callback deadlocked"));
        assert_eq!(status, 0, "{name}: {action:?}");
        let expected = if matches!(action, Reentry::Destroy) {
            0
        } else {
            1
        };
        assert_eq!(
            inner,
            [expected],
            "{name}: {action:?} from inside the callback"
        );
        if matches!(action, Reentry::Destroy) {
            std::mem::forget(handle);
        }
    }
}
