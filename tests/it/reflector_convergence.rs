//! End-to-end convergence on the embedded API server: 1,000 ConfigMaps, a writer
//! doing random creates, updates and deletes over HTTP, and in turn every fault a
//! real API server throws at a reflector — dropped watches, compaction (410), 429
//! bursts, 500 bursts, a malformed watch line. Once the writer stops and the faults
//! clear, the informer's cache must equal the server exactly, and every key it held
//! that is gone must have been delivered as a delete (plain or tombstone).
//!
//! Runs over 20 seeds. Real time (HTTP on loopback); the reflector's backoff is
//! shortened so the run stays quick, which changes no rule under test.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reflector::ReflectorOptions;
use reflector::informer::{Change, InformerOptions, SharedIndexInformer};
use reflector::listwatch::ApiListerWatcher;
use reflector_testkit::{ApiServer, BadLine, Fault, Matcher, Verb};

use crate::support::namespaces::create_namespaces;
use crate::support::patience::{PATIENCE, POLL};
use crate::support::running::Running;

const NS: &str = "e2e";
const OBJECTS: usize = 1_000;
const WRITES: usize = 250;

fn cm(name: &str, value: u64) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.to_owned());
    c.metadata.namespace = Some(NS.to_owned());
    c.data = Some(BTreeMap::from([("v".to_owned(), value.to_string())]));
    c
}

#[derive(Default)]
struct Seen {
    added: BTreeSet<String>,
    deleted: BTreeSet<String>,
    /// What the handler believes is live: adds and updates insert, deletes remove.
    view: BTreeMap<String, String>,
    tombstones: usize,
}

