//! Helpers shared by the history crate's integration tests.

/// A small deterministic generator (xorshift64*), so failures replay.
pub struct Rng(pub u64);

#[allow(dead_code)] // each test binary uses some of these
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index below `n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with the given percent chance.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}
