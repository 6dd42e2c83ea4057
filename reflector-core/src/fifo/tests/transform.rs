//! The transform (client-go's delta_fifo_test.go): each object entering the
//! FIFO is transformed once; resyncs and reused known objects are not.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::{DeltaType, Fifo, QueueMode, TransformFunc};
use crate::object::MaybeTombstone;
use crate::object::ObjectKey;
use crate::store::StoreSink;

use crate::test_support::*;
use DeltaType::{Deleted, Replaced, Sync};

#[tokio::test(start_paused = true)]
async fn delta_fifo_transformer() {
    let calls = Arc::new(AtomicUsize::new(0));
    let xfrm: TransformFunc<ConfigMap> = {
        let calls = Arc::clone(&calls);
        Arc::new(move |obj: Obj| {
            calls.fetch_add(1, Ordering::SeqCst);
            let mut obj = Arc::unwrap_or_clone(obj);
            let n: usize = data(&obj, "xfrm").parse().unwrap_or(0);
            obj.data
                .get_or_insert_default()
                .insert("xfrm".into(), (n + 1).to_string());
            Arc::new(obj)
        })
    };
    let f = Fifo::new(QueueMode::PerKey).shared_transform(xfrm);
    transformer_writes(&f);

    assert_eq!(
        f.list_keys(),
        vec![ObjectKey::new(None, "foo"), ObjectKey::new(None, "bar")]
    );
    // One call per object entering; none for the three tombstones.
    assert_eq!(calls.load(Ordering::SeqCst), 5);

    let foo = pop(&f).await.deltas;
    let newest = foo.newest().unwrap();
    assert_eq!(newest.delta_type, Deleted);
    let MaybeTombstone::Object(obj) = &newest.object else {
        panic!("expected regular deletion of foo, got {newest:?}");
    };
    assert_eq!(obj.metadata.name.as_deref(), Some("foo"));
    assert_eq!(data(obj, "val"), "15");
    assert_eq!(
        data(obj, "xfrm"),
        "1",
        "foo transformed wrong number of times"
    );

    let bar = pop(&f).await.deltas;
    let newest = bar.newest().unwrap();
    let MaybeTombstone::DeletedFinalStateUnknown { key, obj } = &newest.object else {
        panic!("expected tombstone deletion of bar, got {newest:?}");
    };
    assert_eq!(key.as_str(), "bar");
    assert_eq!(data(obj, "val"), "16");
    assert_eq!(
        data(obj, "xfrm"),
        "1",
        "tombstoned bar transformed wrong number of times"
    );
    // Every object in every delta went through the transform exactly once.
    for delta in foo.iter().chain(bar.iter()) {
        assert_eq!(data(delta.object.object(), "xfrm"), "1", "{delta:?}");
    }
}

/// An identity transform and how many times it ran.
fn counting_identity() -> (Arc<AtomicUsize>, TransformFunc<ConfigMap>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let xfrm: TransformFunc<ConfigMap> = Arc::new(move |obj: Obj| {
        counted.fetch_add(1, Ordering::SeqCst);
        obj
    });
    (calls, xfrm)
}

/// client-go skips the transform for resync's `Sync` deltas: the known objects were
/// transformed when they entered.
#[tokio::test(start_paused = true)]
async fn delta_fifo_transformer_skips_resync() {
    let (calls, xfrm) = counting_identity();
    let known = mk("foo", 5);
    let f = Fifo::new(QueueMode::PerKey)
        .cache_view(Arc::new(Literal(vec![known.clone()])))
        .shared_transform(xfrm);
    f.resync().unwrap();
    let item = pop(&f).await;
    assert_eq!(item.deltas, deltas(vec![d(Sync, &known)]));
    assert!(Arc::ptr_eq(item.deltas[0].object.object(), &known));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

/// A relist's object is prepared once (`prepare_listed`): transformed, then compared
/// with the known object *after* the transform; only an equal object at the same
/// resourceVersion is swapped for the known copy. One whose content changed at the
/// same resourceVersion (a CRD's new default, applied by the server as it reads) is
/// kept as listed. `replace_listed` transforms nothing again; the public `replace`
/// transforms every item.
#[tokio::test(start_paused = true)]
async fn delta_fifo_prepares_listed_objects_once_and_keeps_only_equal_known_ones() {
    let calls = Arc::new(AtomicUsize::new(0));
    // Drops the `noise` key, as a transform stripping managedFields would.
    let xfrm: TransformFunc<ConfigMap> = {
        let calls = Arc::clone(&calls);
        Arc::new(move |obj: Obj| {
            calls.fetch_add(1, Ordering::SeqCst);
            let mut obj = Arc::unwrap_or_clone(obj);
            obj.data.get_or_insert_default().remove("noise");
            Arc::new(obj)
        })
    };
    let with = |name: &str, rv: &str, extra: &[(&str, &str)]| {
        let mut cm = (*mk(name, "x")).clone();
        cm.metadata.resource_version = Some(rv.to_owned());
        let data = cm.data.get_or_insert_default();
        for (k, v) in extra {
            data.insert((*k).to_owned(), (*v).to_owned());
        }
        Arc::new(cm)
    };
    let (foo, bar) = (with("foo", "5", &[]), with("bar", "6", &[]));
    let f = Fifo::new(QueueMode::PerKey)
        .cache_view(Arc::new(Literal(vec![foo.clone(), bar.clone()])))
        .emit_replaced(true)
        .shared_transform(xfrm);

    let reused = f.prepare_listed(with("foo", "5", &[("noise", "1")]), true);
    assert!(Arc::ptr_eq(&reused, &foo), "equal once transformed");
    let defaulted = f.prepare_listed(with("bar", "6", &[("priority", "5")]), true);
    assert!(!Arc::ptr_eq(&defaulted, &bar), "same RV, new content");
    assert_eq!(data(&defaulted, "priority"), "5");
    let moved = f.prepare_listed(with("bar", "9", &[]), true);
    assert!(!Arc::ptr_eq(&moved, &bar), "RV moved");
    let not_looked_up = f.prepare_listed(with("foo", "5", &[]), false);
    assert!(!Arc::ptr_eq(&not_looked_up, &foo), "no look-up asked");
    assert_eq!(calls.load(Ordering::SeqCst), 4, "each listed object once");

    f.replace_listed(vec![reused, defaulted.clone()], "9")
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        4,
        "a prepared list is not transformed again"
    );
    let item = pop(&f).await;
    assert!(Arc::ptr_eq(item.deltas[0].object.object(), &foo));
    assert_eq!(item.deltas[0].delta_type, Replaced);
    let item = pop(&f).await;
    assert!(Arc::ptr_eq(item.deltas[0].object.object(), &defaulted));

    f.replace(vec![with("baz", "10", &[("noise", "1")])], "10")
        .unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        5,
        "replace transforms its items"
    );
}
