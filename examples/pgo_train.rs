//! The workload the library's PGO profile (`pgo/`) is recorded from; `scripts/pgo.sh` runs it on
//! an instrumented build. Each corpus example named on the command line is decoded for a while
//! through the Rust API, through both C entry points with an ISA callback, and through the C API
//! with its code objects loaded instead (when a disassembler library is found), and scanned with
//! `quick_scan`. The gfx11 examples are decoded as gfx10.3 too: the corpus has no gfx10.3 trace,
//! and code a profile never saw run is optimised as if it were cold. Synthetic NVIDIA PMA streams
//! of both sample sizes follow.
//!
//! usage: pgo_train CORPUS_DIR EXAMPLE... (each EXAMPLE relative to CORPUS_DIR)

mod common;
#[path = "common/drive.rs"]
mod drive;
#[path = "../tests/pma_encoder/mod.rs"]
mod pma_encoder;

use std::ffi::c_void;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rocprof_trace_decoder::ffi::handle::{
    rocprof_trace_decoder_codeobj_load, rocprof_trace_decoder_create_handle,
    rocprof_trace_decoder_destroy_handle,
};
use rocprof_trace_decoder::ffi::parse::rocprof_trace_decoder_parse;
use rocprof_trace_decoder::ffi::pma::{
    rocprof_nv_pma_decoder_create, rocprof_nv_pma_decoder_destroy, rocprof_nv_pma_decoder_feed,
    PmaDecoderHandle, StatusCode,
};
use rocprof_trace_decoder::ffi::scan::rocprof_trace_decoder_quick_scan;
use rocprof_trace_decoder::ffi::types::Handle;
use rocprof_trace_decoder::pma::PmaSample;
use rocprof_trace_decoder::stream::header::{detect, TraceKind};

use common::{se_files, IsaTable};
use drive::{decode_c, decode_rust, CApi};

/// How long each workload runs: every example gets the same time, whatever its size, so that
/// the small traces' code counts as hot as the large ones'.
const TIME_PER_WORKLOAD: Duration = Duration::from_millis(50);

fn repeat(mut workload: impl FnMut()) {
    let start = Instant::now();
    while start.elapsed() < TIME_PER_WORKLOAD {
        workload();
    }
}

fn train(buffers: &[Vec<u8>], isa: &mut IsaTable, code_objects: &[CodeObject]) {
    repeat(|| {
        decode_rust(buffers, isa);
    });
    repeat(|| {
        decode_c(CApi::V1, buffers, isa);
    });
    repeat(|| {
        decode_c(CApi::V2, buffers, isa);
    });
    let mut handle = Handle { handle: 0 };
    // SAFETY: valid out-pointer; the buffers and images outlive every call on the handle.
    unsafe { rocprof_trace_decoder_create_handle(&mut handle) };
    let loaded = code_objects.iter().all(|code_object| {
        let image = &code_object.image;
        // SAFETY: `image` holds `image.len()` readable bytes.
        let status = unsafe {
            rocprof_trace_decoder_codeobj_load(
                handle,
                1,
                code_object.load_base,
                code_object.load_size,
                image.as_ptr().cast(),
                image.len() as u64,
            )
        };
        status == 0
    });
    if loaded && !code_objects.is_empty() {
        repeat(|| {
            for data in buffers {
                // SAFETY: `data` holds `data.len()` readable bytes.
                unsafe {
                    rocprof_trace_decoder_parse(
                        handle,
                        data.as_ptr().cast(),
                        data.len() as u64,
                        Some(ignore_records),
                        std::ptr::null_mut(),
                    )
                };
            }
        });
    }
    repeat(|| {
        for data in buffers {
            // Each SE buffer is a trace of its own: its chunk 0.
            // SAFETY: `data` holds `data.len()` readable bytes.
            unsafe {
                rocprof_trace_decoder_quick_scan(
                    handle,
                    0,
                    data.as_ptr().cast(),
                    data.len() as u64,
                    Some(ignore_records),
                    std::ptr::null_mut(),
                )
            };
        }
    });
    rocprof_trace_decoder_destroy_handle(handle);
}

/// A code object of an example, as the C API loads it.
struct CodeObject {
    image: Vec<u8>,
    load_base: u64,
    /// The loaded extent: up to the end of the text section.
    load_size: u64,
}

