//! [`LeaderTransitions`]: every change of where a replica stands, none merged; and
//! the publisher behind it and behind [`LeaderElection::state`](super::LeaderElection::state).

use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::{mpsc, watch};

use super::LeaderState;

/// Every state one replica's election passes through, in order and none merged,
/// as client-go's leader-election callbacks see them: first the state when the
/// stream was made, then each change — [`Leading`](LeaderState::Leading) on every
/// acquisition (`OnStartedLeading`), [`Following`](LeaderState::Following) or
/// [`Stopped`](LeaderState::Stopped) on every loss or stop (`OnStoppedLeading`), a
/// `Following` naming each new holder seen (`OnNewLeader`). Made by
/// [`LeaderElection::transitions`](super::LeaderElection::transitions).
///
/// A lease lost and taken back before the stream is read still yields the loss and
/// the new acquisition: each change is queued for each stream, however late it is
/// read (a stream not read keeps them, a handful per lease duration at most; drop it
/// when done). The stream ends once every handle of the election is dropped.
///
/// # Example
/// ```no_run
/// use futures::StreamExt;
/// use reflector::leader_election::{LeaderElection, LeaderState};
///
/// # async fn f(election: LeaderElection) {
/// let mut transitions = election.transitions();
/// while let Some(state) = transitions.next().await {
///     match state {
///         LeaderState::Leading => println!("started leading"),
///         other => println!("not leading: {other}"),
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
#[must_use = "a stream yields nothing unless polled"]
pub struct LeaderTransitions {
    rx: mpsc::UnboundedReceiver<LeaderState>,
}

impl LeaderTransitions {
    /// Resolves at the next acquisition (the next [`LeaderState::Leading`]); never
    /// once the election's handles are all dropped.
    ///
    /// # Cancel safety
    /// Cancel-safe: only states that are not an acquisition are taken off the stream
    /// before it resolves.
    pub(crate) async fn acquired(&mut self) {
        loop {
            match self.rx.recv().await {
                Some(LeaderState::Leading) => return,
                Some(_) => {}
                None => std::future::pending().await,
            }
        }
    }

    /// Resolves at the next loss or stop (the next state that is not
    /// [`LeaderState::Leading`]), or once the election's handles are all dropped.
    ///
    /// # Cancel safety
    /// Cancel-safe: only acquisitions are taken off the stream before it resolves.
    pub(crate) async fn lost(&mut self) {
        while let Some(LeaderState::Leading) = self.rx.recv().await {}
    }
}

impl Stream for LeaderTransitions {
    type Item = LeaderState;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LeaderState>> {
        self.rx.poll_recv(cx)
    }
}

/// Where a replica stands, published: the current state (a watch, for reads and
/// waits) and every change to each [`LeaderTransitions`] stream.
#[derive(Debug)]
pub(crate) struct StatePublisher {
    /// The current state; the watch channel has its own lock.
    current: watch::Sender<LeaderState>,
    /// One queue per live stream. Guarded by its own mutex, which `publish` also
    /// holds while it changes `current`, so a stream's first item (the state when it
    /// was made) and the changes after it come in order, none missed or repeated.
    streams: Mutex<Vec<mpsc::UnboundedSender<LeaderState>>>,
}

impl StatePublisher {
    /// [`LeaderState::Stopped`], with no stream.
    pub(crate) fn new() -> Self {
        StatePublisher {
            current: watch::Sender::new(LeaderState::Stopped),
            streams: Mutex::new(Vec::new()),
        }
    }

    /// The state now.
    pub(crate) fn current(&self) -> LeaderState {
        self.current.borrow().clone()
    }

    /// Whether the state now is [`LeaderState::Leading`].
    pub(crate) fn is_leading(&self) -> bool {
        self.current.borrow().is_leading()
    }

    /// A receiver of the latest state, for waits that need only the latest (a
    /// `watch` merges changes).
    pub(crate) fn latest(&self) -> watch::Receiver<LeaderState> {
        self.current.subscribe()
    }

    /// Makes `state` the current one and queues it for every stream, unless it is
    /// the current one already; answers whether it changed.
    pub(crate) fn publish(&self, state: LeaderState) -> bool {
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = self.current.send_if_modified(|s| {
            let changed = *s != state;
            if changed {
                *s = state.clone();
            }
            changed
        });
        if changed {
            // A stream dropped by its reader is forgotten here.
            streams.retain(|tx| tx.send(state.clone()).is_ok());
        }
        changed
    }

    /// A stream of the state now and every change after it.
    pub(crate) fn stream(&self) -> LeaderTransitions {
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        let (tx, rx) = mpsc::unbounded_channel();
        // The receiver is alive: this cannot fail.
        let _ = tx.send(self.current());
        streams.push(tx);
        LeaderTransitions { rx }
    }
}

#[cfg(test)]
mod tests {
    use futures::{FutureExt, StreamExt};

    use super::*;

    fn drain(stream: &mut LeaderTransitions) -> Vec<LeaderState> {
        std::iter::from_fn(|| stream.next().now_or_never().flatten()).collect()
    }

    /// Each stream starts at the state it was made in and gets every later change
    /// once, in order; publishing the current state again is no change.
    #[test]
    fn each_stream_gets_its_start_and_every_later_change() {
        let p = StatePublisher::new();
        let mut early = p.stream();
        assert!(p.publish(LeaderState::Leading));
        let mut late = p.stream();
        assert!(!p.publish(LeaderState::Leading), "no change");
        let follower = LeaderState::Following { holder: None };
        assert!(p.publish(follower.clone()));
        assert!(p.publish(LeaderState::Leading));
        assert_eq!(
            drain(&mut early),
            [
                LeaderState::Stopped,
                LeaderState::Leading,
                follower.clone(),
                LeaderState::Leading
            ]
        );
        assert_eq!(
            drain(&mut late),
            [LeaderState::Leading, follower, LeaderState::Leading]
        );
        drop(early);
        assert!(p.publish(LeaderState::Stopped));
        assert_eq!(
            p.streams.lock().unwrap().len(),
            1,
            "the dropped stream is gone"
        );
        assert_eq!(drain(&mut late), [LeaderState::Stopped]);
    }
}
