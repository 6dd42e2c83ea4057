//! Unit tests of the store: reads, writes, indices and what a panicking index
//! function leaves behind.

use super::index::difference;
use super::*;
use k8s_openapi::api::core::v1::ConfigMap;

/// (Was the rustdoc example while `ThreadSafeStore` was public.)
#[test]
fn namespace_index_answers_by_namespace() {
    use crate::store::{NAMESPACE_INDEX, namespace_index_func};

    let store = ThreadSafeStore::new(
        Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<ConfigMap>),
    );
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("prod".into());
    cm.metadata.name = Some("web".into());
    store.add(ObjectKey::new(Some("prod"), "web"), Arc::new(cm));
    assert_eq!(store.by_index(NAMESPACE_INDEX, "prod").unwrap().len(), 1);
    assert!(store.by_index("nope", "prod").is_err());
}

/// A config map named `name` whose `v` annotation is `value`.
fn cm(name: &str, value: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.annotations = Some([("v".to_owned(), value.to_owned())].into());
    Arc::new(cm)
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(None, name)
}

fn annotation(cm: &ConfigMap) -> &str {
    cm.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("v"))
        .map_or("", String::as_str)
}

/// The keys under `value` in index `name`, sorted; `None` if the set is absent.
/// Reads the index first (building a namespace index not read yet).
fn set_of(store: &ThreadSafeStore<ConfigMap>, name: &str, value: &str) -> Option<Vec<String>> {
    let _ = store.index_values(name);
    let state = store.read();
    state.indices[name].get(value).map(|set| {
        let mut keys: Vec<String> = set.iter().map(|k| k.as_str().to_owned()).collect();
        keys.sort();
        keys
    })
}

#[test]
fn delete_removes_empty_sets_from_index() {
    let store = ThreadSafeStore::new(Indexers::new().with("testIndexer", |c: &ConfigMap| {
        vec![annotation(c).to_owned()]
    }));
    store.add(key("testKey"), cm("testKey", "testKey"));
    assert_eq!(
        set_of(&store, "testIndexer", "testKey"),
        Some(vec!["testKey".to_owned()])
    );
    store.delete(&key("testKey"));
    assert_eq!(set_of(&store, "testIndexer", "testKey"), None);
    assert!(store.index_values("testIndexer").is_empty());
}

#[test]
fn add_keeps_non_empty_set() {
    let store = ThreadSafeStore::new(
        Indexers::new().with("testIndexer", |_: &ConfigMap| vec!["testIndex".to_owned()]),
    );
    store.add(key("retain"), cm("retain", "retain"));
    store.add(key("delete"), cm("delete", "delete"));
    assert_eq!(
        set_of(&store, "testIndexer", "testIndex"),
        Some(vec!["delete".to_owned(), "retain".to_owned()])
    );
    store.delete(&key("delete"));
    assert_eq!(
        set_of(&store, "testIndexer", "testIndex"),
        Some(vec!["retain".to_owned()])
    );
}

