//! MARKER records (API.md §5, §8.8): SHADERDATA words written by the SQTT instrument pass,
//! `(id << 2) | ENTER << 1 | EXIT_PREV`, named by the `.sqtt_funcmap` section of the wave's code
//! object. Words of a wave whose kernel is not yet attributed to a code object wait until the
//! wave end or the end of the buffer resolves it.

use std::collections::HashMap;
use std::sync::Arc;

use crate::isa::funcmap::{EntryKind, Funcmap, MarkerValue};
use crate::isa::IsaProvider;
use crate::records::{Marker, Pc, RecordKind, ShaderData};
use crate::sink::{Delivery, Emitter, POOL_LIMIT};

/// Words held for unattributed waves, over all waves; past this a wave's words are dropped.
const MAX_PENDING: usize = 1 << 20;

const RECORD_HEADER: u32 = 0;
const RECORD_PAYLOAD: u32 = 1;
const FLAG_EXIT_PREVIOUS: u32 = 1;
const FLAG_ENTER: u32 = 2;
const FLAG_NEW_WAVE: u32 = 4;
/// SHADERDATA flag bit of trap-handler data.
const SHADERDATA_PRIVILEGED: u8 = 1 << 1;

fn marker_kind(kind: EntryKind) -> u32 {
    match kind {
        EntryKind::Kernel => 0,
        EntryKind::Function => 1,
        EntryKind::UserScope => 2,
        EntryKind::Point => 3,
    }
}

fn is_scope(kind: EntryKind) -> bool {
    matches!(kind, EntryKind::Function | EntryKind::UserScope)
}

fn marker_flags(value: &MarkerValue) -> u32 {
    (u32::from(value.exit_previous) * FLAG_EXIT_PREVIOUS) | (u32::from(value.enter) * FLAG_ENTER)
}

/// Payload words still expected after a header marker.
#[derive(Clone, Copy)]
struct Payload {
    id: u32,
    flags: u32,
    next_index: u32,
}

/// The marker state of one wave (one start on a wave slot).
struct Generation {
    kernel_entry: Pc,
    funcmap: Option<Arc<Funcmap>>,
    funcmap_checked: bool,
    first_marker: bool,
    /// False after packet loss or pending overflow: the wave's words are no longer trusted.
    reliable: bool,
    /// Ids of the open function / user scopes, innermost last.
    scopes: Vec<u32>,
    payload: Option<Payload>,
    pending: Vec<ShaderData>,
}

impl Generation {
    fn new(kernel_entry: Pc) -> Self {
        Generation {
            kernel_entry,
            funcmap: None,
            funcmap_checked: false,
            first_marker: true,
            reliable: true,
            scopes: Vec::new(),
            payload: None,
            pending: Vec::new(),
        }
    }
}

fn wave_key(cu: u8, simd: u8, wave_id: u8) -> u32 {
    u32::from(cu) << 16 | u32::from(simd) << 8 | u32::from(wave_id)
}

/// The marker decoder of one parse call.
#[derive(Default)]
pub struct MarkerStream {
    enabled: bool,
    /// Fx-hashed: a default `RandomState` reads thread-local keys in every call's `Session::new`.
    waves: HashMap<u32, Generation, rustc_hash::FxBuildHasher>,
    /// Replaced generations whose words still wait for attribution.
    unresolved: Vec<Generation>,
    pending_count: usize,
    records: Vec<Marker>,
    /// The funcmaps the pooled records' name pointers point into.
    alive: Vec<Arc<Funcmap>>,
}

/// What marker decoding needs from the session.
pub struct MarkerContext<'a, 's> {
    pub emitter: &'a mut Emitter<'s>,
    pub isa: &'a mut dyn IsaProvider,
}

impl MarkerStream {
    pub fn new(enabled: bool) -> Self {
        MarkerStream {
            enabled,
            ..MarkerStream::default()
        }
    }

