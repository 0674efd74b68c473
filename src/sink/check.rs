//! The one validity check of what reaches a client: every record against the ranges of the 0.3.0
//! ABI (`spec/layout.json`, API.md §4.10). The emitter runs it on every delivery in debug builds
//! (so the fuzz targets abort on an invalid record), and the test suites run it on every record
//! of every decode, through [`Checked`] sinks and the C test client.

use crate::records::{
    Category, Dispatch, Event, EventKind, InfoCode, Inst, InstOtherSimd, Marker, Occupancy,
    PerfEvent, Realtime, ShaderData, Wave, WaveState, WaveStateKind,
};
use crate::sink::Record;

/// The gfx majors a GFXIP record can carry.
const GFXIP_MAJORS: [u32; 4] = [9, 10, 11, 12];
/// OCCUPANCY bits above `cluster_id` are reserved.
const OCCUPANCY_RESERVED_BITS: u32 = !0x1F_FFFF;
const SHADERDATA_FLAGS: u8 = 0b11;
const EVENT_FLAGS: u16 = 0b11;
const DISPATCH_FLAGS: i32 = 0x1F;
const MARKER_RECORD_KINDS: u32 = 2;
const MARKER_KINDS: u32 = 4;
const MARKER_FLAGS: u32 = 0b111;

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

/// Checks one delivery: a batch is never empty, and every field with an ABI range is in it.
///
/// # Safety
/// A WAVE record's arrays hold `instructions_size` and `timeline_size` entries (as the decoder
/// delivers them, for the duration of the callback).
pub unsafe fn record(record: &Record<'_>) -> Result<(), String> {
    match record {
        Record::Gfxip(major) => ensure(GFXIP_MAJORS.contains(major), || {
            format!("GFXIP {major} is no gfx major")
        }),
        Record::Occupancy(batch) => batch_of(record, batch, occupancy),
        Record::PerfEvent(batch) => batch_of(record, batch, |_: &PerfEvent| Ok(())),
        Record::Wave(w) => wave(w),
        Record::Info(code) => ensure(*code != InfoCode::None, || "INFO NONE".to_string()),
        Record::Event(e) => event(e),
        Record::ShaderData(batch) => batch_of(record, batch, shader_data),
        Record::Realtime(batch) => batch_of(record, batch, |r: &Realtime| {
            ensure(r.reserved == 0, || {
                format!("REALTIME reserved {}", r.reserved)
            })
        }),
        Record::RtFrequency(_) => Ok(()),
        Record::InstOtherSimd(batch) => batch_of(record, batch, other_simd),
        Record::Dispatch(d) => dispatch(d),
        Record::Marker(batch) => batch_of(record, batch, marker),
    }
}

fn batch_of<T>(
    record: &Record<'_>,
    batch: &[T],
    each: impl Fn(&T) -> Result<(), String>,
) -> Result<(), String> {
    let what = record.kind().c_name();
    ensure(!batch.is_empty(), || format!("empty {what} batch"))?;
    batch
        .iter()
        .enumerate()
        .try_for_each(|(i, r)| each(r).map_err(|e| format!("{what} record {i}: {e}")))
}

fn occupancy(o: &Occupancy) -> Result<(), String> {
    ensure(o.reserved == 0, || format!("reserved {}", o.reserved))?;
    ensure(o.bits & OCCUPANCY_RESERVED_BITS == 0, || {
        format!("reserved bits set in {:#x}", o.bits)
    })
}

/// # Safety
/// As [`record`].
unsafe fn wave(w: &Wave) -> Result<(), String> {
    ensure(w.size == std::mem::size_of::<Wave>() as u64, || {
        format!("WAVE size {}", w.size)
    })?;
    ensure(w.reserved == 0, || format!("WAVE reserved {}", w.reserved))?;
    let insts: &[Inst] = array(w.instructions_array, w.instructions_size, "instructions")?;
    let timeline: &[WaveState] = array(w.timeline_array, w.timeline_size, "timeline")?;
    for (i, inst) in insts.iter().enumerate() {
        ensure(inst.category() <= Category::Bvh as u8, || {
            format!("WAVE instruction {i}: category {}", inst.category())
        })?;
    }
    for (i, state) in timeline.iter().enumerate() {
        ensure(
            (0..=WaveStateKind::Stall as i32).contains(&state.kind),
            || format!("WAVE timeline entry {i}: state {}", state.kind),
        )?;
    }
    Ok(())
}

