//! MARKER records from a gfx12 stream encoded here: a kernel announced by code-object markers,
//! SHADERDATA words written by its wave, names from the code object's funcmap.

use std::ffi::CStr;
use std::sync::Arc;

use rocprof_trace_decoder::decode::Session;
use rocprof_trace_decoder::isa::funcmap::Funcmap;
use rocprof_trace_decoder::isa::{IsaError, IsaProvider};
use rocprof_trace_decoder::records::{Pc, RecordKind};
use rocprof_trace_decoder::sink::check::Checked;
use rocprof_trace_decoder::sink::{Delivery, Emitter, Filter, Record};

const CODE_OBJECT: u64 = 9;
const BASE: u64 = 0x7000_0000;
const ENTRY: u64 = BASE + 0x100;

struct WithFuncmap(Arc<Funcmap>);

impl IsaProvider for WithFuncmap {
    fn disassemble(&mut self, _: Pc, _: &mut Vec<u8>) -> Result<u64, IsaError> {
        Err(IsaError::UnknownAddress)
    }
    fn funcmap(&mut self, code_object_id: u64) -> Option<Arc<Funcmap>> {
        (code_object_id == CODE_OBJECT).then(|| self.0.clone())
    }
    fn has_funcmaps(&self) -> bool {
        true
    }
}

#[path = "common/encoder/mod.rs"]
mod encoder;
use encoder::rdna::{Header, Rdna, Unit};

/// Wave 3 of SIMD 1, WGP 0, SA 0 (me 0, pipe 0) writes `words` with `s_ttracedata`.
fn trace(words: &[u32]) -> Vec<u8> {
    let mut b = Rdna::new(Header::version(4));
    b.compute_reg(0x0C, (ENTRY >> 8) as u32)
        .compute_reg(0x0D, 0);
    let header = |kind: u32| 4 | kind << 8;
    b.other_reg(0xC342, u32::from_le_bytes([0, b'R', b'O', b'C']));
    for (kind, payload) in [(2, BASE as u32), (3, 0), (1, 0x1000), (4, 0)] {
        b.other_reg(0xC342, header(kind)).other_reg(0xC342, payload);
    }
    b.other_reg(0xC342, header(0))
        .other_reg(0xC342, (CODE_OBJECT << 2) as u32);
    let wave = Unit::wave(3).simd(1);
    b.wave_start(wave);
    for &word in words {
        b.shader_data(wave, word);
    }
    b.wave_end(wave);
    b.padded()
}

#[derive(Debug, PartialEq)]
struct Seen {
    id: u32,
    kind: u32,
    flags: u32,
    name: Option<String>,
    entry: Pc,
}

fn decode(data: &[u8], filter: Filter) -> (Vec<Seen>, Vec<usize>, usize) {
    let funcmap = Funcmap::parse(b"K:gemm\nF:1:load@gemm.cpp:12\nU:2:tile\n");
    let mut isa = WithFuncmap(Arc::new(funcmap));
    let (mut seen, mut batches, mut shader_data) = (Vec::new(), Vec::new(), 0);
    let mut sink = |r: Record<'_>| {
        match r {
            Record::Marker(rows) => {
                batches.push(rows.len());
                for m in rows {
                    let name = (!m.name.is_null()).then(|| {
                        // SAFETY: a non-NULL name is a C string valid during the callback.
                        unsafe { CStr::from_ptr(m.name) }
                            .to_string_lossy()
                            .into_owned()
                    });
                    seen.push(Seen {
                        id: m.marker_id,
                        kind: m.marker_kind,
                        flags: m.marker_flags,
                        name,
                        entry: m.kernel_entry,
                    });
                }
            }
            Record::ShaderData(rows) => shader_data += rows.len(),
            _ => {}
        }
        0
    };
    let mut sink = Checked(&mut sink);
    let mut session = Session::new(Emitter::new(&mut sink, filter), &mut isa);
    session.decode_buffer(data).unwrap();
    drop(session);
    (seen, batches, shader_data)
}

#[test]
fn gfx12_shader_data_words_become_named_markers() {
    let words = [1 << 2 | 2, 2 << 2 | 2, 1, 1];
    let (seen, batches, shader_data) = decode(&trace(&words), Filter::default());
    assert_eq!(shader_data, 4);
    assert_eq!(batches, [4]);
    let entry = Pc::new(0x100, CODE_OBJECT);
    let expect = |id, kind, flags, name: &str| Seen {
        id,
        kind,
        flags,
        name: Some(name.to_owned()),
        entry,
    };
    assert_eq!(
        seen,
        [
            expect(1, 1, 2 | 4, "load"),
            expect(2, 2, 2, "tile"),
            expect(2, 2, 1, "tile"),
            expect(1, 1, 1, "load"),
        ]
    );
}

#[test]
fn immediate_markers_and_disabled_markers() {
    let data = trace(&[1 << 2 | 2, 1]);
    let mut immediate = Filter::none();
    immediate.set(RecordKind::Marker, Delivery::Immediate);
    let (seen, batches, shader_data) = decode(&data, immediate);
    assert_eq!((seen.len(), batches, shader_data), (2, vec![1, 1], 0));
    let mut no_markers = Filter::default();
    no_markers.set(RecordKind::Marker, Delivery::Off);
    let (seen, _, shader_data) = decode(&data, no_markers);
    assert_eq!((seen.len(), shader_data), (0, 2));
}
