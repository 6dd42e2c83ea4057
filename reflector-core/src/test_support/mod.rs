//! What the unit tests of the fifo, the informer and the reflector share: one
//! module for the crate's unit tier, one file per concept. Each suite takes it all
//! with `use crate::test_support::*;`.
//!
//! # The test doubles, and when to use each
//!
//! | double | what it stands for | use it when |
//! |---|---|---|
//! | [`FakeSource`](crate::listwatch::FakeSource) (public, feature `testing`) | an API server in memory: every change gets the next resource version and reaches every open watch | an informer or a controller must see objects change, and the test is not about requests or errors |
//! | [`Scripted`] ([`lister_watchers`]) | client-go's `ListWatch{}`: the test answers each list and watch | the test is about the reflector's requests (resource versions, pages, retries) or needs a given error on a given call |
//! | [`fake_watch`] and the streams of [`watches`] | client-go's `watch.NewFake()`: a watch the test feeds, holds open or closes | what matters is the order and timing of watch events |
//! | [`ListTable`] | client-go's table of list requests, answered row by row over rounds | the ported tests of the list resource-version rules |
//! | [`RecordingStore`], [`Literal`] ([`stores`]) | a store that records every call; a fixed list of known objects | the test checks what the reflector or the queue handed its store, not what a cache made of it |
//! | the queues of [`fifos`] and [`each_queue!`](fifos::each_queue) | the informer's queue in either mode, with a deadline on each pop | a behaviour of the queue or of the informer holds in both modes: one body, one test per mode |
//! | [`TestListener`] ([`informers`]) | client-go's recording `testListener` | the test checks what a handler was told |
//! | `listwatch::mock_api::MockApi` | an API server behind a real `kube::Client`, answering canned bodies | the HTTP paths of `ApiListerWatcher`: requests, decoding, streamed lists |
//! | `listwatch::scripted_decode` | a decoder on the blocking pool that holds chosen items until the test lets them go | the order in which decode batches finish |
//! | `reflector-testkit`'s `ApiServer` (the `tests/` suites) | a Kubernetes API server over real HTTP, with faults on demand | end to end: a real client stack, the server's answers, injected faults |
//!
//! # The files
//!
//! - [`objects`]: the objects the suites cache (pods, ConfigMaps, pod lists) and
//!   what they read back from them;
//! - [`api_errors`]: the API errors a scripted server answers with;
//! - [`lister_watchers`]: scripted lister-watchers and their list answers;
//! - [`watches`]: watch streams the test drives and the events sent down them;
//! - [`list_table`]: a table of list requests answered row by row over N rounds;
//! - [`stores`]: fake stores;
//! - [`fifos`]: every queue the suites build (either mode, and as an informer builds
//!   it in front of a reflector), popping from it with a deadline, its pops shown
//!   the same way for both modes, and [`each_queue!`](fifos::each_queue), which runs
//!   one test body once per mode;
//! - [`reflectors`]: reflectors run in a task until a condition holds;
//! - [`informers`]: running informers and the recording listener;
//! - [`waiting`]: waiting on the paused clock until a condition holds, and the one
//!   [`PATIENCE`] and [`POLL`] of the unit tests that run on real time.

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