/// A WAVE array: NULL when it is empty, except that a gfx9 wave whose records were all taken
/// back hands a non-null array of size 0, as the reference does (docs/timing/gfx9.md T12a).
///
/// # Safety
/// A non-null `pointer` holds `size` entries.
unsafe fn array<'a, T>(pointer: *const T, size: u64, what: &str) -> Result<&'a [T], String> {
    match (pointer.is_null(), size) {
        (_, 0) => Ok(&[]),
        (false, n) if n > 0 && n <= isize::MAX as u64 => {
            Ok(std::slice::from_raw_parts(pointer, n as usize))
        }
        _ => Err(format!("WAVE {what}: {size} entries at {pointer:?}")),
    }
}

fn event(e: &Event) -> Result<(), String> {
    ensure(e.size == std::mem::size_of::<Event>() as u64, || {
        format!("EVENT size {}", e.size)
    })?;
    ensure(e.kind <= EventKind::SpmSample as u32, || {
        format!("EVENT type {}", e.kind)
    })?;
    ensure(e.flags & !EVENT_FLAGS == 0, || {
        format!("EVENT flags {:#x}", e.flags)
    })
}

fn shader_data(s: &ShaderData) -> Result<(), String> {
    ensure(s.flags & !SHADERDATA_FLAGS == 0, || {
        format!("flags {:#x}", s.flags)
    })?;
    ensure(s.reserved == 0, || format!("reserved {}", s.reserved))
}

fn other_simd(o: &InstOtherSimd) -> Result<(), String> {
    ensure(
        o.size == std::mem::size_of::<InstOtherSimd>() as u64,
        || format!("size {}", o.size),
    )?;
    ensure(o.category <= Category::Bvh as u8, || {
        format!("category {}", o.category)
    })
}

fn dispatch(d: &Dispatch) -> Result<(), String> {
    ensure(d.size == std::mem::size_of::<Dispatch>() as u64, || {
        format!("DISPATCH size {}", d.size)
    })?;
    ensure(d.flags & !DISPATCH_FLAGS == 0, || {
        format!("DISPATCH flags {:#x}", d.flags)
    })
}

fn marker(m: &Marker) -> Result<(), String> {
    ensure(m.size == std::mem::size_of::<Marker>() as u64, || {
        format!("size {}", m.size)
    })?;
    ensure(m.record_kind < MARKER_RECORD_KINDS, || {
        format!("record kind {}", m.record_kind)
    })?;
    ensure(m.marker_kind < MARKER_KINDS, || {
        format!("marker kind {}", m.marker_kind)
    })?;
    ensure(m.marker_flags & !MARKER_FLAGS == 0, || {
        format!("flags {:#x}", m.marker_flags)
    })?;
    shader_data(&m.shaderdata)
}

/// What only the test suites use (the `internals` feature): whole C deliveries, checked
/// sinks.
#[cfg(feature = "internals")]
mod suites {
    use std::ffi::c_void;

    use super::{ensure, record};
    use crate::records::{
        for_each_record_kind, Dispatch, Event, InfoCode, InstOtherSimd, Marker, Occupancy,
        PerfEvent, Realtime, RecordKind, ShaderData, Wave,
    };
    use crate::sink::{Record, RecordSink};

    /// Checks one trace callback as a C client receives it: the record type, the count a type
    /// allows, then the records themselves ([`record`]).
    ///
    /// # Safety
    /// `pointer` holds `count` records of the type `kind` names (a WAVE's arrays as in [`record`]);
    /// for GFXIP it is the gfx major itself.
    pub unsafe fn delivery(kind: i32, pointer: *const c_void, count: u64) -> Result<(), String> {
        let Some(kind) = u32::try_from(kind).ok().and_then(RecordKind::from_raw) else {
            return Err(format!("record type {kind} is outside the ABI"));
        };
        record(&from_c(kind, pointer, count)?)
    }

    /// The internal record a C delivery shows, for each payload shape (see
    /// `for_each_record_kind`): an inline value has a count of 0, a value or a single record a
    /// count of 1, a batch a non-null pointer.
    macro_rules! from_c_payload {
        (inline $t:ty, $pointer:ident, $count:ident) => {{
            ensure($count == 0, || format!("delivered with count {}", $count))?;
            <$t>::try_from($pointer as usize).unwrap_or(<$t>::MAX)
        }};
        (value $t:ty, $pointer:ident, $count:ident) => {{
            ensure($count == 1, || format!("delivered with count {}", $count))?;
            non_null($pointer)?;
            <$t as CValue>::read($pointer)?
        }};
        (one $t:ty, $pointer:ident, $count:ident) => {{
            ensure($count == 1, || format!("delivered with count {}", $count))?;
            non_null($pointer)?;
            &*$pointer.cast::<$t>()
        }};
        (batch $t:ty, $pointer:ident, $count:ident) => {{
            ensure($count <= isize::MAX as u64, || {
                format!("{} records", $count)
            })?;
            non_null($pointer)?;
            std::slice::from_raw_parts($pointer.cast::<$t>(), $count as usize)
        }};
    }

