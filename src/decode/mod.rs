//! The decode pipeline shared by V1 `parse_data`, V2 `parse` and the Rust [`crate::Decoder`]: one
//! [`Session`] per parse call, fed one complete shader-engine buffer at a time, each handed to
//! the decoder of the family its header names.

use crate::arch;
use crate::error::{DecodeError, ErrorKind};
use crate::stream::header::{self, TraceKind};

pub use crate::wave::Session;

impl Session<'_> {
    /// Decodes one complete SE buffer (header included), the next buffer of the call. Records
    /// decoded before an error have been delivered when this returns.
    pub fn decode_buffer(&mut self, data: &[u8]) -> Result<(), DecodeError> {
        let result = self.decode_current(data);
        self.buffer += 1;
        result
    }

    fn decode_current(&mut self, data: &[u8]) -> Result<(), DecodeError> {
        let kind = header::detect(data).map_err(|kind| {
            // An unknown header is wrong from its first byte; a cut one where the buffer ends.
            let offset = if kind == ErrorKind::Truncated {
                data.len()
            } else {
                0
            };
            DecodeError::new(kind, self.buffer, offset)
        })?;
        self.isa.trace_kind(kind);
        self.gfxip_once(kind.gfxip());
        match kind {
            TraceKind::Gfx9 { header } => arch::gfx9::decode(self, header, &data[8..]),
            TraceKind::Rdna { version } => arch::rdna::decode(self, version, data),
        }
    }
}
