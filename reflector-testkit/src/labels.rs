//! A stored object's labels, kept compact: the server holds one of these per object, so at
//! a million objects their size is a large part of its memory.

use serde_json::{Map, Value};

/// An object's labels, sorted by key, every key and value in one buffer.
///
/// A `BTreeMap<String, String>` of three labels takes ~750 bytes of heap (a whole
/// B-tree leaf plus six strings); this takes one allocation for the text and one for the
/// offsets (~110 bytes for the benchmark objects' three labels).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Labels {
    /// Each label's key then its value, in key order.
    text: Box<str>,
    /// For each label, where its key ends and where its value ends in `text` (its key
    /// starts where the previous value ends).
    ends: Box<[(u32, u32)]>,
}

impl Labels {
    /// The string-valued entries of a `metadata.labels` object (others are skipped, as
    /// the server never selects on them).
    pub(crate) fn from_json(labels: &Map<String, Value>) -> Self {
        labels
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
            .collect()
    }

    /// The value of label `key`, if the object has it.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        let (mut lo, mut hi) = (0, self.ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (start, (key_end, value_end)) = (self.start(mid), self.ends[mid]);
            match self.text[start..key_end as usize].cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    return Some(&self.text[key_end as usize..value_end as usize]);
                }
            }
        }
        None
    }

    /// Where label `i`'s key starts in `text`: where the previous label's value ends.
    fn start(&self, i: usize) -> usize {
        i.checked_sub(1).map_or(0, |p| self.ends[p].1 as usize)
    }
}

impl<'a> FromIterator<(&'a str, &'a str)> for Labels {
    /// Labels from `(key, value)` pairs; a repeated key keeps its last value. (Labels
    /// longer than 4 GiB in total are cut at the first label that does not fit: the API
    /// limits an object to a few MiB.)
    fn from_iter<I: IntoIterator<Item = (&'a str, &'a str)>>(pairs: I) -> Self {
        let mut pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
        // Stable, so among equal keys the last one written stays last.
        pairs.sort_by(|a, b| a.0.cmp(b.0));
        let mut unique: Vec<(&str, &str)> = Vec::with_capacity(pairs.len());
        for pair in pairs {
            match unique.last_mut() {
                Some(last) if last.0 == pair.0 => *last = pair,
                _ => unique.push(pair),
            }
        }
        let mut text = String::with_capacity(unique.iter().map(|(k, v)| k.len() + v.len()).sum());
        let mut ends = Vec::with_capacity(unique.len());
        for (key, value) in unique {
            let (Ok(key_end), Ok(value_end)) = (
                u32::try_from(text.len() + key.len()),
                u32::try_from(text.len() + key.len() + value.len()),
            ) else {
                break;
            };
            text.push_str(key);
            text.push_str(value);
            ends.push((key_end, value_end));
        }
        Self {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    /// Labels from `(key, value)` pairs, for tests.
    pub(crate) fn of(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().copied().collect()
    }

    #[test]
    fn every_label_is_found_by_its_key_and_no_other() {
        let labels = of(&[
            ("tier", "backend"),
            ("app.kubernetes.io/name", "bench"),
            ("a", ""),
            ("app", "web"),
            ("app.kubernetes.io/instance", "bench-7"),
        ]);
        assert_eq!(labels.get("tier"), Some("backend"));
        assert_eq!(labels.get("app.kubernetes.io/name"), Some("bench"));
        assert_eq!(labels.get("app.kubernetes.io/instance"), Some("bench-7"));
        assert_eq!(labels.get("app"), Some("web"));
        assert_eq!(labels.get("a"), Some(""));
        // Prefixes and concatenations of stored keys and values are not keys.
        for absent in ["", "ap", "appweb", "tie", "tierbackend", "b", "zzz"] {
            assert_eq!(labels.get(absent), None, "{absent:?}");
        }
        assert_eq!(Labels::default().get("a"), None);
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        let labels = of(&[("a", "1"), ("b", "2"), ("a", "3")]);
        assert_eq!(labels.get("a"), Some("3"));
        assert_eq!(labels.get("b"), Some("2"));
        assert_eq!(labels, of(&[("b", "2"), ("a", "3")]));
    }

    #[test]
    fn from_json_keeps_string_values_only() {
        let map = json!({"app": "web", "n": 5, "none": null, "empty": ""});
        let labels = Labels::from_json(map.as_object().expect("an object"));
        assert_eq!(labels, of(&[("app", "web"), ("empty", "")]));
    }
}
