//! The parent process: the API server and the writer. Spawns one child per side and
//! run, paces the changes, and prints the tables of medians.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{Patch, PatchParams};
use reflector_testkit::ApiServer;
use reflector_testkit::bench_objects::{NAMESPACE, config_map, name};
use serde_json::Value;

use crate::child::{MANAGER, observed_patch};
use crate::figures::{fmt, median, num, ratio};
use crate::latency::{STAMP, now_nanos};
use crate::mem::MB;
use crate::{Args, Scenario, Side};

/// Objects stored per `insert_many` while filling.
const FILL_CHUNK: usize = 10_000;
/// Applies in flight while the parent warms the objects up.
const WARM_UP_CONCURRENCY: usize = 32;
/// How long after a child's start the restart scenario's live change is written.
const LIVE_AFTER: Duration = Duration::from_secs(2);
/// A steady rate is sustained when the writer kept this share of it (else the server,
/// not the controller, was the limit)…
const SUSTAINED_WRITTEN: f64 = 0.95;
/// …its p99 is under this…
const SUSTAINED_P99_MS: f64 = 1_000.0;
/// …and every object's last change was reconciled within this of the writer's end.
const SUSTAINED_DRAIN_S: f64 = 5.0;

/// The figures of every run, by scenario, side and rate (0 for the restart scenario).
type Results = BTreeMap<(Scenario, Side, usize), Vec<Value>>;

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Runs the selected scenarios and prints their tables.
pub fn run(args: &Args) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut results = Results::new();
    eprintln!("controller_load: load average {}", loadavg());
    for &scenario in &args.scenarios {
        rt.block_on(run_scenario(args, scenario, &mut results))?;
    }
    print_tables(args, &results);
    eprintln!("controller_load: load average {}", loadavg());
    Ok(())
}

/// A fresh server holding the scenario's objects, warmed up, then every run of it.
///
/// # Cancel safety
/// Not relevant: awaited to completion.
async fn run_scenario(
    args: &Args,
    scenario: Scenario,
    results: &mut Results,
) -> Result<(), String> {
    let objects = match scenario {
        Scenario::Steady => args.objects,
        Scenario::Restart => args.backlog,
    };
    let max_rate = args.rates.iter().copied().max().unwrap_or(0);
    // The event log must outlast a child's list and watch: every change and apply of
    // the longest run, with room to spare.
    let history = objects * 4 + max_rate * args.seconds * 4;
    let server = ApiServer::builder()
        .history_len(history)
        .start()
        .await
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(NAMESPACE.to_owned());
    server.insert(&namespace).map_err(|e| e.to_string())?;
    for start in (0..objects).step_by(FILL_CHUNK) {
        let chunk: Vec<ConfigMap> = (start..(start + FILL_CHUNK).min(objects))
            .map(|i| config_map(i, 100))
            .collect();
        server.insert_many(&chunk).map_err(|e| e.to_string())?;
    }
    warm_up(&server, objects).await?;
    eprintln!(
        "controller_load: {}: {objects} objects stored and applied once by {MANAGER} in {:.1} s; server RSS {:.0} MB",
        scenario.name(),
        started.elapsed().as_secs_f64(),
        crate::mem::rss() as f64 / MB,
    );
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut next = 0;
    for run in 0..args.runs {
        let rates = match scenario {
            Scenario::Steady => args.rates.clone(),
            Scenario::Restart => vec![0],
        };
        for rate in rates {
            let mut sides = args.sides.clone();
            if run % 2 == 1 {
                sides.reverse();
            }
            for side in sides {
                if scenario == Scenario::Restart && side == Side::ApplyAlone {
                    continue;
                }
                let figures = match scenario {
                    Scenario::Steady => steady(&server, &exe, args, side, rate, &mut next).await?,
                    Scenario::Restart => restart(&server, &exe, args, side).await?,
                };
                eprintln!(
                    "controller_load: {} run {} {} {}: {figures}",
                    scenario.name(),
                    run + 1,
                    side.name(),
                    if rate > 0 {
                        format!("at {rate}/s")
                    } else {
                        String::new()
                    },
                );
                results
                    .entry((scenario, side, rate))
                    .or_default()
                    .push(figures);
            }
        }
    }
    server.shutdown().await;
    Ok(())
}

