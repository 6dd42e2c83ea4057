//! Simulation of the sharder's assignment: 1M object keys placed by rendezvous
//! hashing ([`reflector_core::sharding::winner`], exactly what the `Sharder` calls
//! per object) over 10–100 shards. Reports the time to place every key, the load
//! spread, and how many keys move when a shard joins or leaves, against the ideal
//! `1/N` — and checks that a join moves keys only to the joiner and a leave only
//! the leaver's keys.
//!
//! Run: `cargo bench -p reflector-core --bench rendezvous` (plain binary, no
//! criterion: one pass per shard count is already ~10⁸ weights).

use std::hint::black_box;
use std::time::Instant;

use reflector_core::sharding::winner;

const KEYS: usize = 1_000_000;

fn shards(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("replica-{i}")).collect()
}

/// Places every key; returns each key's shard index and the seconds it took.
fn place(keys: &[String], shards: &[String]) -> (Vec<usize>, f64) {
    let index = |s: &String| shards.iter().position(|x| x == s).unwrap_or(usize::MAX);
    let start = Instant::now();
    let winners: Vec<&String> = keys
        .iter()
        .map(|k| black_box(winner(k, shards)).expect("shards"))
        .collect();
    let secs = start.elapsed().as_secs_f64();
    (winners.into_iter().map(index).collect(), secs)
}

fn main() {
    let keys: Vec<String> = (0..KEYS)
        .map(|i| format!("namespace-{}/object-{i}", i % 100))
        .collect();
    println!(
        "{:>6} | {:>9} | {:>10} | {:>15} | {:>9} {:>9} {:>6} | {:>9} {:>9} {:>6}",
        "shards",
        "place (s)",
        "Mkeys/s",
        "load min..max",
        "join",
        "ideal",
        "ratio",
        "leave",
        "ideal",
        "ratio"
    );
    for n in [10, 25, 50, 100] {
        let base = shards(n);
        let (before, secs) = place(&keys, &base);
        let mean = KEYS as f64 / n as f64;
        let mut load = vec![0usize; n];
        for &w in &before {
            load[w] += 1;
        }
        let (min, max) = (
            *load.iter().min().unwrap() as f64 / mean,
            *load.iter().max().unwrap() as f64 / mean,
        );

        // Join: replica-n is added. Every moved key must go to it.
        let joined = shards(n + 1);
        let (after_join, _) = place(&keys, &joined);
        let mut join_moves = 0usize;
        for (b, a) in before.iter().zip(&after_join) {
            if b != a {
                assert_eq!(*a, n, "a join moved a key between old shards");
                join_moves += 1;
            }
        }

        // Leave: replica-0 leaves. Exactly its keys must move.
        let left: Vec<String> = base[1..].to_vec();
        let (after_leave, _) = place(&keys, &left);
        let mut leave_moves = 0usize;
        for (b, a) in before.iter().zip(&after_leave) {
            // Indices in `left` are shifted by one.
            let moved = *b != a + 1;
            assert_eq!(moved, *b == 0, "a leave moved a key of a staying shard");
            leave_moves += usize::from(moved);
        }

        let join = join_moves as f64 / KEYS as f64;
        let leave = leave_moves as f64 / KEYS as f64;
        let (join_ideal, leave_ideal) = (1.0 / (n + 1) as f64, 1.0 / n as f64);
        println!(
            "{n:>6} | {secs:>9.3} | {:>10.2} | {min:>6.3}..{max:>6.3} | {:>8.3}% {:>8.3}% {:>6.3} | {:>8.3}% {:>8.3}% {:>6.3}",
            KEYS as f64 / secs / 1e6,
            join * 100.0,
            join_ideal * 100.0,
            join / join_ideal,
            leave * 100.0,
            leave_ideal * 100.0,
            leave / leave_ideal,
        );
    }
}
