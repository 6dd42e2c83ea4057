//! The scale table: the same scenarios at several sizes, one row per size and cache, with
//! the cache's sync, relist and churn figures side by side.

use crate::Args;
use crate::mem::MB;
use crate::parent::{
    CHURN_SPAN, Results, RunResult, after, fmt, heap_delta, med, num, ratio, synced_mb,
};
use crate::scenario::Scenario;

/// The runs at one size.
pub(crate) struct Size {
    /// ConfigMaps stored.
    pub objects: usize,
    /// The runs, by scenario name.
    pub results: Results,
    /// Load average before and after the runs.
    pub load: String,
}

/// The peer every ratio is to.
const PEER: &str = "kube-runtime";

/// The cache a scenario measures: its name without the `churn-`/`relist-` prefix, so a
/// cache's churn and relist figures share its row.
fn cache_of(name: &str) -> &str {
    name.strip_prefix("churn-")
        .or_else(|| name.strip_prefix("relist-"))
        .unwrap_or(name)
}

/// Heap bytes per cached object at sync.
fn heap_per_object(r: &RunResult) -> Option<f64> {
    Some(heap_delta(r)? / num(&r.synced, "len")?.max(1.0))
}

/// Prints one table over `sizes`: per size and cache, time and CPU to synced, RSS after
/// sync, heap bytes per object (and its ratio to the previous size's), peak RSS during
/// sync over RSS after, relist peak over steady RSS, and churn events per second, each
/// with its ratio to kube-runtime's at that size where the goal compares them.
pub(crate) fn print(args: &Args, selected: &[Scenario], sizes: &[Size]) {
    let mut caches: Vec<&str> = Vec::new();
    for s in selected {
        let cache = cache_of(s.name);
        if !caches.contains(&cache) {
            caches.push(cache);
        }
    }
    println!(
        "\n## Scale: {} ConfigMaps, medians of {} run(s) (real shape; churn: {} MODIFIED over at most {} objects)\n",
        sizes
            .iter()
            .map(|s| s.objects.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        args.runs,
        args.churn,
        CHURN_SPAN,
    );
    println!(
        "| objects | cache | time to synced (s) | CPU to synced (s) | time vs {PEER} | CPU vs {PEER} | RSS after sync (MB) | vs {PEER} | heap bytes/object | vs previous size | peak RSS / after | relist time (s) | relist peak / steady RSS | churn events/s | vs {PEER} | churn CPU µs/event |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let secs = |r: &RunResult| num(&r.synced, "secs");
    let cpu = |r: &RunResult| num(&r.synced, "cpu");
    let rss = synced_mb("rss");
    let events = args.churn as f64;
    let rate = |r: &RunResult| Some(events / num(r.after.as_ref()?, "secs")?);
    let mut previous: Option<&Size> = None;
    for size in sizes {
        let results = &size.results;
        let peer_t = med(results, PEER, secs);
        let peer_cpu = med(results, PEER, cpu);
        let peer_rss = med(results, PEER, &rss);
        let peer_churn = med(results, &format!("churn-{PEER}"), rate);
        for cache in &caches {
            let t = med(results, cache, secs);
            let c = med(results, cache, cpu);
            let r = med(results, cache, &rss);
            let per_object = med(results, cache, heap_per_object);
            let per_object_before = previous.and_then(|p| med(&p.results, cache, heap_per_object));
            let peak = med(results, cache, synced_mb("hwm"));
            let relist = format!("relist-{cache}");
            let steady = med(results, &relist, synced_mb("rss"));
            let relist_peak = med(results, &relist, |r| after("hwm")(r).map(|b| b / MB));
            let churn = format!("churn-{cache}");
            let churn_rate = med(results, &churn, rate);
            let churn_cpu = med(results, &churn, after("cpu"));
            println!(
                "| {} | {cache} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                size.objects,
                fmt(t, 2),
                fmt(c, 2),
                ratio(t, peer_t),
                ratio(c, peer_cpu),
                fmt(r, 0),
                ratio(r, peer_rss),
                fmt(per_object, 0),
                ratio(per_object, per_object_before),
                ratio(peak, r),
                fmt(med(results, &relist, after("secs")), 2),
                ratio(relist_peak, steady),
                fmt(churn_rate, 0),
                ratio(churn_rate, peer_churn),
                fmt(churn_cpu.map(|c| c * 1e6 / events), 1),
            );
        }
        previous = Some(size);
    }
    println!();
    for size in sizes {
        println!("Load average at {} objects: {}.", size.objects, size.load);
    }
}
