//! gfx9 / CDNA (gfx90a, gfx942, gfx950): the 16-bit word stream.

use crate::decode::{DecodeError, Session};

pub fn decode(session: &mut Session<'_>, header: u64, tokens: &[u8]) -> Result<(), DecodeError> {
    let _ = (header, tokens);
    session.emitter.flush_buffer_end();
    Ok(())
}
