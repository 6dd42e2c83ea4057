//! Events served by the embedded server: core `v1` and `events.k8s.io/v1`, through the
//! generic storage (resourceVersions, conflicts, watches), with discovery's short name
//! and the field selectors the real server supports for Events.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Event as CoreEvent, EventSource, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{Discovery, ResourceExt};
use reflector_testkit::ApiServer;
use serde_json::json;

use crate::support::{
    api_status, assert_status, create, expect_initial_events_end, lists_nothing, status_of,
    watch_from,
};

const NS: &str = "default";

fn reference(kind: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some(kind.into()),
        name: Some(name.into()),
        namespace: Some(NS.into()),
        uid: Some(format!("uid-{name}")),
        ..ObjectReference::default()
    }
}

/// An events.k8s.io/v1 Event about the ConfigMap `regarding`.
fn event(name: &str, regarding: &str, type_: &str, reason: &str, controller: &str) -> Event {
    let mut e = Event {
        regarding: Some(reference("ConfigMap", regarding)),
        type_: Some(type_.into()),
        reason: Some(reason.into()),
        reporting_controller: Some(controller.into()),
        reporting_instance: Some(format!("{controller}-0")),
        action: Some("Reconcile".into()),
        note: Some(format!("{reason} {regarding}")),
        ..Event::default()
    };
    e.metadata.name = Some(name.into());
    e
}

fn names<K: ResourceExt>(items: impl IntoIterator<Item = K>) -> Vec<String> {
    let mut names: Vec<String> = items.into_iter().map(|o| o.name_any()).collect();
    names.sort();
    names
}

/// The sorted names of the objects `api` lists with the field selector `selector`.
async fn select<K>(api: &Api<K>, selector: &str) -> Vec<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    names(
        api.list(&ListParams::default().fields(selector))
            .await
            .unwrap(),
    )
}

async fn seeded_events(server: &ApiServer) -> Api<Event> {
    let api: Api<Event> = Api::namespaced(server.client(), NS);
    for e in [
        event("a.1", "a", "Normal", "Reconciled", "widgets"),
        event("a.2", "a", "Warning", "Failed", "widgets"),
        event("b.1", "b", "Normal", "Reconciled", "gadgets"),
    ] {
        create(&api, &e).await;
    }
    api
}

#[tokio::test]
async fn discovery_lists_both_event_resources_with_short_name_ev() {
    let server = ApiServer::start().await.unwrap();
    let discovery = Discovery::new(server.client()).run().await.unwrap();
    for (group, version) in [("", "v1"), ("events.k8s.io", "v1")] {
        let (resource, caps) = discovery
            .get(group)
            .and_then(|g| {
                g.versioned_resources(version)
                    .into_iter()
                    .find(|(r, _)| r.kind == "Event")
            })
            .unwrap_or_else(|| panic!("Event in {group:?}/{version}"));
        assert_eq!(resource.plural, "events");
        assert!(
            caps.supports_operation("watch"),
            "{group}: {:?}",
            caps.operations
        );
        assert!(caps.supports_operation("deletecollection"));
        assert!(caps.supports_operation("patch"));
    }
    // kube's Discovery drops shortNames: read them from the raw document.
    for path in ["/api/v1", "/apis/events.k8s.io/v1"] {
        let request = http::Request::get(path).body(Vec::new()).unwrap();
        let list: serde_json::Value = server.client().request(request).await.unwrap();
        let events = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "events")
            .unwrap_or_else(|| panic!("events in {path}"));
        assert_eq!(events["shortNames"], json!(["ev"]), "{path}");
        assert_eq!(events["namespaced"], json!(true));
    }
}

#[tokio::test]
async fn events_v1_field_selectors_select_by_regarding_type_reason_and_controller() {
    let server = ApiServer::start().await.unwrap();
    let api = seeded_events(&server).await;
    let list = |selector| select(&api, selector);
    assert_eq!(list("regarding.name=a").await, ["a.1", "a.2"]);
    assert_eq!(list("regarding.name=a,type=Warning").await, ["a.2"]);
    assert_eq!(list("regarding.name==a,reason!=Failed").await, ["a.1"]);
    assert_eq!(list("reportingController=gadgets").await, ["b.1"]);
    assert_eq!(
        list("regarding.kind=ConfigMap,regarding.uid=uid-b").await,
        ["b.1"]
    );
    // `source` falls back to the reporting controller when deprecatedSource is unset.
    assert_eq!(list("source=widgets").await, ["a.1", "a.2"]);
    // An unset field selects as the empty string.
    assert_eq!(list("regarding.fieldPath=").await, ["a.1", "a.2", "b.1"]);
    assert!(list("regarding.name=c").await.is_empty());
}

#[tokio::test]
async fn core_event_field_selectors_select_by_involved_object_and_source() {
    let server = ApiServer::start().await.unwrap();
    let api: Api<CoreEvent> = Api::namespaced(server.client(), NS);
    for (name, object, component, type_) in [
        ("p.1", "p", Some("kubelet"), "Normal"),
        ("p.2", "p", None, "Warning"),
        ("q.1", "q", Some("scheduler"), "Normal"),
    ] {
        let mut e = CoreEvent {
            involved_object: reference("Pod", object),
            type_: Some(type_.into()),
            reason: Some("Started".into()),
            source: component.map(|c| EventSource {
                component: Some(c.into()),
                host: None,
            }),
            reporting_component: Some("fallback".into()),
            ..CoreEvent::default()
        };
        e.metadata.name = Some(name.into());
        create(&api, &e).await;
    }
    let list = |selector| select(&api, selector);
    assert_eq!(list("involvedObject.name=p").await, ["p.1", "p.2"]);
    assert_eq!(list("involvedObject.kind=Pod,type=Warning").await, ["p.2"]);
    assert_eq!(list("source=kubelet").await, ["p.1"]);
    assert_eq!(list("source=fallback").await, ["p.2"]);
    assert_eq!(list("reportingComponent=fallback").await.len(), 3);
    assert_eq!(
        list("metadata.namespace=default,involvedObject.namespace=default")
            .await
            .len(),
        3
    );
}

