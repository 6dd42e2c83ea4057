//! The consistency store's rules, against caches whose versions the tests set.

use super::*;

struct Primary;
struct Child;
struct Unwatched;

fn store() -> (ConsistencyStore, Arc<StoreVersion>, Arc<StoreVersion>) {
    let (primary, child) = (
        Arc::<StoreVersion>::default(),
        Arc::<StoreVersion>::default(),
    );
    let caches = vec![
        Cache {
            kind: KindKey::cache::<Primary>(None),
            version: Arc::clone(&primary),
        },
        Cache {
            kind: KindKey::cache::<Child>(None),
            version: Arc::clone(&child),
        },
    ];
    (ConsistencyStore::new(caches), primary, child)
}

fn key() -> ObjectKey {
    ObjectKey::new(Some("ns"), "a")
}

fn waits_for(readiness: Readiness) -> Option<(u64, bool)> {
    match readiness {
        Readiness::Ready => None,
        Readiness::Wait { target, park, .. } => Some((target, park)),
    }
}

/// A reconcile waits until every cache written to has reached the highest version
/// written to it; the first deferral for a target parks, later ones do not; once
/// ready the record is gone.
#[tokio::test(start_paused = true)]
async fn stale_reconcile_waits_for_every_cache_written_to() {
    let (store, primary, child) = store();
    primary.set("10");
    child.set("10");
    assert!(
        waits_for(store.ensure_ready(&key())).is_none(),
        "nothing written"
    );

    store.wrote_at(&key(), "u1", &KindKey::cache::<Primary>(None), "12");
    store.wrote_at(&key(), "u1", &KindKey::cache::<Primary>(None), "11");
    store.wrote_at(&key(), "u1", &KindKey::cache::<Child>(None), "15");
    assert_eq!(waits_for(store.ensure_ready(&key())), Some((12, true)));
    assert_eq!(
        waits_for(store.ensure_ready(&key())),
        Some((12, false)),
        "parked once"
    );
    primary.set("12");
    assert_eq!(
        waits_for(store.ensure_ready(&key())),
        Some((15, true)),
        "the child's cache next"
    );
    child.set("14");
    assert_eq!(waits_for(store.ensure_ready(&key())), Some((15, false)));
    child.set("16");
    assert!(waits_for(store.ensure_ready(&key())).is_none());
    assert_eq!(
        store.pending.load(Ordering::Acquire),
        0,
        "dropped once ready"
    );
}

/// A cache with no version yet is not ready; a version that is not an integer —
/// the cache's or the write's — never blocks; a type without an informer is not
/// recorded.
#[tokio::test(start_paused = true)]
async fn stale_reconcile_never_blocked_by_a_version_that_is_not_an_integer() {
    let (store, primary, _child) = store();
    store.wrote_at(&key(), "u1", &KindKey::cache::<Primary>(None), "5");
    assert_eq!(
        waits_for(store.ensure_ready(&key())),
        Some((5, true)),
        "no version yet"
    );
    primary.set("not-a-number");
    assert!(waits_for(store.ensure_ready(&key())).is_none());

    store.wrote_at(&key(), "u1", &KindKey::cache::<Child>(None), "opaque");
    store.wrote_at(&key(), "u1", &KindKey::cache::<Unwatched>(None), "99");
    assert_eq!(store.pending.load(Ordering::Acquire), 0, "nothing recorded");
    assert!(waits_for(store.ensure_ready(&key())).is_none());
}

/// The record goes with its primary: when the cache shows it gone, or another
/// object (uid) under its key; not for the same uid.
#[tokio::test(start_paused = true)]
async fn stale_records_are_cleared_when_the_primary_is_gone() {
    let (store, _primary, _child) = store();
    store.wrote_at(&key(), "u1", &KindKey::cache::<Primary>(None), "5");
    store.clear(&key(), Some("u1"));
    assert!(
        waits_for(store.ensure_ready(&key())).is_some(),
        "same object: kept"
    );
    store.clear(&key(), Some("u2"));
    assert!(
        waits_for(store.ensure_ready(&key())).is_none(),
        "another object"
    );
    store.wrote_at(&key(), "u1", &KindKey::cache::<Primary>(None), "5");
    store.clear(&key(), None);
    assert!(waits_for(store.ensure_ready(&key())).is_none(), "gone");
}

/// A cache that never reaches the write defers the reconcile for at most
/// `MAX_STALE_WAIT` after the write.
#[tokio::test(start_paused = true)]
async fn stale_wait_is_bounded() {
    let (store, primary, _child) = store();
    primary.set("1");
    store.wrote_at(&key(), "u1", &KindKey::cache::<Primary>(None), "5");
    tokio::time::advance(MAX_STALE_WAIT - Duration::from_millis(1)).await;
    assert!(waits_for(store.ensure_ready(&key())).is_some());
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(waits_for(store.ensure_ready(&key())).is_none());
    assert_eq!(store.pending.load(Ordering::Acquire), 0);
}

/// A write is recorded against every cache holding its resource, whatever type each
/// decodes it into; a cache of another namespace is not waited for.
#[tokio::test(start_paused = true)]
async fn stale_write_waits_for_every_cache_of_its_resource() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::DynamicObject;
    use kube::core::PartialObjectMeta;

    let versions: [Arc<StoreVersion>; 3] = Default::default();
    let [full, meta, other] = &versions;
    let cache = |kind, version: &Arc<StoreVersion>| Cache {
        kind,
        version: Arc::clone(version),
    };
    let store = ConsistencyStore::new(vec![
        cache(
            KindKey::cache::<ConfigMap>(Some("/api/v1/configmaps")),
            full,
        ),
        cache(
            KindKey::cache::<PartialObjectMeta<ConfigMap>>(Some(
                "/api/v1/namespaces/ns/configmaps",
            )),
            meta,
        ),
        cache(
            KindKey::cache::<DynamicObject>(Some("/api/v1/namespaces/other/configmaps")),
            other,
        ),
    ]);
    for version in &versions {
        version.set("1");
    }
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    store.wrote_at(&key(), "u1", &KindKey::of_object(&cm, &()), "5");
    assert_eq!(waits_for(store.ensure_ready(&key())), Some((5, true)));
    full.set("5");
    assert_eq!(
        waits_for(store.ensure_ready(&key())),
        Some((5, true)),
        "the metadata-only cache of the namespace next"
    );
    meta.set("5");
    assert!(
        waits_for(store.ensure_ready(&key())).is_none(),
        "another namespace's cache is not waited for"
    );
}