/// Applies every object's annotation once as the controllers' field manager, so a
/// controller's first reconcile of an unchanged object changes nothing.
///
/// # Cancel safety
/// Not relevant: awaited to completion.
async fn warm_up(server: &ApiServer, objects: usize) -> Result<(), String> {
    let api = Api::<ConfigMap>::namespaced(server.client(), NAMESPACE);
    let failures = futures::stream::iter(0..objects)
        .map(|i| {
            let api = api.clone();
            async move {
                let n = name(i);
                api.patch(
                    &n,
                    &PatchParams::apply(MANAGER),
                    &Patch::Apply(observed_patch(&n, 0)),
                )
                .await
                .err()
            }
        })
        .buffer_unordered(WARM_UP_CONCURRENCY)
        .filter_map(futures::future::ready)
        .collect::<Vec<_>>()
        .await;
    match failures.first() {
        None => Ok(()),
        Some(e) => Err(format!(
            "warm-up: {} applies failed, e.g. {e}",
            failures.len()
        )),
    }
}

/// A running child, its pipes.
struct Run {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Run {
    fn spawn(
        exe: &std::path::Path,
        args: &Args,
        side: Side,
        scenario: Scenario,
        url: &str,
    ) -> Result<Self, String> {
        let mut child = Command::new(exe)
            .args([
                "--child",
                side.name(),
                "--child-scenario",
                scenario.name(),
                "--url",
                url,
            ])
            .args(["--objects", &args.objects.to_string()])
            .args(["--backlog", &args.backlog.to_string()])
            .args(["--concurrency", &args.concurrency.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("spawning a child: {e}"))?;
        let stdin = child.stdin.take().ok_or("no child stdin")?;
        let stdout = child.stdout.take().ok_or("no child stdout")?;
        Ok(Run {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        })
    }

    /// The child's next JSON line, which must be of `phase`. Blocks this thread:
    /// the server runs on the runtime's workers meanwhile.
    fn expect(&mut self, phase: &str) -> Result<Value, String> {
        let line = tokio::task::block_in_place(|| self.lines.next())
            .ok_or(format!("child ended before reporting {phase}"))?
            .map_err(|e| e.to_string())?;
        let value: Value =
            serde_json::from_str(&line).map_err(|e| format!("child line {line:?}: {e}"))?;
        if value["phase"] != phase {
            return Err(format!("expected phase {phase}, got {line}"));
        }
        Ok(value)
    }

    fn tell(&mut self, line: &str) -> Result<(), String> {
        writeln!(self.stdin, "{line}").map_err(|e| e.to_string())
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes a new stamp into object `i`, straight into the server's state. Returns it.
fn change(server: &ApiServer, i: usize) -> Result<u64, String> {
    let n = name(i);
    let mut cm = server
        .get::<ConfigMap>(Some(NAMESPACE), &n)
        .map_err(|e| e.to_string())?
        .ok_or(format!("{n} is gone"))?;
    let stamp = now_nanos();
    cm.data
        .get_or_insert_default()
        .insert(STAMP.to_owned(), stamp.to_string());
    server.insert(&cm).map_err(|e| e.to_string())?;
    Ok(stamp)
}

/// The child's requests since the log was last cleared, counted by verb (the writer
/// writes into the server's state, not through HTTP).
fn requests_by_verb(server: &ApiServer) -> Value {
    let mut counts = BTreeMap::<String, u64>::new();
    for entry in server.request_log() {
        *counts.entry(format!("{:?}", entry.verb)).or_default() += 1;
    }
    serde_json::to_value(counts).unwrap_or_default()
}

/// One steady run: the child reconciles its initial list, then `rate` changes per
/// second for `args.seconds`, round-robin from object `next`.
///
/// # Cancel safety
/// Not relevant: awaited to completion.
async fn steady(
    server: &ApiServer,
    exe: &std::path::Path,
    args: &Args,
    side: Side,
    rate: usize,
    next: &mut usize,
) -> Result<Value, String> {
    let mut run = Run::spawn(exe, args, side, Scenario::Steady, &server.url())?;
    run.expect("started")?;
    let ready = run.expect("ready")?;
    run.tell(&format!("go {rate}"))?;
    server.clear_request_log();
    let total = rate * args.seconds;
    let start = tokio::time::Instant::now();
    let mut changes = String::new();
    for k in 0..total {
        let due = start + Duration::from_secs_f64(k as f64 / rate as f64);
        tokio::time::sleep_until(due).await;
        let i = (*next + k) % args.objects;
        let stamp = change(server, i)?;
        changes.push_str(&format!("{} {stamp}\n", name(i)));
    }
    let written_per_s = total as f64 / start.elapsed().as_secs_f64();
    *next = (*next + total) % args.objects;
    // Every change, for the child's latency of each (see `latency::Record::every_change`).
    let file = std::env::temp_dir().join(format!("controller_load-changes-{}", std::process::id()));
    std::fs::write(&file, changes).map_err(|e| format!("{}: {e}", file.display()))?;
    run.tell(&format!("stop {}", file.display()))?;
    let figures = run.expect("steady");
    let _ = std::fs::remove_file(&file);
    let mut figures = figures?;
    figures["requests"] = requests_by_verb(server);
    figures["written_per_s"] = written_per_s.into();
    figures["initial_s"] = ready["secs"].clone();
    Ok(figures)
}

/// One restart run: the child starts on the backlog; `LIVE_AFTER` later the object
/// listed last changes.
///
/// # Cancel safety
/// Not relevant: awaited to completion.
async fn restart(
    server: &ApiServer,
    exe: &std::path::Path,
    args: &Args,
    side: Side,
) -> Result<Value, String> {
    let mut run = Run::spawn(exe, args, side, Scenario::Restart, &server.url())?;
    run.expect("started")?;
    tokio::time::sleep(LIVE_AFTER).await;
    let live = args.backlog - 1;
    let stamp = change(server, live)?;
    run.tell(&format!("live {} {stamp}", name(live)))?;
    run.expect("restart")
}

/// The median over the runs of `(scenario, side, rate)` of `f`.
fn med(
    results: &Results,
    key: (Scenario, Side, usize),
    f: impl Fn(&Value) -> Option<f64>,
) -> Option<f64> {
    median(results.get(&key)?.iter().filter_map(f).collect())
}

/// Reconciles per second over the writing window.
fn per_second(v: &Value) -> Option<f64> {
    Some(num(v, "reconciles")? / num(v, "window_s")?)
}

/// Client CPU milliseconds per reconcile over the writing window.
fn cpu_ms_per_reconcile(v: &Value) -> Option<f64> {
    Some(num(v, "cpu")? * 1e3 / num(v, "reconciles")?)
}

/// Whether every run of a steady key met the p99 and drain bounds.
fn sustained(results: &Results, key: (Scenario, Side, usize)) -> bool {
    results.get(&key).is_some_and(|runs| {
        runs.iter().all(|v| {
            num(v, "written_per_s").is_some_and(|w| w >= key.2 as f64 * SUSTAINED_WRITTEN)
                && num(v, "p99_ms").is_some_and(|p| p < SUSTAINED_P99_MS)
                && v["drained"] == true
                && num(v, "drain_s").is_some_and(|d| d < SUSTAINED_DRAIN_S)
        })
    })
}

fn print_tables(args: &Args, results: &Results) {
    if args.scenarios.contains(&Scenario::Steady) {
        println!(
            "\n## steady: {} objects, changes for {} s, concurrency {}, {} run(s), medians\n",
            args.objects, args.seconds, args.concurrency, args.runs
        );
        println!(
            "| side | changes/s | written/s | p50 ms | p99 ms | max ms | p99 every change ms | reconciles/s | CPU ms/reconcile | RSS MB | sustained |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
        for &rate in &args.rates {
            for &side in &args.sides {
                let key = (Scenario::Steady, side, rate);
                println!(
                    "| {} | {rate} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    side.name(),
                    fmt(med(results, key, |v| num(v, "written_per_s")), 0),
                    fmt(med(results, key, |v| num(v, "p50_ms")), 1),
                    fmt(med(results, key, |v| num(v, "p99_ms")), 1),
                    fmt(med(results, key, |v| num(v, "max_ms")), 1),
                    fmt(med(results, key, |v| num(v, "p99_every_ms")), 1),
                    fmt(med(results, key, per_second), 0),
                    fmt(med(results, key, cpu_ms_per_reconcile), 3),
                    fmt(med(results, key, |v| num(v, "rss").map(|b| b / MB)), 0),
                    match (side, sustained(results, key)) {
                        (Side::ApplyAlone, _) => "–",
                        (_, true) => "yes",
                        (_, false) => "no",
                    },
                );
            }
        }
        println!();
        for side in args
            .sides
            .iter()
            .copied()
            .filter(|&s| s != Side::ApplyAlone)
        {
            let best = args
                .rates
                .iter()
                .copied()
                .filter(|&rate| sustained(results, (Scenario::Steady, side, rate)))
                .max();
            println!(
                "highest sustained rate, {}: {}",
                side.name(),
                best.map_or_else(|| "none of those run".to_owned(), |r| format!("{r}/s"))
            );
        }
        for &rate in &args.rates {
            let ours = (Scenario::Steady, Side::Ours, rate);
            let off = (Scenario::Steady, Side::OursNoReadYourWrites, rate);
            let kube = (Scenario::Steady, Side::KubeRuntime, rate);
            let alone = (Scenario::Steady, Side::ApplyAlone, rate);
            let p99 = |k| med(results, k, |v| num(v, "p99_ms"));
            let cpu = |k| med(results, k, cpu_ms_per_reconcile);
            let above = |k| Some(cpu(k)? - cpu(alone)?);
            let rps = |k| med(results, k, per_second);
            println!(
                "at {rate}/s: ours against kube-runtime: p99 {}, CPU per reconcile {}, above the apply alone {} ({} against {} ms); read-your-writes on against off: p99 {}, reconciles/s {}",
                ratio(p99(ours), p99(kube)),
                ratio(cpu(ours), cpu(kube)),
                ratio(above(ours), above(kube)),
                fmt(above(ours), 3),
                fmt(above(kube), 3),
                ratio(p99(ours), p99(off)),
                ratio(rps(ours), rps(off)),
            );
        }
    }
    if args.scenarios.contains(&Scenario::Restart) {
        println!(
            "\n## restart: {} objects, a live change {} s after the start, concurrency {}, {} run(s), medians\n",
            args.backlog,
            LIVE_AFTER.as_secs(),
            args.concurrency,
            args.runs
        );
        println!(
            "| side | live change to its reconcile (ms) | every object reconciled after (s) | RSS MB |"
        );
        println!("|---|---|---|---|");
        for &side in &args.sides {
            let key = (Scenario::Restart, side, 0);
            println!(
                "| {} | {} | {} | {} |",
                side.name(),
                fmt(med(results, key, |v| num(v, "live_ms")), 0),
                fmt(med(results, key, |v| num(v, "backlog_s")), 1),
                fmt(med(results, key, |v| num(v, "rss").map(|b| b / MB)), 0),
            );
        }
    }
}
