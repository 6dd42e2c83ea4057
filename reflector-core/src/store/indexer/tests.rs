//! Unit tests of a cache through its `Writer` and `Indexer`s: the namespace index
//! over keys, the view a queue consults, custom keys, the resource version.
use super::*;
use crate::store::Writer;
use k8s_openapi::api::core::v1::ConfigMap;

fn cm(ns: Option<&str>, name: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = ns.map(Into::into);
    cm.metadata.name = Some(name.into());
    Arc::new(cm)
}

fn names_in(cache: &Indexer<ConfigMap>, ns: &str) -> Vec<String> {
    let mut names: Vec<String> = cache
        .by_index(NAMESPACE_INDEX, ns)
        .unwrap()
        .iter()
        .map(|c| c.metadata.name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

/// With `ns/name` keys the namespace index reads namespaces from the keys;
/// what it holds is the same as reading them from the objects.
#[test]
fn namespace_index_over_namespaced_keys() {
    let mut writer = Writer::new(Indexers::new().with_namespace_index());
    let cache = writer.reader();
    writer.add(cm(Some("a"), "x")).unwrap();
    writer.add(cm(Some("a"), "y")).unwrap();
    writer.add(cm(None, "node")).unwrap();
    writer.update(cm(Some("a"), "x")).unwrap();
    writer.add(cm(Some("b"), "x")).unwrap();
    assert_eq!(names_in(&cache, "a"), ["x", "y"]);
    assert_eq!(names_in(&cache, "b"), ["x"]);
    assert_eq!(names_in(&cache, ""), ["node"]);
    writer.delete(cm(Some("a"), "x")).unwrap();
    writer.delete(cm(None, "node")).unwrap();
    assert_eq!(names_in(&cache, "a"), ["y"]);
    assert!(names_in(&cache, "").is_empty());
    let mut values = cache.index_values(NAMESPACE_INDEX);
    values.sort();
    assert_eq!(values, ["a", "b"]);
}

/// The view a queue consults is a reader of the cache.
#[test]
fn key_lister_getter_view() {
    let mut writer = Writer::new(Indexers::<ConfigMap>::new());
    let cache = writer.reader();
    let view: &dyn KeyListerGetter<ConfigMap> = &cache;
    assert!(view.is_empty());
    writer.add(cm(Some("ns"), "a")).unwrap();
    assert!(!view.is_empty());
    assert_eq!(view.list_keys(), [ObjectKey::new(Some("ns"), "a")]);
    assert!(view.get(&ObjectKey::new(Some("ns"), "a")).is_some());
    assert!(view.get(&ObjectKey::new(None, "a")).is_none());
}

/// Under a key function that leaves the namespace out, an object that moves
/// to another namespace under the same key moves in the namespace index too.
#[test]
fn namespace_index_follows_objects_under_custom_keys() {
    let mut writer = Writer::<ConfigMap>::with_key_func(
        |c: &ConfigMap| {
            Ok(ObjectKey::new(
                None,
                c.metadata.name.as_deref().unwrap_or("?"),
            ))
        },
        Indexers::new().with_namespace_index(),
    );
    let cache = writer.reader();
    writer.add(cm(Some("a"), "x")).unwrap();
    writer.update(cm(Some("b"), "x")).unwrap();
    assert!(names_in(&cache, "a").is_empty());
    assert_eq!(names_in(&cache, "b"), ["x"]);
    writer.delete(cm(Some("b"), "x")).unwrap();
    assert!(names_in(&cache, "b").is_empty());
}

/// Fed straight by a reflector, the cache stands at each list's version and at
/// the version each run of events (or a bookmark) was handed over through; once its
/// writer is gone, a wait for a later version is told the cache will not get there.
#[test]
fn stale_indexer_fed_directly_stands_at_the_handed_over_version() {
    use crate::store::{StoreSink, WatchAction, WriterSink};
    let writer = Writer::new(Indexers::<ConfigMap>::new());
    let cache = writer.reader();
    let sink = WriterSink::new(writer);
    assert_eq!(cache.resource_version(), None);
    sink.replace_listed(vec![cm(Some("a"), "x")], "10").unwrap();
    assert_eq!(cache.resource_version().as_deref(), Some("10"));
    let mut run = vec![(WatchAction::Add, cm(Some("a"), "y"))];
    sink.apply_watch_run(&mut run, &mut |a, e| panic!("{a}: {e}"));
    sink.handed_over("15");
    assert_eq!(cache.resource_version().as_deref(), Some("15"));
    assert_eq!(cache.version().numeric(), Some(15));
    let (woken, later) = (
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        20,
    );
    let w = std::sync::Arc::clone(&woken);
    assert!(cache.version().wake_at(
        later,
        Box::new(move || w.store(true, std::sync::atomic::Ordering::SeqCst))
    ));
    drop(sink);
    assert!(
        woken.load(std::sync::atomic::Ordering::SeqCst),
        "the writer's drop wakes the wait"
    );
    assert!(!cache.version().reached(later).is_over());
}
