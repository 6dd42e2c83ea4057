//! What the server's memory holds per stored object: it must hold a million benchmark
//! ConfigMaps beside the clients under test, so each costs its JSON and little more.

use std::alloc::System;

use reflector_testkit::{ApiServer, bench_objects};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Heap bytes allocated and not yet freed.
fn live() -> usize {
    let stats = GLOBAL.stats();
    stats
        .bytes_allocated
        .saturating_sub(stats.bytes_deallocated)
}

/// Objects stored: enough that the event log's and the index's growth average out.
const OBJECTS: usize = 20_000;

/// Heap bytes a stored object may take beyond its JSON: its key, name, namespace,
/// labels, the index entry and its event-log entry.
const OVERHEAD: usize = 600;

#[tokio::test(flavor = "current_thread")]
async fn a_stored_object_costs_its_json_and_at_most_600_bytes_more() {
    let server = ApiServer::start().await.expect("server starts");
    let objects = bench_objects::config_maps(OBJECTS);
    let json: usize = objects
        .iter()
        .map(|cm| serde_json::to_vec(cm).expect("encodes").len())
        .sum();
    let before = live();
    server.insert_many(&objects).expect("stored");
    let stored = live().saturating_sub(before);
    let (per_object, json_per_object) = (stored / OBJECTS, json / OBJECTS);
    assert!(
        per_object <= json_per_object + OVERHEAD,
        "{per_object} heap bytes per stored object for {json_per_object} bytes of JSON \
         (at most {} allowed)",
        json_per_object + OVERHEAD
    );
}
