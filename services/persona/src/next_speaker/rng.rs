//! Randomness for the `random` fallback, injectable so tests and replays are deterministic
//! (no `rand` dependency is needed for picking one of a handful of characters).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A source of uniformly distributed 64-bit values.
pub trait RandomSource {
    /// The next value.
    fn next_u64(&mut self) -> u64;

    /// A value in `0..n` (Lemire's multiply-shift; `0` when `n == 0`).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// Marsaglia's xorshift64: tiny, seedable, plenty for choosing a speaker.
#[derive(Debug, Clone)]
pub struct XorShift64 {
    state: u64,
}

impl XorShift64 {
    /// A generator from any seed. The seed is scrambled with SplitMix64 first: raw xorshift
    /// started from a small seed (1, 2, …) yields tiny first outputs, i.e. always index 0.
    pub fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // Zero is xorshift's fixed point.
        let state = if z == 0 { 0x9E37_79B9_7F4A_7C15 } else { z };
        Self { state }
    }
}

impl RandomSource for XorShift64 {
    fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }
}

/// Process entropy without a dependency: std's per-thread random SipHash keys, hashed with a
/// global counter so consecutive calls differ. Costs nothing unless a random pick is made.
#[derive(Debug, Clone, Copy, Default)]
pub struct EntropySource;

static ENTROPY_COUNTER: AtomicU64 = AtomicU64::new(0);

impl RandomSource for EntropySource {
    fn next_u64(&mut self) -> u64 {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(ENTROPY_COUNTER.fetch_add(1, Ordering::Relaxed));
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorshift_is_deterministic_per_seed() {
        let a: Vec<u64> = {
            let mut r = XorShift64::new(42);
            (0..4).map(|_| r.next_u64()).collect()
        };
        let mut r = XorShift64::new(42);
        let b: Vec<u64> = (0..4).map(|_| r.next_u64()).collect();
        assert_eq!(a, b);
        assert_ne!(XorShift64::new(1).next_u64(), XorShift64::new(2).next_u64());
        assert_ne!(XorShift64::new(0).next_u64(), 0);
    }

    #[test]
    fn small_seeds_give_spread_out_first_picks() {
        let firsts: std::collections::BTreeSet<usize> = (1..=16)
            .map(|seed| XorShift64::new(seed).below(2))
            .collect();
        assert_eq!(firsts.len(), 2);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = XorShift64::new(7);
        let mut seen = [false; 3];
        for _ in 0..200 {
            let i = r.below(3);
            assert!(i < 3);
            if let Some(s) = seen.get_mut(i) {
                *s = true;
            }
        }
        assert_eq!(seen, [true; 3]);
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn entropy_source_varies() {
        let mut e = EntropySource;
        let values: Vec<u64> = (0..8).map(|_| e.next_u64()).collect();
        assert!(values.windows(2).any(|w| w.first() != w.get(1)));
    }
}
