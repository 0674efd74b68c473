//! Helpers shared by this crate's own tests (unit tests, and the integration suites through the
//! `internals` feature): an ISA listing and deterministic pseudo-random numbers.

use crate::isa::{IsaError, IsaProvider};
use crate::records::Pc;

/// ISA answers from a listing of `(address, size, text)`, other addresses unknown; `.1` counts
/// the questions asked.
pub struct Listing(pub Vec<(u64, u64, &'static str)>, pub usize);

impl IsaProvider for Listing {
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        self.1 += 1;
        let &(_, size, line) = self
            .0
            .iter()
            .find(|(address, _, _)| *address == pc.address)
            .ok_or(IsaError::UnknownAddress)?;
        text.clear();
        text.extend_from_slice(line.as_bytes());
        Ok(size)
    }
}

/// xorshift64*; the seed must not be 0.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (0 for `n` = 0), of `n`'s type.
    pub fn below<N: Bound>(&mut self, n: N) -> N {
        N::from_u64(self.next_u64() % n.to_u64().max(1))
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}

/// The integer types [`Rng::below`] draws.
pub trait Bound: Copy {
    fn to_u64(self) -> u64;
    fn from_u64(value: u64) -> Self;
}

macro_rules! bound {
    ($($t:ty),*) => {$(
        impl Bound for $t {
            /// A negative bound counts as 0.
            fn to_u64(self) -> u64 {
                u64::try_from(self).unwrap_or(0)
            }
            /// Only values below a bound of this type come back.
            fn from_u64(value: u64) -> Self {
                value as $t
            }
        }
    )*};
}
// i32: what an unsuffixed literal bound is.
bound!(u64, usize, u32, i32);