    macro_rules! from_c_fn {
        ($($(#[$doc:meta])* $kind:ident = $code:literal, $c_name:literal:
            $shape:ident $payload:ty $(=> $view:ident)?;)*) => {
            /// # Safety
            /// As [`delivery`].
            unsafe fn from_c<'a>(
                kind: RecordKind,
                pointer: *const c_void,
                count: u64,
            ) -> Result<Record<'a>, String> {
                let read = || -> Result<Record<'a>, String> {
                    Ok(match kind {
                        $(RecordKind::$kind => {
                            Record::$kind(from_c_payload!($shape $payload, pointer, count))
                        })*
                    })
                };
                read().map_err(|e| format!("{}: {e}", kind.c_name()))
            }
        };
    }
    for_each_record_kind!(from_c_fn);

    fn non_null(pointer: *const c_void) -> Result<(), String> {
        ensure(!pointer.is_null(), || "null pointer".to_string())
    }

    /// A payload the C callback receives by pointer to one value.
    trait CValue: Sized {
        /// # Safety
        /// `pointer` points at one C value of the type.
        unsafe fn read(pointer: *const c_void) -> Result<Self, String>;
    }

    impl CValue for u64 {
        unsafe fn read(pointer: *const c_void) -> Result<Self, String> {
            Ok(*pointer.cast::<u64>())
        }
    }

    impl CValue for InfoCode {
        unsafe fn read(pointer: *const c_void) -> Result<Self, String> {
            let code = *pointer.cast::<u32>();
            [
                InfoCode::DataLost,
                InfoCode::StitchIncomplete,
                InfoCode::WaveIncomplete,
            ]
            .into_iter()
            .find(|c| *c as u32 == code)
            .ok_or_else(|| format!("code {code} is outside the ABI"))
        }
    }

    /// A sink that checks every record before handing it on, and panics on an invalid one: the
    /// test suites' decodes go through it.
    pub struct Checked<S>(pub S);

    impl<S: RecordSink> RecordSink for Checked<S> {
        fn deliver(&mut self, record: Record<'_>) -> i32 {
            // SAFETY: records come from the decoder, whose WAVE arrays are live for the call.
            if let Err(violation) = unsafe { self::record(&record) } {
                panic!("invalid record delivered: {violation}");
            }
            self.0.deliver(record)
        }
    }
}

#[cfg(feature = "internals")]
pub use suites::{delivery, Checked};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Pc;
    use crate::records::RecordKind;
    use std::ffi::c_void;

    fn wave_with(insts: &[Inst], timeline: &[WaveState]) -> Wave {
        Wave {
            cu: 0,
            simd: 0,
            wave_id: 0,
            contexts: 0,
            dispatcher: 0,
            workgroup_id: 0,
            cluster_id: 0,
            reserved: 0,
            size: std::mem::size_of::<Wave>() as u64,
            begin_time: 0,
            end_time: 0,
            timeline_size: timeline.len() as u64,
            instructions_size: insts.len() as u64,
            timeline_array: if timeline.is_empty() {
                std::ptr::null()
            } else {
                timeline.as_ptr()
            },
            instructions_array: if insts.is_empty() {
                std::ptr::null()
            } else {
                insts.as_ptr()
            },
        }
    }

    #[test]
    fn out_of_range_values_are_violations() {
        let valu = Inst::new(Category::Valu as u8, 0, 4, 10, Pc::NONE);
        let internal = Inst::new(14, 0, 0, 10, Pc::NONE);
        let exec = WaveState {
            kind: 2,
            duration: 4,
        };
        let bad_state = WaveState {
            kind: 5,
            duration: 4,
        };
        unsafe {
            assert_eq!(record(&Record::Wave(&wave_with(&[valu], &[exec]))), Ok(()));
            assert!(record(&Record::Wave(&wave_with(&[valu, internal], &[exec]))).is_err());
            assert!(record(&Record::Wave(&wave_with(&[valu], &[bad_state]))).is_err());
            let mut hollow = wave_with(&[valu], &[exec]);
            hollow.instructions_array = std::ptr::null();
            assert!(record(&Record::Wave(&hollow)).is_err());
            assert!(record(&Record::Gfxip(13)).is_err());
            assert!(record(&Record::Occupancy(&[])).is_err());
            let reserved = Occupancy {
                bits: 1 << 30,
                ..Occupancy::default()
            };
            assert!(record(&Record::Occupancy(&[reserved])).is_err());
            let code = 7u32;
            assert!(delivery(RecordKind::Info as i32, (&code as *const u32).cast(), 1).is_err());
            assert!(delivery(12, std::ptr::null(), 0).is_err());
            assert!(delivery(RecordKind::Gfxip as i32, 11 as *const c_void, 0).is_ok());
        }
    }
}
