//! Ports of client-go's `index_test.go` and `store_test.go` for the `Indexer`, plus
//! its own contracts (unknown index, `add_indexers`, atomic `replace`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use reflector_core::object::{KeyError, ObjectKey};
use reflector_core::store::{Indexers, NAMESPACE_INDEX, StoreError, Writer, namespace_index_func};

/// A pod `name` (cluster-scoped unless `ns`) with the given labels and annotations.
fn pod(
    ns: Option<&str>,
    name: &str,
    labels: &[(&str, &str)],
    annotations: &[(&str, &str)],
) -> Arc<Pod> {
    let to_map = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let mut p = Pod::default();
    p.metadata.namespace = ns.map(Into::into);
    p.metadata.name = Some(name.into());
    p.metadata.labels = Some(to_map(labels));
    p.metadata.annotations = Some(to_map(annotations));
    Arc::new(p)
}

/// A config map `id` whose `val` data entry is `val` (client-go's testStoreObject).
fn obj(id: &str, val: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(id.into());
    cm.data = Some([("val".to_owned(), val.to_owned())].into());
    Arc::new(cm)
}

fn val(cm: &ConfigMap) -> String {
    cm.data
        .as_ref()
        .and_then(|d| d.get("val"))
        .cloned()
        .unwrap_or_default()
}

fn name_of<K: kube::Resource>(o: &K) -> String {
    o.meta().name.clone().unwrap_or_default()
}

fn names<K: kube::Resource>(objs: &[Arc<K>]) -> BTreeSet<String> {
    objs.iter().map(|o| name_of(o.as_ref())).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// client-go's `testIndexFunc`: the `foo` label.
fn test_index_func(p: &Pod) -> Vec<String> {
    vec![
        p.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("foo"))
            .cloned()
            .unwrap_or_default(),
    ]
}

/// client-go's `testUsersIndexFunc`: the `users` annotation split on commas.
fn test_users_index_func(p: &Pod) -> Vec<String> {
    p.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("users"))
        .map(String::as_str)
        .unwrap_or_default()
        .split(',')
        .map(str::to_owned)
        .collect()
}

#[test]
fn get_index_func_values() {
    let mut index = Writer::new(Indexers::new().with("testmodes", test_index_func));
    index.add(pod(None, "one", &[("foo", "bar")], &[])).unwrap();
    index.add(pod(None, "two", &[("foo", "bar")], &[])).unwrap();
    index.add(pod(None, "tre", &[("foo", "biz")], &[])).unwrap();

    let values: BTreeSet<String> = index.index_values("testmodes").into_iter().collect();
    assert_eq!(index.index_values("testmodes").len(), 2);
    assert_eq!(values, set(&["bar", "biz"]));
    // Unknown index: empty, as client-go.
    assert!(index.index_values("nope").is_empty());
}

#[test]
fn multi_index_keys() {
    let mut index = Writer::new(Indexers::new().with("byUser", test_users_index_func));
    let pod1 = pod(None, "one", &[], &[("users", "ernie,bert")]);
    let pod2 = pod(None, "two", &[], &[("users", "bert,oscar")]);
    let pod3 = pod(None, "tre", &[], &[("users", "ernie,elmo")]);
    index.add(pod1).unwrap();
    index.add(Arc::clone(&pod2)).unwrap();
    index.add(Arc::clone(&pod3)).unwrap();

    let expected: [(&str, &[&str]); 5] = [
        ("ernie", &["one", "tre"]),
        ("bert", &["one", "two"]),
        ("elmo", &["tre"]),
        ("oscar", &["two"]),
        ("elmo1", &[]),
    ];
    for (user, want) in expected {
        let found = index.by_index("byUser", user).unwrap();
        assert_eq!(found.len(), want.len(), "count under {user}");
        assert_eq!(names(&found), set(want), "objects under {user}");
    }

    index.delete(pod3).unwrap();
    let ernie = index.by_index("byUser", "ernie").unwrap();
    assert_eq!(names(&ernie), set(&["one"]));
    assert_eq!(ernie.len(), 1);
    assert!(index.by_index("byUser", "elmo").unwrap().is_empty());

    let mut copy_of_pod2 = (*pod2).clone();
    copy_of_pod2
        .metadata
        .annotations
        .get_or_insert_default()
        .insert("users".into(), "oscar".into());
    index.update(Arc::new(copy_of_pod2)).unwrap();
    let bert = index.by_index("byUser", "bert").unwrap();
    assert_eq!(bert.len(), 1);
    assert_eq!(names(&bert), set(&["one"]));
}

