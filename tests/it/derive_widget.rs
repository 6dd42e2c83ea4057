//! `#[derive(Reflect)]` on a CRD spec: the generated indexers, typed queries and
//! event plumbing, exercised on a cache (`Writer`, `Indexer`, `Lister`) without any HTTP.

use std::collections::BTreeMap;
use std::sync::Arc;

use reflector::Reflect;
use reflector::lister::Lister;
use reflector::object::ObjectRef;
use reflector::store::{Indexers, StoreError, Writer};

use crate::support::widget::{Widget, WidgetIndexes, WidgetSpec};

struct W<'a> {
    name: &'a str,
    owner: &'a str,
    tags: &'a [&'a str],
    parent: Option<&'a str>,
    replicas: u32,
    zones: Option<&'a [&'a str]>,
    size: u32,
    app: Option<&'a str>,
    team: Option<&'a str>,
}

fn w<'a>(name: &'a str, owner: &'a str) -> W<'a> {
    W {
        name,
        owner,
        tags: &[],
        parent: None,
        replicas: 1,
        zones: None,
        size: 1,
        app: None,
        team: None,
    }
}

impl<'a> W<'a> {
    fn tags(self, tags: &'a [&'a str]) -> Self {
        W { tags, ..self }
    }
    fn parent(self, parent: &'a str) -> Self {
        W {
            parent: Some(parent),
            ..self
        }
    }
    fn replicas(self, replicas: u32) -> Self {
        W { replicas, ..self }
    }
    fn zones(self, zones: &'a [&'a str]) -> Self {
        W {
            zones: Some(zones),
            ..self
        }
    }
    fn size(self, size: u32) -> Self {
        W { size, ..self }
    }
    fn app(self, app: &'a str) -> Self {
        W {
            app: Some(app),
            ..self
        }
    }
    fn team(self, team: &'a str) -> Self {
        W {
            team: Some(team),
            ..self
        }
    }

    fn build(self) -> Arc<Widget> {
        let mut widget = Widget::new(
            self.name,
            WidgetSpec {
                replicas: self.replicas,
                zones: self
                    .zones
                    .map(|z| z.iter().map(|t| (*t).to_owned()).collect()),
                size: self.size,
                ..WidgetSpec::owned_by(
                    self.owner,
                    self.tags.iter().map(|t| (*t).to_owned()).collect(),
                    self.parent.map(str::to_owned),
                )
            },
        );
        widget.metadata.namespace = Some("default".into());
        if let Some(app) = self.app {
            widget.metadata.labels = Some(BTreeMap::from([("app".to_owned(), app.to_owned())]));
        }
        if let Some(team) = self.team {
            widget.metadata.annotations = Some(BTreeMap::from([(
                "example.com/team".to_owned(),
                team.to_owned(),
            )]));
        }
        Arc::new(widget)
    }
}

/// The names of a query's answer, sorted; the query must succeed.
fn names(v: Result<Vec<Arc<Widget>>, StoreError>) -> Vec<String> {
    let v = v.expect("the index is registered");
    let mut n: Vec<String> = v.iter().filter_map(|w| w.metadata.name.clone()).collect();
    n.sort();
    n
}

/// A cache holding `widgets`.
fn cache_with<'a>(widgets: impl IntoIterator<Item = W<'a>>) -> (Writer<Widget>, Lister<Widget>) {
    let (mut indexer, lister) = cache();
    for w in widgets {
        indexer.add(w.build()).unwrap();
    }
    (indexer, lister)
}

fn cache() -> (Writer<Widget>, Lister<Widget>) {
    let indexer = Writer::new(Widget::indexers());
    let lister = Lister::new(indexer.reader());
    (indexer, lister)
}

#[test]
fn index_names_are_declared_in_order() {
    assert_eq!(
        Widget::INDEX_NAMES,
        &[
            "by_app",
            "by_team",
            "by_size_class",
            "by_owner",
            "by_tags",
            "by_parent",
            "by_replicas",
            "by_zones"
        ]
    );
    let indexers = Widget::indexers();
    let mut registered: Vec<&str> = indexers.names().collect();
    registered.sort_unstable();
    let mut declared = Widget::INDEX_NAMES.to_vec();
    declared.sort_unstable();
    assert_eq!(registered, declared);
}

#[test]
fn by_owner_returns_exactly_the_owners_widgets() {
    let (_, lister) = cache_with([w("a", "alice"), w("b", "bob"), w("c", "alice")]);
    assert_eq!(names(lister.by_owner("alice")), ["a", "c"]);
    assert_eq!(names(lister.by_owner(String::from("bob"))), ["b"]);
    assert!(names(lister.by_owner("carol")).is_empty());
}

/// The `_keys` query answers typed keys, `ObjectRef<Widget>`, sorted.
#[test]
fn by_owner_keys_answers_typed_keys() {
    let (_, lister) = cache_with([w("c", "alice"), w("b", "bob"), w("a", "alice")]);
    let keys: Vec<ObjectRef<Widget>> = lister.by_owner_keys("alice").unwrap();
    assert_eq!(
        keys,
        [
            ObjectRef::new(Some("default"), "a"),
            ObjectRef::new(Some("default"), "c")
        ]
    );
    assert_eq!(keys[0].to_string(), "Widget default/a");
    assert!(lister.by_owner_keys("carol").unwrap().is_empty());
}

