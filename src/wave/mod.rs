//! Wave assembly, timing and PC reconstruction, shared by every architecture.

/// Stitching state shared by all SE buffers of one parse call (ISA cache).
#[derive(Default)]
pub struct SharedStitch {}
