//! The lab's one source of pseudo-random numbers: experiments, trace generation, bench
//! workloads, the `/proc` views, tests and examples draw every random choice from here, so a
//! seed gives the same sequence on every machine.
//!
//! [`SplitMix`] is splitmix64 (Steele, Lea and Flood) from `rand_xoshiro`: 64 bits of state,
//! one add and two multiplies a draw. It is the generator the lab has always used (it was
//! hand-written here before), so every figure of `zonealloc lab` for a given `--seed` is
//! unchanged; `splitmix_matches_the_reference_stream` checks the stream against the published
//! reference values and the former hand-written implementation.
//!
//! [`Mmix`] is Knuth's MMIX linear congruential generator, kept for one reason: the text of
//! `zonealloc buddyinfo|zoneinfo|pagetypeinfo --seed N` was always drawn from it, and no
//! maintained crate produces its `state >> 33` output. New code uses [`SplitMix`].

use rand_xoshiro::rand_core::{Rng as _, SeedableRng as _};
use rand_xoshiro::SplitMix64;

/// splitmix64: the lab's generator.
#[derive(Clone, Debug)]
pub struct SplitMix(SplitMix64);

impl SplitMix {
    /// A generator whose state starts at `seed` (the first draw is splitmix64's output for
    /// `seed + 0x9E37_79B9_7F4A_7C15`).
    pub fn new(seed: u64) -> Self {
        Self(SplitMix64::seed_from_u64(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `(0, 1]`.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Knuth's MMIX linear congruential generator (multiplier 6364136223846793005, increment
/// 1442695040888963407), drawing the high 31 bits of the state: only for the `/proc` views'
/// workload (see the module doc).
#[derive(Clone, Debug)]
pub struct Mmix(u64);

impl Mmix {
    /// A generator whose state starts at `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 31 random bits.
    pub fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }

    /// Uniform-ish in `0..100` (the modulo bias of 2^31 % 100 is below 1e-7).
    pub fn percent(&mut self) -> u32 {
        self.next_u32() % 100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written splitmix64 the lab used before `rand_xoshiro`, as the oracle.
    fn former_splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    #[test]
    fn splitmix_matches_the_reference_stream() {
        // Vigna's splitmix64.c from seed 1234567.
        let mut r = SplitMix::new(1_234_567);
        assert_eq!(
            [r.next_u64(), r.next_u64(), r.next_u64()],
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423
            ]
        );
        // And the former implementation, for the lab's seeds and a few edge states.
        for seed in [
            0,
            1,
            0x5eed,
            0x5eed ^ 0x7A11_3E26_0003,
            0x5eed_f00d,
            u64::MAX,
        ] {
            let (mut r, mut s) = (SplitMix::new(seed), seed);
            for _ in 0..1000 {
                assert_eq!(r.next_u64(), former_splitmix(&mut s), "seed {seed:#x}");
            }
        }
    }

    #[test]
    fn unit_is_in_the_half_open_interval_and_below_is_in_range() {
        let mut r = SplitMix::new(7);
        for _ in 0..10_000 {
            let u = r.unit();
            assert!(u > 0.0 && u <= 1.0, "{u}");
            assert!(r.below(10) < 10);
        }
    }

    #[test]
    fn mmix_matches_knuths_recurrence() {
        let mut r = Mmix::new(0);
        // state 1 = 1442695040888963407; >> 33 = 167958622.
        assert_eq!(r.next_u32(), (1_442_695_040_888_963_407u64 >> 33) as u32);
        let mut r = Mmix::new(0x5eed_2024);
        assert!((0..1000).all(|_| r.percent() < 100));
    }
}
