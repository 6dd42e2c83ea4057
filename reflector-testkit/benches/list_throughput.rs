//! Objects per second decoded by `kube::Api::<ConfigMap>::list` over loopback: 10,000
//! benchmark ConfigMaps (~1.4 KiB, the shared `bench/` object set) listed in pages of 500.
//!
//! `cargo bench -p reflector-testkit --bench list_throughput -- --sample-size 10`
//!
//! Also measures `ApiServer::insert_many` of the same 10,000 objects (`insert_many/`).

use criterion::{Criterion, Throughput, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};
use reflector_testkit::{ApiServer, bench_objects};

const OBJECTS: usize = 10_000;
const PAGE: u32 = 500;

/// Lists every page; returns how many objects were decoded.
async fn list_all(api: &Api<ConfigMap>) -> usize {
    let mut decoded = 0;
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await.expect("list page");
        decoded += page.items.len();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return decoded,
        }
    }
}

fn list_throughput(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (server, api) = runtime.block_on(async {
        let server = ApiServer::start().await.expect("server");
        server
            .insert_many(&bench_objects::config_maps(OBJECTS))
            .expect("insert");
        let api: Api<ConfigMap> = Api::namespaced(server.client(), bench_objects::NAMESPACE);
        assert_eq!(list_all(&api).await, OBJECTS);
        (server, api)
    });
    let mut group = c.benchmark_group("list_throughput");
    group.throughput(Throughput::Elements(OBJECTS as u64));
    group.bench_function("configmaps_10k_page_500", |b| {
        b.to_async(&runtime).iter(|| list_all(&api));
    });
    group.finish();
    runtime.block_on(server.shutdown());
}

/// Direct `insert_many` of 10,000 benchmark ConfigMaps into a fresh server (the objects
/// are generated outside the measurement).
fn insert_many(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let objects = bench_objects::config_maps(OBJECTS);
    let mut group = c.benchmark_group("insert_many");
    group.throughput(Throughput::Elements(OBJECTS as u64));
    group.bench_function("configmaps_10k", |b| {
        b.iter_batched(
            || runtime.block_on(ApiServer::start()).expect("server"),
            |server| {
                server.insert_many(&objects).expect("insert");
                server
            },
            criterion::BatchSize::PerIteration,
        );
    });
    group.finish();
}

mod harness {
    //! `criterion_group!` generates an undocumented public function.
    #![allow(missing_docs)]
    use super::{insert_many, list_throughput};
    criterion::criterion_group!(benches, list_throughput, insert_many);
}

criterion_main!(harness::benches);