#[tokio::test]
async fn unsupported_event_fields_answer_the_registered_conversions_wording() {
    let server = ApiServer::start().await.unwrap();
    let events: Api<Event> = Api::namespaced(server.client(), NS);
    let core: Api<CoreEvent> = Api::namespaced(server.client(), NS);
    // Each group accepts only its own spelling of the field.
    let err = events
        .list(&ListParams::default().fields("involvedObject.name=a"))
        .await
        .unwrap_err();
    let err = api_status(err);
    assert_status(&err, 400, "BadRequest", |m| {
        m == "field label not supported: involvedObject.name"
    });
    let err = api_status(
        core.list(&ListParams::default().fields("regarding.name=a"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.message, "field label not supported: regarding.name");
    let err = api_status(
        core.list(&ListParams::default().fields("note=x"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.message, "field label not supported: note");
    // Other kinds still do not know the Events' fields.
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(server.client(), NS);
    let err = api_status(
        cms.list(&ListParams::default().fields("reason=x"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        r#""reason" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
}

#[tokio::test]
async fn a_field_selected_event_watch_sees_only_its_objects_events() {
    let server = ApiServer::start().await.unwrap();
    let api: Api<Event> = Api::namespaced(server.client(), NS);
    let mut watch = api
        .watch(&WatchParams::default().fields("regarding.name=a"), "0")
        .await
        .unwrap()
        .boxed();
    expect_initial_events_end(&mut watch).await;
    create(&api, &event("b.1", "b", "Normal", "Reconciled", "widgets")).await;
    create(&api, &event("a.1", "a", "Normal", "Reconciled", "widgets")).await;
    match watch.try_next().await.unwrap() {
        Some(WatchEvent::Added(e)) => assert_eq!(e.name_any(), "a.1"),
        other => panic!("expected ADDED a.1, got {other:?}"),
    }
}

#[tokio::test]
async fn event_series_updates_bump_the_resource_version_and_stale_replaces_conflict() {
    let server = ApiServer::start().await.unwrap();
    let api: Api<Event> = Api::namespaced(server.client(), NS);
    let created = create(&api, &event("a.1", "a", "Normal", "Reconciled", "widgets")).await;
    let patch = json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:00.000000Z"}});
    let patched = api
        .patch("a.1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(patched.series.as_ref().map(|s| s.count), Some(2));
    let rv = |e: &Event| e.resource_version().unwrap().parse::<u64>().unwrap();
    assert!(rv(&patched) > rv(&created));
    // A replace carrying the creation's (now stale) resourceVersion is a conflict.
    let err = status_of(api.replace("a.1", &PostParams::default(), &created).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    // A name taken is AlreadyExists, as for every resource.
    let again = event("a.1", "a", "Normal", "Reconciled", "widgets");
    let err = status_of(api.create(&PostParams::default(), &again).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
}

/// One storage, as the real server: an Event created through events.k8s.io/v1 is
/// listed, converted, under core v1 (same name and resourceVersion), selectable by
/// the core field names, and a delete through core removes it from both.
#[tokio::test]
async fn both_groups_share_one_event_storage() {
    let server = ApiServer::start().await.unwrap();
    let v1: Api<Event> = Api::namespaced(server.client(), NS);
    let core: Api<CoreEvent> = Api::namespaced(server.client(), NS);
    let mut core_watch = watch_from(&core, "0").await;
    expect_initial_events_end(&mut core_watch).await;
    let created = create(&v1, &event("a.1", "a", "Warning", "Failed", "widgets")).await;
    let seen = core.get("a.1").await.unwrap();
    assert_eq!(seen.resource_version(), created.resource_version());
    assert_eq!(seen.involved_object.name.as_deref(), Some("a"));
    assert_eq!(seen.message.as_deref(), Some("Failed a"));
    assert_eq!(seen.reporting_component.as_deref(), Some("widgets"));
    assert_eq!(seen.type_.as_deref(), Some("Warning"));
    match core_watch.try_next().await.unwrap() {
        Some(WatchEvent::Added(e)) => assert_eq!(e.involved_object.name.as_deref(), Some("a")),
        other => panic!("expected ADDED a.1 on the core watch, got {other:?}"),
    }
    assert_eq!(select(&core, "involvedObject.name=a").await, ["a.1"]);

    // A core write shows through events.k8s.io/v1 too.
    let patch = json!({"message": "now with a message"});
    core.patch("a.1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let back = v1.get("a.1").await.unwrap();
    assert_eq!(back.note.as_deref(), Some("now with a message"));
    assert_eq!(back.regarding.and_then(|r| r.name).as_deref(), Some("a"));

    core.delete("a.1", &Default::default()).await.unwrap();
    assert!(lists_nothing(&v1).await);
    assert!(lists_nothing(&core).await);
}
