//! Time to synced of the factory's ConfigMap informer when its first list is the
//! real-shape body (100k ConfigMaps of the testkit's `bench_objects` in one page,
//! ~140 MB, as a real API server's watch cache answers `resourceVersion=0`), served
//! from memory in 64 KiB chunks by a `kube::Client` over a scripted service: the
//! server and the network cost nothing, so this is the client's own work (read,
//! scan, decode with the factory's filter, FIFO, indexer) on a two-thread runtime.
//! The compare bench measures the same sync with the testkit serving the body on the
//! same cores.
//!
//! `watch_list`: the same informer with `use_watch_list(true)`, its first watch answered
//! with the same 100k objects as ADDED lines and the initial-events-end bookmark
//! (~140 MB of watch lines, in 64 KiB chunks), as a real API server's watch-list.
//!
//! `cargo bench -p reflector-core --bench list_sync -- --sample-size 10` (timed until
//! synced; the objects are dropped outside the timing)

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_main};
use futures::StreamExt;
use futures::stream::BoxStream;
use http_body::Frame;
use http_body_util::StreamBody;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use reflector_core::ReflectorOptions;
use reflector_core::informer::InformerFactory;

/// Objects in the list.
const OBJECTS: usize = 100_000;
/// Bytes per body chunk.
const CHUNK: usize = 64 * 1024;

type Body = StreamBody<BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

/// `body` in chunks of [`CHUNK`] bytes, then `rest`.
fn chunked(
    body: &Bytes,
    rest: BoxStream<'static, Result<Frame<Bytes>, Infallible>>,
) -> BoxStream<'static, Result<Frame<Bytes>, Infallible>> {
    let chunks: Vec<_> = (0..body.len())
        .step_by(CHUNK)
        .map(|at| Ok(Frame::data(body.slice(at..body.len().min(at + CHUNK)))))
        .collect();
    futures::stream::iter(chunks).chain(rest).boxed()
}

/// A client whose list requests get `list` in chunks, whose watch-list requests
/// (`sendInitialEvents=true`) get `initial_events` in chunks and then stay open, and
/// whose other watches stay open with no event.
fn client(list: Bytes, initial_events: Bytes) -> Client {
    let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let (list, initial_events) = (list.clone(), initial_events.clone());
        async move {
            let query = req.uri().query().unwrap_or_default();
            let frames = if query.contains("sendInitialEvents=true") {
                chunked(&initial_events, futures::stream::pending().boxed())
            } else if query.contains("watch=true") {
                futures::stream::pending().boxed()
            } else {
                chunked(&list, futures::stream::empty().boxed())
            };
            Ok::<_, Infallible>(http::Response::new(Body::new(frames)))
        }
    });
    Client::new(svc, "default")
}

fn list_sync(c: &mut Criterion) {
    let items: Vec<String> = reflector_testkit::bench_objects::config_maps(OBJECTS)
        .iter()
        .map(|cm| serde_json::to_string(cm).unwrap())
        .collect();
    let body = Bytes::from(format!(
        r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"200"}},"items":[{}]}}"#,
        items.join(",")
    ));
    let mut events = String::with_capacity(body.len() + OBJECTS * 30);
    for item in &items {
        events.push_str(r#"{"type":"ADDED","object":"#);
        events.push_str(item);
        events.push_str("}\n");
    }
    events.push_str(r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"200","annotations":{"k8s.io/initial-events-end":"true"}}}}"#);
    events.push('\n');
    let events = Bytes::from(events);
    drop(items);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("list_sync_100k_from_memory");
    g.throughput(Throughput::Elements(OBJECTS as u64));
    g.sample_size(10);
    // Timed from the start until synced; the 100k objects are dropped outside the
    // timing (freeing them costs about as much as the sync itself).
    for (name, watch_list) in [("factory", false), ("watch_list", true)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    let start = std::time::Instant::now();
                    let (factory, informer) = rt.block_on(async {
                        let client = client(body.clone(), events.clone());
                        let factory = InformerFactory::new(client).reflector_options(
                            ReflectorOptions::default().use_watch_list(watch_list),
                        );
                        let informer = factory.informer::<ConfigMap>();
                        factory.start();
                        tokio::time::timeout(Duration::from_secs(60), informer.wait_synced())
                            .await
                            .unwrap()
                            .unwrap();
                        (factory, informer)
                    });
                    timed += start.elapsed();
                    assert_eq!(informer.indexer().len(), OBJECTS);
                    rt.block_on(async move { drop((factory, informer)) });
                }
                timed
            });
        });
    }
    g.finish();
}

/// The benchmark, configured from the command line (as `criterion_group!` would,
/// but documented).
fn benches() {
    let mut c = Criterion::default().configure_from_args();
    list_sync(&mut c);
}

criterion_main!(benches);
