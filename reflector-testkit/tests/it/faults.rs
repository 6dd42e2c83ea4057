//! Every fault kind with its observable effect, and the request log.

use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use reflector_testkit::{ApiServer, BadLine, Fault, Matcher, Verb};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{PATIENCE, assert_status, continue_too_old, create, status_of};

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.namespace = Some("default".to_owned());
    cm
}

async fn server_with(n: usize) -> ApiServer {
    let server = ApiServer::start().await.unwrap();
    let objects: Vec<ConfigMap> = (0..n).map(|i| cm(&format!("cm-{i}"))).collect();
    server.insert_many(&objects).unwrap();
    server
}

fn api(server: &ApiServer) -> Api<ConfigMap> {
    Api::namespaced(server.client_without_retries(), "default")
}

fn code(err: kube::Error) -> (u16, String) {
    match err {
        kube::Error::Api(status) => (status.code, status.reason.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

type Events = std::pin::Pin<Box<dyn Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Send>>;

async fn watch(api: &Api<ConfigMap>, rv: &str) -> Events {
    api.watch(&WatchParams::default().disable_bookmarks(), rv)
        .await
        .unwrap()
        .boxed()
}

async fn next(stream: &mut Events) -> Option<kube::Result<WatchEvent<ConfigMap>>> {
    tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("hang guard")
}

fn added_name(item: Option<kube::Result<WatchEvent<ConfigMap>>>) -> String {
    match item {
        Some(Ok(WatchEvent::Added(o))) => o.metadata.name.unwrap(),
        other => panic!("expected ADDED, got {other:?}"),
    }
}

/// Raw HTTP/1.1 GET with `Connection: close`; returns (head, raw chunked body bytes as
/// text) once the server closes the connection.
async fn raw_get(server: &ApiServer, path_and_query: &str) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let request =
        format!("GET {path_and_query} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut raw))
        .await
        .expect("hang guard");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_owned(), body.to_owned())
}

#[tokio::test]
async fn drop_watches_ends_open_watches_cleanly() {
    let server = server_with(1).await;
    let api = api(&server);
    let mut stream = watch(&api, "0").await;
    assert_eq!(added_name(next(&mut stream).await), "cm-0");
    assert_eq!(server.faults().drop_watches(), 1);
    assert!(next(&mut stream).await.is_none(), "clean end of stream");

    // On the wire: the chunked body is terminated properly.
    let path = "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0";
    let faults = server.faults();
    let reader = tokio::spawn({
        let s = server.addr();
        async move {
            let mut stream = tokio::net::TcpStream::connect(s).await.unwrap();
            let request =
                format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut raw = Vec::new();
            let _ = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut raw)).await;
            String::from_utf8_lossy(&raw).into_owned()
        }
    });
    // Drop once the watch is open.
    tokio::time::timeout(PATIENCE, async {
        while server.open_watches() == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("hang guard");
    faults.drop_watches();
    let raw = reader.await.unwrap();
    assert!(
        raw.ends_with("0\r\n\r\n"),
        "terminating chunk present: {raw:?}"
    );
}

#[tokio::test]
async fn abort_watch_cuts_the_connection_mid_chunk() {
    let server = server_with(3).await;
    let id = server.inject(
        Matcher::verb(Verb::Watch),
        Fault::AbortWatch { after_events: 1 },
    );
    let (head, body) = raw_get(
        &server,
        "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0",
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains("\"name\":\"cm-0\""), "first event intact");
    assert!(
        !body.contains("\"name\":\"cm-2\""),
        "nothing after the abort"
    );
    assert!(
        !body.ends_with("0\r\n\r\n"),
        "no terminating chunk: {body:?}"
    );
    assert_eq!(server.fault_hits(id), 1);

    // Through kube: the watch yields the first event, then the stream breaks off.
    server.inject(
        Matcher::verb(Verb::Watch),
        Fault::AbortWatch { after_events: 1 },
    );
    let api = api(&server);
    let mut stream = watch(&api, "0").await;
    assert_eq!(added_name(next(&mut stream).await), "cm-0");
    let rest: Vec<_> = tokio::time::timeout(PATIENCE, stream.collect::<Vec<_>>())
        .await
        .expect("hang guard");
    assert!(
        rest.iter().all(|r| !matches!(r, Ok(WatchEvent::Added(_)))),
        "no further events: {rest:?}"
    );
}

#[tokio::test]
async fn silent_watch_sends_nothing() {
    let server = server_with(2).await;
    let id = server.inject(Matcher::verb(Verb::Watch), Fault::SilentWatch);
    let api = api(&server);
    let mut silent = watch(&api, "0").await;
    // A second watch (not targeted: the fault fires once) sees both objects...
    let mut normal = watch(&api, "0").await;
    assert_eq!(added_name(next(&mut normal).await), "cm-0");
    assert_eq!(added_name(next(&mut normal).await), "cm-1");
    // ...while the silent one has produced nothing; dropping watches ends it.
    assert!(futures::poll!(silent.next()).is_pending());
    server.faults().drop_watches();
    assert!(
        next(&mut silent).await.is_none(),
        "silent watch sent no events before it ended"
    );
    assert_eq!(server.fault_hits(id), 1);
}

#[tokio::test]
async fn watch_gone_sends_410_error_event() {
    let server = server_with(1).await;
    let id = server.inject(
        Matcher::verb(Verb::Watch).resource("configmaps"),
        Fault::WatchGone,
    );
    let api = api(&server);
    let mut stream = watch(&api, "0").await;
    match next(&mut stream).await {
        Some(Ok(WatchEvent::Error(status))) => {
            assert_status(&status, 410, "Expired", |m| {
                m.starts_with("too old resource version")
            });
        }
        other => panic!("expected ERROR, got {other:?}"),
    }
    assert!(next(&mut stream).await.is_none());
    assert_eq!(server.fault_hits(id), 1);
    let log = server.request_log();
    let entry = log.iter().find(|e| e.verb == Verb::Watch).unwrap();
    assert_eq!((entry.status, entry.fault), (200, Some(id)));
}

#[tokio::test]
async fn gone_as_http_response() {
    let server = server_with(1).await;
    server.inject(Matcher::verb(Verb::List), Fault::Gone);
    assert_eq!(
        code(api(&server).list(&ListParams::default()).await.unwrap_err()),
        (410, "Expired".into())
    );
    assert_eq!(
        api(&server)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1,
        "fault fired once"
    );
}

#[tokio::test]
async fn continue_expired_only_hits_continue_pages() {
    let server = server_with(3).await;
    let id = server.inject(Matcher::verb(Verb::List).every(), Fault::ContinueExpired);
    let api = api(&server);
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    assert_eq!(first.items.len(), 1);
    let token = first.metadata.continue_.unwrap();
    let next_page = ListParams::default().limit(1).continue_token(&token);
    let status = status_of(api.list(&next_page).await);
    assert_status(&status, 410, "Expired", continue_too_old);
    assert_eq!(server.fault_hits(id), 1, "the first page did not count");
}

#[tokio::test]
async fn too_many_requests_json_and_plain_text() {
    let server = server_with(1).await;
    server.inject(
        Matcher::verb(Verb::List),
        Fault::TooManyRequests {
            retry_after_secs: 2,
            plain_text: false,
        },
    );
    let status = status_of(api(&server).list(&ListParams::default()).await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (429, "TooManyRequests")
    );
    assert_eq!(status.details.unwrap().retry_after_seconds, 2);

    server.inject(
        Matcher::verb(Verb::List),
        Fault::TooManyRequests {
            retry_after_secs: 3,
            plain_text: true,
        },
    );
    let status = status_of(api(&server).list(&ListParams::default()).await);
    let message = status.message;
    assert_eq!(status.code, 429, "{message}");
    assert!(message.contains("Too many requests, please try again later."));

    for plain in [false, true] {
        server.inject(
            Matcher::verb(Verb::List),
            Fault::TooManyRequests {
                retry_after_secs: 7,
                plain_text: plain,
            },
        );
        let (head, body) = raw_get(&server, "/api/v1/namespaces/default/configmaps").await;
        let head = head.to_lowercase();
        assert!(head.starts_with("http/1.1 429"), "{head}");
        assert!(head.contains("retry-after: 7"), "{head}");
        assert_eq!(head.contains("content-type: text/plain"), plain, "{head}");
        assert_eq!(body.contains("\"kind\":\"Status\""), !plain, "{body}");
    }
}

#[tokio::test]
async fn server_errors_500_503_504() {
    let server = server_with(1).await;
    for (fault, want) in [
        (Fault::InternalError, (500, "InternalError")),
        (Fault::ServiceUnavailable, (503, "ServiceUnavailable")),
        (Fault::GatewayTimeout, (504, "Timeout")),
    ] {
        let id = server.inject(Matcher::verb(Verb::Get).resource("configmaps"), fault);
        assert_eq!(
            code(api(&server).get("cm-0").await.unwrap_err()),
            (want.0, want.1.to_owned())
        );
        assert_eq!(server.fault_hits(id), 1);
    }
    // kube's default client retries a 503 and then succeeds: the fault was consumed once.
    let id = server.inject(Matcher::verb(Verb::Get), Fault::ServiceUnavailable);
    let with_retries: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    assert!(with_retries.get("cm-0").await.is_ok());
    assert_eq!(server.fault_hits(id), 1);
}

/// An injected `Conflict` answers a write 409 `Conflict`, as a stale `resourceVersion`
/// precondition does, and the write is not applied.
#[tokio::test]
async fn conflict_fault_answers_409_and_does_not_apply_the_write() {
    let server = server_with(1).await;
    let before = server.versions::<ConfigMap>(Some("default")).unwrap();
    let id = server.inject(
        Matcher::verb(Verb::Patch).resource("configmaps"),
        Fault::Conflict,
    );
    let patch = kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"x": "y"}}}));
    let err = api(&server)
        .patch("cm-0", &kube::api::PatchParams::default(), &patch)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected a 409, got {err}");
    };
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        r#"Operation cannot be fulfilled on configmaps "cm-0": the object has been modified; please apply your changes to the latest version and try again"#
    );
    assert_eq!(server.fault_hits(id), 1);
    assert_eq!(
        server.versions::<ConfigMap>(Some("default")).unwrap(),
        before,
        "not applied"
    );
    // Consumed: the next patch applies.
    api(&server)
        .patch("cm-0", &kube::api::PatchParams::default(), &patch)
        .await
        .unwrap();
}

