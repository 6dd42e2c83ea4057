//! Tests of `ApiListerWatcher` over a mocked `kube::Api`.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::WatchEvent;

use super::*;
use crate::listwatch::mock_api::MockApi;

fn cm_json(name: &str, rv: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}","managedFields":[{{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{{"f:data":{{"f:k":{{}}}}}}}}]}},"data":{{"k":"v"}}}}"#
    )
}

fn list_json() -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMapList","metadata":{{"resourceVersion":"10"}},"items":[{},{}]}}"#,
        cm_json("a", "3"),
        cm_json("b", "4")
    )
}

fn watch_json() -> String {
    format!(
        "{{\"type\":\"ADDED\",\"object\":{}}}\n{{\"type\":\"MODIFIED\",\"object\":{}}}\n",
        cm_json("c", "11"),
        cm_json("a", "12")
    )
}

fn lw(api: &MockApi) -> ApiListerWatcher<ConfigMap> {
    ApiListerWatcher::new(Api::<ConfigMap>::all(api.client())).namespace("ns")
}

#[tokio::test]
async fn lean_list_decodes_items_without_managed_fields() {
    let api = MockApi::new(&list_json(), "");
    let list = lw(&api)
        .field_filter(FieldFilter::managed_fields())
        .list(&ListParams::default().limit(500))
        .await
        .unwrap();
    assert_eq!(list.metadata.resource_version.as_deref(), Some("10"));
    let names: Vec<_> = list
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert!(
        list.items
            .iter()
            .all(|c| c.metadata.managed_fields.is_none())
    );
    assert!(
        list.items
            .iter()
            .all(|c| c.data.as_ref().is_some_and(|d| d["k"] == "v"))
    );
    let reqs = api.requests();
    assert_eq!(reqs.len(), 1);
    assert!(
        reqs[0].starts_with("/api/v1/namespaces/ns/configmaps?"),
        "{}",
        reqs[0]
    );
    assert!(reqs[0].contains("limit=500"));
}

#[tokio::test]
async fn plain_list_keeps_managed_fields() {
    let api = MockApi::new(&list_json(), "");
    let list = lw(&api).list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 2);
    assert!(
        list.items
            .iter()
            .all(|c| c.metadata.managed_fields.is_some())
    );
    let cleared = lw(&api)
        .field_filter(FieldFilter::managed_fields())
        .field_filter(FieldFilter::new())
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        cleared
            .items
            .iter()
            .all(|c| c.metadata.managed_fields.is_some())
    );
}

#[tokio::test]
async fn list_error_status_is_an_api_error() {
    let mut api = MockApi::new("", "");
    api.list = (
        410,
        r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}"#.into(),
    );
    let err = lw(&api)
        .field_filter(FieldFilter::managed_fields())
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(err.is_expired(), "{err:?}");
    api.list = (429, "slow down".into());
    let err = lw(&api).list(&ListParams::default()).await.unwrap_err();
    assert!(err.is_too_many_requests(), "{err:?}");
}

/// A malformed item fails the list naming it; a body that is not a list fails it
/// as a list.
#[tokio::test]
async fn malformed_list_body_is_a_decode_error() {
    let api = MockApi::new(
        r#"{"items":[{"metadata":{"name":"a"}},{"metadata":{"managedFields":[1,]}}]}"#,
        "",
    );
    let err = lw(&api)
        .field_filter(FieldFilter::managed_fields())
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ListWatchError::DecodeItem { index: 1, .. }),
        "{err:?}"
    );
    let api = MockApi::new(r#"{"items":{"a":1}}"#, "");
    let err = lw(&api).list(&ListParams::default()).await.unwrap_err();
    assert!(
        matches!(err, ListWatchError::Decode { what: "list", .. }),
        "{err:?}"
    );
}

/// `list` answers what the whole body decodes to (kind, metadata, filtered items)
/// when the body arrives in small chunks: it is decoded as it is read.
#[tokio::test]
async fn list_reads_a_chunked_body_into_the_whole_list() {
    let body = r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"next"},"items":[{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},"data":{"k":"é\n"}},{"metadata":{"name":"b"}}]}"#;
    let api = MockApi::new(body, "");
    let filter = FieldFilter::managed_fields();
    let whole: ObjectList<ConfigMap> =
        decode_filtered(body.as_bytes(), Some(&filter.for_list_items())).unwrap();
    api.queue_list_body(MockApi::chunked(body, 3));
    let list = lw(&api)
        .field_filter(filter)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(list.types.kind, "ConfigMapList");
    assert_eq!(list.types.api_version, "v1");
    assert_eq!(list.metadata, whole.metadata);
    assert_eq!(list.items, whole.items);
    assert!(list.items[0].metadata.managed_fields.is_none());
}

#[tokio::test]
async fn lean_watch_decodes_events_without_managed_fields() {
    let api = MockApi::new("", &watch_json());
    let mut stream = lw(&api)
        .field_filter(FieldFilter::managed_fields())
        .watch(&WatchParams::default(), "10")
        .await
        .unwrap();
    let first = stream.next().await.unwrap().unwrap();
    let second = stream.next().await.unwrap().unwrap();
    assert!(
        matches!(&first, WatchEvent::Added(c) if c.metadata.name.as_deref() == Some("c") && c.metadata.managed_fields.is_none())
    );
    assert!(
        matches!(&second, WatchEvent::Modified(c) if c.metadata.resource_version.as_deref() == Some("12") && c.metadata.managed_fields.is_none())
    );
    let reqs = api.requests();
    assert!(
        reqs[0].contains("watch=true") && reqs[0].contains("resourceVersion=10"),
        "{}",
        reqs[0]
    );
}

/// Listed items (streamed or decoded whole) and watched objects come out with
/// their metadata lists shrunk to their length (`compact`): here, one
/// managedFields entry where serde leaves room for four.
#[tokio::test]
async fn listed_and_watched_objects_keep_no_spare_room_in_managed_fields() {
    let capacities = |cms: &[&ConfigMap]| -> Vec<Option<(usize, usize)>> {
        cms.iter()
            .map(|c| {
                c.metadata
                    .managed_fields
                    .as_ref()
                    .map(|m| (m.len(), m.capacity()))
            })
            .collect()
    };
    let api = MockApi::new(&list_json(), &watch_json());
    let list = lw(&api).list(&ListParams::default()).await.unwrap();
    assert_eq!(
        capacities(&list.items.iter().collect::<Vec<_>>()),
        [Some((1, 1)), Some((1, 1))]
    );
    let page = decode_list::<ConfigMap>(list_json().as_bytes(), None).unwrap();
    let (_, _, items) = page.into_parts();
    assert_eq!(
        capacities(&items.iter().collect::<Vec<_>>()),
        [Some((1, 1)), Some((1, 1))]
    );
    let events: Vec<_> = lw(&api)
        .watch(&WatchParams::default(), "10")
        .await
        .unwrap()
        .take(2)
        .map(Result::unwrap)
        .collect()
        .await;
    let objects: Vec<&ConfigMap> = events
        .iter()
        .map(|ev| match ev {
            WatchEvent::Added(c) | WatchEvent::Modified(c) => c,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(capacities(&objects), [Some((1, 1)), Some((1, 1))]);
}

#[tokio::test]
async fn watch_error_status_is_an_api_error() {
    let mut api = MockApi::new("", "");
    api.watch = (500, "boom".into());
    let Err(err) = lw(&api)
        .field_filter(FieldFilter::managed_fields())
        .watch(&WatchParams::default(), "1")
        .await
    else {
        panic!("expected an error")
    };
    assert!(err.is_internal_error(), "{err:?}");
}
