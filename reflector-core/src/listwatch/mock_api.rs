//! A scripted API server behind a real [`kube::Client`], for tests of the HTTP paths.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use http_body::Frame;
use http_body_util::StreamBody;
use kube::Client;

type TestBody = StreamBody<BoxStream<'static, Result<Frame<Bytes>, std::io::Error>>>;

/// A scripted list body: its chunks, in order; an `Err` breaks the body off there.
pub(crate) type ListBody = BoxStream<'static, Result<Bytes, std::io::Error>>;

/// What the scripted server answers.
#[derive(Clone)]
pub(crate) struct MockApi {
    /// Status and body of every list request.
    pub(crate) list: (u16, String),
    /// Status and body of every watch request; a 2xx watch body then stays open.
    pub(crate) watch: (u16, String),
    /// The URIs requested, in order; guarded by its own mutex.
    pub(crate) requests: Arc<Mutex<Vec<String>>>,
    /// Bodies for the next list requests, one each, before `list` answers; guarded
    /// by its own mutex.
    pub(crate) list_bodies: Arc<Mutex<VecDeque<ListBody>>>,
}

impl MockApi {
    pub(crate) fn new(list: &str, watch: &str) -> Self {
        MockApi {
            list: (200, list.to_owned()),
            watch: (200, watch.to_owned()),
            requests: Arc::default(),
            list_bodies: Arc::default(),
        }
    }

    /// The next list request not yet answered gets `body` (status 200), chunk by chunk.
    pub(crate) fn queue_list_body(&self, body: ListBody) {
        self.list_bodies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(body);
    }

    /// `text` cut into chunks of `size` bytes, as a scripted list body.
    pub(crate) fn chunked(text: &str, size: usize) -> ListBody {
        let chunks: Vec<Result<Bytes, std::io::Error>> = text
            .as_bytes()
            .chunks(size)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        futures::stream::iter(chunks).boxed()
    }

    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A client served by this script. Needs a tokio runtime.
    pub(crate) fn client(&self) -> Client {
        let this = self.clone();
        let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let this = this.clone();
            async move {
                let uri = req.uri().to_string();
                this.requests
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(uri.clone());
                let is_watch = uri.contains("watch=true");
                let scripted = if is_watch {
                    None
                } else {
                    this.list_bodies
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .pop_front()
                };
                if let Some(body) = scripted {
                    let frames = body.map(|chunk| chunk.map(Frame::data)).boxed();
                    return Ok::<_, Infallible>(http::Response::new(StreamBody::new(frames)));
                }
                let (code, text) = if is_watch { &this.watch } else { &this.list };
                let first = futures::stream::iter([Ok(Frame::data(Bytes::from(text.clone())))]);
                let stream: BoxStream<'static, Result<Frame<Bytes>, std::io::Error>> =
                    if is_watch && (200..300).contains(code) {
                        first.chain(futures::stream::pending()).boxed()
                    } else {
                        first.boxed()
                    };
                let res = http::Response::builder()
                    .status(*code)
                    .body(StreamBody::new(stream))
                    .unwrap_or_else(|_| {
                        http::Response::new(TestBody::new(futures::stream::empty().boxed()))
                    });
                Ok::<_, Infallible>(res)
            }
        });
        Client::new(svc, "default")
    }
}
