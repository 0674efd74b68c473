//! Per-architecture token tables and rules.

pub mod gfx9;
pub mod locations;
pub mod rdna;
pub mod registers;
pub mod table;
pub mod userdata;
