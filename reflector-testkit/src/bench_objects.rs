//! The shared benchmark object set (see `shared/bench/README.md`): deterministic
//! ConfigMaps of ~1.4 KiB with realistic metadata, reused by every bench.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, ObjectMeta, Time,
};
use serde_json::json;

/// Namespace of the benchmark objects.
pub const NAMESPACE: &str = "bench";

/// A small deterministic PRNG (SplitMix64) so objects are identical on every run.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// Seeds the generator.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `len` characters from `[A-Za-z0-9_-]`.
    pub fn alphanumeric(&mut self, len: usize) -> String {
        const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        (0..len)
            .map(|_| CHARS[(self.next_u64() % 64) as usize] as char)
            .collect()
    }
}

/// Name of object `i`: `cm-000000` … `cm-099999`.
#[must_use]
pub fn name(i: usize) -> String {
    format!("cm-{i:06}")
}

/// Benchmark ConfigMap number `i` (namespace `bench`) with resourceVersion `rv` in
/// `data.rev` and `metadata.resourceVersion`: 3 labels, 2 annotations, one kubectl
/// `managedFields` entry and pseudo-random `config.yaml` (420 chars) and `settings.json`
/// (160 chars), about 1.4 KiB of JSON.
///
/// ```
/// let cm = reflector_testkit::bench_objects::config_map(7, 100);
/// assert_eq!(cm.metadata.name.as_deref(), Some("cm-000007"));
/// let len = serde_json::to_vec(&cm).unwrap().len();
/// assert!((1300..1500).contains(&len), "{len}");
/// ```
#[must_use]
pub fn config_map(i: usize, rv: u64) -> ConfigMap {
    let mut rng = SplitMix64::new(0x5EED_0000 ^ i as u64);
    let time = Time(k8s_openapi::jiff::Timestamp::from_second(1_748_779_200).unwrap_or_default());
    let labels = BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "bench".to_owned()),
        (
            "app.kubernetes.io/instance".to_owned(),
            format!("bench-{}", i % 1000),
        ),
        ("tier".to_owned(), "backend".to_owned()),
    ]);
    let annotations = BTreeMap::from([
        (
            "bench.example.com/owner".to_owned(),
            format!("team-{}", i % 7),
        ),
        (
            "bench.example.com/checksum".to_owned(),
            format!("sha256:{}", rng.alphanumeric(40)),
        ),
    ]);
    let fields = json!({
        "f:data": {".": {}, "f:config.yaml": {}, "f:rev": {}, "f:settings.json": {}},
        "f:metadata": {"f:labels": {".": {}, "f:app.kubernetes.io/instance": {}, "f:app.kubernetes.io/name": {}, "f:tier": {}}}
    });
    let data = BTreeMap::from([
        ("rev".to_owned(), rv.to_string()),
        ("config.yaml".to_owned(), rng.alphanumeric(420)),
        ("settings.json".to_owned(), rng.alphanumeric(160)),
    ]);
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name(i)),
            namespace: Some(NAMESPACE.to_owned()),
            uid: Some(format!("6f1c2a3e-0000-4000-8000-{i:012}")),
            resource_version: Some(rv.to_string()),
            creation_timestamp: Some(time.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            managed_fields: Some(vec![ManagedFieldsEntry {
                manager: Some("kubectl".to_owned()),
                operation: Some("Update".to_owned()),
                api_version: Some("v1".to_owned()),
                time: Some(time),
                fields_type: Some("FieldsV1".to_owned()),
                fields_v1: Some(FieldsV1(fields)),
                subresource: None,
            }]),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// Objects `0..n`, each with resourceVersion `100`.
#[must_use]
pub fn config_maps(n: usize) -> Vec<ConfigMap> {
    (0..n).map(|i| config_map(i, 100)).collect()
}
