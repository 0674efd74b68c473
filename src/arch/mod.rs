//! Per-architecture token tables and rules.

pub mod gfx9;
pub mod rdna;
