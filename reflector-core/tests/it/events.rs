//! The event recorder on the embedded API server: series (keyed as client-go keys
//! them), the `regarding` reference as client-go's `GetReference` fills it, the spam
//! filter and its metric, per-object Events, the `regarding.name` field selector, a
//! bounded buffer that never blocks, write failures, and the writer task's lifecycle.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event as EventObject;
use kube::api::{Api, ListParams, PostParams};
use prometheus_client::registry::Registry;
use reflector_core::events::{Event, EventError, Recorder, RecorderConfig};
use reflector_core::metrics::{Metrics, render_metrics};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use tokio_util::sync::CancellationToken;

use crate::support::namespaces::create_namespaces;

const NS: &str = "apps";
const CONTROLLER: &str = "widget-controller";

fn regarding(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("example.com/v1".into()),
        kind: Some("Widget".into()),
        name: Some(name.into()),
        namespace: Some(NS.into()),
        uid: Some(format!("uid-{name}")),
        ..ObjectReference::default()
    }
}

fn reconciled() -> Event {
    Event::normal("Reconciled", "Reconcile").note("ConfigMap is current")
}

/// A recorder counting into a fresh registry.
fn new_recorder(server: &ApiServer, config: RecorderConfig) -> (Recorder, Registry) {
    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    let config = config.metrics(&metrics).reporting_instance("replica-0");
    let recorder = Recorder::with_config(server.client_without_retries(), CONTROLLER, config)
        .expect("valid configuration");
    (recorder, registry)
}

/// `reflector_events_dropped_total{controller,reason}`, 0 when never counted.
fn dropped(registry: &Registry, reason: &str) -> u64 {
    let prefix = format!(
        "reflector_events_dropped_total{{controller=\"{CONTROLLER}\",reason=\"{reason}\"}} "
    );
    render_metrics(registry)
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).map(|v| v.parse().unwrap()))
        .unwrap_or(0)
}

async fn events(server: &ApiServer, fields: &str) -> Vec<EventObject> {
    let api: Api<EventObject> = Api::namespaced(server.client(), NS);
    let mut items = api
        .list(&ListParams::default().fields(fields))
        .await
        .unwrap()
        .items;
    items.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    items
}

fn requests(server: &ApiServer, verb: Verb) -> usize {
    server
        .request_log()
        .iter()
        .filter(|r| r.verb == verb && r.path.contains("/events"))
        .count()
}

/// 100 identical events in a burst: the spam filter lets its burst (25) through and
/// counts the other 75; the 25 are one Event object with `series.count` 25, written
/// by one create (the writer folds what it finds buffered). After the bucket refills
/// one token (5 minutes, within the 6-minute series window), one more occurrence
/// grows the same Event's series to 26 by a patch.
#[tokio::test(start_paused = true)]
async fn a_burst_of_identical_events_is_one_event_counting_what_the_spam_filter_passed() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let (recorder, registry) = new_recorder(&server, RecorderConfig::default());
    for _ in 0..100 {
        recorder
            .publish_ref(&regarding("anvil"), reconciled())
            .unwrap();
    }
    assert_eq!(dropped(&registry, "spam_filter"), 75);
    recorder.flush().await.unwrap();

    let stored = events(&server, "").await;
    assert_eq!(stored.len(), 1, "{stored:#?}");
    let event = &stored[0];
    let series = event.series.as_ref().expect("a series");
    assert_eq!(series.count, 25);
    assert!(
        event
            .metadata
            .name
            .as_deref()
            .unwrap()
            .starts_with("anvil.")
    );
    assert_eq!(event.metadata.namespace.as_deref(), Some(NS));
    assert_eq!(event.type_.as_deref(), Some("Normal"));
    assert_eq!(event.reason.as_deref(), Some("Reconciled"));
    assert_eq!(event.action.as_deref(), Some("Reconcile"));
    assert_eq!(event.note.as_deref(), Some("ConfigMap is current"));
    assert_eq!(event.reporting_controller.as_deref(), Some(CONTROLLER));
    assert_eq!(event.reporting_instance.as_deref(), Some("replica-0"));
    assert_eq!(event.regarding.as_ref(), Some(&regarding("anvil")));
    assert!(event.event_time.is_some());
    assert_eq!(requests(&server, Verb::Create), 1);
    assert_eq!(requests(&server, Verb::Patch), 0);

    tokio::time::advance(Duration::from_secs(300)).await;
    recorder
        .publish_ref(&regarding("anvil"), reconciled())
        .unwrap();
    recorder
        .publish_ref(&regarding("anvil"), reconciled())
        .unwrap();
    recorder.flush().await.unwrap();
    assert_eq!(dropped(&registry, "spam_filter"), 76);
    let stored = events(&server, "").await;
    assert_eq!(stored.len(), 1);
    let grown = stored[0].series.as_ref().unwrap();
    assert_eq!(grown.count, 26);
    assert!(grown.last_observed_time.0 > series.last_observed_time.0);
    assert_eq!(requests(&server, Verb::Patch), 1);
    assert_eq!(dropped(&registry, "rejected"), 0);
}

