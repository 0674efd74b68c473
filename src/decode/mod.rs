//! The decode pipeline shared by V1 `parse_data` and V2 `parse`: one [`Session`] per parse call,
//! fed one complete shader-engine buffer at a time.

pub mod locations;
pub mod markers;
pub mod registers;
pub mod userdata;

use crate::arch;
use crate::isa::IsaProvider;
use crate::records::{InfoCode, Pc, RecordKind, ShaderData};
use crate::sink::{Emitter, Record};
use crate::spare::Spare;
use crate::stream::header::{self, TraceKind};
use crate::wave::SharedStitch;
use markers::{MarkerContext, MarkerStream};

/// Why a buffer could not be decoded to its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("the buffer does not start with a known trace header")]
    UnknownHeader,
    #[error("the trace is corrupt at byte {0}")]
    Corrupt(usize),
    #[error("trace version {0} is not supported")]
    UnsupportedVersion(u8),
}

/// State that lives for one parse call, across all its SE buffers.
pub struct Session<'a> {
    pub emitter: Emitter<'a>,
    pub isa: &'a mut dyn IsaProvider,
    /// ISA answers and stitch results cached for the whole call.
    pub stitch: Spare<SharedStitch>,
    /// MARKER records from SHADERDATA words.
    markers: MarkerStream,
    gfxip_sent: bool,
    info_sent: [bool; 4],
    rt_frequency_sent: bool,
}

impl<'a> Session<'a> {
    pub fn new(emitter: Emitter<'a>, isa: &'a mut dyn IsaProvider) -> Self {
        // Without any funcmap no word can name a marker: skip the per-wave bookkeeping.
        let markers = MarkerStream::new(emitter.wants(RecordKind::Marker) && isa.has_funcmaps());
        Session {
            markers,
            emitter,
            isa,
            stitch: SharedStitch::for_new_call(),
            gfxip_sent: false,
            info_sent: [false; 4],
            rt_frequency_sent: false,
        }
    }

    /// Decodes one complete SE buffer (header included). Records decoded before an error have
    /// been delivered when this returns.
    pub fn decode_buffer(&mut self, data: &[u8]) -> Result<(), DecodeError> {
        let kind = header::detect(data).ok_or(DecodeError::UnknownHeader)?;
        self.isa.trace_kind(kind);
        if !self.gfxip_sent {
            self.gfxip_sent = true;
            self.emitter.single(Record::Gfxip(kind.gfxip()));
        }
        match kind {
            TraceKind::Gfx9 { header } => arch::gfx9::decode(self, header, &data[8..]),
            TraceKind::Rdna { version } => arch::rdna::decode(self, version, data),
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

    /// DATA_LOST is reported once per buffer that lost packets.
    pub fn info_data_lost(&mut self) {
        self.emitter.single(Record::Info(InfoCode::DataLost));
    }

    /// The realtime clock frequency is reported once per parse call.
    pub fn rt_frequency(&mut self, hz: u64) {
        if !self.rt_frequency_sent {
            self.rt_frequency_sent = true;
            self.emitter.single(Record::RtFrequency(hz));
        }
    }

    /// A wave started on a slot (any unit): marker words are attributed to it from now on.
    #[inline]
    pub fn marker_wave_start(&mut self, cu: u8, simd: u8, wave_id: u8, kernel_entry: Pc) {
        if self.markers.enabled() {
            self.markers.wave_start(cu, simd, wave_id, kernel_entry);
        }
    }

    /// A wave ended; its kernel entry may now be attributed to a code object.
    #[inline]
    pub fn marker_wave_end(&mut self, cu: u8, simd: u8, wave_id: u8, kernel_entry: Pc) {
        if !self.markers.enabled() {
            return;
        }
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
        self.emitter.shader_data(record);
    }

    /// Packet loss: open marker scopes are no longer trusted.
    pub fn marker_packet_loss(&mut self) {
        self.markers.packet_loss();
    }

    /// End of an SE buffer: late attribution through `from_start`, then the marker batch.
    pub fn finish_markers(&mut self, from_start: impl Fn(u64) -> Pc) {
        let cx = MarkerContext {
            emitter: &mut self.emitter,
            isa: &mut *self.isa,
        };
        self.markers.finish(cx, from_start);
    }
}
