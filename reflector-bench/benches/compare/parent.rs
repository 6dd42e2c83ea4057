//! The parent process: runs the server, spawns one child per scenario run, cues churn and
//! relist, and prints the tables of medians.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use k8s_openapi::api::core::v1::ConfigMap;
use reflector::sharding::{shard_key, winner};
use reflector_testkit::bench_objects::{config_map, name};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use serde_json::Value;

use crate::Args;
use crate::index::{self, QueryFigure};
use crate::mem::{self, MB};
use crate::scale;
use crate::scenario::{self, Cache, Phase, SHARDS, Scenario};

/// Writes the server's event log keeps: enough for the initial objects plus one churn.
const HISTORY: usize = 200_000;
/// Objects the churn cycles over (or all of them, if fewer).
pub(crate) const CHURN_SPAN: usize = 10_000;

/// The JSON lines of one child run.
pub(crate) struct RunResult {
    /// The figures at sync.
    pub synced: Value,
    /// The figures after churn or relist.
    pub after: Option<Value>,
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The runs of one scenario, by scenario name.
pub(crate) type Results = BTreeMap<&'static str, Vec<RunResult>>;

/// Runs the selected scenarios at each size and prints the tables: the tables of each
/// size as it ends, then (for more than one size) the scale table over all of them.
pub fn run(args: &Args) -> Result<(), String> {
    let (selected, run_index) = scenario::select(&args.scenarios)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut sizes = Vec::new();
    for &objects in &args.objects {
        let (results, load) = run_shape(args, objects, &rt, &selected, run_index, false)?;
        if args.paged {
            run_shape(args, objects, &rt, &selected, false, true)?;
        }
        sizes.push(scale::Size {
            objects,
            results,
            load,
        });
    }
    if sizes.len() > 1 {
        scale::print(args, &selected, &sizes);
    }
    Ok(())
}

/// Objects generated and stored per `insert_many` when filling the server: the
/// generated `ConfigMap`s (~6 KB each before they are stored as ~1.4 KB of JSON) live
/// only one chunk at a time, so filling a million costs ~60 MB of transient heap, not
/// ~6 GB.
const FILL_CHUNK: usize = 10_000;

/// Stores objects `0..objects` in `server`, [`FILL_CHUNK`] at a time, each labelled
/// with its shard when `sharded`.
fn fill(server: &ApiServer, objects: usize, sharded: bool) -> Result<(), String> {
    for start in (0..objects).step_by(FILL_CHUNK) {
        let end = (start + FILL_CHUNK).min(objects);
        let mut chunk: Vec<ConfigMap> = (start..end).map(|i| config_map(i, 100)).collect();
        if sharded {
            label_for_shards(&mut chunk);
        }
        server.insert_many(&chunk).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Runs `selected` against a fresh server holding `objects` ConfigMaps that answers
/// `resourceVersion=0` lists in one page, as a real API server's watch cache does, or
/// (`paged`) in pages of their `limit`, prints the tables and returns the runs with the
/// load average before and after them.
fn run_shape(
    args: &Args,
    objects: usize,
    rt: &tokio::runtime::Runtime,
    selected: &[Scenario],
    run_index: bool,
    paged: bool,
) -> Result<(Results, String), String> {
    let load_before = loadavg();
    let server = rt
        .block_on(
            ApiServer::builder()
                .history_len(HISTORY)
                .paginate_rv0(paged)
                .start(),
        )
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let sharded = selected.iter().any(|s| s.cache == Cache::OursFactoryShard);
    if sharded {
        eprintln!(
            "compare: every object carries its shard label ({}), so every scenario of this run caches ~35 more bytes of JSON per object",
            SHARDS.0
        );
    }
    fill(&server, objects, sharded)?;
    let (rss, hwm) = (mem::rss() as f64 / MB, mem::hwm() as f64 / MB);
    let reset = mem::reset_hwm();
    eprintln!(
        "compare: {objects} objects stored in {:.1} s; this process (the server) {rss:.0} MB RSS, {hwm:.0} MB peak while filling; load average {load_before}",
        started.elapsed().as_secs_f64()
    );
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut results = Results::new();
    for run in 0..args.runs {
        let mut order = selected.to_vec();
        if run % 2 == 1 {
            order.reverse();
        }
        for s in order {
            let result = child(&exe, &server, s, args, objects, paged)?;
            eprintln!(
                "compare: {objects} objects, run {} {}: synced in {:.3} s ({:.2} CPU s, {:.2} of it system){}{}",
                run + 1,
                s.name,
                num(&result.synced, "secs").unwrap_or(f64::NAN),
                num(&result.synced, "cpu").unwrap_or(f64::NAN),
                num(&result.synced, "cpu_system").unwrap_or(f64::NAN),
                result
                    .synced
                    .get("first")
                    .and_then(|f| Some(format!(
                        " after a first informer's {:.3} s ({:.2} CPU s)",
                        num(f, "secs")?,
                        num(f, "cpu")?
                    )))
                    .unwrap_or_default(),
                result
                    .after
                    .as_ref()
                    .and_then(|a| Some(format!(", {} in {:.2} s", a["phase"], num(a, "secs")?)))
                    .unwrap_or_default()
            );
            results.entry(s.name).or_default().push(result);
        }
    }
    if reset {
        eprintln!(
            "compare: {objects} objects: this process (the server) peaked at {:.0} MB RSS while serving the runs",
            mem::hwm() as f64 / MB
        );
    }
    let queries = if run_index {
        Some(rt.block_on(index::run(&server, objects))?)
    } else {
        None
    };
    let load_after = loadavg();
    print_tables(args, objects, paged, selected, &results, queries.as_deref());
    println!("\nLoad average before: {load_before}; after: {load_after}.");
    drop(server);
    Ok((results, format!("{load_before} → {load_after}")))
}

/// Labels each object with its rendezvous winner among [`SHARDS`], as the ring's
/// sharder would.
fn label_for_shards(objects: &mut [ConfigMap]) {
    let (label, shards, _) = SHARDS;
    for cm in objects {
        let key = shard_key(&cm.metadata).expect("bench objects are named");
        let shard = winner(key.as_str(), shards).expect("three shards");
        cm.metadata
            .labels
            .get_or_insert_default()
            .insert(label.to_owned(), shard.to_owned());
    }
}

fn next_json(lines: &mut Lines<BufReader<ChildStdout>>) -> Result<Value, String> {
    let line = lines
        .next()
        .ok_or("child ended without reporting")?
        .map_err(|e| e.to_string())?;
    serde_json::from_str(&line).map_err(|e| format!("child line {line:?}: {e}"))
}

/// Makes glibc merge the parent's freed small chunks now, not while a child runs.
///
/// Storing 100k objects frees millions of small chunks; glibc merges them all
/// (`malloc_consolidate`) at the next request of 1 KiB or more, which spawning and
/// reading the child makes. That took ~170 ms of one core at the start of the first
/// child of a set — on a 2-core machine, a quarter of a sync's CPU — and is why first
/// runs were slower. A 64 KiB request (below the mmap threshold) triggers it here.
fn settle_allocator() {
    drop(std::hint::black_box(Vec::<u8>::with_capacity(64 << 10)));
}

/// One child run of `s`, with the parent's part of churn and relist.
fn child(
    exe: &std::path::Path,
    server: &ApiServer,
    s: Scenario,
    args: &Args,
    objects: usize,
    paged: bool,
) -> Result<RunResult, String> {
    let span = objects.clamp(1, CHURN_SPAN);
    let churn: Vec<ConfigMap> = if s.phase == Phase::Churn {
        let base = server.current_resource_version();
        (0..args.churn)
            .map(|k| config_map(k % span, base + 1 + k as u64))
            .collect()
    } else {
        Vec::new()
    };
    settle_allocator();
    let mut command = Command::new(exe);
    command
        .args(["--child", s.name, "--url", &server.url(), "--objects"])
        .arg(objects.to_string());
    if paged {
        command.arg("--paged");
    }
    let mut proc = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = proc.stdin.take().ok_or("no child stdin")?;
    let mut lines = BufReader::new(proc.stdout.take().ok_or("no child stdout")?).lines();
    let synced = next_json(&mut lines)?;
    let after = match s.phase {
        Phase::Sync => None,
        Phase::Churn => {
            let rv = server.insert_many(&churn).map_err(|e| e.to_string())?;
            let last = name((args.churn.max(1) - 1) % span);
            writeln!(stdin, "churn {rv} {last}").map_err(|e| e.to_string())?;
            Some(next_json(&mut lines)?)
        }
        Phase::Relist => {
            // The watch ends; the client's next watch gets a 410 and it relists; the
            // marker (the last object in list order) shows when the relist is through.
            // Let the watch live past client-go's one-second "very short watch" rule, so
            // ending it is an ordinary close rather than an error that forces a relist
            // of its own before the 410.
            std::thread::sleep(std::time::Duration::from_millis(1500));
            server.inject(Matcher::verb(Verb::Watch), Fault::WatchGone);
            server.faults().drop_watches();
            let i = objects.max(1) - 1;
            let rv = server
                .insert(&config_map(i, server.current_resource_version() + 1))
                .map_err(|e| e.to_string())?;
            writeln!(stdin, "relist {rv} {}", name(i)).map_err(|e| e.to_string())?;
            if std::env::var_os("COMPARE_TRACE").is_some() {
                Some(traced(server, || next_json(&mut lines))?)
            } else {
                Some(next_json(&mut lines)?)
            }
        }
    };
    drop(stdin);
    let status = proc.wait().map_err(|e| e.to_string())?;
    server.faults().clear();
    if !status.success() {
        return Err(format!("child {} failed: {status}", s.name));
    }
    Ok(RunResult { synced, after })
}

/// Runs `f` while printing the server's new requests (with the time since the cue) to
/// stderr, for `COMPARE_TRACE=1`.
fn traced<T>(server: &ApiServer, f: impl FnOnce() -> T) -> T {
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let seen = server.request_log().len();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut seen = seen;
            while !stop.load(Ordering::Relaxed) {
                let log = server.request_log();
                for entry in log.iter().skip(seen) {
                    let query: Vec<String> = entry
                        .query
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    eprintln!(
                        "compare: trace +{:.3} s {:?} {} {}",
                        start.elapsed().as_secs_f64(),
                        entry.verb,
                        entry.status,
                        query.join("&")
                    );
                }
                seen = log.len();
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        let out = f();
        stop.store(true, Ordering::Relaxed);
        out
    })
}

pub(crate) fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key)?.as_f64()
}