/// Occurrences after the series window start a new Event object.
#[tokio::test(start_paused = true)]
async fn an_identical_event_after_the_series_window_is_a_new_event() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let config = RecorderConfig::default().series_window(Duration::from_secs(60));
    let (recorder, _registry) = new_recorder(&server, config);
    recorder
        .publish_ref(&regarding("anvil"), reconciled())
        .unwrap();
    recorder.flush().await.unwrap();
    tokio::time::advance(Duration::from_secs(61)).await;
    recorder
        .publish_ref(&regarding("anvil"), reconciled())
        .unwrap();
    recorder.flush().await.unwrap();
    let stored = events(&server, "").await;
    assert_eq!(stored.len(), 2, "{stored:#?}");
    assert!(stored.iter().all(|e| e.series.is_none()));
}

/// client-go's series key has no note: a repeat with the same regarding object, type,
/// reason and action but another note, within the window, joins the series (count 2,
/// a patch), and the stored Event keeps the note it was created with.
#[tokio::test(start_paused = true)]
async fn a_repeat_with_another_note_joins_the_series_and_keeps_the_first_note() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let (recorder, _registry) = new_recorder(&server, RecorderConfig::default());
    let failed = |note: &str| Event::warning("ReconcileFailed", "Reconcile").note(note);
    recorder
        .publish_ref(&regarding("anvil"), failed("500 from the API"))
        .unwrap();
    recorder.flush().await.unwrap();
    tokio::time::advance(Duration::from_secs(30)).await;
    recorder
        .publish_ref(&regarding("anvil"), failed("409 conflict"))
        .unwrap();
    recorder.flush().await.unwrap();

    let stored = events(&server, "").await;
    assert_eq!(stored.len(), 1, "{stored:#?}");
    assert_eq!(stored[0].series.as_ref().map(|s| s.count), Some(2));
    assert_eq!(stored[0].note.as_deref(), Some("500 from the API"));
    assert_eq!(requests(&server, Verb::Create), 1);
    assert_eq!(requests(&server, Verb::Patch), 1);
}

/// `publish(&obj, ..)` references the object as client-go's `GetReference`: the stored
/// Event's `regarding` has the object's apiVersion, kind, namespace, name, uid and
/// `resourceVersion` (no `fieldPath`). As the reference is client-go's series key, an
/// event about the object at its next `resourceVersion` is a new Event.
#[tokio::test(start_paused = true)]
async fn regarding_is_the_objects_reference_with_its_resource_version() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let (recorder, _registry) = new_recorder(&server, RecorderConfig::default());
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("anvil-config".into());
    let created = config_maps
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    recorder.publish(&created, reconciled()).unwrap();
    recorder.flush().await.unwrap();

    let stored = events(&server, "").await;
    assert_eq!(stored.len(), 1, "{stored:#?}");
    let got = stored[0].regarding.clone().expect("regarding");
    let meta = &created.metadata;
    assert_eq!(got.api_version.as_deref(), Some("v1"));
    assert_eq!(got.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(got.namespace.as_deref(), Some(NS));
    assert_eq!(got.name.as_deref(), Some("anvil-config"));
    assert!(meta.uid.is_some() && meta.resource_version.is_some());
    assert_eq!(got.uid, meta.uid);
    assert_eq!(got.resource_version, meta.resource_version);
    assert_eq!(got.field_path, None);

    let mut changed = created.clone();
    changed.data = Some([("k".to_owned(), "v".to_owned())].into());
    let updated = config_maps
        .replace("anvil-config", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_ne!(updated.metadata.resource_version, meta.resource_version);
    recorder.publish(&updated, reconciled()).unwrap();
    recorder.flush().await.unwrap();
    let mut versions: Vec<Option<String>> = events(&server, "")
        .await
        .into_iter()
        .map(|e| e.regarding.and_then(|r| r.resource_version))
        .collect();
    versions.sort();
    let mut want = vec![
        meta.resource_version.clone(),
        updated.metadata.resource_version,
    ];
    want.sort();
    assert_eq!(versions, want);
}

/// Events about different objects, or differing in type and reason, are never folded
/// together; each object has its own spam-filter bucket.
#[tokio::test(start_paused = true)]
async fn events_about_different_objects_are_not_aggregated_together() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let (recorder, registry) = new_recorder(&server, RecorderConfig::default());
    for name in ["anvil", "bolt"] {
        let failed = Event::warning("ReconcileFailed", "Reconcile").note("500 from the API");
        recorder.publish_ref(&regarding(name), failed).unwrap();
        for _ in 0..30 {
            recorder
                .publish_ref(&regarding(name), reconciled())
                .unwrap();
        }
    }
    recorder.flush().await.unwrap();
    let mut summary: Vec<(String, String, i32)> = events(&server, "")
        .await
        .iter()
        .map(|e| {
            (
                e.regarding.as_ref().unwrap().name.clone().unwrap(),
                e.reason.clone().unwrap(),
                e.series.as_ref().map_or(1, |s| s.count),
            )
        })
        .collect();
    summary.sort();
    let expected: Vec<(String, String, i32)> = ["anvil", "bolt"]
        .iter()
        .flat_map(|n| {
            [
                ((*n).to_owned(), "ReconcileFailed".to_owned(), 1),
                ((*n).to_owned(), "Reconciled".to_owned(), 24),
            ]
        })
        .collect();
    assert_eq!(summary, expected);
    // Each object's bucket (25) took its Warning and 24 Reconciled; 6 dropped each.
    assert_eq!(dropped(&registry, "spam_filter"), 12);
}

