//! Decoded objects trimmed to what they hold, before a cache keeps them.
//!
//! serde decodes a JSON array into a `Vec` that grows as elements arrive, from room for
//! four: an object's one `managedFields` entry, one owner reference or one finalizer
//! keeps room for four. A cache holds every object for as long as it exists, so the
//! lists of each object's metadata are shrunk to their length as the object is decoded
//! (on the decoding thread, where the object was allocated). With `managedFields` kept,
//! that is ~530 bytes less per object (three spare entries of ~176 bytes). Other
//! allocations of a decoded object are already as small as its types allow: strings are
//! allocated at their length, and a `BTreeMap` node has one size whatever it holds.

use kube::Resource;
use serde::de::DeserializeOwned;
use serde_field_filter::FieldFilter;

use super::list_stream::decode_filtered;

/// Shrinks the lists in `obj`'s metadata (`managedFields`, `ownerReferences`,
/// `finalizers`) to their length.
pub(crate) fn compact_meta<K: Resource>(obj: &mut K) {
    let meta = obj.meta_mut();
    if let Some(entries) = &mut meta.managed_fields {
        entries.shrink_to_fit();
    }
    if let Some(owners) = &mut meta.owner_references {
        owners.shrink_to_fit();
    }
    if let Some(finalizers) = &mut meta.finalizers {
        finalizers.shrink_to_fit();
    }
}

/// Decodes one object, skipping `filter`'s paths, and compacts it: the
/// [`ItemDecodeFn`](super::list_stream::ItemDecodeFn) of an
/// [`ApiListerWatcher`](super::ApiListerWatcher).
pub(crate) fn decode_object<K: Resource + DeserializeOwned>(
    bytes: &[u8],
    filter: Option<&FieldFilter>,
) -> serde_json::Result<K> {
    let mut obj: K = decode_filtered(bytes, filter)?;
    compact_meta(&mut obj);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    const CM: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns",
        "finalizers":["example.com/keep"],
        "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u1"}],
        "managedFields":[{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]},
        "data":{"k":"v"}}"#;

    /// What plain serde leaves: room for more than the one element of each list
    /// (otherwise the test below proves nothing).
    #[test]
    fn serde_leaves_spare_room_in_one_element_lists() {
        let cm: ConfigMap = serde_json::from_str(CM).unwrap();
        let meta = &cm.metadata;
        assert!(meta.managed_fields.as_ref().unwrap().capacity() > 1);
        assert!(meta.owner_references.as_ref().unwrap().capacity() > 1);
        assert!(meta.finalizers.as_ref().unwrap().capacity() > 1);
    }

    #[test]
    fn decoded_objects_keep_no_spare_room_in_their_metadata_lists() {
        let cm: ConfigMap = decode_object(CM.as_bytes(), None).unwrap();
        let plain: ConfigMap = serde_json::from_str(CM).unwrap();
        assert_eq!(cm, plain);
        let meta = &cm.metadata;
        for (what, len, capacity) in [
            (
                "managedFields",
                meta.managed_fields.as_ref().map(Vec::len),
                meta.managed_fields.as_ref().map(Vec::capacity),
            ),
            (
                "ownerReferences",
                meta.owner_references.as_ref().map(Vec::len),
                meta.owner_references.as_ref().map(Vec::capacity),
            ),
            (
                "finalizers",
                meta.finalizers.as_ref().map(Vec::len),
                meta.finalizers.as_ref().map(Vec::capacity),
            ),
        ] {
            assert_eq!(len, Some(1), "{what}");
            assert_eq!(capacity, Some(1), "{what}");
        }
    }

    #[test]
    fn a_filtered_decode_is_compacted_too() {
        let cm: ConfigMap =
            decode_object(CM.as_bytes(), Some(&FieldFilter::managed_fields())).unwrap();
        assert!(cm.metadata.managed_fields.is_none());
        assert_eq!(cm.metadata.owner_references.as_ref().unwrap().capacity(), 1);
    }
}
