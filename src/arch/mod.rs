//! Per-architecture token tables and rules.

pub mod gfx10;
pub mod gfx11;
pub mod gfx12;
pub mod gfx9;
pub mod rdna;
pub mod table;
