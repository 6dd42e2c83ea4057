//! Deltas: what happened to one object while it waited in the FIFO.

use std::fmt;

use crate::object::MaybeTombstone;

/// The kind of change a [`Delta`] records, as client-go's `DeltaType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// The object was created (a watch `ADDED` event).
    Added,
    /// The object changed (a watch `MODIFIED` event).
    Updated,
    /// The object was deleted. The delta carries its final state, or a
    /// [`MaybeTombstone::DeletedFinalStateUnknown`] tombstone when the delete was
    /// inferred from a relist.
    Deleted,
    /// The object was listed by a relist; whether it changed is unknown. Per key,
    /// only emitted when [`emit_replaced`](super::Fifo::emit_replaced) is set;
    /// otherwise a relist emits [`DeltaType::Sync`].
    Replaced,
    /// A periodic resync re-delivered the object (or, by default, a relist listed it).
    Sync,
}

impl DeltaType {
    /// The name client-go gives this type (`"Added"`, `"Updated"`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            DeltaType::Added => "Added",
            DeltaType::Updated => "Updated",
            DeltaType::Deleted => "Deleted",
            DeltaType::Replaced => "Replaced",
            DeltaType::Sync => "Sync",
        }
    }
}

impl fmt::Display for DeltaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change to an object, as client-go's `Delta`: what happened and the object's
/// state after it (its final state before a delete).
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::fifo::{Delta, DeltaType};
/// let d = Delta::new(DeltaType::Added, Arc::new(ConfigMap::default()));
/// assert_eq!(d.delta_type, DeltaType::Added);
/// assert!(!d.object.is_tombstone());
/// ```
pub struct Delta<K> {
    /// What happened.
    pub delta_type: DeltaType,
    /// The object after the change (or a tombstone, for a delete found by a relist).
    pub object: MaybeTombstone<K>,
}

impl<K> Delta<K> {
    /// A delta of `delta_type` carrying `object` (an `Arc<K>` or a tombstone).
    #[must_use]
    pub fn new(delta_type: DeltaType, object: impl Into<MaybeTombstone<K>>) -> Self {
        Delta {
            delta_type,
            object: object.into(),
        }
    }
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        Delta {
            delta_type: self.delta_type,
            object: self.object.clone(),
        }
    }
}

impl<K: fmt::Debug> fmt::Debug for Delta<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delta")
            .field("delta_type", &self.delta_type)
            .field("object", &self.object)
            .finish()
    }
}

impl<K: PartialEq> PartialEq for Delta<K> {
    fn eq(&self, other: &Self) -> bool {
        self.delta_type == other.delta_type && self.object == other.object
    }
}

/// Changes to one object, oldest first, as client-go's `Deltas`: one change in an
/// in-order queue, every change since the key was queued in a per-key one. A
/// `Deltas` popped from a queue is never empty.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::fifo::{Delta, DeltaType, Deltas};
/// let obj = Arc::new(ConfigMap::default());
/// let deltas = Deltas::from(vec![
///     Delta::new(DeltaType::Added, obj.clone()),
///     Delta::new(DeltaType::Updated, obj),
/// ]);
/// assert_eq!(deltas.oldest().unwrap().delta_type, DeltaType::Added);
/// assert_eq!(deltas.newest().unwrap().delta_type, DeltaType::Updated);
/// assert_eq!(deltas.len(), 2);
/// ```
pub struct Deltas<K>(Repr<K>);

/// One delta inline (a key's usual lot between two pops, with no allocation of its
/// own), or a list.
enum Repr<K> {
    One(Delta<K>),
    Many(Vec<Delta<K>>),
}

impl<K> Deltas<K> {
    /// An empty list.
    #[must_use]
    pub fn new() -> Self {
        Deltas(Repr::Many(Vec::new()))
    }

    /// The oldest delta, or `None` when empty.
    #[must_use]
    pub fn oldest(&self) -> Option<&Delta<K>> {
        self.as_slice().first()
    }

    /// The newest delta, or `None` when empty.
    #[must_use]
    pub fn newest(&self) -> Option<&Delta<K>> {
        self.as_slice().last()
    }

    /// The deltas as a slice, oldest first.
    #[must_use]
    pub fn as_slice(&self) -> &[Delta<K>] {
        match &self.0 {
            Repr::One(delta) => std::slice::from_ref(delta),
            Repr::Many(deltas) => deltas,
        }
    }

    /// The deltas as a vector, oldest first.
    #[must_use]
    pub fn into_vec(self) -> Vec<Delta<K>> {
        match self.0 {
            Repr::One(delta) => vec![delta],
            Repr::Many(deltas) => deltas,
        }
    }

