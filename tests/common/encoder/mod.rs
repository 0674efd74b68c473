//! Encoders of the trace streams the synthetic tests decode: [`rdna`] writes the RDNA nibble
//! stream, [`gfx9`] the gfx9 16-bit word stream. Bit positions come from the decoder's own
//! tables where it exposes them (the `internals` feature); the fields no table holds are
//! declared once in the encoder.

#![allow(dead_code)] // each test crate uses a different part

pub mod bits;
pub mod gfx9;
pub mod rdna;
