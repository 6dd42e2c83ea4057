//! Lists: one page of a resource's objects as of a snapshot, filtered by selectors.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use super::{ResourceId, State};
use crate::field_selector::FieldSelector;
use crate::label_selector::LabelSelector;
use crate::object::StoredObject;

/// Label + field selector pair applied to lists and watches.
#[derive(Debug, Clone, Default)]
pub(crate) struct ObjectFilter {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl ObjectFilter {
    pub(crate) fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    pub(crate) fn matches(&self, obj: &StoredObject) -> bool {
        self.labels.matches(&obj.labels) && self.fields.matches(obj)
    }
}

/// One page of a list.
pub(crate) struct Page {
    pub items: Vec<Arc<StoredObject>>,
    /// Key of the last returned item when more matching items remain.
    pub continue_after: Option<Arc<str>>,
    /// How many matching items remain after this page (only counted when asked).
    pub remaining: Option<u64>,
}

impl State {
    /// One page of the list of `rid` as of resourceVersion `snapshot` (which must be in
    /// `floor..=rv`), starting after key `after`. `left` is what an earlier page of this
    /// unfiltered list counted as remaining after `after`; without it the rest is counted.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn list_page(
        &self,
        rid: ResourceId,
        namespace: Option<&str>,
        snapshot: u64,
        after: Option<&str>,
        left: Option<u64>,
        limit: Option<usize>,
        filter: &ObjectFilter,
    ) -> Page {
        let prefix = namespace.map(|ns| format!("{ns}/"));
        let lower: Bound<&str> = match (after, prefix.as_deref()) {
            (Some(k), _) => Bound::Excluded(k),
            (None, Some(p)) => Bound::Included(p),
            (None, None) => Bound::Unbounded,
        };
        // Objects as they were at `snapshot`, for keys written since then.
        let mut undo: BTreeMap<Arc<str>, Option<Arc<StoredObject>>> = BTreeMap::new();
        if snapshot < self.rv {
            for event in self.log.iter().rev().take_while(|e| e.rv > snapshot) {
                if event.resource == rid {
                    undo.insert(event.object.key.clone(), event.prev.clone());
                }
            }
        }
        let current = self.objects[rid]
            .range::<str, _>((lower, Bound::Unbounded))
            .filter(|(k, _)| !undo.contains_key(*k));
        let restored = undo
            .range::<str, _>((lower, Bound::Unbounded))
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)));
        let merged = MergeByKey {
            a: current.peekable(),
            b: restored.peekable(),
        };
        let mut matching = merged
            .take_while(|(k, _)| prefix.as_deref().is_none_or(|p| k.starts_with(p)))
            .filter(|(_, v)| filter.matches(v));
        let limit = limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        let items: Vec<Arc<StoredObject>> = matching
            .by_ref()
            .take(limit)
            .map(|(_, v)| v.clone())
            .collect();
        let (continue_after, remaining) = if items.len() < limit {
            (None, None)
        } else if filter.is_empty() {
            let rest = match left {
                Some(left) => left.saturating_sub(items.len() as u64),
                None => matching.count() as u64,
            };
            if rest == 0 {
                (None, None)
            } else {
                (items.last().map(|o| o.key.clone()), Some(rest))
            }
        } else if matching.next().is_some() {
            (items.last().map(|o| o.key.clone()), None)
        } else {
            (None, None)
        };
        Page {
            items,
            continue_after,
            remaining,
        }
    }
}

/// Merges two key-sorted iterators with disjoint keys.
struct MergeByKey<A: Iterator, B: Iterator> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<'a, A, B> Iterator for MergeByKey<A, B>
where
    A: Iterator<Item = (&'a Arc<str>, &'a Arc<StoredObject>)>,
    B: Iterator<Item = (&'a Arc<str>, &'a Arc<StoredObject>)>,
{
    type Item = (&'a Arc<str>, &'a Arc<StoredObject>);

    fn next(&mut self) -> Option<Self::Item> {
        match (self.a.peek(), self.b.peek()) {
            (Some((ka, _)), Some((kb, _))) => {
                if ka <= kb {
                    self.a.next()
                } else {
                    self.b.next()
                }
            }
            (Some(_), None) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}
