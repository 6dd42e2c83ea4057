//! [`unchanged`]: whether a listed object is exactly the one a cache holds, so a
//! relist can keep the cached copy instead of a second one.
//!
//! The resourceVersion alone does not say so: a real API server applies a CRD's new
//! schema defaults and pruning, and converts to a new storage version, when it reads
//! an object, without giving it a new resourceVersion. Two objects are the same here
//! when their resourceVersions match and they serialize to the same JSON; equal
//! values of `k8s-openapi` types, `DynamicObject` and `#[derive(CustomResource)]`
//! types always do. (A `HashMap` field may serialize its entries in another order in
//! each copy: such objects are then taken as changed, which costs memory during a
//! relist, never correctness.)

use std::cell::RefCell;
use std::io;
use std::sync::Arc;

use crate::object::Object;

thread_local! {
    /// The cached object's JSON, reused from one comparison to the next on a thread
    /// (a relist compares every listed object).
    static CACHED_JSON: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// `cached`, if `obj` is the same state of the same object: the same resourceVersion
/// (set on both) and the same content. The content is compared by serializing both,
/// the cached one into a buffer and `obj` against it, stopping at the first byte that
/// differs.
pub(crate) fn unchanged<K: Object>(cached: Option<Arc<K>>, obj: &K) -> Option<Arc<K>> {
    let rv = obj.meta().resource_version.as_deref()?;
    let cached = cached.filter(|c| c.meta().resource_version.as_deref() == Some(rv))?;
    same_json(cached.as_ref(), obj).then_some(cached)
}

/// Whether `a` and `b` serialize to the same JSON (a serialization error counts as
/// a difference).
fn same_json<K: serde::Serialize>(a: &K, b: &K) -> bool {
    CACHED_JSON.with(|buffer| {
        // A nested call (a `Serialize` impl comparing objects itself) gets a fresh buffer.
        let mut fresh = Vec::new();
        let mut guard = buffer.try_borrow_mut();
        let expected = match guard.as_deref_mut() {
            Ok(reused) => reused,
            Err(_) => &mut fresh,
        };
        expected.clear();
        if serde_json::to_writer(&mut *expected, a).is_err() {
            return false;
        }
        let expected: &[u8] = expected;
        let mut against = Against {
            expected,
            matched: 0,
        };
        serde_json::to_writer(&mut against, b).is_ok() && against.matched == expected.len()
    })
}

/// A writer that checks what is written against `expected`, failing at the first
/// byte that differs (which stops the serializer there).
struct Against<'a> {
    expected: &'a [u8],
    /// How many bytes of `expected` were written so far.
    matched: usize,
}

impl io::Write for Against<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let end = self.matched + buf.len();
        if self.expected.get(self.matched..end) != Some(buf) {
            return Err(io::Error::other("differs"));
        }
        self.matched = end;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn cm(rv: &str, data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            data: Some(
                data.iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..ConfigMap::default()
        }
    }

    /// Only an equal object at the same resourceVersion is the cached one: a field
    /// the server added at the same resourceVersion (a new default), a longer or
    /// shorter object, and a moved resourceVersion all count as changed.
    #[test]
    fn only_an_equal_object_at_the_same_version_is_unchanged() {
        let cached = Arc::new(cm("5", &[("k", "v")]));
        let same = unchanged(Some(Arc::clone(&cached)), &cm("5", &[("k", "v")]));
        assert!(same.is_some_and(|c| Arc::ptr_eq(&c, &cached)));
        let defaulted = cm("5", &[("k", "v"), ("priority", "5")]);
        assert!(unchanged(Some(Arc::clone(&cached)), &defaulted).is_none());
        let shorter = Arc::new(cm("5", &[("k", "v"), ("x", "y")]));
        assert!(unchanged(Some(shorter), &cm("5", &[("k", "v")])).is_none());
        let changed_value = cm("5", &[("k", "w")]);
        assert!(unchanged(Some(Arc::clone(&cached)), &changed_value).is_none());
        assert!(unchanged(Some(Arc::clone(&cached)), &cm("6", &[("k", "v")])).is_none());
        assert!(unchanged(None, &cm("5", &[("k", "v")])).is_none());
        let mut no_rv = cm("5", &[("k", "v")]);
        no_rv.metadata.resource_version = None;
        assert!(unchanged(Some(cached), &no_rv).is_none());
    }
}
