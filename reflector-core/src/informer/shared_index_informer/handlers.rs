//! The informer's handlers: adding one (with the synthetic adds of everything cached
//! when the informer runs already), removing one, and asking whether one is live.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crate::object::Object;

use super::super::notification::Notification;
use super::super::processor_listener::{HandlerCalls, ProcessorListener};
use super::super::registration::Registration;
use super::super::shared_processor::determine_resync_period;
use super::super::{EventHandler, InformerError};
use super::{MINIMUM_RESYNC_PERIOD, SharedIndexInformer, next_id};

impl<K: Object> SharedIndexInformer<K> {
    /// Adds a handler with the informer's default resync period.
    ///
    /// # Errors
    /// [`InformerError::Stopped`] if the informer has stopped.
    pub fn add_event_handler(
        &self,
        handler: impl EventHandler<K>,
    ) -> Result<Registration, InformerError> {
        self.add_event_handler_with_resync(handler, self.inner.default_event_handler_resync_period)
    }

    /// Adds a handler that also receives a resync (updates with unchanged objects)
    /// every `resync_period` (zero: never; at least [`MINIMUM_RESYNC_PERIOD`]; the
    /// informer checks at the smallest period asked for before start, and periods
    /// asked for after start are raised to that).
    ///
    /// # Errors
    /// [`InformerError::Stopped`] if the informer has stopped.
    pub fn add_event_handler_with_resync(
        &self,
        handler: impl EventHandler<K>,
        resync_period: Duration,
    ) -> Result<Registration, InformerError> {
        self.add_listener(Arc::new(handler), resync_period, HandlerCalls::MayBlock)
    }

    /// Adds one of this crate's handlers that never block (they only queue keys),
    /// with the informer's default resync period: its listener calls it without
    /// `block_in_place`.
    ///
    /// # Errors
    /// [`InformerError::Stopped`] if the informer has stopped.
    pub(crate) fn add_nonblocking_event_handler(
        &self,
        handler: impl EventHandler<K>,
    ) -> Result<Registration, InformerError> {
        self.add_listener(
            Arc::new(handler),
            self.inner.default_event_handler_resync_period,
            HandlerCalls::NonBlocking,
        )
    }

    /// Adds `handler`'s listener, called as `calls` says.
    fn add_listener(
        &self,
        handler: Arc<dyn EventHandler<K>>,
        resync_period: Duration,
        calls: HandlerCalls,
    ) -> Result<Registration, InformerError> {
        let mut st = self.lock_state();
        if st.stopped {
            return Err(InformerError::Stopped);
        }
        let mut period = resync_period;
        if !period.is_zero() {
            if period < MINIMUM_RESYNC_PERIOD {
                tracing::warn!(?period, "resync period too small; using the minimum of 1 s");
                period = MINIMUM_RESYNC_PERIOD;
            }
            if period < st.resync_check_period {
                if st.started {
                    tracing::warn!(?period, check = ?st.resync_check_period,
                        "informer already started; resync period raised to its check period");
                    period = st.resync_check_period;
                } else {
                    st.resync_check_period = period;
                    self.inner.processor.resync_check_period_changed(period);
                }
            }
        }
        let listener = Arc::new(ProcessorListener::new(
            next_id(),
            handler,
            calls,
            period,
            determine_resync_period(period, st.resync_check_period),
            Arc::clone(&self.inner.progress),
            Arc::clone(&self.inner.handler_panics),
        ));
        let registration = Registration::new(
            self.inner.id,
            listener.id,
            Arc::clone(&listener.pending_initial),
            Arc::new(self.downgrade()),
        );
        if !st.started {
            self.inner.processor.add_listener(listener);
            return Ok(registration);
        }
        drop(st);
        let _block = self
            .inner
            .block_deltas
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for obj in self.inner.indexer.list() {
            listener.add(Notification::Add {
                obj,
                is_in_initial_list: true,
            });
        }
        self.inner.processor.add_listener(listener);
        Ok(registration)
    }

    /// Removes a handler: it gets no notification after this returns. Idempotent; a
    /// registration of another informer is ignored.
    pub fn remove_event_handler(&self, registration: &Registration) {
        if registration.informer_id != self.inner.id {
            return;
        }
        self.inner
            .processor
            .remove_listener(registration.listener_id);
    }

    /// Whether `registration` is a live handler of this informer.
    #[must_use]
    pub fn is_registered(&self, registration: &Registration) -> bool {
        registration.informer_id == self.inner.id
            && self.inner.processor.has_listener(registration.listener_id)
    }
}