/// Waits until `cond` holds, polling; an error once [`PATIENCE`] has passed.
async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) -> Result<(), String> {
    tokio::time::timeout(PATIENCE, async {
        while !cond() {
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .map_err(|_| format!("timed out waiting for {what}"))
}

/// Injects fault number `which` while the informer is watching, and waits until the
/// server has actually applied it, so every seed exercises every fault.
async fn inject_fault(server: &ApiServer, which: usize, plain_text: bool) -> Result<(), String> {
    let faults = server.faults();
    wait_for("an open watch", || server.open_watches() > 0).await?;
    match which {
        0 => {
            // The server drops every watch; the reflector re-watches from its RV.
            if faults.drop_watches() == 0 {
                return Err("no watch dropped".into());
            }
        }
        1 => {
            // Compaction: the history is gone and the next watch answers 410 in an
            // ERROR event, as a watch cache that compacted past the client's RV.
            server.compact();
            let id = faults.inject(Matcher::verb(Verb::Watch), Fault::WatchGone);
            faults.drop_watches();
            wait_for("the 410 watch", || faults.hits(id) == 1).await?;
        }
        2 => {
            let id = faults.inject(
                Matcher::verb(Verb::Watch).times(3),
                Fault::TooManyRequests {
                    retry_after_secs: 0,
                    plain_text,
                },
            );
            faults.drop_watches();
            wait_for("three 429s", || faults.hits(id) == 3).await?;
        }
        3 => {
            let watch = faults.inject(Matcher::verb(Verb::Watch), Fault::InternalError);
            let list = faults.inject(Matcher::verb(Verb::List).times(2), Fault::InternalError);
            faults.drop_watches();
            wait_for("the 500s", || {
                faults.hits(watch) == 1 && faults.hits(list) == 2
            })
            .await?;
        }
        _ => {
            if faults.inject_line(BadLine::Malformed) == 0 {
                return Err("no watch got the malformed line".into());
            }
        }
    }
    Ok(())
}

/// One seed: returns a description of what went wrong, if anything.
async fn converge(seed: u64) -> Result<(), String> {
    let server = ApiServer::builder()
        .bookmark_interval(Duration::from_millis(200))
        .start()
        .await
        .map_err(|e| e.to_string())?;
    create_namespaces(&server.client(), &[NS]).await;
    let initial: Vec<ConfigMap> = (0..OBJECTS).map(|i| cm(&format!("cm-{i}"), 0)).collect();
    server
        .insert_many(initial.iter())
        .map_err(|e| e.to_string())?;

    // The informer's client must see 429/5xx itself: kube's retries off.
    let lw = ApiListerWatcher::new(Api::<ConfigMap>::namespaced(
        server.client_without_retries(),
        NS,
    ));
    let informer = SharedIndexInformer::with_options(
        lw,
        InformerOptions::default().reflector_options(
            ReflectorOptions::default()
                .page_size(97)
                .backoff(Duration::from_millis(10), Duration::from_millis(100)),
        ),
    );
    let seen = Arc::new(Mutex::new(Seen::default()));
    let handler_seen = seen.clone();
    let name_rv = |o: &ConfigMap| {
        (
            format!("{NS}/{}", o.metadata.name.as_deref().unwrap_or_default()),
            o.metadata.resource_version.clone().unwrap_or_default(),
        )
    };
    informer
        .add_event_fn(move |ev: Change<ConfigMap>| {
            let mut s = handler_seen.lock().unwrap();
            match ev {
                Change::Added { obj, .. } => {
                    s.added
                        .insert(obj.metadata.name.clone().unwrap_or_default());
                    let (k, rv) = name_rv(&obj);
                    s.view.insert(k, rv);
                }
                Change::Updated { new, .. } => {
                    let (k, rv) = name_rv(&new);
                    s.view.insert(k, rv);
                }
                Change::Deleted(o) => {
                    if o.is_tombstone() {
                        s.tombstones += 1;
                    }
                    s.deleted
                        .insert(o.object().metadata.name.clone().unwrap_or_default());
                    let (k, _) = name_rv(o.object());
                    s.view.remove(&k);
                }
            }
        })
        .map_err(|e| e.to_string())?;
    let running = Running::until_synced(&informer, PATIENCE)
        .await
        .map_err(|e| format!("seed {seed}: {e}"))?;

    // The writer: random creates, updates and deletes, with a fault every 50 writes.
    let api = Api::<ConfigMap>::namespaced(server.client(), NS);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut live: Vec<String> = (0..OBJECTS).map(|i| format!("cm-{i}")).collect();
    let mut next = OBJECTS;
    let faults = server.faults();
    for w in 0..WRITES {
        if w % 50 == 25 {
            inject_fault(&server, (w / 50) % 5, w % 2 == 0)
                .await
                .map_err(|e| format!("seed {seed}, write {w}: {e}"))?;
        }
        let roll: u32 = rng.random_range(0..10);
        if roll < 3 || live.is_empty() {
            let name = format!("cm-{next}");
            next += 1;
            api.create(&PostParams::default(), &cm(&name, 1))
                .await
                .map_err(|e| format!("create {name}: {e}"))?;
            live.push(name);
        } else if roll < 7 {
            let name = live[rng.random_range(0..live.len())].clone();
            let patch = serde_json::json!({ "data": { "v": w.to_string() } });
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| format!("patch {name}: {e}"))?;
        } else {
            let name = live.swap_remove(rng.random_range(0..live.len()));
            api.delete(&name, &DeleteParams::default())
                .await
                .map_err(|e| format!("delete {name}: {e}"))?;
        }
    }
    faults.clear();

    let want: Vec<(String, String)> = server
        .versions::<ConfigMap>(Some(NS))
        .map_err(|e| e.to_string())?;
    let cache = |informer: &SharedIndexInformer<ConfigMap>| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = informer
            .lister()
            .list()
            .iter()
            .map(|c| name_rv(c))
            .collect();
        v.sort();
        v
    };
    let converged = tokio::time::timeout(PATIENCE, async {
        loop {
            if cache(&informer) == want {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    })
    .await;
    if converged.is_err() {
        let got = cache(&informer);
        let missing: Vec<_> = want.iter().filter(|w| !got.contains(w)).take(5).collect();
        let extra: Vec<_> = got.iter().filter(|g| !want.contains(g)).take(5).collect();
        return Err(format!(
            "seed {seed}: cache has {} objects, server {}; missing {missing:?}, extra {extra:?}",
            got.len(),
            want.len()
        ));
    }
    // The handler, fed through its own buffer, converges to the same state.
    let want_map: BTreeMap<String, String> = want.iter().cloned().collect();
    wait_for("the handler's view", || {
        seen.lock().unwrap().view == want_map
    })
    .await
    .map_err(|e| format!("seed {seed}: {e}"))?;
    let stats = informer.reflector_stats();
    running.stop().await.map_err(|e| e.to_string())?;

    let live_names: BTreeSet<String> = want
        .iter()
        .map(|(k, _)| k.trim_start_matches(&format!("{NS}/")).to_owned())
        .collect();
    let s = seen.lock().unwrap();
    for name in s.added.difference(&live_names) {
        if !s.deleted.contains(name) {
            return Err(format!(
                "seed {seed}: {name} left the cache without a delete"
            ));
        }
    }
    if stats.relists < 2 || stats.errors_too_many_requests < 3 || stats.errors_decode < 1 {
        return Err(format!("seed {seed}: a fault had no effect: {stats:?}"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converges_under_faults_over_20_seeds() {
    let results: Vec<Result<(), String>> = futures::stream::iter(0..20u64)
        .map(converge)
        .buffer_unordered(4)
        .collect()
        .await;
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "{failures:#?}");
}
