//! Little-endian bit writer for the synthesized RDNA nibble / byte streams of the tests.

#[derive(Default)]
pub struct Bits {
    pub bytes: Vec<u8>,
    pub bit: usize,
}

impl Bits {
    /// Appends the low `count` bits of `value`.
    pub fn put(&mut self, value: u64, count: usize) -> &mut Self {
        for i in 0..count {
            if self.bit / 8 >= self.bytes.len() {
                self.bytes.push(0);
            }
            if value >> i & 1 != 0 {
                self.bytes[self.bit / 8] |= 1 << (self.bit % 8);
            }
            self.bit += 1;
        }
        self
    }

    pub fn byte_len(&self) -> u64 {
        self.bit.div_ceil(8) as u64
    }
}
