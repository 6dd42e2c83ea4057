//! A private kind, derived through a full path with nothing imported: the generated
//! code needs no `use` and raises no warning (dead code included).
#![deny(warnings)]

#[derive(
    kube::CustomResource,
    reflector::Reflect,
    serde::Serialize,
    serde::Deserialize,
    Clone,
    Debug,
    schemars::JsonSchema,
)]
#[kube(group = "example.com", version = "v1", kind = "Gizmo", root = "GizmoResource")]
#[reflect(index(name = "by_ver", with = ver))]
struct GizmoSpec {
    #[reflect(index(name = "by_count"))]
    count: Option<Vec<i32>>,
    #[reflect(index)]
    r#type: String,
}

fn ver(_: &GizmoResource) -> Vec<String> {
    Vec::new()
}

fn main() {
    let indexer = reflector::store::Writer::new(
        <GizmoResource as reflector::reflect::Reflect>::indexers(),
    )
    .reader();
    let _ = GizmoResourceIndexes::by_count(&indexer, 3);
    let _ = GizmoResourceIndexes::by_type(&indexer, "x");
}