/// `kubectl events --for widget/anvil` / `kubectl describe`: the `regarding.name` field
/// selector lists one object's Events.
#[tokio::test(start_paused = true)]
async fn a_regarding_name_field_selector_lists_one_objects_events() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let (recorder, _registry) = new_recorder(&server, RecorderConfig::default());
    for name in ["anvil", "bolt", "anvil-2"] {
        recorder
            .publish_ref(&regarding(name), reconciled())
            .unwrap();
        recorder
            .publish_ref(&regarding(name), Event::warning("Slow", "Reconcile"))
            .unwrap();
    }
    recorder.flush().await.unwrap();
    let anvil = events(&server, "regarding.name=anvil").await;
    assert_eq!(anvil.len(), 2, "{anvil:#?}");
    assert!(
        anvil
            .iter()
            .all(|e| e.regarding.as_ref().unwrap().name.as_deref() == Some("anvil"))
    );
    let warnings = events(&server, "regarding.name=anvil,type=Warning").await;
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].reason.as_deref(), Some("Slow"));
    assert_eq!(events(&server, "").await.len(), 6);
}

/// With a buffer of 2 and the writer given no chance to run, `publish` keeps returning
/// at once: 2 events wait, the other 8 are dropped and counted. The 2 are written.
#[tokio::test(start_paused = true)]
async fn a_full_buffer_drops_and_counts_without_blocking_the_caller() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let (recorder, registry) = new_recorder(&server, RecorderConfig::default().buffer(2));
    // Synchronous calls on the one test thread: the writer cannot drain in between.
    for i in 0..10 {
        let name = format!("w{i}");
        recorder
            .publish_ref(&regarding(&name), reconciled())
            .unwrap();
    }
    assert_eq!(dropped(&registry, "buffer_full"), 8);
    recorder.flush().await.unwrap();
    let names: Vec<String> = events(&server, "")
        .await
        .iter()
        .map(|e| e.regarding.as_ref().unwrap().name.clone().unwrap())
        .collect();
    assert_eq!(names, ["w0", "w1"]);
}

/// An error answer from the server is not retried (as client-go): the occurrence is
/// counted as `rejected`, and the next one creates the Event.
#[tokio::test(start_paused = true)]
async fn a_rejected_write_is_counted_and_not_retried() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let (recorder, registry) = new_recorder(&server, RecorderConfig::default());
    let fault = server.inject(
        Matcher::verb(Verb::Create).resource("events").times(1),
        Fault::InternalError,
    );
    recorder
        .publish_ref(&regarding("anvil"), reconciled())
        .unwrap();
    recorder.flush().await.unwrap();
    assert_eq!(server.fault_hits(fault), 1);
    assert_eq!(dropped(&registry, "rejected"), 1);
    assert!(events(&server, "").await.is_empty());
    recorder
        .publish_ref(&regarding("anvil"), reconciled())
        .unwrap();
    recorder.flush().await.unwrap();
    assert_eq!(requests(&server, Verb::Create), 2);
    let stored = events(&server, "").await;
    assert_eq!(stored.len(), 1);
    assert!(stored[0].series.is_none());
}

