//! What the unit tests of the fifo, the informer and the reflector share: one
//! module for the crate's unit tier, one file per concept. Each suite takes it all
//! with `use crate::test_support::*;`.
//!
//! - [`objects`]: the objects the suites cache (pods, ConfigMaps, pod lists) and
//!   what they read back from them;
//! - [`api_errors`]: the API errors a scripted server answers with;
//! - [`lister_watchers`]: scripted lister-watchers (client-go's `ListWatch{}`) and
//!   their list answers;
//! - [`watches`]: watch streams the test drives (client-go's `watch.NewFake()`) and
//!   the events sent down them;
//! - [`list_table`]: a table of list requests answered row by row over N rounds;
//! - [`stores`]: fake stores (a recording store, a fixed list of known objects);
//! - [`fifos`]: every queue the suites build (either mode, and as an informer builds
//!   it in front of a reflector), popping from it with a deadline, its pops shown
//!   the same way for both modes, and [`each_queue!`](fifos::each_queue), which runs
//!   one test body once per mode;
//! - [`reflectors`]: reflectors run in a task until a condition holds;
//! - [`informers`]: running informers and client-go's recording `testListener`;
//! - [`waiting`]: waiting on the paused clock until a condition holds.

pub(crate) mod api_errors;
pub(crate) mod fifos;
pub(crate) mod informers;
pub(crate) mod list_table;
pub(crate) mod lister_watchers;
pub(crate) mod objects;
pub(crate) mod reflectors;
pub(crate) mod stores;
pub(crate) mod waiting;
pub(crate) mod watches;

pub(crate) use api_errors::*;
pub(crate) use fifos::*;
pub(crate) use informers::*;
pub(crate) use list_table::*;
pub(crate) use lister_watchers::*;
pub(crate) use objects::*;
pub(crate) use reflectors::*;
pub(crate) use stores::*;
pub(crate) use waiting::*;
pub(crate) use watches::*;
