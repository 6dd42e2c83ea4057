//! Watch fan-out: events per second delivered to each of 1, 10 and 200 open watches while
//! a writer creates benchmark ConfigMaps (~1.4 KiB, the shared `bench/` object set) over
//! HTTP with a plain `kube::Client`.
//!
//! `cargo bench -p reflector-testkit --bench watch_fanout`
//!
//! Each watcher is a raw HTTP/1.1 watch on its own 127.0.0.1 connection that only counts
//! event lines (client-side decoding would otherwise dominate), so the figures measure the
//! server. A round ends when every watcher has counted every event; it gives up after
//! [`ROUND_LIMIT`]. Per-watcher rate = events / (first create .. last watcher done).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams};
use reflector_testkit::{ApiServer, bench_objects};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Creates per round.
const EVENTS: usize = 2_000;
/// Concurrent HTTP writers.
const WRITERS: usize = 4;
/// A round that takes longer than this is reported as timed out.
const ROUND_LIMIT: Duration = Duration::from_secs(120);

/// Opens a raw watch from `rv`; returns the stream once the response head has arrived.
async fn open_watch(server: &ApiServer, rv: u64) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr()).await.expect("connect");
    let request = format!(
        "GET /api/v1/namespaces/{}/configmaps?watch=true&resourceVersion={rv} HTTP/1.1\r\n\
         Host: 127.0.0.1\r\nAccept: application/json\r\n\r\n",
        bench_objects::NAMESPACE
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send watch");
    stream
}

/// Reads until `events` event lines have arrived. Event lines end with `}\n`; the chunked
/// framing's line ends are `\r\n` and JSON has no raw newlines, so a `\n` not after `\r`
/// ends one event.
async fn count_events(mut stream: TcpStream, events: usize) -> Instant {
    let mut buf = vec![0u8; 64 * 1024];
    let mut prev = 0u8;
    let mut seen = 0;
    let mut head_done = false;
    let mut head = Vec::new();
    while seen < events {
        let n = stream.read(&mut buf).await.expect("read watch");
        assert!(n > 0, "watch ended after {seen} of {events} events");
        let mut chunk = &buf[..n];
        if !head_done {
            head.extend_from_slice(chunk);
            let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            assert!(head.starts_with(b"HTTP/1.1 200"), "watch refused");
            let body_start = n - (head.len() - end - 4);
            chunk = &buf[body_start..n];
            head_done = true;
        }
        for at in memchr::memchr_iter(b'\n', chunk) {
            let before = if at == 0 { prev } else { chunk[at - 1] };
            if before != b'\r' {
                seen += 1;
            }
        }
        if let Some(&last) = chunk.last() {
            prev = last;
        }
    }
    Instant::now()
}

/// One round: `watchers` watches, [`EVENTS`] creates. Returns the per-watcher rate.
async fn round(watchers: usize) -> Option<f64> {
    let server = ApiServer::start().await.expect("server");
    // Writes need their namespace to exist, as on a real server.
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(bench_objects::NAMESPACE.to_owned());
    Api::<Namespace>::all(server.client())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace");
    let api: Api<ConfigMap> = Api::namespaced(server.client(), bench_objects::NAMESPACE);
    let rv = server.current_resource_version();
    let mut readers = Vec::with_capacity(watchers);
    for _ in 0..watchers {
        let stream = open_watch(&server, rv).await;
        readers.push(tokio::spawn(count_events(stream, EVENTS)));
    }
    while server.open_watches() < watchers {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let objects: Vec<ConfigMap> = (0..EVENTS)
        .map(|i| {
            let mut cm = bench_objects::config_map(i, 0);
            cm.metadata.resource_version = None;
            cm
        })
        .collect();
    let started = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let api = api.clone();
            let mine: Vec<ConfigMap> = objects.iter().skip(w).step_by(WRITERS).cloned().collect();
            tokio::spawn(async move {
                for cm in &mine {
                    api.create(&PostParams::default(), cm)
                        .await
                        .expect("create");
                }
            })
        })
        .collect();
    let done = tokio::time::timeout(ROUND_LIMIT, async {
        for writer in writers {
            writer.await.expect("writer");
        }
        let mut last = started;
        for reader in readers {
            last = last.max(reader.await.expect("watcher"));
        }
        last
    })
    .await;
    server.shutdown().await;
    let last = done.ok()?;
    Some(EVENTS as f64 / last.duration_since(started).as_secs_f64())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!("watch_fanout: {EVENTS} creates by {WRITERS} HTTP writers, ConfigMaps ~1.4 KiB");
    println!("| watchers | events/s per watcher | events/s delivered (all) | vs 1 watcher |");
    println!("|---|---|---|---|");
    let mut single = None;
    for watchers in [1usize, 10, 200] {
        match runtime.block_on(round(watchers)) {
            Some(rate) => {
                let single = *single.get_or_insert(rate);
                println!(
                    "| {watchers} | {rate:.0} | {:.0} | {:.0}% |",
                    rate * watchers as f64,
                    100.0 * rate / single
                );
            }
            None => println!("| {watchers} | timed out after {ROUND_LIMIT:?} | | |"),
        }
    }
}
