//! serde-field-filter: JSON fields skipped *while* decoding, never materialized.
//!
//! A filter is a set of paths into a JSON document — `metadata.managedFields`,
//! `data`, `status.conditions[*].message` — and a
//! [`Deserializer`](serde::Deserializer) adapter that wraps any serde deserializer.
//! When the adapter meets a map key whose path is in the set, it consumes the value
//! with [`IgnoredAny`](serde::de::IgnoredAny) and hides the key from the type being
//! decoded: the skipped subtree is parsed (it must still be valid JSON) but never
//! allocated (as with serde_json's own skipping of unknown fields, strings inside a
//! skipped subtree are not checked for valid UTF-8). Keys are compared after
//! unescaping, so `"man\u0061gedFields"` is `managedFields`. Only exact paths match:
//! a `managedFields` key anywhere but under `metadata` is left alone.
//!
//! Off the filtered paths the adapter steps aside: a value none of whose descendants is
//! filtered is handed to the type with the inner deserializer itself, so decoding it
//! costs what plain serde_json costs.
//!
//! The path syntax is described on [`FieldFilter`].

#![cfg_attr(docsrs, feature(doc_cfg))]

mod adapter;
mod error;
mod filter;
mod key;
mod path;

pub use adapter::{FilteredDeserializer, FilteredSeed};
pub use error::FieldFilterError;
pub use filter::{FieldFilter, MANAGED_FIELDS_PATH, from_slice};

#[cfg(test)]
mod tests;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