/// The example's code objects (`meta.json`, and the text section of each one's `.isa.json`).
fn code_objects(dir: &Path) -> Vec<CodeObject> {
    let json = |path: PathBuf| -> Option<serde_json::Value> {
        serde_json::from_str(&fs::read_to_string(path).ok()?).ok()
    };
    let Some(meta) = json(dir.join("meta.json")) else {
        return Vec::new();
    };
    let listed = meta["code_objects"].as_array().cloned().unwrap_or_default();
    listed
        .iter()
        .filter_map(|entry| {
            let file = entry["file"].as_str()?;
            let isa = json(dir.join(file.strip_suffix(".elf")?.to_owned() + ".isa.json"))?;
            let text = &isa["text_section"];
            Some(CodeObject {
                image: fs::read(dir.join(file)).ok()?,
                load_base: entry["load_base"].as_u64()?,
                load_size: text["vaddr"].as_u64()? + text["size"].as_u64()?,
            })
        })
        .collect()
}

/// The buffer with its RDNA HEADER version (bits 7..13) rewritten from gfx11's 3 to gfx10.3's 2.
fn as_gfx10(data: &[u8]) -> Option<Vec<u8>> {
    if detect(data) != Ok(TraceKind::Rdna { version: 3 }) {
        return None;
    }
    const VERSION: u64 = 0x3F << 7;
    let header = u64::from_le_bytes(data.get(..8)?.try_into().ok()?);
    let mut copy = data.to_vec();
    copy[..8].copy_from_slice(&(header & !VERSION | 2 << 7).to_le_bytes());
    Some(copy)
}

unsafe extern "C" fn ignore_records(_: i32, _: *mut c_void, _: u64, _: *mut c_void) -> i32 {
    0
}

unsafe extern "C" fn count_samples(
    _: *const PmaSample,
    count: u64,
    userdata: *mut c_void,
) -> StatusCode {
    // SAFETY: userdata is the counter of the running feed call.
    unsafe { *userdata.cast::<u64>() += count };
    0
}

/// A PMA stream of `samples` random records for `sm_version`, from 16 TPCs, in packets of
/// varied payload sizes.
fn pma_stream(sm_version: u32, samples: usize) -> Vec<u8> {
    let nine_byte = sm_version >= 0xa04;
    let mut rng = pma_encoder::Rng(0x9E37_79B9_7F4A_7C15 ^ u64::from(sm_version));
    let per_tpc: Vec<_> = (0..16u16)
        .map(|tpc| {
            let bytes: Vec<u8> = (0..samples / 16)
                .flat_map(|_| {
                    if nine_byte {
                        pma_encoder::encode_9(pma_encoder::random_fields(&mut rng, 48, 6))
                    } else {
                        pma_encoder::encode_8(pma_encoder::random_fields(&mut rng, 40, 5))
                    }
                })
                .collect();
            pma_encoder::packetize(tpc, &bytes, &[28, 24, 28, 16, 28, 8])
        })
        .collect();
    pma_encoder::interleave(&per_tpc)
}

fn train_pma(sm_version: u32) {
    let stream = pma_stream(sm_version, 1 << 14);
    let mut handle = PmaDecoderHandle { handle: 0 };
    // SAFETY: valid out-pointer.
    if unsafe { rocprof_nv_pma_decoder_create(&mut handle, sm_version) } != 0 {
        return;
    }
    let mut count = 0u64;
    repeat(|| {
        for chunk in stream.chunks(4096) {
            // SAFETY: `chunk` is readable; the counter outlives the call.
            unsafe {
                rocprof_nv_pma_decoder_feed(
                    handle,
                    chunk.as_ptr().cast(),
                    chunk.len() as u64,
                    Some(count_samples),
                    (&mut count as *mut u64).cast(),
                )
            };
        }
    });
    rocprof_nv_pma_decoder_destroy(handle);
    std::hint::black_box(count);
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((corpus, examples)) = args.split_first() else {
        eprintln!("usage: pgo_train CORPUS_DIR EXAMPLE...");
        return ExitCode::FAILURE;
    };
    for example in examples {
        let dir = PathBuf::from(corpus).join(example);
        let buffers: Vec<Vec<u8>> = se_files(&dir).into_iter().map(|(_, d)| d).collect();
        let Some(mut isa) = IsaTable::load(&dir).filter(|_| !buffers.is_empty()) else {
            eprintln!("{}: no SE buffers or ISA table", dir.display());
            return ExitCode::FAILURE;
        };
        let code_objects = code_objects(&dir);
        train(&buffers, &mut isa, &code_objects);
        let gfx10: Option<Vec<Vec<u8>>> = buffers.iter().map(|d| as_gfx10(d)).collect();
        if let Some(gfx10) = gfx10 {
            train(&gfx10, &mut isa, &code_objects);
        }
    }
    for sm_version in [0x800, 0xa04] {
        train_pma(sm_version);
    }
    ExitCode::SUCCESS
}