    /// Appends `delta`, collapsing two consecutive deletions into one as client-go's
    /// `dedupDeltas`: of the two `Deleted` deltas the one kept is the newer if the
    /// older is a tombstone, else the older (the observed delete carries more
    /// information than an inferred one).
    pub(crate) fn push_dedup(&mut self, delta: Delta<K>) {
        let last = match &mut self.0 {
            Repr::One(last) => Some(last),
            Repr::Many(deltas) => deltas.last_mut(),
        };
        if delta.delta_type == DeltaType::Deleted
            && let Some(last) = last
            && last.delta_type == DeltaType::Deleted
        {
            if last.object.is_tombstone() {
                *last = delta;
            }
            return;
        }
        match &mut self.0 {
            Repr::Many(deltas) => deltas.push(delta),
            Repr::One(_) => {
                let Repr::One(first) = std::mem::replace(&mut self.0, Repr::Many(Vec::new()))
                else {
                    unreachable!("matched One above")
                };
                self.0 = Repr::Many(vec![first, delta]);
            }
        }
    }

    /// A list holding one delta, stored inline.
    pub(crate) fn one(delta: Delta<K>) -> Self {
        Deltas(Repr::One(delta))
    }
}

impl<K> Default for Deltas<K> {
    fn default() -> Self {
        Deltas::new()
    }
}

impl<K> Clone for Deltas<K> {
    fn clone(&self) -> Self {
        match &self.0 {
            Repr::One(delta) => Deltas(Repr::One(delta.clone())),
            Repr::Many(deltas) => Deltas(Repr::Many(deltas.clone())),
        }
    }
}

impl<K: fmt::Debug> fmt::Debug for Deltas<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<K: PartialEq> PartialEq for Deltas<K> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<K> std::ops::Deref for Deltas<K> {
    type Target = [Delta<K>];

    fn deref(&self) -> &[Delta<K>] {
        self.as_slice()
    }
}

impl<K> From<Vec<Delta<K>>> for Deltas<K> {
    fn from(v: Vec<Delta<K>>) -> Self {
        Deltas(Repr::Many(v))
    }
}

/// The deltas by value, oldest first.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use reflector::fifo::{Delta, DeltaType, Deltas};
/// let deltas = Deltas::from(vec![Delta::new(DeltaType::Added, Arc::new(1))]);
/// let types: Vec<DeltaType> = deltas.into_iter().map(|d| d.delta_type).collect();
/// assert_eq!(types, [DeltaType::Added]);
/// ```
impl<K> IntoIterator for Deltas<K> {
    type Item = Delta<K>;
    /// The inline delta, if any, then the list (an empty `Vec` allocates nothing).
    type IntoIter = std::iter::Chain<std::option::IntoIter<Delta<K>>, std::vec::IntoIter<Delta<K>>>;

    fn into_iter(self) -> Self::IntoIter {
        let (one, many) = match self.0 {
            Repr::One(delta) => (Some(delta), Vec::new()),
            Repr::Many(deltas) => (None, deltas),
        };
        one.into_iter().chain(many)
    }
}

impl<'a, K> IntoIterator for &'a Deltas<K> {
    type Item = &'a Delta<K>;
    type IntoIter = std::slice::Iter<'a, Delta<K>>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::object::ObjectKey;

    fn tomb(obj: &Arc<u32>) -> MaybeTombstone<u32> {
        MaybeTombstone::DeletedFinalStateUnknown {
            key: ObjectKey::new(None, "a"),
            obj: Arc::clone(obj),
        }
    }

    #[test]
    fn deletion_dup_keeps_the_observed_delete() {
        let (old, new) = (Arc::new(1), Arc::new(2));
        // Observed then inferred: keep the observed one.
        let mut d = Deltas::one(Delta::new(DeltaType::Deleted, old.clone()));
        d.push_dedup(Delta::new(DeltaType::Deleted, tomb(&new)));
        assert_eq!(
            d,
            Deltas::from(vec![Delta::new(DeltaType::Deleted, old.clone())])
        );
        // Inferred then observed: keep the newer, observed one.
        let mut d = Deltas::one(Delta::new(DeltaType::Deleted, tomb(&old)));
        d.push_dedup(Delta::new(DeltaType::Deleted, new.clone()));
        assert_eq!(
            d,
            Deltas::from(vec![Delta::new(DeltaType::Deleted, new.clone())])
        );
        // Two observed: keep the older.
        let mut d = Deltas::one(Delta::new(DeltaType::Deleted, old.clone()));
        d.push_dedup(Delta::new(DeltaType::Deleted, new.clone()));
        assert_eq!(
            d,
            Deltas::from(vec![Delta::new(DeltaType::Deleted, old.clone())])
        );
        // Anything else appends.
        let mut d = Deltas::one(Delta::new(DeltaType::Updated, old.clone()));
        d.push_dedup(Delta::new(DeltaType::Deleted, new.clone()));
        d.push_dedup(Delta::new(DeltaType::Added, new));
        assert_eq!(d.len(), 3);
    }
}
