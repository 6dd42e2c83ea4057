//! CustomResourceDefinitions through the API, over HTTP with a plain `kube::Client`, as
//! envtest users rely on: create → Established → served (discovery, CRUD, watch, status,
//! scale) → schema validation (422) and pruning → delete → 404.

use futures::TryStreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent,
};
use kube::runtime::wait::{await_condition, conditions};
use kube::{CustomResource, CustomResourceExt};
use reflector_testkit::ApiServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::support::{
    PATIENCE, api_status, assert_status, create, expect_initial_events_end, lists_nothing, merge,
    names_in, status_of, watch_from,
};

const CRD_NAME: &str = "gadgets.example.com";

fn gadget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget", "shortNames": ["gd"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
                },
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["color"],
                            "properties": {
                                "color": {"type": "string", "enum": ["red", "blue"]},
                                "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                                "labels": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                            }
                        },
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                    }
                }}
            }]
        }
    }))
    .expect("valid CRD")
}

fn gadgets(server: &ApiServer) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    Api::namespaced_with(server.client(), "default", &resource)
}

fn gadget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .expect("valid object")
}

async fn create_established(server: &ApiServer) -> CustomResourceDefinition {
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    crds.create(&PostParams::default(), &gadget_crd())
        .await
        .expect("CRD created");
    tokio::time::timeout(
        PATIENCE,
        await_condition(crds.clone(), CRD_NAME, conditions::is_crd_established()),
    )
    .await
    .expect("established in time")
    .expect("watch works")
    .expect("CRD exists")
}

async fn get_json(server: &ApiServer, path: &str) -> Result<Value, kube::Error> {
    let request = http::Request::get(path).body(Vec::new()).expect("request");
    server.client().request::<Value>(request).await
}

#[tokio::test]
async fn crd_created_through_the_api_is_established_with_accepted_names_and_discovered() {
    let server = ApiServer::start().await.unwrap();
    let crd = create_established(&server).await;
    let status = crd.status.expect("status set");
    let accepted = status.accepted_names.expect("acceptedNames set");
    assert_eq!(accepted.plural, "gadgets");
    assert_eq!(accepted.singular.as_deref(), Some("gadget"), "defaulted");
    assert_eq!(
        accepted.list_kind.as_deref(),
        Some("GadgetList"),
        "defaulted"
    );
    assert_eq!(status.stored_versions, Some(vec!["v1".to_owned()]));
    let conditions = status.conditions.unwrap_or_default();
    for ty in ["NamesAccepted", "Established"] {
        assert!(
            conditions
                .iter()
                .any(|c| c.type_ == ty && c.status == "True"),
            "{ty} True in {conditions:?}"
        );
    }

    let groups = get_json(&server, "/apis").await.unwrap();
    let names = names_in(&groups, "groups");
    assert!(names.contains(&"example.com"), "{names:?}");
    assert!(names.contains(&"apiextensions.k8s.io"), "{names:?}");
    let resources = get_json(&server, "/apis/example.com/v1").await.unwrap();
    let resources = resources["resources"].as_array().unwrap();
    let main = resources.iter().find(|r| r["name"] == "gadgets").unwrap();
    assert_eq!(main["kind"], "Gadget");
    assert_eq!(main["singularName"], "gadget");
    assert_eq!(main["namespaced"], true);
    assert_eq!(main["shortNames"], json!(["gd"]));
    assert_eq!(main["categories"], json!(["all"]));
    let scale = resources
        .iter()
        .find(|r| r["name"] == "gadgets/scale")
        .expect("scale subresource discovered");
    assert_eq!(
        (&scale["group"], &scale["version"], &scale["kind"]),
        (&json!("autoscaling"), &json!("v1"), &json!("Scale"))
    );
    assert!(resources.iter().any(|r| r["name"] == "gadgets/status"));
}

