//! A controller under load, side by side with kube-runtime's `Controller`: how long a
//! change waits before its reconcile starts, how many reconciles a replica sustains, and
//! what a restart with a backlog does to a live change.
//!
//! ```text
//! cargo bench -p reflector-bench --bench controller_load
//! cargo bench -p reflector-bench --bench controller_load -- --scenario steady --rates 1000,2000 --seconds 10
//! cargo bench -p reflector-bench --bench controller_load -- --scenario restart --backlog 100000
//! ```
//!
//! Options: `--scenario steady|restart` (repeatable; default both), `--side NAME`
//! (repeatable; default every side: `ours`, `ours-no-read-your-writes`, `kube-runtime`,
//! `apply-alone`),
//! `--objects N` (steady: default 10,000), `--rates R[,R…]` (steady: changes per second,
//! default 500,1000,2000,5000), `--seconds S` (steady: default 30), `--backlog N`
//! (restart: default 100,000), `--concurrency C` (reconciles at once, both sides:
//! default 4), `--runs R` (default 1; figures are medians over the runs). `--check-args`
//! parses and checks the arguments, prints what they select and exits without measuring
//! (what `scripts/check-benchmarks.py` runs for each command in `BENCHMARKS.md`).
//!
//! # The sides
//!
//! The same reconcile on both: read the cached ConfigMap's `data.stamp` (when the
//! change was written, in nanoseconds since the epoch), then server-side apply one
//! annotation (`bench.reflector.rs/observed: <stamp>`, field manager `bench-controller`)
//! through the API server. An apply that changes nothing writes nothing, so after the
//! change's apply the controller's own write brings one more, idle reconcile, on both
//! sides alike.
//!
//! - `ours`: `Controller::for_kind(client).concurrency(C)`: the factory's defaults, the
//!   live-first priority queue, read-your-writes on (each apply is recorded with
//!   `Request::wrote`, so a reconcile never sees the object older than its last write).
//! - `ours-no-read-your-writes`: the same with `.read_your_writes(false)`.
//! - `kube-runtime`: `kube::runtime::Controller::new(api, watcher::Config::default())`
//!   with `Config::default().concurrency(C)` (its default is unbounded; the same bound
//!   keeps the two comparable).
//! - `apply-alone` (steady only): no controller and no watch, the floor of the two:
//!   `C` tasks send the same applies at the rate the controllers reconcile (two per
//!   change: the change's, which writes, and the idle one, which changes nothing),
//!   paced by the clock. Its CPU per apply is what the reconcile's own apply costs
//!   (the kube client, hyper, the kernel's TCP and the wake-ups they bring); a
//!   controller's CPU per reconcile above it is its machinery's.
//!
//! # How it measures
//!
//! The parent process is the API server (the embedded `reflector-testkit` server, in its
//! own process as a real one would be, so its CPU is not charged to the controller) and
//! the writer; each run of a side is a fresh child process (this binary with `--child`)
//! that runs the controller. Clocks: both processes read the same system clock.
//!
//! - **steady**: `--objects` ConfigMaps; each child first reconciles every object once
//!   (the initial list), then the parent writes changes straight into the server's state
//!   (one object at a time, round-robin, each a new `data.stamp` and resourceVersion) at
//!   the rate for `--seconds`. The child records, for each reconcile that sees a stamp it
//!   had not seen for that object, the time from the stamp to the reconcile's start
//!   (changes made twice before one reconcile count once: the later stamp); after the
//!   writer stops, the child waits until every object's last change is reconciled (in
//!   whatever order the controller takes its backlog). Reported: p50,
//!   p99 and max latency, the p99 over every change written (a change overwritten before
//!   its reconcile counts until the reconcile that saw the later one: a controller that
//!   coalesces a backlog gains nothing by it), reconciles per second over the writing
//!   window, the child's CPU
//!   time (user + system, every thread) per reconcile over the same window, and its RSS
//!   at the end. A rate is **sustained** when the writer kept 95% of it (else the server
//!   was the limit), the p99 is under 1 s and every last change was reconciled within 5 s
//!   of the writer's end.
//! - **restart**: `--backlog` ConfigMaps, each already applied by the controller's field
//!   manager (so the backlog's applies change nothing); the child starts its controller
//!   and, 2 s later, the parent changes the object listed last. Reported: the time from
//!   that change to its reconcile's start, and the time from the child's start until
//!   every object has been reconciled once.

#[cfg(not(feature = "bench-mimalloc"))]
use std::alloc::System;

#[cfg(not(feature = "bench-mimalloc"))]
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[path = "controller_load/child.rs"]
mod child;
#[path = "compare/cpu.rs"]
#[allow(
    dead_code,
    reason = "shared with the compare bench, which uses every probe"
)]
mod cpu;
#[path = "compare/figures.rs"]
mod figures;
#[path = "controller_load/latency.rs"]
mod latency;
#[path = "compare/mem.rs"]
#[allow(
    dead_code,
    reason = "shared with the compare bench, which uses every probe"
)]
mod mem;
#[path = "controller_load/parent.rs"]
mod parent;

/// The system allocator, counted (as the compare bench's, so `mem` builds alike).
#[cfg(not(feature = "bench-mimalloc"))]
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// mimalloc, with `--features bench-mimalloc`.
#[cfg(feature = "bench-mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Scenario {
    /// Changes at a fixed rate after the initial list is reconciled.
    Steady,
    /// One live change while the initial list's backlog is reconciled.
    Restart,
}

