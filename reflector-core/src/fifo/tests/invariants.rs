//! Property test: the FIFO's invariants under any sequence of operations, and
//! no deletion lost across a relist.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::{DeltaType, Fifo, QueueMode};
use crate::object::ObjectKey;
use crate::store::KeyListerGetter;

use crate::test_support::*;
use DeltaType::Deleted;

/// The consumer's cache, as an informer's indexer: updated by the `pop` callback.
#[derive(Default)]
struct Cache(std::sync::Mutex<BTreeMap<ObjectKey, Obj>>);

impl Cache {
    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<ObjectKey, Obj>> {
        self.0.lock().unwrap()
    }

    /// Applies popped deltas as client-go's `HandleDeltas` does.
    fn apply(&self, item: &PoppedItem<ConfigMap>) {
        let mut map = self.map();
        for delta in &item.deltas {
            match delta.delta_type {
                Deleted => map.remove(&item.key),
                _ => map.insert(item.key.clone(), delta.object.object().clone()),
            };
        }
    }
}

impl KeyListerGetter<ConfigMap> for Cache {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.map().keys().cloned().collect()
    }

    fn get(&self, key: &ObjectKey) -> Option<Obj> {
        self.map().get(key).cloned()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    Update(u8),
    Delete(u8),
    Replace(Vec<u8>),
    Resync,
    Pop,
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    let key = 0u8..6;
    prop_oneof![
        key.clone().prop_map(Op::Add),
        key.clone().prop_map(Op::Update),
        key.clone().prop_map(Op::Delete),
        proptest::collection::vec(key, 0..6).prop_map(Op::Replace),
        Just(Op::Resync),
        Just(Op::Pop),
        Just(Op::Pop),
    ]
}

fn pop_now(f: &Fifo<ConfigMap>, cache: &Cache) {
    use futures::FutureExt;
    f.pop_with(|item| cache.apply(&item))
        .now_or_never()
        .expect("an item is ready")
        .expect("fifo open");
}

proptest::proptest! {
    /// Invariants under any sequence of operations, with the consumer's cache as the
    /// known objects: each key is queued once with non-empty deltas, no two
    /// consecutive deletions, `has_synced` never turns back to false; and after a
    /// final relist is drained, the cache holds exactly the relisted keys — no
    /// deletion is lost across a relist.
    #[test]
    fn delta_fifo_invariants_and_relist_converges(
        ops in proptest::collection::vec(op(), 0..40),
        last_list in proptest::collection::vec(0u8..6, 0..6),
    ) {
        let cache = Arc::new(Cache::default());
        let f = Fifo::new(QueueMode::PerKey).cache_view(cache.clone());
        let mut version = 0;
        let mut mk_v = |k: u8| {
            version += 1;
            mk(&format!("k{k}"), version)
        };
        let mut synced = false;
        for op in ops {
            match op {
                Op::Add(k) => f.add(mk_v(k)).unwrap(),
                Op::Update(k) => f.update(mk_v(k)).unwrap(),
                Op::Delete(k) => f.delete(mk_v(k)).unwrap(),
                Op::Replace(ks) => f.replace(ks.into_iter().map(&mut mk_v).collect(), "").unwrap(),
                Op::Resync => f.resync().unwrap(),
                Op::Pop => {
                    if !f.is_empty() {
                        pop_now(&f, &cache);
                    }
                }
            }
            let keys = f.list_keys();
            let unique: std::collections::HashSet<_> = keys.iter().collect();
            proptest::prop_assert_eq!(unique.len(), keys.len());
            proptest::prop_assert_eq!(f.len(), keys.len());
            for key in &keys {
                let ds = f.deltas_by_key(key).expect("queued key has deltas");
                proptest::prop_assert!(!ds.is_empty());
                proptest::prop_assert!(
                    !ds.windows(2).any(|w| w[0].delta_type == Deleted && w[1].delta_type == Deleted),
                    "consecutive deletions: {:?}", ds
                );
            }
            let now = f.has_synced();
            proptest::prop_assert!(now || !synced, "has_synced went back to false");
            synced = now;
        }
        let listed: std::collections::BTreeSet<ObjectKey> =
            last_list.iter().map(|k| ObjectKey::new(None, &format!("k{k}"))).collect();
        f.replace(last_list.into_iter().map(&mut mk_v).collect(), "").unwrap();
        while !f.is_empty() {
            pop_now(&f, &cache);
        }
        let cached: std::collections::BTreeSet<ObjectKey> = cache.map().keys().cloned().collect();
        proptest::prop_assert_eq!(cached, listed);
        proptest::prop_assert!(f.has_synced());
    }
}