#[test]
fn by_tags_indexes_each_element() {
    let (_, lister) = cache_with([
        w("a", "x").tags(&["blue", "red"]),
        w("b", "x").tags(&["red"]),
        w("c", "x"),
    ]);
    assert_eq!(names(lister.by_tags("red")), ["a", "b"]);
    assert_eq!(names(lister.by_tags("blue")), ["a"]);
    assert!(names(lister.by_tags("green")).is_empty());
}

#[test]
fn by_parent_has_no_value_when_none() {
    let (indexer, lister) = cache_with([w("a", "x").parent("p"), w("b", "x")]);
    assert_eq!(names(lister.by_parent("p")), ["a"]);
    assert!(names(lister.by_parent("")).is_empty());
    assert!(names(lister.by_parent("None")).is_empty());
    assert_eq!(indexer.index_values("by_parent"), ["p"]);
}

#[test]
fn by_zones_reads_an_optional_set() {
    let (indexer, lister) = cache_with([
        w("a", "x").zones(&["z1", "z2"]),
        w("b", "x").zones(&[]),
        w("c", "x"),
    ]);
    assert_eq!(names(lister.by_zones("z2")), ["a"]);
    let mut values = indexer.index_values("by_zones");
    values.sort();
    assert_eq!(values, ["z1", "z2"]);
}

#[test]
fn by_replicas_takes_integers() {
    let (_, lister) = cache_with([w("a", "x").replicas(3), w("b", "x").replicas(30)]);
    assert_eq!(names(lister.by_replicas(3)), ["a"]);
    assert_eq!(names(lister.by_replicas(30u64)), ["b"]);
    assert_eq!(names(lister.by_replicas("3")), ["a"]);
}

#[test]
fn by_app_reads_the_label_and_by_team_the_annotation() {
    let (_, lister) = cache_with([
        w("a", "x").app("web").team("core"),
        w("b", "x").app("db"),
        w("c", "x"),
    ]);
    assert_eq!(names(lister.by_app("web")), ["a"]);
    assert_eq!(names(lister.by_app("db")), ["b"]);
    assert_eq!(names(lister.by_team("core")), ["a"]);
    assert!(names(lister.by_team("x")).is_empty());
}

#[test]
fn by_size_class_calls_the_with_function() {
    let (_, lister) = cache_with([w("a", "x").size(12), w("b", "x").size(2)]);
    assert_eq!(names(lister.by_size_class("big")), ["a"]);
    assert_eq!(names(lister.by_size_class("small")), ["b"]);
}

#[test]
fn updates_move_widgets_between_owners_and_tags() {
    let (mut indexer, lister) = cache_with([
        w("a", "alice").tags(&["blue"]),
        w("b", "alice").tags(&["blue"]),
    ]);
    indexer
        .update(w("a", "bob").tags(&["red", "green"]).build())
        .unwrap();
    assert_eq!(names(lister.by_owner("alice")), ["b"]);
    assert_eq!(names(lister.by_owner("bob")), ["a"]);
    assert_eq!(names(lister.by_tags("blue")), ["b"]);
    assert_eq!(names(lister.by_tags("red")), ["a"]);
    assert_eq!(names(lister.by_tags("green")), ["a"]);
}

#[test]
fn deletes_leave_every_index() {
    let (mut indexer, lister) = cache();
    let a = w("a", "alice")
        .tags(&["blue"])
        .parent("p")
        .app("web")
        .build();
    indexer.add(Arc::clone(&a)).unwrap();
    indexer.add(w("b", "alice").build()).unwrap();
    indexer.delete(a).unwrap();
    assert_eq!(names(lister.by_owner("alice")), ["b"]);
    assert!(names(lister.by_tags("blue")).is_empty());
    assert!(names(lister.by_parent("p")).is_empty());
    assert!(names(lister.by_app("web")).is_empty());
}

#[test]
fn queries_work_on_indexer_and_lister() {
    let (indexer, lister) = cache_with([w("a", "alice")]);
    assert_eq!(names(indexer.by_owner("alice")), ["a"]);
    assert_eq!(names(lister.by_owner("alice")), ["a"]);
}

/// A typed query on a cache built without `Widget::indexers()` fails loudly, naming
/// the index, instead of answering an empty list that reads as "no match".
#[test]
fn a_query_on_a_cache_without_the_index_is_an_unknown_index_error() {
    let mut bare = Writer::<Widget>::new(Indexers::new());
    bare.add(w("a", "alice").build()).unwrap();
    let unknown = |name: &str| StoreError::UnknownIndex(name.to_owned());
    assert_eq!(bare.by_owner("alice").unwrap_err(), unknown("by_owner"));
    assert_eq!(
        bare.by_owner_keys("alice").unwrap_err(),
        unknown("by_owner")
    );
    let lister = Lister::new(bare.reader());
    assert_eq!(lister.by_tags("blue").unwrap_err(), unknown("by_tags"));
    assert_eq!(
        lister.by_size_class_keys("big").unwrap_err(),
        unknown("by_size_class")
    );
    // The message names the index.
    let message = lister.by_app("web").unwrap_err().to_string();
    assert!(message.contains("\"by_app\""), "{message}");
}

/// `Reflect`'s provided `informer` (what `Widget::informer(client)` calls) registers
/// every index the derive declares, and the namespace index.
#[tokio::test]
async fn provided_informer_registers_every_declared_index() {
    let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    let informer = Widget::informer(client);
    let registered = informer.indexer().indexers();
    for name in Widget::INDEX_NAMES {
        assert!(registered.contains(name), "{name} not registered");
    }
    assert!(registered.contains(reflector::store::NAMESPACE_INDEX));
}