/// client-go's `doTestIndex` (`TestIndex`): `index` finds objects sharing a value.
#[test]
fn index() {
    let mut indexer = Writer::new(Indexers::new().with("by_val", |c: &ConfigMap| vec![val(c)]));
    for (id, v) in [("a", "b"), ("c", "b"), ("e", "f"), ("g", "h")] {
        indexer.add(obj(id, v)).unwrap();
    }
    let expected: [(&str, &[&str]); 3] = [("b", &["a", "c"]), ("f", &["e"]), ("h", &["g"])];
    for (v, want) in expected {
        let found = indexer.index("by_val", &obj("", v)).unwrap();
        assert_eq!(names(&found), set(want), "objects sharing {v}");
    }
}

#[test]
fn index_with_multiple_values_returns_each_object_once() {
    let mut index = Writer::new(Indexers::new().with("byUser", test_users_index_func));
    index
        .add(pod(None, "one", &[], &[("users", "ernie,bert")]))
        .unwrap();
    index
        .add(pod(None, "two", &[], &[("users", "bert,oscar")]))
        .unwrap();
    index
        .add(pod(None, "tre", &[], &[("users", "elmo")]))
        .unwrap();
    let probe = pod(None, "probe", &[], &[("users", "ernie,bert,oscar")]);
    let found = index.index("byUser", &probe).unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(names(&found), set(&["one", "two"]));
}

/// client-go's `doTestStore` (`TestCache`), run on the Indexer.
#[test]
fn cache() {
    let mut store: Writer<ConfigMap> = Writer::new(Indexers::new());

    store.add(obj("foo", "bar")).unwrap();
    let got = store
        .get_object(&obj("foo", ""))
        .unwrap()
        .expect("inserted item");
    assert_eq!(val(&got), "bar");

    store.update(obj("foo", "baz")).unwrap();
    let got = store
        .get_object(&obj("foo", ""))
        .unwrap()
        .expect("updated item");
    assert_eq!(val(&got), "baz");

    store.delete(obj("foo", "")).unwrap();
    assert!(store.get_object(&obj("foo", "")).unwrap().is_none());
    // Deleting an absent key is not an error.
    store.delete(obj("foo", "")).unwrap();

    store.add(obj("a", "b")).unwrap();
    store.add(obj("c", "d")).unwrap();
    store.add(obj("e", "e")).unwrap();
    let vals: BTreeSet<String> = store.list().iter().map(|o| val(o)).collect();
    assert_eq!(vals, set(&["b", "d", "e"]));
    assert_eq!(store.len(), 3);
    let keys: BTreeSet<String> = store
        .list_keys()
        .iter()
        .map(|k| k.as_str().to_owned())
        .collect();
    assert_eq!(keys, set(&["a", "c", "e"]));
    assert_eq!(val(&store.get(&ObjectKey::new(None, "c")).unwrap()), "d");

    store
        .replace(vec![obj("foo", "foo"), obj("bar", "bar")], "0")
        .unwrap();
    let vals: BTreeSet<String> = store.list().iter().map(|o| val(o)).collect();
    assert_eq!(vals, set(&["foo", "bar"]));
    assert_eq!(store.len(), 2);
    assert!(store.get(&ObjectKey::new(None, "a")).is_none());
}

