//! Side-by-side benchmark of our informer, kube-runtime's reflector and the decode floor,
//! on the shared object set (`shared/bench/README.md`) served by the embedded
//! `reflector-testkit` API server.
//!
//! ```text
//! cargo bench -p reflector-bench --bench compare -- --objects 100000
//! cargo bench -p reflector-bench --bench compare -- --objects 10000 --runs 3
//! cargo bench -p reflector-bench --bench compare -- --objects 10000 --scenario ours-factory
//! cargo bench -p reflector-bench --bench compare -- --objects 100000 --paged
//! cargo bench -p reflector-bench --bench compare --features bench-mimalloc -- --objects 100000
//! cargo bench -p reflector-bench --bench compare -- --objects 10000,100000,1000000 --scenario kube-runtime
//! ```
//!
//! Options: `--objects N` (default 10,000; a comma-separated list, or the option
//! repeated, runs every selected scenario at each size in turn, against a server refilled
//! for each, and ends with one scale table over the sizes), `--runs R` (default 3), `--scenario NAME`
//! (repeatable; default all), `--churn E` (default 100,000 MODIFIED events), `--paged`
//! (after the tables of the real shape, the same scenarios against a second server that
//! pages `resourceVersion=0` lists, as a second set of tables). Counts must be at least 1;
//! an unknown option or scenario is an error. `--check-args` parses and checks the other
//! arguments, prints what they select and exits without measuring (what
//! `scripts/check-benchmarks.py` runs for each command in `BENCHMARKS.md`).
//! With `COMPARE_IN_TASK` set in the environment each child runs its scenario in a
//! spawned task on a runtime worker instead of on its main thread.
//!
//! # Server shapes
//!
//! The server answers `resourceVersion=0` lists as a real API server's watch cache does:
//! one page of every object, whatever the `limit` (~140 MB of JSON at 100k objects). An
//! informer's first list is such a list (ours, and kube-runtime's `streaming_lists()`
//! fallback); kube-runtime's default watcher sends `limit=500` without a resource version
//! (kube's request builder drops `resourceVersion=0` next to a limit), which a real
//! server pages too. The floor lists in one request. With `--paged` a second server
//! pages `resourceVersion=0` lists by their `limit`, and the floor lists in pages of 500.
//!
//! # Scenarios
//!
//! `floor`, `floor-nostore` (decoded and dropped), `kube-runtime` (`watcher`, page size
//! 500), `kube-runtime-strip-managed-fields` (the same, each object's `managedFields`
//! cleared by `.modify(..)` before the store, as kube-runtime's users commonly do),
//! `kube-runtime-streaming` (`watcher::Config::default().streaming_lists()`),
//! `ours` (plain `SharedIndexInformer`), `ours-factory` (`InformerFactory` defaults),
//! `ours-factory-in-order` (the factory with `.queue(QueueMode::InOrder)`, client-go
//! 1.36's in-order queue in place of the per-key queue),
//! `ours-watch-list` (the factory with `ReflectorOptions::use_watch_list(true)`),
//! `ours-keep-managed-fields` (the factory with `keep_managed_fields()`),
//! `ours-strip-transform`, the metadata-only pair, `ours-factory-shard` (the factory's
//! informer selecting shard `a` of a three-shard ring: one sharded replica's cache; it
//! labels every stored object with its shard, for every scenario of that run),
//! `churn-*` (the same caches, then watch churn) and `relist-*`.
//!
//! # How it measures
//!
//! The parent process runs the API server and stores the objects (generated and stored
//! 10,000 at a time, so a million fit beside the clients; it prints its own RSS, the
//! server's, after storing them and its peak while serving the runs); every scenario run
//! is a fresh child process (this same binary with `--child`), so the server's memory and
//! the previous run's allocations stay out of the figures. Runs alternate the scenario order
//! (forward, then backward). Each child reports one JSON line per phase:
//!
//! * time from the first request until the cache holds the initial list (`has_synced`,
//!   `wait_until_ready`, or the last page decoded), polled every millisecond, and the
//!   child's CPU time (user + system, every thread; `/proc/self/stat`, 10 ms ticks)
//!   over the same span, and how much of it was system time;
//! * `VmRSS` and `VmHWM` from `/proc/self/status` 300 ms after sync, and live heap bytes
//!   from a counting global allocator (`stats_alloc`; it adds two atomic increments to
//!   every allocation, in every scenario alike); `VmHWM` is the peak RSS since the child
//!   started, so it covers the sync, and the heap's peak over the same window is sampled
//!   every 2 ms (the table's "peak RSS/heap during sync");
//! * churn: after sync the parent writes E MODIFIED events straight into the server's
//!   state (cycling over 10,000 objects, each with a new resourceVersion and `data.rev`),
//!   then tells the child, which polls its cache until the last object shows the last
//!   resourceVersion; the child's CPU time is counted from just before the parent
//!   writes (the cache is idle then) until that moment;
//! * relist: after sync the child resets `VmHWM` (`/proc/self/clear_refs`), the parent
//!   ends the watch and makes the next watch answer 410, then writes a marker object; the
//!   child reports the peak while it relists until the cache shows the marker.
//!
//! The index query comparison runs in the parent: our `Lister::by_index` on an
//! `instance` label index against a scan of kube-runtime's store.