#[tokio::test]
async fn served_kind_supports_crud_watch_and_status() {
    let server = ApiServer::start().await.unwrap();
    create_established(&server).await;
    let api = gadgets(&server);
    let mut watch = watch_from(&api, "0").await;
    expect_initial_events_end(&mut watch).await;
    let created = create(&api, &gadget("g1", json!({"color": "red"}))).await;
    assert_eq!(created.metadata.generation, Some(1));
    match watch.try_next().await.unwrap() {
        Some(WatchEvent::Added(o)) => assert_eq!(o.metadata.name.as_deref(), Some("g1")),
        other => panic!("expected ADDED, got {other:?}"),
    }
    let status_patch = json!({"status": {"replicas": 3}});
    let with_status = api
        .patch_status("g1", &PatchParams::default(), &Patch::Merge(&status_patch))
        .await
        .unwrap();
    assert_eq!(with_status.data["status"]["replicas"], 3);
    assert_eq!(
        with_status.metadata.generation,
        Some(1),
        "status writes keep generation"
    );
    let spec_patch = json!({"spec": {"color": "blue"}, "status": {"replicas": 99}});
    let patched = api
        .patch("g1", &PatchParams::default(), &Patch::Merge(&spec_patch))
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["color"], "blue");
    assert_eq!(
        patched.data["status"]["replicas"], 3,
        "main writes keep status"
    );
    assert_eq!(patched.metadata.generation, Some(2));
    let listed = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    api.delete("g1", &DeleteParams::default()).await.unwrap();
    let mut types = Vec::new();
    while let Some(event) = watch.try_next().await.unwrap() {
        match event {
            WatchEvent::Modified(_) => types.push("MODIFIED"),
            WatchEvent::Deleted(_) => {
                types.push("DELETED");
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(types, ["MODIFIED", "MODIFIED", "DELETED"]);
}

#[tokio::test]
async fn custom_objects_are_validated_against_the_schema_with_the_real_errors() {
    let server = ApiServer::start().await.unwrap();
    create_established(&server).await;
    let api = gadgets(&server);
    let err = api
        .create(
            &PostParams::default(),
            &gadget("bad", json!({"color": "green", "replicas": "two"})),
        )
        .await
        .unwrap_err();
    let status = api_status(err);
    assert_status(&status, 422, "Invalid", |m| {
        m == "Gadget.example.com \"bad\" is invalid: [spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\", spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"]"
    });
    let causes = status.details.unwrap().causes;
    assert_eq!(causes.len(), 2);
    assert_eq!(causes[0].field, "spec.color");
    assert_eq!(causes[0].reason, "FieldValueNotSupported");

    let err = api
        .create(
            &PostParams::default(),
            &gadget("big", json!({"color": "red", "replicas": 11})),
        )
        .await
        .unwrap_err();
    assert_eq!(
        api_status(err).message,
        "Gadget.example.com \"big\" is invalid: spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
    );
    let err = api
        .create(&PostParams::default(), &gadget("empty", json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        api_status(err).message,
        "Gadget.example.com \"empty\" is invalid: spec.color: Required value"
    );
    // Updates are validated too.
    create(&api, &gadget("ok", json!({"color": "red"}))).await;
    let err = merge(&api, "ok", json!({"spec": {"replicas": -1}}))
        .await
        .unwrap_err();
    assert_eq!(api_status(err).code, 422);
}

#[tokio::test]
async fn unknown_fields_are_pruned_and_defaults_applied() {
    let server = ApiServer::start().await.unwrap();
    create_established(&server).await;
    let api = gadgets(&server);
    let created = create(
        &api,
        &gadget(
            "g",
            json!({"color": "red", "colour": "blue", "labels": {"kept": {"deep": 1}}}),
        ),
    )
    .await;
    assert_eq!(
        created.data["spec"],
        json!({"color": "red", "replicas": 1, "labels": {"kept": {"deep": 1}}}),
        "`colour` pruned, `replicas` defaulted, preserved fields kept"
    );
    let stored = api.get("g").await.unwrap();
    assert_eq!(stored.data["spec"], created.data["spec"]);
}

#[tokio::test]
async fn scale_subresource_reads_and_writes_the_replica_paths() {
    let server = ApiServer::start().await.unwrap();
    create_established(&server).await;
    let api = gadgets(&server);
    create(&api, &gadget("g", json!({"color": "red", "replicas": 2}))).await;
    api.patch_status(
        "g",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 1}})),
    )
    .await
    .unwrap();
    let scale = api.get_scale("g").await.unwrap();
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(2));
    assert_eq!(scale.status.map(|s| s.replicas), Some(1));
    let scale_to = |replicas: u32| Patch::Merge(json!({"spec": {"replicas": replicas}}));
    let scaled = api
        .patch_scale("g", &PatchParams::default(), &scale_to(5))
        .await
        .unwrap();
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(5));
    assert_eq!(api.get("g").await.unwrap().data["spec"]["replicas"], 5);
    let too_many = scale_to(50);
    let status = status_of(
        api.patch_scale("g", &PatchParams::default(), &too_many)
            .await,
    );
    assert_eq!(status.code, 422, "the object's schema still applies");
}

#[tokio::test]
async fn invalid_crds_are_rejected_with_the_real_wording() {
    let server = ApiServer::start().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let mut wrong_name = gadget_crd();
    wrong_name.metadata.name = Some("widgets.example.com".to_owned());
    let status = status_of(crds.create(&PostParams::default(), &wrong_name).await);
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: metadata.name: Invalid value: \"widgets.example.com\": must be spec.names.plural+\".\"+spec.group"
    );
    let mut bad_scope = gadget_crd();
    bad_scope.spec.scope = "Global".to_owned();
    let status = status_of(crds.create(&PostParams::default(), &bad_scope).await);
    assert_eq!(
        status.message,
        "CustomResourceDefinition.apiextensions.k8s.io \"gadgets.example.com\" is invalid: spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""
    );
    let mut no_dot: Value = serde_json::to_value(gadget_crd()).unwrap();
    no_dot["metadata"]["name"] = json!("gadgets.example");
    no_dot["spec"]["group"] = json!("example");
    let no_dot: CustomResourceDefinition = serde_json::from_value(no_dot).unwrap();
    let status = status_of(crds.create(&PostParams::default(), &no_dot).await);
    assert!(
        status.message.ends_with(
            "spec.group: Invalid value: \"example\": should be a domain with at least one dot"
        ),
        "{}",
        status.message
    );
    assert!(lists_nothing(&crds).await);
    assert_eq!(
        get_json(&server, "/apis/example.com/v1/namespaces/default/gadgets")
            .await
            .map_err(api_status)
            .unwrap_err()
            .code,
        404,
        "a rejected CRD serves nothing"
    );
}

