//! `kubectl get` asks for a `meta.k8s.io` Table first
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...`): the server answers one
//! with the kind's columns, as the real printers (ConfigMap `Data`, Pod `Ready`/`Status`/
//! `Restarts`, a CRD's `additionalPrinterColumns`), so kubectl shows them.

use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::{create_widget_crd, send_raw};

/// What kubectl 1.20 to 1.3x sends on `kubectl get`.
const KUBECTL_GET: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

async fn send(
    server: &ApiServer,
    method: &str,
    uri: &str,
    accept: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let body = body
        .map(|b| serde_json::to_vec(&b).unwrap())
        .unwrap_or_default();
    let headers = [("accept", accept), ("content-type", "application/json")];
    let answer = send_raw(server, method, uri, &headers, body).await;
    (answer.code, answer.json())
}

async fn create(server: &ApiServer, uri: &str, body: Value) {
    let (code, created) = send(server, "POST", uri, "application/json", Some(body)).await;
    assert_eq!(code, 201, "{created}");
}

/// `(name, type, priority)` of each column.
fn columns(table: &Value) -> Vec<(String, String, u64)> {
    table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["type"].as_str().unwrap().to_owned(),
                c["priority"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn column(name: &str, kind: &str, priority: u64) -> (String, String, u64) {
    (name.to_owned(), kind.to_owned(), priority)
}

/// Whether `cell` is an age the real printers write for a just-created object.
fn is_fresh_age(cell: &Value) -> bool {
    cell.as_str()
        .is_some_and(|s| s == "0s" || s == "1s" || s == "2s")
}

#[tokio::test]
async fn config_maps_list_as_a_table_with_their_data_count() {
    let server = ApiServer::start().await.unwrap();
    let cms = "/api/v1/namespaces/default/configmaps";
    create(
        &server,
        cms,
        json!({"metadata": {"name": "two"}, "data": {"a": "1"}, "binaryData": {"b": "AA=="}}),
    )
    .await;
    let (code, table) = send(&server, "GET", cms, KUBECTL_GET, None).await;
    assert_eq!(code, 200, "{table}");
    assert_eq!(
        (table["kind"].as_str(), table["apiVersion"].as_str()),
        (Some("Table"), Some("meta.k8s.io/v1"))
    );
    assert_eq!(
        columns(&table),
        [
            column("Name", "string", 0),
            column("Data", "string", 0),
            column("Age", "string", 0)
        ]
    );
    assert_eq!(table["columnDefinitions"][0]["format"], "name");
    assert_eq!(
        table["metadata"]["resourceVersion"],
        server.current_resource_version().to_string()
    );
    let row = &table["rows"][0];
    assert_eq!(row["cells"][0], "two");
    assert_eq!(row["cells"][1], 2);
    assert!(is_fresh_age(&row["cells"][2]), "{row}");
    // The row's object is the object's metadata by default (includeObject=Metadata).
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(row["object"]["metadata"]["name"], "two");
    assert!(row["object"].get("data").is_none(), "{row}");

    let (_, table) = send(
        &server,
        "GET",
        &format!("{cms}?includeObject=Object"),
        KUBECTL_GET,
        None,
    )
    .await;
    assert_eq!(table["rows"][0]["object"]["data"], json!({"a": "1"}));
    let (_, table) = send(
        &server,
        "GET",
        &format!("{cms}?includeObject=None"),
        KUBECTL_GET,
        None,
    )
    .await;
    assert!(table["rows"][0].get("object").is_none(), "{table}");
    let (code, status) = send(
        &server,
        "GET",
        &format!("{cms}?includeObject=All"),
        KUBECTL_GET,
        None,
    )
    .await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (400, Some("BadRequest")),
        "{status}"
    );

    // One object is a one-row Table; a v1beta1 Table when that is asked first; plain
    // JSON still answers a plain list.
    let (_, table) = send(&server, "GET", &format!("{cms}/two"), KUBECTL_GET, None).await;
    assert_eq!(table["rows"].as_array().unwrap().len(), 1);
    let beta = "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let (_, table) = send(&server, "GET", cms, beta, None).await;
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1beta1");
    let (_, list) = send(&server, "GET", cms, "application/json", None).await;
    assert_eq!(list["kind"], "ConfigMapList");
}

#[tokio::test]
async fn pods_show_ready_status_and_restarts_with_wide_columns_at_priority_1() {
    let server = ApiServer::start().await.unwrap();
    let pods = "/api/v1/namespaces/default/pods";
    create(
        &server,
        pods,
        json!({"metadata": {"name": "web"},
        "spec": {"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]}}),
    )
    .await;
    let status = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "status": {
        "phase": "Running", "podIP": "10.0.0.7",
        "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 2, "image": "i", "imageID": "", "state": {"running": {}}},
            {"name": "b", "ready": false, "restartCount": 1, "image": "i", "imageID": "",
             "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
    let (code, written) = send(
        &server,
        "PUT",
        &format!("{pods}/web/status"),
        "application/json",
        Some(status),
    )
    .await;
    assert_eq!(code, 200, "{written}");
    let (code, table) = send(&server, "GET", pods, KUBECTL_GET, None).await;
    assert_eq!(code, 200, "{table}");
    assert_eq!(
        columns(&table),
        [
            column("Name", "string", 0),
            column("Ready", "string", 0),
            column("Status", "string", 0),
            column("Restarts", "string", 0),
            column("Age", "string", 0),
            column("IP", "string", 1),
            column("Node", "string", 1),
            column("Nominated Node", "string", 1),
            column("Readiness Gates", "string", 1),
        ]
    );
    let cells = table["rows"][0]["cells"].as_array().unwrap();
    assert_eq!(
        cells[..4],
        [
            json!("web"),
            json!("1/2"),
            json!("CrashLoopBackOff"),
            json!(3)
        ]
    );
    assert!(is_fresh_age(&cells[4]), "{cells:?}");
    assert_eq!(
        cells[5..],
        [
            json!("10.0.0.7"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[tokio::test]
async fn custom_objects_show_their_crds_printer_columns() {
    let server = ApiServer::start().await.unwrap();
    let printer_columns = json!([
        {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]);
    create_widget_crd(&server, printer_columns).await;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    create(
        &server,
        widgets,
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"color": "blue", "size": 3}}),
    )
    .await;
    create(
        &server,
        widgets,
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "bare"}}),
    )
    .await;
    let (code, table) = send(&server, "GET", widgets, KUBECTL_GET, None).await;
    assert_eq!(code, 200, "{table}");
    assert_eq!(
        columns(&table),
        [
            column("Name", "string", 0),
            column("Color", "string", 0),
            column("Size", "integer", 1),
            column("Age", "date", 0),
        ]
    );
    let rows = table["rows"].as_array().unwrap();
    let cells = |row: &Value| row["cells"].as_array().unwrap().clone();
    let (bare, w) = (cells(&rows[0]), cells(&rows[1]));
    assert_eq!(w[..3], [json!("w"), json!("blue"), json!(3)]);
    assert!(is_fresh_age(&w[3]), "a date column shows the age: {w:?}");
    // Absent values are null cells (kubectl prints `<none>`).
    assert_eq!(bare[..3], [json!("bare"), Value::Null, Value::Null]);
    // The CRDs themselves: the default convertor's Name and Created At.
    let (_, table) = send(
        &server,
        "GET",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        KUBECTL_GET,
        None,
    )
    .await;
    assert_eq!(
        columns(&table),
        [column("Name", "string", 0), column("Created At", "date", 0)]
    );
    assert_eq!(table["rows"][0]["cells"][0], "widgets.example.com");
    let created = table["rows"][0]["cells"][1].as_str().unwrap();
    assert!(
        created.len() == 20 && created.ends_with('Z'),
        "RFC 3339: {created}"
    );
}
