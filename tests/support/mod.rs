//! What the root tests share: the Widget CRD of the user story, defined once.
//! A test crate includes it with `mod support;`.

pub mod widget;
