//! Property test: any sequence of watch events, missed deletes, relists and resyncs
//! pushed through a per-key queue (client-go's DeltaFIFO) and popped into a cache
//! (as the informer processes deltas) leaves the cache equal to the server's state,
//! and every key that disappeared was delivered as a Deleted delta (plain or
//! tombstone): no delete is ever lost. (The in-order queue hands a relist over
//! whole; the informer's own suites cover how it is applied.)

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use proptest::prelude::*;
use reflector_core::fifo::{DeltaType, Deltas, Fifo, QueueMode};
use reflector_core::object::{ObjectKey, deletion_handling_key};
use reflector_core::store::{Indexers, Writer};

use crate::support::cm;

#[derive(Debug, Clone)]
enum Op {
    /// The server creates or changes key `k`; the watch reports it.
    Upsert(u8),
    /// The server deletes `k`; the watch reports it.
    Delete(u8),
    /// The server deletes `k`; the watch misses it (only a relist can tell).
    DeleteMissed(u8),
    /// The server changes `k`; the watch misses it.
    UpsertMissed(u8),
    /// The reflector relists: `replace` with the server's state.
    Relist,
    /// The resync timer fires.
    Resync,
    /// The informer pops one key's deltas.
    Pop,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..8;
    prop_oneof![
        3 => k.clone().prop_map(Op::Upsert),
        2 => k.clone().prop_map(Op::Delete),
        1 => k.clone().prop_map(Op::DeleteMissed),
        1 => k.prop_map(Op::UpsertMissed),
        1 => Just(Op::Relist),
        1 => Just(Op::Resync),
        4 => Just(Op::Pop),
    ]
}

/// What the consumer observed.
#[derive(Default)]
struct Observed {
    /// Keys the indexer held at some point.
    ever_cached: BTreeSet<String>,
    /// Number of Deleted deltas delivered per key, and how many were tombstones.
    deletes: BTreeMap<String, usize>,
    tombstones: usize,
}

/// Applies one popped item to the indexer as the informer's processDeltas does.
fn apply(indexer: &mut Writer<ConfigMap>, deltas: Deltas<ConfigMap>, seen: &mut Observed) {
    let newest = &deltas
        .newest()
        .expect("a popped Deltas is never empty")
        .object;
    let key = deletion_handling_key(newest).expect("the FIFO keyed it");
    for d in deltas.into_vec() {
        match d.delta_type {
            DeltaType::Deleted => {
                if d.object.is_tombstone() {
                    seen.tombstones += 1;
                }
                indexer.delete_by_key(&key);
                *seen.deletes.entry(key.to_string()).or_default() += 1;
            }
            _ => {
                let obj = Arc::clone(d.object.object());
                if indexer.get(&key).is_some() {
                    indexer.update(obj).unwrap();
                } else {
                    indexer.add(obj).unwrap();
                }
                seen.ever_cached.insert(key.to_string());
            }
        }
    }
}

fn pop_now(fifo: &Fifo<ConfigMap>) -> Option<Deltas<ConfigMap>> {
    if fifo.is_empty() {
        return None;
    }
    futures::executor::block_on(fifo.pop(|entry, _| entry.deltas().cloned())).ok()?
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn fifo_into_indexer_matches_model_and_loses_no_delete(ops in proptest::collection::vec(op(), 0..80)) {
        let mut indexer = Writer::<ConfigMap>::new(Indexers::new());
        let fifo = Fifo::new(QueueMode::PerKey)
            .cache(indexer.reader())
            .emit_replaced(true);
        // The server: key → resource version.
        let mut server: BTreeMap<u8, u64> = BTreeMap::new();
        let mut rv = 0u64;
        let mut seen = Observed::default();

        for op in ops {
            match op {
                Op::Upsert(k) | Op::UpsertMissed(k) => {
                    rv += 1;
                    let existed = server.insert(k, rv).is_some();
                    if matches!(op, Op::Upsert(_)) {
                        if existed { fifo.update(cm(k, rv)).unwrap() } else { fifo.add(cm(k, rv)).unwrap() }
                    }
                }
                Op::Delete(k) | Op::DeleteMissed(k) => {
                    if server.remove(&k).is_some() {
                        rv += 1;
                        if matches!(op, Op::Delete(_)) {
                            fifo.delete(cm(k, rv)).unwrap();
                        }
                    }
                }
                Op::Relist => {
                    let items = server.iter().map(|(k, v)| cm(*k, *v)).collect();
                    fifo.replace(items, &rv.to_string()).unwrap();
                }
                Op::Resync => fifo.resync().unwrap(),
                Op::Pop => {
                    if let Some(item) = pop_now(&fifo) {
                        apply(&mut indexer, item, &mut seen);
                    }
                }
            }
        }
        // The reflector's next relist, then the informer drains the queue.
        let items = server.iter().map(|(k, v)| cm(*k, *v)).collect();
        fifo.replace(items, &rv.to_string()).unwrap();
        while let Some(item) = pop_now(&fifo) {
            apply(&mut indexer, item, &mut seen);
        }

        let want: BTreeMap<String, String> = server
            .iter()
            .map(|(k, v)| (ObjectKey::new(Some("ns"), &format!("cm-{k}")).to_string(), v.to_string()))
            .collect();
        let got: BTreeMap<String, String> = indexer
            .list()
            .iter()
            .map(|c| (
                ObjectKey::new(c.metadata.namespace.as_deref(), c.metadata.name.as_deref().unwrap()).to_string(),
                c.metadata.resource_version.clone().unwrap(),
            ))
            .collect();
        prop_assert_eq!(&got, &want, "indexer equals the server after a relist");
        for key in &seen.ever_cached {
            if !want.contains_key(key) {
                prop_assert!(
                    seen.deletes.get(key).copied().unwrap_or(0) > 0,
                    "{} left the cache without a Deleted delta", key
                );
            }
        }
    }
}

/// A concrete case: a delete missed by the watch is delivered as a tombstone by the
/// next relist.
#[test]
fn missed_delete_arrives_as_tombstone() {
    let mut indexer = Writer::<ConfigMap>::new(Indexers::new());
    let fifo = Fifo::new(QueueMode::PerKey).cache(indexer.reader());
    let mut seen = Observed::default();
    fifo.add(cm(1, 1)).unwrap();
    apply(&mut indexer, pop_now(&fifo).unwrap(), &mut seen);
    // The server deletes cm-1; the watch misses it; the relist has nothing.
    fifo.replace(Vec::new(), "3").unwrap();
    apply(&mut indexer, pop_now(&fifo).unwrap(), &mut seen);
    assert!(indexer.is_empty());
    assert_eq!(seen.tombstones, 1);
    assert_eq!(seen.deletes.get("ns/cm-1"), Some(&1));
}