#[test]
fn indexing_functions_with_multiple_values() {
    let store = ThreadSafeStore::new(Indexers::new().with("testIndexer", |c: &ConfigMap| {
        annotation(c).split(',').map(str::to_owned).collect()
    }));
    let check = |expected: &[(&str, &[&str])]| {
        for (value, keys) in expected {
            let want: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
            let got = set_of(&store, "testIndexer", value).unwrap_or_default();
            assert_eq!(got, want, "keys under {value:?}");
            let via_api: Vec<String> = store
                .index_keys("testIndexer", value)
                .unwrap()
                .iter()
                .map(|k| k.as_str().to_owned())
                .collect();
            assert_eq!(via_api, want, "index_keys under {value:?}");
        }
    };
    store.add(key("key1"), cm("key1", "foo"));
    store.add(key("key2"), cm("key2", "bar"));
    check(&[("foo", &["key1"]), ("bar", &["key2"])]);

    store.update(key("key2"), cm("key2", "foo,bar"));
    check(&[("foo", &["key1", "key2"]), ("bar", &["key2"])]);

    store.update(key("key1"), cm("key1", "foo,bar"));
    check(&[("foo", &["key1", "key2"]), ("bar", &["key1", "key2"])]);

    store.add(key("key3"), cm("key3", "foo,bar,baz"));
    check(&[
        ("foo", &["key1", "key2", "key3"]),
        ("bar", &["key1", "key2", "key3"]),
        ("baz", &["key3"]),
    ]);

    store.update(key("key1"), cm("key1", "foo"));
    check(&[
        ("foo", &["key1", "key2", "key3"]),
        ("bar", &["key2", "key3"]),
        ("baz", &["key3"]),
    ]);

    store.update(key("key2"), cm("key2", "bar"));
    check(&[
        ("foo", &["key1", "key3"]),
        ("bar", &["key2", "key3"]),
        ("baz", &["key3"]),
    ]);

    store.delete(&key("key1"));
    check(&[
        ("foo", &["key3"]),
        ("bar", &["key2", "key3"]),
        ("baz", &["key3"]),
    ]);

    store.delete(&key("key3"));
    check(&[("foo", &[]), ("bar", &["key2"]), ("baz", &[])]);
    // Emptied sets are gone, not left empty.
    assert_eq!(set_of(&store, "testIndexer", "foo"), None);
    assert_eq!(set_of(&store, "testIndexer", "baz"), None);
    assert_eq!(store.index_values("testIndexer"), ["bar"]);
}

#[test]
fn difference_is_the_same_linear_and_hashed() {
    let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let some: Vec<String> = (30..50).map(|i| i.to_string()).collect();
    let d: Vec<&String> = difference(&many, &some);
    assert_eq!(d.len(), 30);
    assert!(d.iter().all(|v| v.parse::<u32>().unwrap() < 30));
    let d: Vec<&String> = difference(&some, &many[..10]);
    assert_eq!(d.len(), 20);
}

/// A config map in namespace `ns` (none when empty) whose `v` annotation is `value`.
fn cm_in(ns: &str, name: &str, value: &str) -> Arc<ConfigMap> {
    let mut cm = Arc::unwrap_or_clone(cm(name, value));
    cm.metadata.namespace = (!ns.is_empty()).then(|| ns.to_owned());
    Arc::new(cm)
}

/// The built-in namespace index follows adds, moves between namespaces and
/// deletes exactly as `namespace_index_func` registered by hand does.
#[test]
fn builtin_namespace_index_matches_the_index_function() {
    use super::super::{NAMESPACE_INDEX, namespace_index_func};
    let builtin = ThreadSafeStore::new(Indexers::new().with_namespace_index());
    let by_hand = ThreadSafeStore::new(
        Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<ConfigMap>),
    );
    let steps: [(&str, Option<&str>); 6] = [
        ("a", Some("prod")),
        ("b", Some("prod")),
        ("c", Some("")),
        ("a", Some("dev")),
        ("b", None),
        ("c", Some("dev")),
    ];
    for (name, ns) in steps {
        for store in [&builtin, &by_hand] {
            match ns {
                Some(ns) => {
                    store.upsert(key(name), cm_in(ns, name, "v"));
                }
                None => {
                    store.delete(&key(name));
                }
            }
        }
        for value in ["prod", "dev", ""] {
            assert_eq!(
                set_of(&builtin, NAMESPACE_INDEX, value),
                set_of(&by_hand, NAMESPACE_INDEX, value),
                "after {name} -> {ns:?}, namespace {value:?}"
            );
        }
    }
    assert_eq!(
        set_of(&builtin, NAMESPACE_INDEX, "dev"),
        Some(vec!["a".to_owned(), "c".to_owned()])
    );
    assert_eq!(set_of(&builtin, NAMESPACE_INDEX, "prod"), None);
    assert_eq!(builtin.index_values(NAMESPACE_INDEX), ["dev"]);
    // `replace` and `add_indexers` build it the same way too.
    builtin.replace([
        (key("x"), cm_in("", "x", "v")),
        (key("y"), cm_in("qa", "y", "v")),
    ]);
    assert_eq!(
        set_of(&builtin, NAMESPACE_INDEX, ""),
        Some(vec!["x".to_owned()])
    );
    let late = ThreadSafeStore::new(Indexers::new());
    late.add(key("z"), cm_in("qa", "z", "v"));
    late.add_indexers(Indexers::new().with_namespace_index())
        .unwrap();
    assert_eq!(
        set_of(&late, NAMESPACE_INDEX, "qa"),
        Some(vec!["z".to_owned()])
    );
    late.update(key("z"), cm_in("ops", "z", "v"));
    assert_eq!(set_of(&late, NAMESPACE_INDEX, "qa"), None);
    assert_eq!(
        set_of(&late, NAMESPACE_INDEX, "ops"),
        Some(vec!["z".to_owned()])
    );
}

