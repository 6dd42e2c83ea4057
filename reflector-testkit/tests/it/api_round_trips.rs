//! kube::Api round trips against the embedded server: verbs, errors, generation rules,
//! finalizers, the status subresource, selectors, pagination, RV semantics, discovery.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Discovery;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, VersionMatch, WatchEvent,
    WatchParams,
};
use reflector_testkit::ApiServer;
use serde_json::json;

use crate::support::{
    PATIENCE, Widget, WidgetSpec, WidgetStatus, assert_status, continue_too_old, create,
    create_namespace, merge, rv_of, serve_configmaps, serve_widgets, status_of, watch_with,
};

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    if !labels.is_empty() {
        cm.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
    }
    cm.data = Some(BTreeMap::from([("k".to_owned(), "v".to_owned())]));
    cm
}

/// Creates a ConfigMap of each name through `api`.
async fn create_all(api: &Api<ConfigMap>, names: impl IntoIterator<Item = String>) {
    for name in names {
        create(api, &cm(&name, &[])).await;
    }
}

#[tokio::test]
async fn create_get_replace_patch_delete() {
    let (server, api) = serve_configmaps().await;
    let created = create(&api, &cm("a", &[])).await;
    let rv1 = rv_of(&created);
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(created.metadata.generation, None, "ConfigMaps have none");

    let got = api.get("a").await.unwrap();
    assert_eq!(got, created);

    let mut changed = got.clone();
    changed.data = Some(BTreeMap::from([("k".to_owned(), "v2".to_owned())]));
    let replaced = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    let rv2 = rv_of(&replaced);
    assert!(rv2 > rv1);
    assert_eq!(replaced.data.as_ref().unwrap()["k"], "v2");
    assert_eq!(replaced.metadata.uid, created.metadata.uid);

    let patched = merge(&api, "a", json!({"data": {"extra": "x", "k": null}}))
        .await
        .unwrap();
    assert_eq!(
        patched.data,
        Some(BTreeMap::from([("extra".to_owned(), "x".to_owned())]))
    );
    assert_eq!(
        server.current_resource_version(),
        patched
            .metadata
            .resource_version
            .as_deref()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    );

    let deleted = api.delete("a", &DeleteParams::default()).await.unwrap();
    let gone = deleted
        .right()
        .expect("a ConfigMap's delete answers a Status");
    assert_eq!(gone.details.unwrap().kind, "configmaps");
    let status = status_of(api.get("a").await);
    assert_status(&status, 404, "NotFound", |m| {
        m == "configmaps \"a\" not found"
    });
}

#[tokio::test]
async fn already_exists_conflict_and_not_found() {
    let (_server, api) = serve_configmaps().await;
    let created = create(&api, &cm("a", &[])).await;
    let status = status_of(api.create(&PostParams::default(), &cm("a", &[])).await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "AlreadyExists")
    );
    assert_eq!(status.details.unwrap().name, "a");

    let mut first = created.clone();
    first.data = Some(BTreeMap::from([("k".to_owned(), "first".to_owned())]));
    api.replace("a", &PostParams::default(), &first)
        .await
        .unwrap();
    let mut stale = created.clone();
    stale.data = Some(BTreeMap::from([("k".to_owned(), "stale".to_owned())]));
    let status = status_of(api.replace("a", &PostParams::default(), &stale).await);
    assert_status(&status, 409, "Conflict", |m| {
        m.contains("the object has been modified")
    });

    // Unset resourceVersion means an unconditional replace.
    stale.metadata.resource_version = None;
    let forced = api
        .replace("a", &PostParams::default(), &stale)
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["k"], "stale");

    let status = status_of(
        api.replace("missing", &PostParams::default(), &cm("missing", &[]))
            .await,
    );
    assert_eq!(status.code, 404);
    let status = status_of(api.delete("missing", &DeleteParams::default()).await);
    assert_eq!(status.code, 404);
}

#[tokio::test]
async fn noop_update_keeps_resource_version() {
    let (_server, api) = serve_configmaps().await;
    let created = create(&api, &cm("a", &[])).await;
    let same = api.replace("a", &PostParams::default(), &created).await;
    assert_eq!(
        same.unwrap().metadata.resource_version,
        created.metadata.resource_version
    );
}