/// `Forbidden` answers as the real authorizer: 403, reason `Forbidden`, the message
/// naming the verb, resource, group, object and scope, and `details` with them.
#[tokio::test]
async fn forbidden_reads_as_the_authorizers_denial() {
    let server = server_with(1).await;
    server.inject(Matcher::verb(Verb::Get), Fault::Forbidden);
    let Err(kube::Error::Api(status)) = api(&server).get("cm-0").await else {
        panic!("expected a 403");
    };
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        r#"configmaps "cm-0" is forbidden: User "system:anonymous" cannot get resource "configmaps" in API group "" in the namespace "default""#
    );

    server.inject(Matcher::verb(Verb::Watch), Fault::Forbidden);
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::all(server.client_without_retries());
    let Err(kube::Error::Api(status)) = leases.watch(&WatchParams::default(), "0").await else {
        panic!("expected a 403");
    };
    assert_eq!(
        status.message,
        r#"leases.coordination.k8s.io is forbidden: User "system:anonymous" cannot watch resource "leases" in API group "coordination.k8s.io" at the cluster scope"#
    );
    let raw = raw_get(&server, "/api/v1/namespaces/default/configmaps/cm-0").await;
    assert!(raw.0.contains("200"), "one-shot: {}", raw.0);
}

#[tokio::test]
async fn nth_and_times_matchers_are_deterministic() {
    let server = server_with(1).await;
    let api = api(&server);
    let id = server.inject(Matcher::verb(Verb::Get).nth(2), Fault::InternalError);
    let results: Vec<bool> = futures::future::join_all((0..1).map(|_| api.get("cm-0")))
        .await
        .into_iter()
        .map(|r| r.is_ok())
        .collect();
    assert_eq!(results, vec![true]);
    assert!(api.get("cm-0").await.is_err());
    assert!(api.get("cm-0").await.is_ok());
    assert_eq!(server.fault_hits(id), 1);

    let id = server.inject(Matcher::verb(Verb::Get).times(2), Fault::InternalError);
    assert!(api.get("cm-0").await.is_err());
    assert!(api.get("cm-0").await.is_err());
    assert!(api.get("cm-0").await.is_ok());
    assert_eq!(server.fault_hits(id), 2);
    // A watch already streaming does not consume a fault registered later.
    let mut stream = watch(&api, "0").await;
    let id = server.inject(Matcher::any(), Fault::InternalError);
    assert_eq!(added_name(next(&mut stream).await), "cm-0");
    assert_eq!(server.fault_hits(id), 0);
}