pub(crate) fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.retain(|x| x.is_finite());
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    Some(if xs.len() % 2 == 1 {
        xs[mid]
    } else {
        (xs[mid - 1] + xs[mid]) / 2.0
    })
}

/// Median over the runs of `name` of `f`.
pub(crate) fn med(
    results: &Results,
    name: &str,
    f: impl Fn(&RunResult) -> Option<f64>,
) -> Option<f64> {
    median(results.get(name)?.iter().filter_map(f).collect())
}

pub(crate) fn fmt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "–".to_owned(), |x| format!("{x:.digits$}"))
}

pub(crate) fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".to_owned(),
    }
}

pub(crate) fn synced_mb(key: &'static str) -> impl Fn(&RunResult) -> Option<f64> {
    move |r| num(&r.synced, key).map(|b| b / MB)
}

pub(crate) fn heap_delta(r: &RunResult) -> Option<f64> {
    Some(num(&r.synced, "heap")? - num(&r.synced, "heap0")?)
}

pub(crate) fn after(key: &'static str) -> impl Fn(&RunResult) -> Option<f64> {
    move |r| num(r.after.as_ref()?, key)
}

fn print_tables(
    args: &Args,
    objects: usize,
    paged: bool,
    selected: &[Scenario],
    results: &Results,
    queries: Option<&[QueryFigure]>,
) {
    let shape = if paged {
        "paged shape: the server answers resourceVersion=0 lists in pages of their limit; the floor lists in pages of 500"
    } else {
        "real shape: the server answers resourceVersion=0 lists in one page, as a real API server's watch cache; the floor lists in one request"
    };
    println!(
        "\n## {objects} ConfigMaps, medians of {} run(s) ({shape})\n",
        args.runs
    );
    let secs = |r: &RunResult| num(&r.synced, "secs");
    let cpu = |r: &RunResult| num(&r.synced, "cpu");
    let cpu_system = |r: &RunResult| num(&r.synced, "cpu_system");
    let rss = synced_mb("rss");
    let heap = |r: &RunResult| heap_delta(r).map(|b| b / MB);
    let floor_t = med(results, "floor", secs);
    let nostore_t = med(results, "floor-nostore", secs);
    let kube_t = med(results, "kube-runtime", secs);
    let kube_streaming_t = med(results, "kube-runtime-streaming", secs);
    let kube_cpu = med(results, "kube-runtime", cpu);
    let floor_cpu = med(results, "floor", cpu);
    let floor_system = med(results, "floor", cpu_system);
    let floor_rss = med(results, "floor", &rss);
    let kube_rss = med(results, "kube-runtime", &rss);
    let floor_heap = med(results, "floor", heap);
    let kube_heap = med(results, "kube-runtime", heap);
    println!(
        "| initial sync | time to synced (s) | vs floor | vs decode-only | vs kube-runtime | vs kube-runtime streaming list | CPU to synced (s) | vs floor | vs kube-runtime | of it system (s) | vs floor | RSS after sync (MB) | vs floor | vs kube-runtime | heap (MB) | vs floor | vs kube-runtime | heap bytes/object | peak RSS during sync (MB) | peak / after | peak heap during sync (MB) |"
    );
    println!(
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for s in selected.iter().filter(|s| s.phase == Phase::Sync) {
        let t = med(results, s.name, secs);
        let c = med(results, s.name, cpu);
        let system = med(results, s.name, cpu_system);
        let r = med(results, s.name, &rss);
        let h = med(results, s.name, heap);
        let per_object = med(results, s.name, |r| {
            Some(heap_delta(r)? / num(&r.synced, "len")?.max(1.0))
        });
        let peak_rss = med(results, s.name, synced_mb("hwm"));
        let peak_heap = med(results, s.name, |r| {
            Some((num(&r.synced, "heap_peak")? - num(&r.synced, "heap0")?) / MB)
        });
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.name,
            fmt(t, 2),
            ratio(t, floor_t),
            ratio(t, nostore_t),
            ratio(t, kube_t),
            ratio(t, kube_streaming_t),
            fmt(c, 2),
            ratio(c, floor_cpu),
            ratio(c, kube_cpu),
            fmt(system, 2),
            ratio(system, floor_system),
            fmt(r, 0),
            ratio(r, floor_rss),
            ratio(r, kube_rss),
            fmt(h, 0),
            ratio(h, floor_heap),
            ratio(h, kube_heap),
            fmt(per_object, 0),
            fmt(peak_rss, 0),
            ratio(peak_rss, r),
            fmt(peak_heap, 0),
        );
    }

    if results.contains_key("ours-factory-shard") {
        let objects = |r: &RunResult| num(&r.synced, "len");
        let (one, all) = ("ours-factory-shard", "ours-factory");
        println!(
            "\n| one replica's cache, shard {} of {:?} | objects cached | time to synced (s) | vs unsharded | RSS after sync (MB) | vs unsharded | heap (MB) | vs unsharded |",
            SHARDS.2, SHARDS.1
        );
        println!("|---|---|---|---|---|---|---|---|");
        for name in [all, one] {
            println!(
                "| {name} | {} | {} | {} | {} | {} | {} | {} |",
                fmt(med(results, name, objects), 0),
                fmt(med(results, name, secs), 2),
                ratio(med(results, name, secs), med(results, all, secs)),
                fmt(med(results, name, &rss), 0),
                ratio(med(results, name, &rss), med(results, all, &rss)),
                fmt(med(results, name, heap), 0),
                ratio(med(results, name, heap), med(results, all, heap)),
            );
        }
    }

    print_later_informers(selected, results);

    let ours: Vec<_> = selected
        .iter()
        .filter(|s| {
            s.phase == Phase::Sync
                && results
                    .get(s.name)
                    .is_some_and(|r| r.iter().any(|r| r.synced.get("phases").is_some()))
        })
        .collect();
    if !ours.is_empty() {
        let phase = |key: &'static str| move |r: &RunResult| num(r.synced.get("phases")?, key);
        println!(
            "\n| our sync, by phase | list decoded, first object cached (s) | all cached, synced (s) | heap when the list was handed over (MB) | heap after sync (MB) |"
        );
        println!("|---|---|---|---|---|");
        for s in ours {
            println!(
                "| {} | {} | {} | {} | {} |",
                s.name,
                fmt(med(results, s.name, phase("t_first_item")), 2),
                fmt(med(results, s.name, phase("t_synced")), 2),
                fmt(
                    med(results, s.name, |r| Some(
                        (num(r.synced.get("phases")?, "heap_at_first_item")?
                            - num(&r.synced, "heap0")?)
                            / MB
                    )),
                    0
                ),
                fmt(med(results, s.name, |r| heap_delta(r).map(|b| b / MB)), 0),
            );
        }
    }

    let churn: Vec<_> = selected
        .iter()
        .filter(|s| s.phase == Phase::Churn)
        .collect();
    if !churn.is_empty() {
        let events = args.churn as f64;
        let rate = |r: &RunResult| Some(events / num(r.after.as_ref()?, "secs")?);
        let floor_rate = med(results, "churn-floor", rate);
        let kube_rate = med(results, "churn-kube-runtime", rate);
        let kube_cpu = med(results, "churn-kube-runtime", after("cpu"));
        println!(
            "\n| watch churn ({} MODIFIED over {} objects) | time (s) | events/s | vs floor | vs kube-runtime | CPU (s) | CPU µs/event | CPU vs kube-runtime | RSS after churn (MB) | peak RSS (MB) |",
            args.churn,
            objects.min(CHURN_SPAN)
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
        for s in churn {
            let r = med(results, s.name, rate);
            let c = med(results, s.name, after("cpu"));
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                s.name,
                fmt(med(results, s.name, after("secs")), 2),
                fmt(r, 0),
                ratio(r, floor_rate),
                ratio(r, kube_rate),
                fmt(c, 2),
                fmt(c.map(|c| c * 1e6 / events), 1),
                ratio(c, kube_cpu),
                fmt(med(results, s.name, |r| after("rss")(r).map(|b| b / MB)), 0),
                fmt(med(results, s.name, |r| after("hwm")(r).map(|b| b / MB)), 0),
            );
        }
    }

    let relist: Vec<_> = selected
        .iter()
        .filter(|s| s.phase == Phase::Relist)
        .collect();
    if !relist.is_empty() {
        println!(
            "\n| forced relist (410) | relist time (s) | relist CPU (s) | steady RSS (MB) | relist peak RSS (MB) | peak / steady | steady heap (MB) | relist peak heap (MB) | heap peak / steady |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        for s in relist {
            let steady = med(results, s.name, synced_mb("rss"));
            let peak = med(results, s.name, |r| after("hwm")(r).map(|b| b / MB));
            let steady_heap = med(results, s.name, synced_mb("heap"));
            let peak_heap = med(results, s.name, |r| after("heap_peak")(r).map(|b| b / MB));
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                s.name,
                fmt(med(results, s.name, after("secs")), 2),
                fmt(med(results, s.name, after("cpu")), 2),
                fmt(steady, 0),
                fmt(peak, 0),
                ratio(peak, steady),
                fmt(steady_heap, 0),
                fmt(peak_heap, 0),
                ratio(peak_heap, steady_heap),
            );
        }
    }

    if let Some(queries) = queries {
        let ours = queries.first().map(|q| q.ns);
        println!("\n| index query at {objects} objects | ns/query | objects returned | vs ours |");
        println!("|---|---|---|---|");
        for q in queries {
            println!(
                "| {} | {:.0} | {} | {} |",
                q.name,
                q.ns,
                q.results,
                ratio(Some(q.ns), ours)
            );
        }
    }
    let _ = (floor_heap, kube_heap);
}

