//! The state of one parse call, across all its SE buffers: where records go, where ISA answers
//! come from, what stitching learnt, and which once-per-call records were sent. The
//! architecture decoders and wave assembly work on it; `decode` drives it buffer by buffer.

use super::markers::{MarkerContext, MarkerStream};
use super::SharedStitch;
use crate::isa::IsaProvider;
use crate::records::{InfoCode, Pc, RecordKind, ShaderData};
use crate::sink::{Emitter, Record};
use crate::spare::Spare;

/// State that lives for one parse call, across all its SE buffers.
pub struct Session<'a> {
    pub emitter: Emitter<'a>,
    pub isa: &'a mut dyn IsaProvider,
    /// ISA answers and stitch results cached for the whole call, taken from the thread's
    /// spare at the call's first wave ([`Self::stitch_and_isa`]): most calls of a
    /// rocprofv3 capture decode SE buffers without traced waves.
    stitch: Option<Spare<SharedStitch>>,
    /// MARKER records from SHADERDATA words.
    markers: MarkerStream,
    gfxip_sent: bool,
    info_sent: [bool; 4],
    rt_frequency_sent: bool,
    /// Packets were lost in the current buffer: INFO DATA_LOST at its end.
    data_lost: bool,
    /// Which buffer of the call is being decoded (from 0), for the errors it reports.
    pub buffer: usize,
}

impl<'a> Session<'a> {
    pub fn new(emitter: Emitter<'a>, isa: &'a mut dyn IsaProvider) -> Self {
        // Without any funcmap no word can name a marker: skip the per-wave bookkeeping.
        let markers = MarkerStream::new(emitter.wants(RecordKind::Marker) && isa.has_funcmaps());
        Session {
            markers,
            emitter,
            isa,
            stitch: None,
            gfxip_sent: false,
            info_sent: [false; 4],
            rt_frequency_sent: false,
            data_lost: false,
            buffer: 0,
        }
    }

    /// The GFXIP record is sent once per parse call, before the first buffer's records.
    pub fn gfxip_once(&mut self, major: u32) {
        if !self.gfxip_sent {
            self.gfxip_sent = true;
            self.emitter.single(Record::Gfxip(major));
        }
    }

    /// INFO records other than DATA_LOST are sent at most once per parse call.
    pub fn info_once(&mut self, code: InfoCode) {
        let slot = &mut self.info_sent[code as usize];
        if !*slot {
            *slot = true;
            self.emitter.single(Record::Info(code));
        }
    }

    /// Packets were lost: DATA_LOST is reported once for the buffer, at its end
    /// ([`Self::finish_buffer`]).
    pub fn note_data_lost(&mut self) {
        self.data_lost = true;
    }

    /// The realtime clock frequency is reported once per parse call.
    pub fn rt_frequency(&mut self, hz: u64) {
        if !self.rt_frequency_sent {
            self.rt_frequency_sent = true;
            self.emitter.single(Record::RtFrequency(hz));
        }
    }

    /// Whether marker words are decoded (fixed for the call): without them a wave start or end
    /// has no marker bookkeeping.
    #[inline(always)]
    pub fn markers_enabled(&self) -> bool {
        self.markers.enabled()
    }

    /// The call's stitch cache and the ISA provider it asks.
    pub fn stitch_and_isa(&mut self) -> (&mut SharedStitch, &mut dyn IsaProvider) {
        let stitch = self.stitch.get_or_insert_with(SharedStitch::for_new_call);
        (stitch, &mut *self.isa)
    }

    /// A wave started on a slot (any unit): marker words are attributed to it from now on.
    /// The check is inlined into the wave-start handlers; most traces have no markers.
    #[inline(always)]
    pub fn marker_wave_start(&mut self, cu: u8, simd: u8, wave_id: u8, kernel_entry: Pc) {
        if self.markers.enabled() {
            self.marker_wave_start_enabled(cu, simd, wave_id, kernel_entry);
        }
    }

    #[inline(never)]
    fn marker_wave_start_enabled(&mut self, cu: u8, simd: u8, wave_id: u8, kernel_entry: Pc) {
        self.markers.wave_start(cu, simd, wave_id, kernel_entry);
    }

    /// A wave ended; its kernel entry may now be attributed to a code object. Inlined as above.
    #[inline(always)]
    pub fn marker_wave_end(&mut self, cu: u8, simd: u8, wave_id: u8, kernel_entry: Pc) {
        if self.markers.enabled() {
            self.marker_wave_end_enabled(cu, simd, wave_id, kernel_entry);
        }
    }

    #[inline(never)]
    fn marker_wave_end_enabled(&mut self, cu: u8, simd: u8, wave_id: u8, kernel_entry: Pc) {
        let cx = MarkerContext {
            emitter: &mut self.emitter,
            isa: &mut *self.isa,
        };
        self.markers.wave_end(cx, cu, simd, wave_id, kernel_entry);
    }

    /// Delivers a SHADERDATA record and decodes it as a marker word.
    pub fn shader_data(&mut self, record: ShaderData) {
        let cx = MarkerContext {
            emitter: &mut self.emitter,
            isa: &mut *self.isa,
        };
        self.markers.shader_data(cx, &record);
        self.emitter.add(move || record);
    }

    /// Packet loss: open marker scopes are no longer trusted.
    pub fn marker_packet_loss(&mut self) {
        self.markers.packet_loss();
    }

    /// End of an SE buffer, after its waves: INFO DATA_LOST if the buffer lost packets, then
    /// late marker attribution through `from_start` and the marker batch.
    pub fn finish_buffer(&mut self, from_start: impl Fn(u64) -> Pc) {
        if std::mem::take(&mut self.data_lost) {
            self.emitter.single(Record::Info(InfoCode::DataLost));
        }
        let cx = MarkerContext {
            emitter: &mut self.emitter,
            isa: &mut *self.isa,
        };
        self.markers.finish(cx, from_start);
    }
}
