//! A child process: runs one side's controller against the parent's server and reports
//! what its reconciles saw, one JSON line per phase on stdout.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller as kr;
use kube::runtime::watcher;
use reflector::controller::{Action, Controller, Request};
use reflector_testkit::bench_objects::{NAMESPACE, name};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cpu::cpu_secs;
use crate::latency::{Record, STAMP, now_nanos, quantile_ms};
use crate::mem;
use crate::{Args, Scenario, Side};

/// The annotation the reconcile applies: the stamp it saw.
pub const OBSERVED: &str = "bench.reflector.rs/observed";
/// The reconcile's field manager (the parent's warm-up applies as it too).
pub const MANAGER: &str = "bench-controller";
/// How long the child waits for a phase before it reports failure.
const PATIENCE: Duration = Duration::from_secs(600);

/// What every reconcile needs.
struct Ctx {
    client: kube::Client,
    record: Record,
}

/// The apply a reconcile sends for `cm`: the stamp it saw, as the annotation.
pub fn observed_patch(name: &str, stamp: u64) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "annotations": {OBSERVED: stamp.to_string()}},
    })
}

/// The stamp of `cm` (0 if it was never changed by the writer).
pub fn stamp_of(cm: &ConfigMap) -> u64 {
    cm.data
        .as_ref()
        .and_then(|d| d.get(STAMP))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The reconcile both sides run: record the start, apply the annotation.
///
/// # Cancel safety
/// Not cancel safe: an apply may be sent without its result read.
async fn reconcile_one(ctx: &Ctx, cm: &ConfigMap) -> Result<ConfigMap, kube::Error> {
    let name = cm.metadata.name.as_deref().unwrap_or_default();
    let stamp = stamp_of(cm);
    ctx.record.started(name, stamp);
    let namespace = cm.metadata.namespace.as_deref().unwrap_or("default");
    Api::<ConfigMap>::namespaced(ctx.client.clone(), namespace)
        .patch(
            name,
            &PatchParams::apply(MANAGER),
            &Patch::Apply(observed_patch(name, stamp)),
        )
        .await
}

/// # Cancel safety
/// Not cancel safe (see `reconcile_one`).
async fn reconcile_ours(req: Request<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    let Some(cm) = req.object.clone() else {
        return Ok(Action::done());
    };
    let written = reconcile_one(&ctx, &cm).await?;
    req.wrote(&written);
    Ok(Action::done())
}

/// # Cancel safety
/// Not cancel safe (see `reconcile_one`).
async fn reconcile_kube(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<kr::Action, kube::Error> {
    reconcile_one(&ctx, &cm).await?;
    Ok(kr::Action::await_change())
}

/// Starts `side`'s controller; it runs until the child exits.
fn start(side: Side, ctx: Arc<Ctx>, concurrency: usize) -> JoinHandle<()> {
    let client = ctx.client.clone();
    match side {
        Side::Ours | Side::OursNoReadYourWrites => tokio::spawn(async move {
            let run = Controller::<ConfigMap>::for_kind(client)
                .concurrency(concurrency)
                .read_your_writes(side == Side::Ours)
                .run(reconcile_ours, ctx)
                .await;
            if let Err(e) = run {
                eprintln!("controller_load: our controller ended: {e}");
            }
        }),
        Side::ApplyAlone => tokio::spawn(async {}),
        Side::KubeRuntime => tokio::spawn(async move {
            let config =
                kr::Config::default().concurrency(u16::try_from(concurrency).unwrap_or(u16::MAX));
            kr::Controller::new(Api::<ConfigMap>::all(client), watcher::Config::default())
                .with_config(config)
                .run(
                    reconcile_kube,
                    |_, e, _| {
                        eprintln!("controller_load: reconcile failed: {e}");
                        kr::Action::requeue(Duration::from_millis(100))
                    },
                    ctx,
                )
                .for_each(|_| futures::future::ready(()))
                .await;
        }),
    }
}

fn emit(line: &Value) {
    println!("{line}");
}

/// Reads the parent's next line, split on whitespace, its first word `word`.
///
/// # Cancel safety
/// Not relevant: awaited to completion by the child.
async fn cue(word: &'static str) -> Result<Vec<String>, String> {
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    let parts: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    match parts.first() {
        Some(w) if w == word => Ok(parts),
        _ => Err(format!("expected `{word} …`, got {line:?}")),
    }
}

/// The child's whole life: one side, one scenario.
pub fn run(side: Side, scenario: Scenario, url: &str, args: &Args) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let result = rt.block_on(body(side, scenario, url, args));
    rt.shutdown_background();
    result
}

/// # Cancel safety
/// Not relevant: the child's whole life.
async fn body(side: Side, scenario: Scenario, url: &str, args: &Args) -> Result<(), String> {
    let config = kube::Config::new(url.parse().map_err(|e| format!("url {url}: {e}"))?);
    let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
    let ctx = Arc::new(Ctx {
        client,
        record: Record::default(),
    });
    let objects = match scenario {
        Scenario::Steady => args.objects,
        Scenario::Restart => args.backlog,
    };
    let started = Instant::now();
    let _controller = start(side, ctx.clone(), args.concurrency);
    emit(&json!({"phase": "started"}));
    match scenario {
        Scenario::Steady if side == Side::ApplyAlone => {
            emit(&json!({"phase": "ready", "secs": 0.0}));
            let go = cue("go").await?;
            let rate: f64 = go
                .get(1)
                .and_then(|r| r.parse().ok())
                .ok_or(format!("cue {go:?}: expected a rate"))?;
            let (cpu0, start) = (cpu_secs(), Instant::now());
            // One schedule and one stamp base for every task: the two applies of a
            // stamp may be sent by different tasks, and the second must change nothing.
            let alone = Arc::new(ApplyAlone {
                client: ctx.client.clone(),
                objects,
                per_second: rate * 2.0,
                start: tokio::time::Instant::now(),
                base: now_nanos(),
                next: AtomicU64::new(0),
                done: AtomicU64::new(0),
                stop: CancellationToken::new(),
            });
            let tasks: Vec<JoinHandle<()>> = (0..args.concurrency)
                .map(|_| {
                    let alone = Arc::clone(&alone);
                    tokio::spawn(async move { alone.run().await })
                })
                .collect();
            cue("stop").await?;
            let window = start.elapsed().as_secs_f64();
            let (cpu, done) = (cpu_secs() - cpu0, alone.done.load(Ordering::Relaxed));
            alone.stop.cancel();
            for task in tasks {
                task.await.map_err(|e| e.to_string())?;
            }
            emit(&json!({
                "phase": "steady",
                "reconciles": done,
                "window_s": window,
                "cpu": cpu,
                "rss": mem::rss(),
            }));
        }
        Scenario::Steady => {
            let all = ctx
                .record
                .wait_until(PATIENCE, |r| r.objects() >= objects)
                .await;
            if !all {
                return Err(format!(
                    "{}: {} of {objects} objects reconciled",
                    side.name(),
                    ctx.record.objects()
                ));
            }
            // Let the initial list's own writes settle before the clock runs.
            tokio::time::sleep(Duration::from_secs(1)).await;
            emit(&json!({"phase": "ready", "secs": started.elapsed().as_secs_f64()}));
            cue("go").await?;
            ctx.record.take();
            let (cpu0, start) = (cpu_secs(), Instant::now());
            let stop = cue("stop").await?;
            let window = start.elapsed().as_secs_f64();
            let (cpu, reconciles) = (cpu_secs() - cpu0, ctx.record.reconciles());
            // Drained when every object's last change has been seen by a reconcile (a
            // controller may reconcile its backlog in any order).
            let changes = read_changes(&stop)?;
            let drain = Instant::now();
            ctx.record.expect_seen(&changes);
            let drained = ctx.record.wait_until(PATIENCE, |r| r.unseen() == 0).await;
            let drain_secs = drain.elapsed().as_secs_f64();
            let (every, unseen) = ctx.record.every_change(&changes);
            let (mut samples, _) = ctx.record.take();
            samples.sort_unstable();
            emit(&json!({
                "phase": "steady",
                "samples": samples.len(),
                "p50_ms": quantile_ms(&samples, 0.50),
                "p99_ms": quantile_ms(&samples, 0.99),
                "max_ms": quantile_ms(&samples, 1.0),
                "changes": changes.len(),
                "unseen": unseen,
                "p50_every_ms": quantile_ms(&every, 0.50),
                "p99_every_ms": quantile_ms(&every, 0.99),
                "reconciles": reconciles,
                "window_s": window,
                "cpu": cpu,
                "drained": drained,
                "drain_s": drain_secs,
                "rss": mem::rss(),
            }));
        }
        Scenario::Restart => {
            let live = cue("live").await?;
            let (last, stamp) = last_change(&live)?;
            let reconciled = ctx
                .record
                .wait_until(PATIENCE, |r| r.last(&last) >= stamp)
                .await;
            let live_at = started.elapsed().as_secs_f64();
            let (samples, _) = ctx.record.take();
            let all = ctx
                .record
                .wait_until(PATIENCE, |r| r.objects() >= objects)
                .await;
            emit(&json!({
                "phase": "restart",
                "live_ms": if reconciled { samples.last().map(|ns| *ns as f64 / 1e6) } else { None },
                "live_reconciled_at_s": live_at,
                "backlog_s": all.then(|| started.elapsed().as_secs_f64()),
                "rss": mem::rss(),
            }));
        }
    }
    Ok(())
}

/// The `apply-alone` side's tasks: the reconcile's apply at the controllers' rate,
/// each object's new stamp applied twice (the second changes nothing, as the
/// controllers' idle reconcile), with no controller and no watch.
struct ApplyAlone {
    client: kube::Client,
    objects: usize,
    /// Applies per second, over all tasks.
    per_second: f64,
    start: tokio::time::Instant,
    /// Added to each stamp, so no run repeats an earlier run's annotation.
    base: u64,
    /// The next apply's number: apply `k` is due `k / per_second` after `start`.
    next: AtomicU64,
    /// Applies answered.
    done: AtomicU64,
    /// Stops every task between applies.
    stop: CancellationToken,
}

impl ApplyAlone {
    /// Takes the next apply's number, waits for its time, sends it and counts it in
    /// `done`; until `stop`. Every task runs this on the same `ApplyAlone`.
    ///
    /// # Cancel safety
    /// Stops between applies when `stop` fires.
    async fn run(&self) {
        let api = Api::<ConfigMap>::namespaced(self.client.clone(), NAMESPACE);
        loop {
            let k = self.next.fetch_add(1, Ordering::Relaxed);
            let due = self.start + Duration::from_secs_f64(k as f64 / self.per_second);
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep_until(due) => {}
            }
            let pair = k / 2;
            let n = name(usize::try_from(pair).unwrap_or(usize::MAX) % self.objects);
            let applied = api
                .patch(
                    &n,
                    &PatchParams::apply(MANAGER),
                    &Patch::Apply(observed_patch(&n, self.base + pair)),
                )
                .await;
            match applied {
                Ok(_) => {
                    self.done.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => eprintln!("controller_load: apply-alone: {n}: {e}"),
            }
        }
    }
}

/// The object and stamp of the parent's `live NAME STAMP` cue.
fn last_change(cue: &[String]) -> Result<(String, u64), String> {
    match cue {
        [_, name, stamp] => Ok((
            name.clone(),
            stamp
                .parse()
                .map_err(|e| format!("cue {cue:?}: stamp: {e}"))?,
        )),
        _ => Err(format!("cue {cue:?}: expected a name and a stamp")),
    }
}

/// Every change the writer made, from the file the `stop FILE` cue names: one
/// `NAME STAMP` line each, in the order written.
fn read_changes(cue: &[String]) -> Result<Vec<(String, u64)>, String> {
    let [_, file] = cue else {
        return Err(format!("cue {cue:?}: expected the changes' file"));
    };
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    text.lines()
        .map(|line| {
            let (name, stamp) = line
                .split_once(' ')
                .ok_or_else(|| format!("{file}: bad line {line:?}"))?;
            let stamp = stamp
                .parse()
                .map_err(|e| format!("{file}: {line:?}: {e}"))?;
            Ok((name.to_owned(), stamp))
        })
        .collect()
}