#[tokio::test]
async fn deleting_the_crd_deletes_its_objects_and_stops_serving() {
    let server = ApiServer::start().await.unwrap();
    create_established(&server).await;
    let api = gadgets(&server);
    create(&api, &gadget("g", json!({"color": "red"}))).await;
    let mut watch = watch_from(&api, "0").await;
    assert!(matches!(
        watch.try_next().await.unwrap(),
        Some(WatchEvent::Added(_))
    ));
    expect_initial_events_end(&mut watch).await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    crds.delete(CRD_NAME, &DeleteParams::default())
        .await
        .unwrap();
    match watch.try_next().await.unwrap() {
        Some(WatchEvent::Deleted(o)) => assert_eq!(o.metadata.name.as_deref(), Some("g")),
        other => panic!("expected the object's DELETED, got {other:?}"),
    }
    assert_eq!(status_of(crds.get(CRD_NAME).await).code, 404);
    let status = status_of(api.get("g").await);
    assert_eq!(status.code, 404);
    assert_eq!(
        status.message,
        "the server could not find the requested resource"
    );
    assert_eq!(
        get_json(&server, "/apis/example.com/v1")
            .await
            .map_err(api_status)
            .unwrap_err()
            .code,
        404
    );
    let groups = get_json(&server, "/apis").await.unwrap();
    assert!(
        !groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "example.com"),
        "discovery no longer lists the group"
    );
    // Creating it again serves the kind again, empty.
    create_established(&server).await;
    assert!(lists_nothing(&api).await);
}

/// A typed CRD registered with `ApiServer::register`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "typed.example.com",
    version = "v1",
    kind = "Sprocket",
    namespaced
)]
pub struct SprocketSpec {
    /// Teeth.
    pub teeth: u32,
}

#[tokio::test]
async fn register_stores_the_crd_so_it_is_established_and_its_schema_applies() {
    let server = ApiServer::start().await.unwrap();
    server.register::<Sprocket>();
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let crd = tokio::time::timeout(
        PATIENCE,
        await_condition(crds, Sprocket::crd_name(), conditions::is_crd_established()),
    )
    .await
    .expect("in time")
    .unwrap()
    .expect("CRD stored");
    assert_eq!(crd.spec.names.kind, "Sprocket");
    let dynamic = ApiResource::erase::<Sprocket>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &dynamic);
    let mut object = gadget("s", json!({"teeth": 12, "extra": true}));
    object.types = Some(kube::core::TypeMeta {
        api_version: "typed.example.com/v1".to_owned(),
        kind: "Sprocket".to_owned(),
    });
    let created = create(&api, &object).await;
    assert_eq!(
        created.data["spec"],
        json!({"teeth": 12}),
        "pruned by K's schema"
    );
    let typed: Api<Sprocket> = Api::namespaced(server.client(), "default");
    assert_eq!(typed.get("s").await.unwrap().spec.teeth, 12);
    let err = api
        .create(&PostParams::default(), &{
            let mut bad = object.clone();
            bad.metadata.name = Some("t".to_owned());
            bad.data["spec"] = json!({"teeth": "many"});
            bad
        })
        .await
        .unwrap_err();
    assert_eq!(api_status(err).code, 422);
}

#[tokio::test]
async fn watches_of_a_deleted_crds_kind_end_after_its_objects_deleted() {
    let server = ApiServer::start().await.unwrap();
    create_established(&server).await;
    let api = gadgets(&server);
    create(&api, &gadget("g", json!({"color": "red"}))).await;
    let mut from_zero = watch_from(&api, "0").await;
    let mut from_now = watch_from(&api, &server.current_resource_version().to_string()).await;
    assert!(matches!(
        from_zero.try_next().await.unwrap(),
        Some(WatchEvent::Added(_))
    ));
    expect_initial_events_end(&mut from_zero).await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    crds.delete(CRD_NAME, &DeleteParams::default())
        .await
        .unwrap();
    // Served again at once, with an object: a watch still open would see it.
    create_established(&server).await;
    create(&api, &gadget("h", json!({"color": "blue"}))).await;
    for watch in [&mut from_zero, &mut from_now] {
        match watch.try_next().await.unwrap() {
            Some(WatchEvent::Deleted(o)) => assert_eq!(o.metadata.name.as_deref(), Some("g")),
            other => panic!("expected the object's DELETED, got {other:?}"),
        }
        assert!(
            watch.try_next().await.unwrap().is_none(),
            "the watch ends with the kind's storage"
        );
    }
}