#[cfg(not(feature = "bench-mimalloc"))]
use std::alloc::System;

#[cfg(not(feature = "bench-mimalloc"))]
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[path = "compare/child.rs"]
mod child;
#[path = "compare/cpu.rs"]
mod cpu;
#[path = "compare/figures.rs"]
mod figures;
#[path = "compare/index.rs"]
mod index;
#[path = "compare/mem.rs"]
mod mem;
#[path = "compare/parent.rs"]
mod parent;
#[path = "compare/scale.rs"]
mod scale;
#[path = "compare/scenario.rs"]
mod scenario;

/// The system allocator (glibc malloc), counted: heap figures come from here.
#[cfg(not(feature = "bench-mimalloc"))]
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// mimalloc, for the allocator A/B (`--features bench-mimalloc`); not counted, so
/// heap figures read 0 and only time and RSS compare.
#[cfg(feature = "bench-mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Command-line options shared by parent and child.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    /// Numbers of ConfigMaps, one run of the scenarios each (a child gets one).
    pub objects: Vec<usize>,
    /// Runs per scenario.
    pub runs: usize,
    /// MODIFIED events written in the churn scenarios.
    pub churn: usize,
    /// Scenarios to run (empty: all).
    pub scenarios: Vec<String>,
    /// Set in a child: the scenario to run.
    pub child: Option<String>,
    /// Set in a child: the server URL.
    pub url: Option<String>,
    /// Also run every scenario against a server that pages `resourceVersion=0` lists
    /// (the second set of tables); in a child: the floor lists in pages of 500.
    pub paged: bool,
    /// Only check the arguments: print what they select and exit without measuring.
    pub check_args: bool,
}

/// The options `parse_args` knows, for its error message.
const USAGE: &str = "--objects N[,N…] (repeatable), --runs R, --churn E, --scenario NAME (repeatable), --paged, --check-args";

fn parse_args(argv: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        objects: Vec::new(),
        runs: 3,
        churn: 100_000,
        scenarios: Vec::new(),
        child: None,
        url: None,
        paged: false,
        check_args: false,
    };
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--objects" => {
                for n in value("--objects")?.split(',') {
                    args.objects.push(count("--objects", n.trim())?);
                }
            }
            "--runs" => args.runs = count("--runs", &value("--runs")?)?,
            "--churn" => args.churn = count("--churn", &value("--churn")?)?,
            "--scenario" => args.scenarios.push(value("--scenario")?),
            "--child" => args.child = Some(value("--child")?),
            "--url" => args.url = Some(value("--url")?),
            "--paged" => args.paged = true,
            "--check-args" => args.check_args = true,
            // `cargo bench` passes `--bench` to every bench binary.
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?}; known: {USAGE}")),
        }
    }
    if args.objects.is_empty() {
        args.objects.push(10_000);
    }
    if args.child.is_some() && args.objects.len() > 1 {
        return Err("--child takes one --objects N".to_owned());
    }
    Ok(args)
}

/// `value` as a count of at least 1, or an error naming `option`.
fn count(option: &str, value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(0) => Err(format!("{option} must be at least 1")),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{option} {value:?}: {e}")),
    }
}

/// What `--check-args` prints: the run the arguments select.
fn describe(args: &Args) -> Result<String, String> {
    let (selected, index) = scenario::select(&args.scenarios)?;
    let mut names: Vec<&str> = selected.iter().map(|s| s.name).collect();
    if index {
        names.push(scenario::INDEX);
    }
    let sizes: Vec<String> = args.objects.iter().map(usize::to_string).collect();
    Ok(format!(
        "{} objects, {} runs, {} churn events{}; scenarios: {}",
        sizes.join(", "),
        args.runs,
        args.churn,
        if args.paged { ", also paged" } else { "" },
        names.join(", ")
    ))
}

fn main() {
    let result = parse_args(std::env::args().skip(1)).and_then(|args| {
        if args.check_args {
            return describe(&args).map(|run| println!("compare: arguments OK: {run}"));
        }
        match (&args.child, &args.url) {
            (Some(name), Some(url)) => child::run(name, url, args.objects[0], args.paged),
            (Some(_), None) => Err("--child needs --url".to_owned()),
            _ => parent::run(&args),
        }
    });
    if let Err(error) = result {
        eprintln!("compare: {error}");
        std::process::exit(1);
    }
}