#[test]
fn reads_share_the_stored_arc() {
    let mut store = Writer::new(Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<Pod>));
    let p = pod(Some("ns"), "a", &[], &[]);
    store.add(Arc::clone(&p)).unwrap();
    assert!(Arc::ptr_eq(&store.get_object(&p).unwrap().unwrap(), &p));
    assert!(Arc::ptr_eq(
        &store.by_index(NAMESPACE_INDEX, "ns").unwrap()[0],
        &p
    ));
    assert!(Arc::ptr_eq(&store.list()[0], &p));
}

#[test]
fn namespace_index_includes_cluster_scoped_under_empty_value() {
    let mut store = Writer::new(Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<Pod>));
    store.add(pod(Some("a"), "x", &[], &[])).unwrap();
    store.add(pod(Some("a"), "y", &[], &[])).unwrap();
    store.add(pod(Some("b"), "x", &[], &[])).unwrap();
    store.add(pod(None, "z", &[], &[])).unwrap();
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "a").unwrap(),
        [
            ObjectKey::new(Some("a"), "x"),
            ObjectKey::new(Some("a"), "y")
        ]
    );
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "").unwrap(),
        [ObjectKey::new(None, "z")]
    );
    let mut values = store.index_values(NAMESPACE_INDEX);
    values.sort();
    assert_eq!(values, ["", "a", "b"]);
}

#[test]
fn unknown_index_is_a_typed_error() {
    let mut store = Writer::new(Indexers::new().with("testmodes", test_index_func));
    let p = pod(None, "one", &[("foo", "bar")], &[]);
    store.add(Arc::clone(&p)).unwrap();
    let unknown = || StoreError::UnknownIndex("nope".to_owned());
    assert_eq!(store.by_index("nope", "bar").unwrap_err(), unknown());
    assert_eq!(store.index_keys("nope", "bar").unwrap_err(), unknown());
    assert_eq!(store.index("nope", &p).unwrap_err(), unknown());
    // A known index with an absent value is not an error.
    assert!(store.by_index("testmodes", "absent").unwrap().is_empty());
    assert!(store.index_keys("testmodes", "absent").unwrap().is_empty());
}

#[test]
fn key_errors_are_typed_and_change_nothing() {
    let mut store = Writer::new(Indexers::<Pod>::new());
    let nameless = Arc::new(Pod::default());
    let missing = StoreError::Key(KeyError::MissingName);
    assert_eq!(store.add(Arc::clone(&nameless)).unwrap_err(), missing);
    assert_eq!(store.update(Arc::clone(&nameless)).unwrap_err(), missing);
    assert_eq!(store.delete(Arc::clone(&nameless)).unwrap_err(), missing);
    assert_eq!(store.get_object(&nameless).unwrap_err(), missing);

    store.add(pod(None, "keep", &[], &[])).unwrap();
    let err = store
        .replace(vec![pod(None, "new", &[], &[]), nameless], "1")
        .unwrap_err();
    assert_eq!(err, missing);
    assert_eq!(store.list_keys(), [ObjectKey::new(None, "keep")]);
}

#[test]
fn add_indexers_after_items_exist() {
    let mut store = Writer::new(Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<Pod>));
    store
        .add(pod(Some("ns"), "one", &[("foo", "bar")], &[]))
        .unwrap();
    store
        .add(pod(Some("ns"), "two", &[("foo", "biz")], &[]))
        .unwrap();
    assert!(store.by_index("testmodes", "bar").is_err());

    store
        .add_indexers(Indexers::new().with("testmodes", test_index_func))
        .unwrap();
    assert_eq!(
        store.index_keys("testmodes", "bar").unwrap(),
        [ObjectKey::new(Some("ns"), "one")]
    );
    assert_eq!(
        store.index_keys("testmodes", "biz").unwrap(),
        [ObjectKey::new(Some("ns"), "two")]
    );
    // Later writes maintain the new index too.
    store
        .add(pod(Some("ns"), "tre", &[("foo", "bar")], &[]))
        .unwrap();
    store.delete_by_key(&ObjectKey::new(Some("ns"), "one"));
    assert_eq!(
        store.index_keys("testmodes", "bar").unwrap(),
        [ObjectKey::new(Some("ns"), "tre")]
    );

    // A conflicting name fails and changes nothing, not even the fresh name
    // registered alongside it.
    let err = store
        .add_indexers(
            Indexers::new()
                .with("testmodes", |_: &Pod| vec!["other".to_owned()])
                .with("fresh", test_index_func),
        )
        .unwrap_err();
    assert_eq!(err, StoreError::IndexConflict("testmodes".to_owned()));
    let mut names: Vec<String> = store.indexers().names().map(str::to_owned).collect();
    names.sort();
    assert_eq!(names, [NAMESPACE_INDEX, "testmodes"]);
    assert!(store.by_index("fresh", "bar").is_err());
    assert!(store.index_values("testmodes").contains(&"bar".to_owned()));
    assert!(
        !store
            .index_values("testmodes")
            .contains(&"other".to_owned())
    );
}