    /// Marker decoding was asked for (and some code object has a funcmap).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn wave_start(&mut self, cu: u8, simd: u8, wave_id: u8, kernel_entry: Pc) {
        if !self.enabled {
            return;
        }
        let fresh = Generation::new(kernel_entry);
        if let Some(old) = self.waves.insert(wave_key(cu, simd, wave_id), fresh) {
            if !old.pending.is_empty() {
                self.unresolved.push(old);
            }
        }
    }

    pub fn wave_end(
        &mut self,
        cx: MarkerContext<'_, '_>,
        cu: u8,
        simd: u8,
        wave_id: u8,
        kernel_entry: Pc,
    ) {
        if !self.enabled {
            return;
        }
        if let Some(mut generation) = self.waves.remove(&wave_key(cu, simd, wave_id)) {
            self.resolve(cx, &mut generation, kernel_entry);
            self.waves.insert(wave_key(cu, simd, wave_id), generation);
        }
    }

    pub fn shader_data(&mut self, cx: MarkerContext<'_, '_>, record: &ShaderData) {
        if !self.enabled || record.flags & SHADERDATA_PRIVILEGED != 0 {
            return;
        }
        let key = wave_key(record.cu, record.simd, record.wave_id);
        let Some(mut generation) = self.waves.remove(&key) else {
            return;
        };
        if generation.reliable {
            if generation.kernel_entry.code_object_id != 0 {
                self.decode(cx, &mut generation, record);
            } else if self.pending_count >= MAX_PENDING {
                self.pending_count -= generation.pending.len();
                generation.pending = Vec::new();
                generation.reliable = false;
            } else {
                generation.pending.push(*record);
                self.pending_count += 1;
            }
        }
        self.waves.insert(key, generation);
    }

    pub fn packet_loss(&mut self) {
        for generation in self.waves.values_mut() {
            generation.scopes.clear();
            generation.payload = None;
            generation.pending.clear();
            generation.reliable = false;
        }
        self.unresolved.clear();
        self.pending_count = 0;
    }

    /// End of buffer: resolves waiting words against the code objects loaded "from start",
    /// then hands the pooled records over.
    pub fn finish(&mut self, mut cx: MarkerContext<'_, '_>, from_start: impl Fn(u64) -> Pc) {
        if !self.enabled {
            return;
        }
        // In slot order, so the records resolved here come out in the same order on every run.
        let mut keys: Vec<u32> = self.waves.keys().copied().collect();
        keys.sort_unstable();
        for key in keys {
            let Some(mut generation) = self.waves.remove(&key) else {
                continue;
            };
            let entry = generation.kernel_entry;
            if entry.code_object_id == 0 && entry.address != 0 {
                self.resolve(cx.reborrow(), &mut generation, from_start(entry.address));
            }
            self.waves.insert(key, generation);
        }
        let mut unresolved = std::mem::take(&mut self.unresolved);
        for generation in &mut unresolved {
            let address = generation.kernel_entry.address;
            if address != 0 {
                self.resolve(cx.reborrow(), generation, from_start(address));
            }
        }
        unresolved.retain(|g| !g.pending.is_empty());
        self.unresolved = unresolved;
        self.flush(cx.emitter);
    }

    fn flush(&mut self, emitter: &mut Emitter<'_>) {
        emitter.markers(&self.records);
        self.records.clear();
        self.alive.clear();
    }

    fn resolve(&mut self, mut cx: MarkerContext<'_, '_>, generation: &mut Generation, entry: Pc) {
        if entry.code_object_id == 0 {
            return;
        }
        if generation.kernel_entry.code_object_id != entry.code_object_id {
            generation.funcmap = None;
            generation.funcmap_checked = false;
        }
        generation.kernel_entry = entry;
        let pending = std::mem::take(&mut generation.pending);
        self.pending_count -= pending.len();
        if generation.reliable {
            for record in &pending {
                self.decode(cx.reborrow(), generation, record);
            }
        }
    }

    fn decode(
        &mut self,
        cx: MarkerContext<'_, '_>,
        generation: &mut Generation,
        source: &ShaderData,
    ) {
        if !generation.reliable {
            return;
        }
        if !generation.funcmap_checked {
            generation.funcmap = cx.isa.funcmap(generation.kernel_entry.code_object_id);
            generation.funcmap_checked = true;
        }
        let Some(funcmap) = generation.funcmap.clone() else {
            return;
        };
        if let Some(payload) = generation.payload.as_mut() {
            let index = payload.next_index;
            payload.next_index += 1;
            let (id, flags) = (payload.id, payload.flags);
            if let Some(entry) = funcmap.find(id) {
                if payload.next_index >= entry.extra_payload_count {
                    generation.payload = None;
                }
                let record = Marker {
                    payload_index: index,
                    ..self.record(generation, &funcmap, source, id, RECORD_PAYLOAD, flags)
                };
                self.emit(cx.emitter, &funcmap, record);
            } else {
                generation.payload = None;
            }
            return;
        }
        let value = funcmap.decode(source.value as u32);
        let bare_exit = value.id == 0 && value.exit_previous && !value.enter;
        let entry = match funcmap.find(value.id) {
            None if bare_exit && !generation.scopes.is_empty() => {
                // A bare exit reports the scope it leaves.
                let Some(id) = generation.scopes.pop() else {
                    return;
                };
                self.header(cx.emitter, generation, &funcmap, source, id, &value);
                return;
            }
            Some(entry) if entry.kind != EntryKind::Kernel => entry,
            _ => return,
        };
        if value.exit_previous {
            generation.scopes.pop();
        }
        let (id, kind, extra) = (entry.id, entry.kind, entry.extra_payload_count);
        self.header(cx.emitter, generation, &funcmap, source, id, &value);
        if value.enter && is_scope(kind) {
            generation.scopes.push(id);
        }
        if extra != 0 {
            generation.payload = Some(Payload {
                id,
                flags: marker_flags(&value),
                next_index: 0,
            });
        }
    }

    fn header(
        &mut self,
        emitter: &mut Emitter<'_>,
        generation: &mut Generation,
        funcmap: &Arc<Funcmap>,
        source: &ShaderData,
        id: u32,
        value: &MarkerValue,
    ) {
        let mut flags = marker_flags(value);
        if generation.first_marker {
            flags |= FLAG_NEW_WAVE;
            generation.first_marker = false;
        }
        let record = self.record(generation, funcmap, source, id, RECORD_HEADER, flags);
        self.emit(emitter, funcmap, record);
    }

    fn record(
        &self,
        generation: &Generation,
        funcmap: &Funcmap,
        source: &ShaderData,
        id: u32,
        record_kind: u32,
        flags: u32,
    ) -> Marker {
        let entry = funcmap.find(id);
        let c_ptr = |s: Option<&std::ffi::CString>| s.map_or(std::ptr::null(), |s| s.as_ptr());
        Marker {
            size: std::mem::size_of::<Marker>() as u64,
            shaderdata: *source,
            kernel_entry: generation.kernel_entry,
            code_object_id: generation.kernel_entry.code_object_id,
            name: c_ptr(entry.and_then(|e| e.name.as_ref())),
            source_location: c_ptr(entry.and_then(|e| e.source_location.as_ref())),
            marker_id: id,
            record_kind,
            marker_kind: entry.map_or(0, |e| marker_kind(e.kind)),
            marker_flags: flags,
            payload_index: u32::MAX,
            payload_count: entry.map_or(0, |e| e.extra_payload_count),
            delay: 0,
            reserved: 0,
        }
    }

    fn emit(&mut self, emitter: &mut Emitter<'_>, funcmap: &Arc<Funcmap>, record: Marker) {
        if emitter.filter().mode(RecordKind::Marker) == Delivery::Immediate {
            emitter.markers(std::slice::from_ref(&record));
            return;
        }
        if !self.alive.iter().any(|m| Arc::ptr_eq(m, funcmap)) {
            self.alive.push(funcmap.clone());
        }
        self.records.push(record);
        if self.records.len() >= POOL_LIMIT {
            self.flush(emitter);
        }
    }
}

