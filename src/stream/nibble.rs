//! Zero-copy nibble reader for the RDNA token stream (SQTT_FORMAT §1.3).
//!
//! The stream is read 4 bits at a time, low nibble of each byte first. Tokens start on any
//! nibble; a token's contents is the 64-bit window whose bit 0 is the token's first bit. Nibbles
//! past the end of the buffer read as zero (the reference feeds zeros in its tail loop).

#[derive(Clone, Copy)]
pub struct NibbleStream<'a> {
    data: &'a [u8],
}

impl<'a> NibbleStream<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        NibbleStream { data }
    }

    /// Number of nibbles in the buffer.
    pub fn len(&self) -> usize {
        self.data.len() * 2
    }

    /// Beside `len` where the module is public (clippy's `len_without_is_empty`) and for tests.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The 64 bits starting at nibble `pos`, zero-filled past the end.
    #[inline]
    pub fn window(&self, pos: usize) -> u64 {
        let byte = pos >> 1;
        let odd = pos & 1 != 0;
        if let Some(bytes) = byte.checked_add(9).and_then(|end| self.data.get(byte..end)) {
            let lo = u64::from_le_bytes([
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            ]);
            if odd {
                (lo >> 4) | (u64::from(bytes[8]) << 60)
            } else {
                lo
            }
        } else {
            self.window_near_end(byte, odd)
        }
    }

    /// [`Self::window`] without the bounds check, for the walk's hot loop.
    ///
    /// # Safety
    /// `pos + 17 <= self.len()`: the 9 bytes from nibble `pos` on are in the buffer.
    #[inline(always)]
    pub unsafe fn window_unchecked(&self, pos: usize) -> u64 {
        let byte = pos >> 1;
        debug_assert!(pos + 17 <= self.len());
        // SAFETY: the caller guarantees `pos + 17 <= 2 * len`, so `byte + 9 <= len`.
        let (lo, hi) = unsafe {
            let start = self.data.as_ptr().add(byte);
            (
                u64::from_le(std::ptr::read_unaligned(start.cast::<u64>())),
                *start.add(8),
            )
        };
        if pos & 1 != 0 {
            (lo >> 4) | (u64::from(hi) << 60)
        } else {
            lo
        }
    }

    /// How many zero nibbles start at `pos` (the first is known to be zero), counting at most
    /// `limit`.
    #[inline]
    pub fn zero_run(&self, pos: usize, limit: usize) -> usize {
        let mut run = 0;
        while run < limit {
            let window = self.window(pos + run);
            if window != 0 {
                return (run + (window.trailing_zeros() / 4) as usize).min(limit);
            }
            run += 16;
        }
        limit
    }

    #[cold]
    fn window_near_end(&self, byte: usize, odd: bool) -> u64 {
        let mut raw = [0u8; 9];
        if let Some(tail) = self.data.get(byte..) {
            let n = tail.len().min(9);
            raw[..n].copy_from_slice(&tail[..n]);
        }
        let lo = u64::from_le_bytes([
            raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7],
        ]);
        if odd {
            (lo >> 4) | (u64::from(raw[8]) << 60)
        } else {
            lo
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchecked_windows_equal_checked_ones() {
        let data: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37) ^ 0x5A).collect();
        let stream = NibbleStream::new(&data);
        for pos in 0..=stream.len() - 17 {
            // SAFETY: pos + 17 <= len.
            assert_eq!(
                unsafe { stream.window_unchecked(pos) },
                stream.window(pos),
                "{pos}"
            );
        }
    }

    #[test]
    fn low_nibble_first_and_zero_fill() {
        let data: Vec<u8> = (0u8..12).map(|i| i * 0x11 + 0x10).collect();
        let s = NibbleStream::new(&data);
        assert_eq!(s.len(), 24);
        // Nibble k is (byte[k/2] >> 4*(k&1)) & 0xF; the window packs 16 nibbles LSB first.
        for pos in 0..30 {
            let expected = (0..16).fold(0u64, |acc, k| {
                let n = pos + k;
                let nib = data.get(n / 2).map_or(0, |b| (b >> (4 * (n & 1))) & 0xF);
                acc | (u64::from(nib) << (4 * k))
            });
            assert_eq!(s.window(pos), expected, "window at nibble {pos}");
        }
    }

    #[test]
    fn empty_and_far_positions_read_zero() {
        let s = NibbleStream::new(&[]);
        assert!(s.is_empty());
        assert_eq!(s.window(0), 0);
        assert_eq!(NibbleStream::new(&[0xFF; 4]).window(usize::MAX / 4), 0);
    }
}
