//! Random numbers for jitter and identities, where nothing needs a cryptographic
//! generator: a process-wide, randomly keyed SipHash (the standard library's
//! `RandomState`, keyed from the OS) applied to a counter, so a controller's build
//! carries no random-number crate.

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The process's key, drawn once.
static KEY: OnceLock<RandomState> = OnceLock::new();

/// How many numbers were drawn: each draw hashes a value never hashed before.
static DRAWS: AtomicU64 = AtomicU64::new(0);

/// A uniformly distributed `u64`, different at each call and unpredictable across
/// processes.
pub(crate) fn random_u64() -> u64 {
    let draw = DRAWS.fetch_add(1, Ordering::Relaxed);
    KEY.get_or_init(RandomState::new).hash_one(draw)
}

/// A uniformly distributed `f64` in `[0, 1)` (53 random bits).
pub(crate) fn random_unit() -> f64 {
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    #[allow(clippy::cast_precision_loss)] // 53 bits: exact in an f64
    let bits = (random_u64() >> 11) as f64;
    bits * SCALE
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// No two draws of a run repeat (a 64-bit collision among 10k draws has odds
    /// of ~3e-12).
    #[test]
    fn random_u64_never_repeats_within_a_run() {
        let draws: HashSet<u64> = (0..10_000).map(|_| random_u64()).collect();
        assert_eq!(draws.len(), 10_000);
    }

    /// Every draw lies in [0, 1), and 10k of them fill each tenth of it about
    /// evenly (each tenth expects 1,000; the bounds are ~10 standard deviations).
    #[test]
    fn random_unit_is_uniform_on_zero_to_one() {
        let mut tenths = [0u32; 10];
        for _ in 0..10_000 {
            let r = random_unit();
            assert!((0.0..1.0).contains(&r), "{r} outside [0, 1)");
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let tenth = (r * 10.0) as usize;
            tenths[tenth] += 1;
        }
        for (i, n) in tenths.iter().enumerate() {
            assert!(
                (700..=1300).contains(n),
                "tenth {i} drew {n} of 10,000: {tenths:?}"
            );
        }
    }
}
