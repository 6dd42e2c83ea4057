//! Time to synced of the factory's ConfigMap informer when its first list is the
//! real-shape body (100k ConfigMaps of the testkit's `bench_objects` in one page,
//! ~140 MB, as a real API server's watch cache answers `resourceVersion=0`), served
//! from memory in 64 KiB chunks by a `kube::Client` over a scripted service: the
//! server and the network cost nothing, so this is the client's own work (read,
//! scan, decode with the factory's filter, FIFO, indexer) on a two-thread runtime.
//! The compare bench measures the same sync with the testkit serving the body on the
//! same cores.
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
use reflector_core::informer::InformerFactory;

/// Objects in the list.
const OBJECTS: usize = 100_000;
/// Bytes per body chunk.
const CHUNK: usize = 64 * 1024;

type Body = StreamBody<BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

/// A client whose list requests get `list` in chunks and whose watches stay open
/// with no event.
fn client(list: Bytes) -> Client {
    let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let list = list.clone();
        async move {
            let frames: BoxStream<'static, Result<Frame<Bytes>, Infallible>> =
                if req.uri().query().is_some_and(|q| q.contains("watch=true")) {
                    futures::stream::pending().boxed()
                } else {
                    let chunks: Vec<_> = (0..list.len())
                        .step_by(CHUNK)
                        .map(|at| Ok(Frame::data(list.slice(at..list.len().min(at + CHUNK)))))
                        .collect();
                    futures::stream::iter(chunks).boxed()
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
    g.bench_function("factory", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let start = std::time::Instant::now();
                let (factory, informer) = rt.block_on(async {
                    let factory = InformerFactory::new(client(body.clone()));
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
    g.finish();
}

/// The benchmark, configured from the command line (as `criterion_group!` would,
/// but documented).
fn benches() {
    let mut c = Criterion::default().configure_from_args();
    list_sync(&mut c);
}

criterion_main!(benches);
