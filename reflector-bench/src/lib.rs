//! Benchmarks of reflector that set their own global allocator, kept out of the
//! library crates (whose manifests then carry no benchmark-only features). No
//! library code: see `benches/compare.rs` and `benches/informer.rs`.
//!
//! ```text
//! cargo bench -p reflector-bench --bench compare -- --objects 100000
//! cargo bench -p reflector-bench --bench informer -- --sample-size 10
//! cargo bench -p reflector-bench --bench compare --features bench-mimalloc -- --objects 100000
//! ```