#[tokio::test]
async fn finalizer_deletion_flow() {
    let (_server, api) = serve_configmaps().await;
    let mut obj = cm("f", &[]);
    obj.metadata.finalizers = Some(vec!["example.com/hold".to_owned()]);
    create(&api, &obj).await;

    let deleted = api.delete("f", &DeleteParams::default()).await.unwrap();
    let pending = deleted
        .left()
        .expect("object returned while finalizers pend");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert_eq!(
        pending.metadata.generation, None,
        "starting deletion adds no generation to a ConfigMap"
    );
    let still = api.get("f").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());

    // Deleting again changes nothing.
    let again = api
        .delete("f", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        still.metadata.resource_version
    );

    merge(&api, "f", json!({"metadata": {"finalizers": null}}))
        .await
        .unwrap();
    assert_eq!(status_of(api.get("f").await).code, 404);
}

#[tokio::test]
async fn generation_rules() {
    let (_server, api) = serve_widgets().await;
    let mut w = Widget::new("w", WidgetSpec { replicas: 1 });
    w.status = Some(WidgetStatus { ready: 9 });
    let created = create(&api, &w).await;
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.status, None,
        "status is dropped on create for a status subresource"
    );

    let labelled = merge(&api, "w", json!({"metadata": {"labels": {"x": "y"}}}))
        .await
        .unwrap();
    assert_eq!(
        labelled.metadata.generation,
        Some(1),
        "label change does not bump generation"
    );
    assert_ne!(
        labelled.metadata.resource_version,
        created.metadata.resource_version
    );

    let resized = merge(&api, "w", json!({"spec": {"replicas": 2}}))
        .await
        .unwrap();
    assert_eq!(
        resized.metadata.generation,
        Some(2),
        "spec change bumps generation"
    );

    let write = Patch::Merge(json!({"status": {"ready": 2}}));
    let status = api
        .patch_status("w", &PatchParams::default(), &write)
        .await
        .unwrap();
    assert_eq!(
        status.metadata.generation,
        Some(2),
        "status write does not bump generation"
    );
    assert_eq!(status.status, Some(WidgetStatus { ready: 2 }));
}

#[tokio::test]
async fn status_subresource_on_crd() {
    let (server, api) = serve_widgets().await;
    create(&api, &Widget::new("w", WidgetSpec { replicas: 1 })).await;

    // A status write ignores spec changes.
    let mut w = api.get("w").await.unwrap();
    w.spec.replicas = 100;
    w.status = Some(WidgetStatus { ready: 1 });
    let after = api
        .replace_status("w", &PostParams::default(), &w)
        .await
        .unwrap();
    assert_eq!(after.spec.replicas, 1);
    assert_eq!(after.status, Some(WidgetStatus { ready: 1 }));

    // A main-resource write ignores status changes.
    let mut w = api.get("w").await.unwrap();
    w.spec.replicas = 3;
    w.status = Some(WidgetStatus { ready: 42 });
    let after = api.replace("w", &PostParams::default(), &w).await.unwrap();
    assert_eq!(after.spec.replicas, 3);
    assert_eq!(after.status, Some(WidgetStatus { ready: 1 }));
    assert_eq!(
        api.get_status("w").await.unwrap().status,
        Some(WidgetStatus { ready: 1 })
    );

    // ConfigMap has no status subresource: /status is a 404.
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&cms, &cm("c", &[])).await;
    assert_eq!(status_of(cms.get_status("c").await).code, 404);
}

#[tokio::test]
async fn label_and_field_selectors_on_list() {
    let (server, api) = serve_configmaps().await;
    create(&api, &cm("a", &[("app", "web"), ("tier", "fe")])).await;
    create(&api, &cm("b", &[("app", "web"), ("tier", "be")])).await;
    create(&api, &cm("c", &[("app", "db")])).await;
    create_namespace(&server, "other").await;
    let other: Api<ConfigMap> = Api::namespaced(server.client(), "other");
    create(&other, &cm("a", &[("app", "web")])).await;

    let names = |list: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        list.items
            .into_iter()
            .map(|c| c.metadata.name.unwrap())
            .collect()
    };
    let cases = [
        ("app=web", vec!["a", "b"]),
        ("app==web,tier!=fe", vec!["b"]),
        ("app in (db,web),tier", vec!["a", "b"]),
        ("app notin (web)", vec!["c"]),
        ("!tier", vec!["c"]),
    ];
    for (selector, want) in cases {
        let got = names(
            api.list(&ListParams::default().labels(selector))
                .await
                .unwrap(),
        );
        assert_eq!(got, want, "labelSelector {selector}");
    }
    let got = names(
        api.list(&ListParams::default().fields("metadata.name=b"))
            .await
            .unwrap(),
    );
    assert_eq!(got, vec!["b"]);
    let got = names(
        api.list(&ListParams::default().fields("metadata.name!=b"))
            .await
            .unwrap(),
    );
    assert_eq!(got, vec!["a", "c"]);
    let all: Api<ConfigMap> = Api::all(server.client());
    let got: Vec<_> = all
        .list(&ListParams::default().fields("metadata.namespace==other"))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| c.metadata.namespace.unwrap())
        .collect();
    assert_eq!(got, vec!["other"]);
    let status = status_of(api.list(&ListParams::default().labels("app in web")).await);
    assert_eq!(status.code, 400);
    let status = status_of(api.list(&ListParams::default().fields("spec.foo=x")).await);
    assert_eq!(status.code, 400);
}