/// Whether the store keeps index `name` (a namespace index is kept once read).
fn kept(store: &ThreadSafeStore<ConfigMap>, name: &str) -> bool {
    store.read().indices.contains_key(name)
}

/// The built-in namespace index is not kept until it is first read; that read
/// builds it from every object, and from then on it follows writes, replaces
/// included. Every read form builds it; a user index is kept from the start.
#[test]
fn namespace_index_is_built_by_its_first_read() {
    use super::super::NAMESPACE_INDEX;
    for keys_carry_namespace in [false, true] {
        let store = ThreadSafeStore::with_key_namespaces(
            Indexers::new()
                .with_namespace_index()
                .with("v", |c: &ConfigMap| vec![annotation(c).to_owned()]),
            keys_carry_namespace,
        );
        let put = |ns: &str, name: &str| {
            store.upsert(ObjectKey::new(Some(ns), name), cm_in(ns, name, "x"));
        };
        put("prod", "a");
        put("prod", "b");
        put("dev", "c");
        store.delete(&ObjectKey::new(Some("prod"), "b"));
        store.replace([
            (ObjectKey::new(Some("prod"), "a"), cm_in("prod", "a", "x")),
            (ObjectKey::new(Some("qa"), "d"), cm_in("qa", "d", "x")),
        ]);
        put("dev", "c");
        assert!(!kept(&store, NAMESPACE_INDEX), "kept before any read");
        assert!(kept(&store, "v"));
        let names = |objs: Vec<Arc<ConfigMap>>| {
            let mut names: Vec<String> = objs
                .iter()
                .map(|o| o.metadata.name.clone().unwrap())
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(store.by_index(NAMESPACE_INDEX, "qa").unwrap()), ["d"]);
        assert!(kept(&store, NAMESPACE_INDEX));
        let mut values = store.index_values(NAMESPACE_INDEX);
        values.sort();
        assert_eq!(values, ["dev", "prod", "qa"]);
        // Kept from now on: writes and a replace move it.
        put("dev", "e");
        store.delete(&ObjectKey::new(Some("qa"), "d"));
        assert_eq!(
            store.index_keys(NAMESPACE_INDEX, "dev").unwrap(),
            [
                ObjectKey::new(Some("dev"), "c"),
                ObjectKey::new(Some("dev"), "e")
            ]
        );
        assert!(store.by_index(NAMESPACE_INDEX, "qa").unwrap().is_empty());
        store.replace([(ObjectKey::new(Some("ops"), "f"), cm_in("ops", "f", "x"))]);
        assert!(kept(&store, NAMESPACE_INDEX));
        assert_eq!(store.index_values(NAMESPACE_INDEX), ["ops"]);
        assert_eq!(
            names(
                store
                    .index(NAMESPACE_INDEX, &cm_in("ops", "any", "y"))
                    .unwrap()
            ),
            ["f"]
        );
    }
    // Each read form builds it, and added later it waits for its first read too.
    type Read = fn(&ThreadSafeStore<ConfigMap>);
    let reads: [Read; 4] = [
        |s| drop(s.by_index(NAMESPACE_INDEX, "qa")),
        |s| drop(s.index_keys(NAMESPACE_INDEX, "qa")),
        |s| drop(s.index(NAMESPACE_INDEX, &cm_in("qa", "q", "x"))),
        |s| drop(s.index_values(NAMESPACE_INDEX)),
    ];
    for read in reads {
        let store = ThreadSafeStore::new(Indexers::new());
        store.add(ObjectKey::new(Some("qa"), "z"), cm_in("qa", "z", "x"));
        store
            .add_indexers(Indexers::new().with_namespace_index())
            .unwrap();
        assert!(!kept(&store, NAMESPACE_INDEX));
        read(&store);
        assert!(kept(&store, NAMESPACE_INDEX));
        assert_eq!(
            store.index_keys(NAMESPACE_INDEX, "qa").unwrap(),
            [ObjectKey::new(Some("qa"), "z")]
        );
    }
}