/// The table of the scenarios that sync a second informer in one process: the first
/// informer's sync and the second's, side by side, with the page faults and context
/// switches of each.
fn print_later_informers(selected: &[Scenario], results: &Results) {
    let later: Vec<_> = selected.iter().filter(|s| s.cache.is_second()).collect();
    if later.is_empty() {
        return;
    }
    // The figures of the first informer's sync (`Some("first")`) or of the timed one.
    fn line<'a>(r: &'a RunResult, phase: Option<&str>) -> Option<&'a Value> {
        match phase {
            Some(phase) => r.synced.get(phase),
            None => Some(&r.synced),
        }
    }
    let of = |phase: Option<&'static str>, key: &'static str| {
        move |r: &RunResult| num(line(r, phase)?, key)
    };
    let counter = |phase: Option<&'static str>, key: &'static str| {
        move |r: &RunResult| num(line(r, phase)?.get("counters")?, key)
    };
    println!(
        "\n| a later informer in one process | informer | synced (s) | CPU (s) | vs first | minor faults | voluntary switches | involuntary switches |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for s in later {
        let first_cpu = med(results, s.name, of(Some("first"), "cpu"));
        for (which, phase) in [("first", Some("first")), ("second", None)] {
            let cpu = med(results, s.name, of(phase, "cpu"));
            println!(
                "| {} | {which} | {} | {} | {} | {} | {} | {} |",
                s.name,
                fmt(med(results, s.name, of(phase, "secs")), 2),
                fmt(cpu, 2),
                ratio(cpu, first_cpu),
                fmt(med(results, s.name, counter(phase, "minor_faults")), 0),
                fmt(
                    med(results, s.name, counter(phase, "voluntary_switches")),
                    0
                ),
                fmt(
                    med(results, s.name, counter(phase, "involuntary_switches")),
                    0
                ),
            );
        }
    }
}
