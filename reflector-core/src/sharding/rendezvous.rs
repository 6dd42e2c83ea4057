//! [`winner`]: rendezvous (highest-random-weight) hashing of a key over shards.
//!
//! Every (key, shard) pair gets a pseudo-random weight; the key goes to the shard
//! with the highest weight. Removing a shard moves only the keys it won (each to its
//! runner-up); adding one moves only the keys it now wins — about `1/N` of them —
//! and nothing else changes hands. The weight is a fixed function of the two strings
//! (FNV-1a 64 of each, combined and finished with MurmurHash3's 64-bit mixer), so
//! every replica, build and version computes the same assignment.

/// FNV-1a 64's offset basis and prime.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 of `bytes`, finished with [`mix`] so that every bit of the input
/// affects every bit of the hash.
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    mix(h)
}

/// MurmurHash3's 64-bit finalizer (`fmix64`): a bijection with full avalanche.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The weight of a key (by its [`hash`]) on a shard (by its [`hash`]).
pub(crate) fn weight(key_hash: u64, shard_hash: u64) -> u64 {
    // Rotating one side keeps (k, s) and (s, k) apart; the mixer spreads the sum.
    mix(key_hash ^ shard_hash.rotate_left(29).wrapping_add(FNV_PRIME))
}

/// The shard `key` is assigned to among `shards`: the one of highest weight (ties,
/// astronomically rare, go to the greater name, so the order of `shards` never
/// matters). `None` when there are no shards. The [`Sharder`](super::Sharder) uses
/// it with [`shard_key`](super::shard_key) over the ring's available members.
///
/// # Example
/// ```
/// use reflector::sharding::winner;
///
/// let three = ["shard-a", "shard-b", "shard-c"];
/// let four = ["shard-a", "shard-b", "shard-c", "shard-d"];
/// let before = winner("default/web", three).unwrap();
/// let after = winner("default/web", four).unwrap();
/// // A new shard takes a key, or the key stays where it was.
/// assert!(after == before || after == "shard-d");
/// assert_eq!(winner::<[&str; 0], &str>("default/web", []), None);
/// ```
pub fn winner<I, S>(key: &str, shards: I) -> Option<S>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let key_hash = hash(key.as_bytes());
    let mut best: Option<(u64, S)> = None;
    for shard in shards {
        let w = weight(key_hash, hash(shard.as_ref().as_bytes()));
        let better = match &best {
            None => true,
            Some((bw, bs)) => (w, shard.as_ref()) > (*bw, bs.as_ref()),
        };
        if better {
            best = Some((w, shard));
        }
    }
    best.map(|(_, s)| s)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn shards(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("shard-{i}")).collect()
    }

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("ns-{}/object-{i}", i % 7)).collect()
    }

    fn assign(keys: &[String], shards: &[String]) -> Vec<String> {
        keys.iter()
            .map(|k| winner(k, shards).unwrap().clone())
            .collect()
    }

    #[test]
    fn hash_is_fnv_1a_then_fmix64() {
        // FNV-1a 64 of "" is the offset basis; of "a" a published value.
        assert_eq!(hash(b""), mix(FNV_OFFSET));
        assert_eq!(hash(b"a"), mix(0xaf63_dc4c_8601_ec8c));
        assert_eq!(mix(0), 0, "fmix64 fixes zero");
    }

    #[test]
    fn the_order_of_shards_does_not_matter() {
        let mut s = shards(9);
        let forward = assign(&keys(500), &s);
        s.reverse();
        assert_eq!(assign(&keys(500), &s), forward);
    }

    #[test]
    fn no_shards_no_winner_and_one_shard_wins_all() {
        assert_eq!(winner::<_, &str>("a/b", []), None);
        assert!(
            keys(100)
                .iter()
                .all(|k| winner(k, ["only"]) == Some("only"))
        );
    }

    /// 30,000 keys over 10 shards: each within ±5% of 3,000.
    #[test]
    fn keys_spread_evenly() {
        let s = shards(10);
        let mut load: BTreeMap<String, usize> = BTreeMap::new();
        for w in assign(&keys(30_000), &s) {
            *load.entry(w).or_default() += 1;
        }
        assert_eq!(load.len(), 10);
        for (shard, n) in load {
            assert!((2_850..=3_150).contains(&n), "{shard}: {n}");
        }
    }

    /// A join moves keys only to the new shard, about 1/(N+1) of them; a leave moves
    /// only the leaver's keys, each to the shard that was its runner-up.
    #[test]
    fn join_and_leave_move_only_what_they_must() {
        let k = keys(20_000);
        let three = shards(3);
        let four = shards(4);
        let (before, after) = (assign(&k, &three), assign(&k, &four));
        let moved: Vec<_> = before.iter().zip(&after).filter(|(b, a)| b != a).collect();
        assert!(
            moved.iter().all(|(_, a)| *a == "shard-3"),
            "only to the joiner"
        );
        let fraction = moved.len() as f64 / k.len() as f64;
        assert!((0.23..=0.27).contains(&fraction), "moved {fraction}");

        // shard-1 leaves: exactly its keys move.
        let without: Vec<String> = four.iter().filter(|s| *s != "shard-1").cloned().collect();
        let left = assign(&k, &without);
        for ((a, l), key) in after.iter().zip(&left).zip(&k) {
            if a == "shard-1" {
                assert_ne!(l, "shard-1");
            } else {
                assert_eq!(a, l, "{key} moved though its shard stayed");
            }
        }
    }
}