/// Connection errors are retried every `retry_interval`, at most `max_tries` tries,
/// then counted as `retries_exhausted`; the paused clock runs the waits.
#[tokio::test(start_paused = true)]
async fn connection_errors_are_retried_then_counted() {
    let server = ApiServer::start().await.unwrap();
    let client = server.client_without_retries();
    server.shutdown().await;
    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    let config = RecorderConfig::default()
        .metrics(&metrics)
        .retries(Duration::from_secs(10), 3);
    let recorder = Recorder::with_config(client, CONTROLLER, config).unwrap();
    recorder
        .publish_ref(&regarding("anvil"), reconciled())
        .unwrap();
    let started = tokio::time::Instant::now();
    // The first try happens before the flush is answered; two retries follow.
    recorder.flush().await.unwrap();
    assert_eq!(dropped(&registry, "retries_exhausted"), 0);
    let deadline = started + Duration::from_secs(60);
    while dropped(&registry, "retries_exhausted") == 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(dropped(&registry, "retries_exhausted"), 1);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(20) && waited < Duration::from_secs(22),
        "two retries 10 s apart, took {waited:?}"
    );
}

/// Bad input is a typed error at once: nothing is buffered.
#[tokio::test(start_paused = true)]
async fn invalid_events_and_configurations_are_typed_errors() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let (recorder, _registry) = new_recorder(&server, RecorderConfig::default());
    let cases = [
        (regarding("a"), Event::normal("", "Reconcile"), "reason"),
        (
            regarding("a"),
            Event::normal("R", "x".repeat(129)),
            "action",
        ),
        (regarding("a"), reconciled().note("n".repeat(1025)), "note"),
        (ObjectReference::default(), reconciled(), "regarding.name"),
    ];
    for (regarding, event, field) in cases {
        match recorder.publish_ref(&regarding, event) {
            Err(EventError::InvalidEvent { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: expected InvalidEvent, got {other:?}"),
        }
    }
    recorder.flush().await.unwrap();
    assert!(events(&server, "").await.is_empty());
    let bad = [
        ("", RecorderConfig::default()),
        (CONTROLLER, RecorderConfig::default().buffer(0)),
        (
            CONTROLLER,
            RecorderConfig::default().spam_filter(0, Duration::from_secs(1)),
        ),
        (
            CONTROLLER,
            RecorderConfig::default().reporting_instance("i".repeat(129)),
        ),
    ];
    for (controller, config) in bad {
        let result = Recorder::with_config(server.client(), controller, config);
        assert!(
            matches!(result, Err(EventError::InvalidConfig { .. })),
            "{result:?}"
        );
    }
}

/// Outside a tokio runtime there is no writer to start: a typed error, no panic.
#[test]
fn a_recorder_outside_a_runtime_is_a_typed_error() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(ApiServer::start()).unwrap();
    let client = runtime.block_on(async { server.client() });
    let result = Recorder::new(client, CONTROLLER);
    assert!(matches!(result, Err(EventError::NoRuntime)), "{result:?}");
}

/// Polls (on the paused clock) until `done`, for at most 100 ms of it.
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    done()
}

/// The writer task is the recorder's: dropping the last handle ends it, and so does
/// its cancellation token (after which `publish` answers `Stopped`).
#[tokio::test(start_paused = true)]
async fn the_writer_task_ends_when_the_recorder_is_dropped_or_cancelled() {
    let server = ApiServer::start().await.unwrap();
    // The client's own task (kube's request buffer) is counted in `before`.
    let client = server.client();
    let runtime = tokio::runtime::Handle::current().metrics();
    // Let the client start its own tasks before counting.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let before = runtime.num_alive_tasks();
    let recorder = Recorder::new(client.clone(), CONTROLLER).unwrap();
    assert_eq!(runtime.num_alive_tasks(), before + 1);
    let clone = recorder.clone();
    drop(recorder);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(
        runtime.num_alive_tasks(),
        before + 1,
        "a clone still holds it"
    );
    drop(clone);
    assert!(
        eventually(|| runtime.num_alive_tasks() == before).await,
        "the writer outlived its recorder"
    );

    let stop = CancellationToken::new();
    let config = RecorderConfig::default().cancel(stop.clone());
    let recorder = Recorder::with_config(client.clone(), CONTROLLER, config).unwrap();
    assert_eq!(runtime.num_alive_tasks(), before + 1);
    stop.cancel();
    assert!(eventually(|| runtime.num_alive_tasks() == before).await);
    assert!(matches!(
        recorder.publish_ref(&regarding("a"), reconciled()),
        Err(EventError::Stopped)
    ));
    assert!(matches!(recorder.flush().await, Err(EventError::Stopped)));
}