impl Scenario {
    const ALL: [Scenario; 2] = [Scenario::Steady, Scenario::Restart];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Scenario::Steady => "steady",
            Scenario::Restart => "restart",
        }
    }

    fn find(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Whose controller a child runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Side {
    /// Ours, read-your-writes on (the default).
    Ours,
    /// Ours with `read_your_writes(false)`.
    OursNoReadYourWrites,
    /// kube-runtime's `Controller`.
    KubeRuntime,
    /// No controller: the reconcile's apply alone, at the controllers' rate (steady
    /// only), the floor of their CPU per reconcile.
    ApplyAlone,
}

impl Side {
    const ALL: [Side; 4] = [
        Side::Ours,
        Side::OursNoReadYourWrites,
        Side::KubeRuntime,
        Side::ApplyAlone,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Side::Ours => "ours",
            Side::OursNoReadYourWrites => "ours-no-read-your-writes",
            Side::KubeRuntime => "kube-runtime",
            Side::ApplyAlone => "apply-alone",
        }
    }

    fn find(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Command-line options shared by parent and child.
#[derive(Debug, Clone)]
pub(crate) struct Args {
    pub scenarios: Vec<Scenario>,
    pub sides: Vec<Side>,
    /// Objects of the steady scenario.
    pub objects: usize,
    /// Changes per second of the steady scenario, one run each.
    pub rates: Vec<usize>,
    /// Seconds the steady scenario writes.
    pub seconds: usize,
    /// Objects of the restart scenario.
    pub backlog: usize,
    /// Reconciles at once, on both sides.
    pub concurrency: usize,
    pub runs: usize,
    pub check_args: bool,
    /// Set in a child: the side, the scenario and the server's URL.
    pub child: Option<(Side, Scenario, String)>,
}

const USAGE: &str = "--scenario steady|restart (repeatable), --side NAME (repeatable), --objects N, --rates R[,R…], --seconds S, --backlog N, --concurrency C, --runs R, --check-args";

fn parse_args(argv: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        scenarios: Vec::new(),
        sides: Vec::new(),
        objects: 10_000,
        rates: Vec::new(),
        seconds: 30,
        backlog: 100_000,
        concurrency: 4,
        runs: 1,
        check_args: false,
        child: None,
    };
    let (mut child_side, mut child_scenario, mut url) = (None, None, None);
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--scenario" => {
                let v = value("--scenario")?;
                let s = Scenario::find(&v).ok_or(format!("unknown scenario {v:?}"))?;
                if !args.scenarios.contains(&s) {
                    args.scenarios.push(s);
                }
            }
            "--side" => {
                let v = value("--side")?;
                let s = Side::find(&v).ok_or(format!("unknown side {v:?}"))?;
                if !args.sides.contains(&s) {
                    args.sides.push(s);
                }
            }
            "--objects" => args.objects = count("--objects", &value("--objects")?)?,
            "--rates" => {
                for r in value("--rates")?.split(',') {
                    args.rates.push(count("--rates", r.trim())?);
                }
            }
            "--seconds" => args.seconds = count("--seconds", &value("--seconds")?)?,
            "--backlog" => args.backlog = count("--backlog", &value("--backlog")?)?,
            "--concurrency" => {
                args.concurrency = count("--concurrency", &value("--concurrency")?)?;
            }
            "--runs" => args.runs = count("--runs", &value("--runs")?)?,
            "--check-args" => args.check_args = true,
            "--child" => {
                let v = value("--child")?;
                child_side = Some(Side::find(&v).ok_or(format!("unknown side {v:?}"))?);
            }
            "--child-scenario" => {
                let v = value("--child-scenario")?;
                child_scenario = Some(Scenario::find(&v).ok_or(format!("unknown scenario {v:?}"))?);
            }
            "--url" => url = Some(value("--url")?),
            // `cargo bench` passes `--bench` to every bench binary.
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?}; known: {USAGE}")),
        }
    }
    if args.scenarios.is_empty() {
        args.scenarios = Scenario::ALL.to_vec();
    }
    if args.sides.is_empty() {
        args.sides = Side::ALL.to_vec();
    }
    if args.rates.is_empty() {
        args.rates = vec![500, 1000, 2000, 5000];
    }
    args.child = match (child_side, child_scenario, url) {
        (Some(side), Some(scenario), Some(url)) => Some((side, scenario, url)),
        (None, None, None) => None,
        _ => return Err("a child needs --child, --child-scenario and --url".to_owned()),
    };
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

/// What `--check-args` prints: the runs the arguments select.
fn describe(args: &Args) -> String {
    let sides: Vec<&str> = args.sides.iter().map(|s| s.name()).collect();
    let mut parts = Vec::new();
    for scenario in &args.scenarios {
        parts.push(match scenario {
            Scenario::Steady => format!(
                "steady: {} objects, {:?} changes/s for {} s each",
                args.objects, args.rates, args.seconds
            ),
            Scenario::Restart => format!("restart: {} objects", args.backlog),
        });
    }
    format!(
        "{}; sides: {}; concurrency {}; {} run(s)",
        parts.join("; "),
        sides.join(", "),
        args.concurrency,
        args.runs
    )
}

fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("controller_load: {e}");
            std::process::exit(2);
        }
    };
    let result = if let Some((side, scenario, url)) = &args.child {
        child::run(*side, *scenario, url, &args)
    } else if args.check_args {
        println!("{}", describe(&args));
        Ok(())
    } else {
        parent::run(&args)
    };
    if let Err(e) = result {
        eprintln!("controller_load: {e}");
        std::process::exit(1);
    }
}