/// A `userAgent` matcher fires only on the requests of the client that sends that
/// agent: one replica's writes fail while another's, to the same object, succeed; and
/// that client's writes name it as their field manager.
#[tokio::test]
async fn user_agent_matcher_targets_one_client() {
    let server = server_with(1).await;
    let replica = |agent: &str| -> Api<ConfigMap> {
        Api::namespaced(server.client_with_user_agent(agent).unwrap(), "default")
    };
    let (a, b) = (replica("replica-0/v1"), replica("replica-1/v1"));
    let id = server.inject(
        Matcher::verb(Verb::Get).user_agent("replica-0").every(),
        Fault::InternalError,
    );
    for _ in 0..3 {
        assert_eq!(code(a.get("cm-0").await.unwrap_err()).0, 500);
        assert!(b.get("cm-0").await.is_ok(), "the other client is untouched");
    }
    assert!(
        api(&server).get("cm-0").await.is_ok(),
        "nor a client without an agent"
    );
    assert_eq!(server.fault_hits(id), 3);

    let mut by_b = cm("by-b");
    by_b.data = Some([("k".to_owned(), "v".to_owned())].into());
    let created = create(&b, &by_b).await;
    let managers: Vec<_> = created
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(managers, ["replica-1"]);
    assert!(matches!(
        server.client_with_user_agent("bad\nagent"),
        Err(reflector_testkit::TestkitError::InvalidUserAgent(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn latency_before_headers() {
    let server = server_with(1).await;
    let api = api(&server);
    server.inject(
        Matcher::verb(Verb::Get),
        Fault::LatencyBeforeHeaders(Duration::from_secs(30)),
    );
    let start = tokio::time::Instant::now();
    api.get("cm-0").await.unwrap();
    assert!(
        start.elapsed() >= Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    let start = tokio::time::Instant::now();
    api.get("cm-0").await.unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "second request not delayed"
    );
}

#[tokio::test(start_paused = true)]
async fn latency_between_events() {
    let server = server_with(3).await;
    let api = api(&server);
    server.inject(
        Matcher::verb(Verb::Watch),
        Fault::LatencyBetweenEvents(Duration::from_secs(5)),
    );
    let mut stream = watch(&api, "0").await;
    let start = tokio::time::Instant::now();
    for i in 0..3 {
        assert_eq!(added_name(next(&mut stream).await), format!("cm-{i}"));
        assert!(
            start.elapsed() >= Duration::from_secs(5 * (i + 1)),
            "event {i} at {:?}",
            start.elapsed()
        );
    }
}

#[tokio::test]
async fn bad_lines_into_watches() {
    let server = server_with(2).await;
    let api = api(&server);

    // Malformed line after the first event: kube reports a decode error, then carries on.
    server.inject(
        Matcher::verb(Verb::Watch),
        Fault::BadLine {
            after_events: 1,
            line: BadLine::Malformed,
        },
    );
    let mut stream = watch(&api, "0").await;
    assert_eq!(added_name(next(&mut stream).await), "cm-0");
    assert!(matches!(
        next(&mut stream).await,
        Some(Err(kube::Error::SerdeError(_)))
    ));
    assert_eq!(added_name(next(&mut stream).await), "cm-1");

    // Non-event JSON: not a WatchEvent.
    server.inject(
        Matcher::verb(Verb::Watch),
        Fault::BadLine {
            after_events: 0,
            line: BadLine::NonEvent,
        },
    );
    let mut stream = watch(&api, "0").await;
    assert!(matches!(next(&mut stream).await, Some(Err(_))));
    assert_eq!(added_name(next(&mut stream).await), "cm-0");

    // Truncated line: on the wire, half an event followed by a newline.
    server.inject(
        Matcher::verb(Verb::Watch),
        Fault::BadLine {
            after_events: 2,
            line: BadLine::Truncated,
        },
    );
    let (_, body) = raw_get(
        &server,
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0&timeoutSeconds=1",
    )
    .await;
    assert!(
        body.contains("{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVer\n"),
        "{body}"
    );
}

#[tokio::test]
async fn inject_line_into_open_watches() {
    let server = server_with(1).await;
    let api = api(&server);
    let mut stream = watch(&api, "0").await;
    assert_eq!(added_name(next(&mut stream).await), "cm-0");
    assert_eq!(server.faults().inject_line(BadLine::Malformed), 1);
    assert!(matches!(
        next(&mut stream).await,
        Some(Err(kube::Error::SerdeError(_)))
    ));
    create(&api, &cm("later")).await;
    assert_eq!(added_name(next(&mut stream).await), "later");
}

#[tokio::test]
async fn request_log_records_verb_path_query_status() {
    let server = server_with(1).await;
    let api = api(&server);
    api.list(&ListParams::default().limit(5).labels("app=x"))
        .await
        .unwrap();
    api.get("cm-0").await.unwrap();
    let _ = api.get("missing").await;
    create(&api, &cm("new")).await;
    let log = server.request_log();
    let summary: Vec<(Verb, &str, u16)> = log
        .iter()
        .map(|e| (e.verb, e.path.as_str(), e.status))
        .collect();
    assert_eq!(
        summary,
        vec![
            (Verb::List, "/api/v1/namespaces/default/configmaps", 200),
            (Verb::Get, "/api/v1/namespaces/default/configmaps/cm-0", 200),
            (
                Verb::Get,
                "/api/v1/namespaces/default/configmaps/missing",
                404
            ),
            (Verb::Create, "/api/v1/namespaces/default/configmaps", 201),
        ]
    );
    assert_eq!(log[0].param("limit"), Some("5"));
    assert_eq!(log[0].param("labelSelector"), Some("app=x"));
    assert_eq!(log[0].resource.as_deref(), Some("configmaps"));
    server.clear_request_log();
    assert!(server.request_log().is_empty());
}