impl<'s> MarkerContext<'_, 's> {
    fn reborrow(&mut self) -> MarkerContext<'_, 's> {
        MarkerContext {
            emitter: self.emitter,
            isa: self.isa,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::IsaError;
    use crate::sink::{Filter, Record};
    use std::ffi::CStr;

    const CODE_OBJECT: u64 = 4;

    /// Knows one code object's funcmap.
    struct Funcmaps(Arc<Funcmap>);

    impl IsaProvider for Funcmaps {
        fn disassemble(&mut self, _: Pc, _: &mut Vec<u8>) -> Result<u64, IsaError> {
            Err(IsaError::UnknownAddress)
        }
        fn funcmap(&mut self, code_object_id: u64) -> Option<Arc<Funcmap>> {
            (code_object_id == CODE_OBJECT).then(|| self.0.clone())
        }
    }

    /// A marker record with its strings copied out during the callback.
    #[derive(Debug, PartialEq)]
    struct Seen {
        id: u32,
        kind: u32,
        record_kind: u32,
        flags: u32,
        payload_index: u32,
        payload_count: u32,
        name: Option<String>,
        source: Option<String>,
        value: u64,
        code_object_id: u64,
    }

    fn text(p: *const std::ffi::c_char) -> Option<String> {
        // SAFETY: the pointers are NULL or NUL-terminated strings valid during the callback.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    fn word(id: u32, enter: bool, exit: bool) -> u64 {
        u64::from(id << 2 | u32::from(enter) << 1 | u32::from(exit))
    }

    fn data(value: u64, wave_id: u8) -> ShaderData {
        ShaderData::new(0, value, 1, 2, wave_id, 0)
    }

    /// Runs `script` against a stream and returns the marker records and callback sizes.
    fn run(
        script: impl FnOnce(&mut MarkerStream, &mut Emitter<'_>, &mut Funcmaps),
    ) -> (Vec<Seen>, Vec<usize>) {
        let funcmap = Funcmap::parse(
            b"K:kern\nF:1:outer@a.cpp:1\nU:2:inner\nP:3:tick@a.cpp:3\nR:3:extra_payload_count=2\n",
        );
        let mut isa = Funcmaps(Arc::new(funcmap));
        let mut seen = Vec::new();
        let mut batches = Vec::new();
        let mut sink = |r: Record<'_>| {
            if let Record::Marker(rows) = r {
                batches.push(rows.len());
                for m in rows {
                    seen.push(Seen {
                        id: m.marker_id,
                        kind: m.marker_kind,
                        record_kind: m.record_kind,
                        flags: m.marker_flags,
                        payload_index: m.payload_index,
                        payload_count: m.payload_count,
                        name: text(m.name),
                        source: text(m.source_location),
                        value: m.shaderdata.value,
                        code_object_id: m.code_object_id,
                    });
                }
            }
            0
        };
        let mut emitter = Emitter::new(&mut sink, Filter::default());
        let mut stream = MarkerStream::new(true);
        script(&mut stream, &mut emitter, &mut isa);
        drop(emitter);
        (seen, batches)
    }

    fn cx<'a, 's>(emitter: &'a mut Emitter<'s>, isa: &'a mut Funcmaps) -> MarkerContext<'a, 's> {
        MarkerContext { emitter, isa }
    }

    #[test]
    fn scopes_points_payloads_and_bare_exits() {
        let entry = Pc::new(0x100, CODE_OBJECT);
        let (seen, batches) = run(|s, e, isa| {
            s.wave_start(1, 2, 5, entry);
            for value in [
                word(1, true, false),  // enter outer
                word(2, true, false),  // enter inner
                word(3, false, false), // point with two payload words
                0xAAAA,
                0xBBBB,
                word(0, false, true),  // bare exit: leaves inner
                word(9, false, false), // unknown id: nothing
                word(1, false, true),  // exit outer by id
            ] {
                s.shader_data(cx(e, isa), &data(value, 5));
            }
            let mut privileged = data(word(3, false, false), 5);
            privileged.flags = 2;
            s.shader_data(cx(e, isa), &privileged);
            s.finish(cx(e, isa), |a| Pc::new(a, 0));
        });
        assert_eq!(batches, [7], "one pooled batch at the end of the buffer");
        let summary: Vec<_> = seen
            .iter()
            .map(|m| (m.id, m.kind, m.record_kind, m.flags, m.payload_index))
            .collect();
        assert_eq!(
            summary,
            [
                (1, 1, 0, FLAG_ENTER | FLAG_NEW_WAVE, u32::MAX),
                (2, 2, 0, FLAG_ENTER, u32::MAX),
                (3, 3, 0, 0, u32::MAX),
                (3, 3, 1, 0, 0),
                (3, 3, 1, 0, 1),
                (2, 2, 0, FLAG_EXIT_PREVIOUS, u32::MAX),
                (1, 1, 0, FLAG_EXIT_PREVIOUS, u32::MAX),
            ]
        );
        assert_eq!(seen.len(), 7);
        assert_eq!(seen[0].name.as_deref(), Some("outer"));
        assert_eq!(seen[0].source.as_deref(), Some("a.cpp:1"));
        assert_eq!(
            (seen[1].name.as_deref(), seen[1].source.as_deref()),
            (Some("inner"), None)
        );
        assert_eq!(seen[2].payload_count, 2);
        assert_eq!((seen[3].value, seen[4].value), (0xAAAA, 0xBBBB));
        assert!(seen.iter().all(|m| m.code_object_id == CODE_OBJECT));
    }

    #[test]
    fn words_of_an_unattributed_wave_wait_for_its_code_object() {
        let (seen, _) = run(|s, e, isa| {
            s.wave_start(1, 2, 0, Pc::new(0x7000_0100, 0));
            s.shader_data(cx(e, isa), &data(word(3, false, false), 0));
            s.wave_end(cx(e, isa), 1, 2, 0, Pc::new(0x100, CODE_OBJECT));
            // A second wave resolved only at the end of the buffer, from the raw address.
            s.wave_start(1, 2, 1, Pc::new(0x7000_0100, 0));
            s.shader_data(cx(e, isa), &data(word(1, true, false), 1));
            s.finish(cx(e, isa), |a| Pc::new(a - 0x7000_0000, CODE_OBJECT));
        });
        let ids: Vec<_> = seen.iter().map(|m| (m.id, m.flags)).collect();
        assert_eq!(ids, [(3, FLAG_NEW_WAVE), (1, FLAG_ENTER | FLAG_NEW_WAVE)]);
    }

    #[test]
    fn packet_loss_and_unknown_code_objects_silence_markers() {
        let (seen, _) = run(|s, e, isa| {
            s.wave_start(1, 2, 0, Pc::new(0x100, CODE_OBJECT));
            s.packet_loss();
            s.shader_data(cx(e, isa), &data(word(1, true, false), 0));
            s.wave_start(1, 2, 1, Pc::new(0x100, 7));
            s.shader_data(cx(e, isa), &data(word(1, true, false), 1));
            s.shader_data(cx(e, isa), &data(word(1, true, false), 3)); // no wave started
            s.finish(cx(e, isa), |a| Pc::new(a, 0));
        });
        assert!(seen.is_empty());
    }
}