#[tokio::test]
async fn label_selector_on_watch_turns_changes_into_added_and_deleted() {
    let (server, api) = serve_configmaps().await;
    create(&api, &cm("a", &[("app", "web")])).await;
    let rv = server.current_resource_version().to_string();
    let params = WatchParams::default().disable_bookmarks().labels("app=web");
    let mut stream = watch_with(&api, &params, &rv).await;

    create(&api, &cm("b", &[("app", "db")])).await;
    merge(&api, "a", json!({"metadata": {"labels": {"app": "db"}}}))
        .await
        .unwrap();
    merge(&api, "b", json!({"metadata": {"labels": {"app": "web"}}}))
        .await
        .unwrap();
    merge(&api, "b", json!({"data": {"x": "y"}})).await.unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();

    let mut seen = Vec::new();
    while seen.len() < 4 {
        let event = tokio::time::timeout(PATIENCE, stream.try_next())
            .await
            .expect("hang guard")
            .unwrap()
            .unwrap();
        seen.push(match event {
            WatchEvent::Added(o) => ("ADDED", o.metadata.name.unwrap()),
            WatchEvent::Modified(o) => ("MODIFIED", o.metadata.name.unwrap()),
            WatchEvent::Deleted(o) => ("DELETED", o.metadata.name.unwrap()),
            other => panic!("unexpected {other:?}"),
        });
    }
    let want = [
        ("DELETED", "a"),
        ("ADDED", "b"),
        ("MODIFIED", "b"),
        ("DELETED", "b"),
    ];
    assert_eq!(seen, want.map(|(t, n)| (t, n.to_owned())));
}

#[tokio::test]
async fn pagination_with_remaining_item_count() {
    let (server, api) = serve_configmaps().await;
    create_all(&api, (0..10).map(|i| format!("cm-{i:02}"))).await;
    let first = api.list(&ListParams::default().limit(4)).await.unwrap();
    assert_eq!(first.items.len(), 4);
    assert_eq!(first.metadata.remaining_item_count, Some(6));
    let snapshot_rv = first.metadata.resource_version.clone();

    // Writes between pages do not show up: every page is from the first page's snapshot.
    create(&api, &cm("cm-99", &[])).await;
    api.delete("cm-05", &DeleteParams::default()).await.unwrap();

    let mut names: Vec<String> = first
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    let mut token = first.metadata.continue_.clone();
    // The snapshot holds 10 objects: 6 remain after the first page, 2 after the second,
    // and the third page is the last (no token, no count).
    let mut remaining_per_page = Vec::new();
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        let page = api
            .list(&ListParams::default().limit(4).continue_token(&t))
            .await
            .unwrap();
        assert_eq!(page.metadata.resource_version, snapshot_rv);
        names.extend(page.items.iter().map(|c| c.metadata.name.clone().unwrap()));
        token = page.metadata.continue_;
        remaining_per_page.push(page.metadata.remaining_item_count);
    }
    assert_eq!(remaining_per_page, [Some(2), None]);
    let want: Vec<String> = (0..10).map(|i| format!("cm-{i:02}")).collect();
    assert_eq!(names, want);
    let empty: Api<ConfigMap> = Api::namespaced(server.client(), "empty");
    let list = empty.list(&ListParams::default()).await.unwrap();
    assert!(list.items.is_empty());
}

