//! What the suites share: namespaces created through the API, how long a wait may
//! take, an informer running until the test stops it, and the user story's Widget.

pub mod namespaces;
pub mod patience;
pub mod running;
pub mod widget;
