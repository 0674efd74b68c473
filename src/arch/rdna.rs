//! gfx10.3 / gfx11 / gfx12 (RDNA): the nibble stream.

use crate::decode::{DecodeError, Session};

pub fn decode(session: &mut Session<'_>, version: u8, data: &[u8]) -> Result<(), DecodeError> {
    let _ = (version, data);
    session.emitter.flush_buffer_end();
    Ok(())
}