#[tokio::test]
async fn list_resource_version_semantics() {
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client_without_retries(), "default");
    create(&api, &cm("a", &[])).await;
    let old_rv = server.current_resource_version();
    create(&api, &cm("b", &[])).await;
    merge(&api, "a", json!({"data": {"k": "changed"}}))
        .await
        .unwrap();

    let at = |how| ListParams::default().at(&old_rv.to_string()).matching(how);

    // Exact at an old RV is served from history.
    let exact = api.list(&at(VersionMatch::Exact)).await.unwrap();
    assert_eq!(exact.items.len(), 1);
    assert_eq!(exact.metadata.resource_version, Some(old_rv.to_string()));
    assert_eq!(
        exact.items[0].metadata.resource_version,
        Some(old_rv.to_string()),
        "the object as it was at old_rv"
    );
    assert_eq!(exact.items[0].data.as_ref().unwrap()["k"], "v");
    let not_older = api.list(&at(VersionMatch::NotOlderThan)).await.unwrap();
    assert_eq!(not_older.items.len(), 2);

    server.compact();
    let status = status_of(api.list(&at(VersionMatch::Exact)).await);
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));

    let future = (server.current_resource_version() + 100).to_string();
    let status = status_of(api.list(&ListParams::default().at(&future)).await);
    assert_status(&status, 504, "Timeout", |m| {
        m.starts_with("Timeout: Too large resource version")
    });
    let causes = status.details.unwrap().causes;
    assert_eq!(causes[0].reason, "ResourceVersionTooLarge");
}

#[tokio::test]
async fn continue_token_older_than_compaction_is_expired() {
    let (server, api) = serve_configmaps().await;
    create_all(&api, (0..3).map(|i| format!("c{i}"))).await;
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    create(&api, &cm("later", &[])).await;
    server.compact();
    let token = first.metadata.continue_.unwrap();
    let next_page = ListParams::default().limit(1).continue_token(&token);
    let status = status_of(api.list(&next_page).await);
    assert_status(&status, 410, "Expired", continue_too_old);
}

#[tokio::test]
async fn discovery_finds_configmaps_and_the_crd() {
    let server = ApiServer::start().await.unwrap();
    server.register::<Widget>();
    let discovery = Discovery::new(server.client()).run().await.unwrap();
    let mut found = Vec::new();
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            found.push((
                ar.group.clone(),
                ar.plural.clone(),
                ar.kind.clone(),
                caps.scope == kube::discovery::Scope::Namespaced,
            ));
        }
    }
    assert!(
        found.contains(&(String::new(), "configmaps".into(), "ConfigMap".into(), true)),
        "{found:?}"
    );
    assert!(
        found.contains(&(String::new(), "nodes".into(), "Node".into(), false)),
        "{found:?}"
    );
    assert!(
        found.contains(&(
            "testkit.example.com".into(),
            "widgets".into(),
            "Widget".into(),
            true
        )),
        "{found:?}"
    );
}

#[tokio::test]
async fn partial_object_metadata_for_metadata_requests() {
    let (server, api) = serve_configmaps().await;
    create(&api, &cm("a", &[("app", "web")])).await;
    create(&api, &cm("b", &[])).await;

    let meta = api.get_metadata("a").await.unwrap();
    let types = meta.types.clone().unwrap();
    assert_eq!(
        (types.kind.as_str(), types.api_version.as_str()),
        ("PartialObjectMetadata", "meta.k8s.io/v1")
    );
    assert_eq!(meta.metadata.labels.unwrap()["app"], "web");

    let list = api
        .list_metadata(&ListParams::default().limit(1))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("a"));
    assert_eq!(list.metadata.remaining_item_count, Some(1));

    // On the wire: no `data`, list kind PartialObjectMetadataList.
    let request = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header(
            "Accept",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .body(Vec::new())
        .unwrap();
    let text = server.client().request_text(request).await.unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["kind"], "PartialObjectMetadataList");
    assert_eq!(value["items"][0]["kind"], "PartialObjectMetadata");
    assert!(value["items"][0].get("data").is_none());

    let rv = server.current_resource_version().to_string();
    let mut stream = api
        .watch_metadata(&WatchParams::default().disable_bookmarks(), &rv)
        .await
        .unwrap()
        .boxed();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    match tokio::time::timeout(PATIENCE, stream.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        Some(WatchEvent::Deleted(o)) => {
            assert_eq!(o.metadata.name.as_deref(), Some("b"));
            assert_eq!(o.types.unwrap().kind, "PartialObjectMetadata");
        }
        other => panic!("expected DELETED, got {other:?}"),
    }
}
