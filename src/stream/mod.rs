//! Reading trace bytes: header recognition and token iteration.

pub mod header;
pub mod nibble;