/// A user index function that panics leaves the built-in namespace index as it
/// was too, though that one is applied without running user code.
#[test]
fn panicking_index_function_leaves_namespace_index_unchanged() {
    use super::super::NAMESPACE_INDEX;
    let store = ThreadSafeStore::new(Indexers::new().with_namespace_index().with(
        "v",
        |c: &ConfigMap| {
            let v = annotation(c);
            assert!(v != "boom", "index function refuses boom");
            vec![v.to_owned()]
        },
    ));
    store.add(key("a"), cm_in("prod", "a", "x"));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.update(key("a"), cm_in("dev", "a", "boom"));
    }));
    assert!(r.is_err());
    assert_eq!(
        set_of(&store, NAMESPACE_INDEX, "prod"),
        Some(vec!["a".to_owned()])
    );
    assert_eq!(set_of(&store, NAMESPACE_INDEX, "dev"), None);
}

/// Writes through one held lock behave as the same writes one by one.
#[test]
fn batch_writes_return_what_they_replaced() {
    let store = ThreadSafeStore::new(Indexers::new().with_namespace_index());
    store.add(key("a"), cm_in("prod", "a", "1"));
    let (replaced, added, deleted, missing) = store.write_batch(|w| {
        (
            w.upsert(key("a"), cm_in("prod", "a", "2")),
            w.upsert(key("b"), cm_in("dev", "b", "1")),
            w.delete(&key("a")),
            w.delete(&key("zz")),
        )
    });
    assert_eq!(
        replaced.map(|o| annotation(&o).to_owned()),
        Some("1".to_owned())
    );
    assert!(added.is_none());
    assert_eq!(
        deleted.map(|o| annotation(&o).to_owned()),
        Some("2".to_owned())
    );
    assert!(missing.is_none());
    assert_eq!(store.list_keys(), [key("b")]);
    assert_eq!(
        set_of(&store, super::super::NAMESPACE_INDEX, "dev"),
        Some(vec!["b".to_owned()])
    );
    assert_eq!(set_of(&store, super::super::NAMESPACE_INDEX, "prod"), None);
}

#[test]
fn panicking_index_function_leaves_store_unchanged() {
    let store = ThreadSafeStore::new(Indexers::new().with("v", |c: &ConfigMap| {
        let v = annotation(c);
        assert!(v != "boom", "index function refuses boom");
        vec![v.to_owned()]
    }));
    store.add(key("a"), cm("a", "x"));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.update(key("a"), cm("a", "boom"));
    }));
    assert!(r.is_err());
    assert_eq!(annotation(&store.get(&key("a")).unwrap()), "x");
    assert_eq!(set_of(&store, "v", "x"), Some(vec!["a".to_owned()]));
    assert_eq!(store.index_values("v"), ["x"]);
}