#[test]
fn delete_by_key_removes_object_and_index_entries() {
    let mut store = Writer::new(Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<Pod>));
    store.add(pod(Some("ns"), "a", &[], &[])).unwrap();
    let removed = store.delete_by_key(&ObjectKey::new(Some("ns"), "a"));
    assert_eq!(removed.map(|p| name_of(p.as_ref())), Some("a".to_owned()));
    assert!(store.is_empty());
    assert!(store.index_values(NAMESPACE_INDEX).is_empty());
    assert!(
        store
            .delete_by_key(&ObjectKey::new(Some("ns"), "a"))
            .is_none()
    );
}

#[test]
fn replace_rebuilds_indices() {
    let mut store = Writer::new(
        Indexers::new()
            .with(NAMESPACE_INDEX, namespace_index_func::<Pod>)
            .with("testmodes", test_index_func),
    );
    store
        .add(pod(Some("old"), "a", &[("foo", "bar")], &[]))
        .unwrap();
    store
        .replace(
            vec![
                pod(Some("new"), "b", &[("foo", "biz")], &[]),
                pod(Some("new"), "c", &[("foo", "biz")], &[]),
            ],
            "7",
        )
        .unwrap();
    assert_eq!(store.index_values(NAMESPACE_INDEX), ["new"]);
    assert_eq!(store.index_values("testmodes"), ["biz"]);
    assert!(store.by_index(NAMESPACE_INDEX, "old").unwrap().is_empty());
    assert_eq!(
        store.index_keys("testmodes", "biz").unwrap(),
        [
            ObjectKey::new(Some("new"), "b"),
            ObjectKey::new(Some("new"), "c")
        ]
    );
}

/// Readers racing a `replace` see the old content or the new, never a mix: one
/// `index` query (one lock acquisition) over both generations' values always finds
/// exactly one whole generation.
#[test]
fn replace_is_atomic_for_readers() {
    let mut store = Writer::new(Indexers::new().with("byUser", test_users_index_func));
    let generation = |tag: &str, n: usize| -> Vec<Arc<Pod>> {
        (0..n)
            .map(|i| pod(None, &format!("{tag}-{i}"), &[], &[("users", tag)]))
            .collect()
    };
    store.replace(generation("a", 500), "1").unwrap();
    let reader = store.reader();
    let mut writing = store;
    let store = reader;
    let writer = {
        std::thread::spawn(move || {
            for round in 0..50 {
                let (tag, n) = if round % 2 == 0 {
                    ("b", 300)
                } else {
                    ("a", 500)
                };
                writing.replace(generation(tag, n), "1").unwrap();
            }
        })
    };
    let probe = pod(None, "probe", &[], &[("users", "a,b")]);
    let mut reads = 0;
    while !writer.is_finished() || reads == 0 {
        let found = store.index("byUser", &probe).unwrap();
        let tags: BTreeSet<String> = names(&found)
            .iter()
            .map(|n| n.split('-').next().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(tags.len(), 1, "one generation at a time: {tags:?}");
        let whole = if tags.contains("a") { 500 } else { 300 };
        assert_eq!(found.len(), whole, "a whole generation");
        reads += 1;
    }
    writer.join().unwrap();
}
