//! [`SharedFlowControl`]: the engine behind a `parking_lot::Mutex`, for `&self` use from many
//! threads.

use std::num::NonZeroU32;

use parking_lot::{Mutex, MutexGuard};

use super::{
    Dispatch, FlowConfig, FlowControl, FlowError, FlowSnapshot, GlobalInfo, KeyInfo, Limits,
    MessageId, Pin, Timestamp, Unpin,
};

/// A [`FlowControl`] shared across threads: the same operations through `&self`.
///
/// Each call takes the lock once; use [`lock`](Self::lock) to run several operations under one
/// lock (e.g. draining [`poll_dispatch`](FlowControl::poll_dispatch) in a loop).
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use flowvec::flow::{FlowConfig, SharedFlowControl, Timestamp};
///
/// let fc = Arc::new(SharedFlowControl::new(FlowConfig::default()));
/// let now = Timestamp::from_millis(0);
/// let workers: Vec<_> = (0..4)
///     .map(|i| {
///         let fc = Arc::clone(&fc);
///         std::thread::spawn(move || fc.publish(None, None, i, now).map(|_| ()))
///     })
///     .collect();
/// for w in workers {
///     w.join().expect("no panic")?;
/// }
/// let mut n = 0;
/// while let Some(d) = fc.poll_dispatch(now) {
///     fc.complete(d.id, now)?;
///     n += 1;
/// }
/// assert_eq!(n, 4);
/// # Ok::<(), flowvec::flow::FlowError>(())
/// ```
#[derive(Debug)]
pub struct SharedFlowControl<M> {
    inner: Mutex<FlowControl<M>>,
}

impl<M> SharedFlowControl<M> {
    /// An empty shared engine.
    #[must_use]
    pub fn new(config: FlowConfig) -> Self {
        Self::from_engine(FlowControl::new(config))
    }

    /// Shares an existing engine (e.g. one restored from a snapshot).
    #[must_use]
    pub fn from_engine(engine: FlowControl<M>) -> Self {
        Self {
            inner: Mutex::new(engine),
        }
    }

    /// Takes the engine back.
    #[must_use]
    pub fn into_engine(self) -> FlowControl<M> {
        self.inner.into_inner()
    }

    /// Locks the engine for several operations in a row.
    pub fn lock(&self) -> MutexGuard<'_, FlowControl<M>> {
        self.inner.lock()
    }

    /// See [`FlowControl::publish`].
    ///
    /// # Errors
    /// As [`FlowControl::publish`].
    pub fn publish(
        &self,
        key: Option<&str>,
        limits: Option<Limits>,
        message: M,
        now: Timestamp,
    ) -> Result<MessageId, FlowError> {
        self.inner.lock().publish(key, limits, message, now)
    }

    /// See [`FlowControl::poll_dispatch`].
    pub fn poll_dispatch(&self, now: Timestamp) -> Option<Dispatch<M>>
    where
        M: Clone,
    {
        self.inner.lock().poll_dispatch(now)
    }

    /// See [`FlowControl::complete`].
    ///
    /// # Errors
    /// As [`FlowControl::complete`].
    pub fn complete(&self, id: MessageId, now: Timestamp) -> Result<M, FlowError> {
        self.inner.lock().complete(id, now)
    }

    /// See [`FlowControl::requeue`].
    ///
    /// # Errors
    /// As [`FlowControl::requeue`].
    pub fn requeue(&self, id: MessageId, now: Timestamp) -> Result<(), FlowError> {
        self.inner.lock().requeue(id, now)
    }

    /// See [`FlowControl::cancel`].
    pub fn cancel(&self, id: MessageId) -> Option<M> {
        self.inner.lock().cancel(id)
    }

    /// See [`FlowControl::poll_timeout`].
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.inner.lock().poll_timeout()
    }

    /// See [`FlowControl::handle_timeout`].
    pub fn handle_timeout(&self, now: Timestamp) {
        self.inner.lock().handle_timeout(now);
    }

    /// See [`FlowControl::pause`].
    ///
    /// # Errors
    /// As [`FlowControl::pause`].
    pub fn pause(&self, key: &str, now: Timestamp) -> Result<(), FlowError> {
        self.inner.lock().pause(key, now)
    }

    /// See [`FlowControl::resume`].
    ///
    /// # Errors
    /// As [`FlowControl::resume`].
    pub fn resume(&self, key: &str, now: Timestamp) -> Result<(), FlowError> {
        self.inner.lock().resume(key, now)
    }

    /// See [`FlowControl::pin`].
    ///
    /// # Errors
    /// As [`FlowControl::pin`].
    pub fn pin(&self, key: &str, pin: Pin, now: Timestamp) -> Result<(), FlowError> {
        self.inner.lock().pin(key, pin, now)
    }

    /// See [`FlowControl::unpin`].
    ///
    /// # Errors
    /// As [`FlowControl::unpin`].
    pub fn unpin(&self, key: &str, unpin: Unpin, now: Timestamp) -> Result<(), FlowError> {
        self.inner.lock().unpin(key, unpin, now)
    }

    /// See [`FlowControl::reset_rate`].
    ///
    /// # Errors
    /// As [`FlowControl::reset_rate`].
    pub fn reset_rate(&self, key: &str, now: Timestamp) -> Result<(), FlowError> {
        self.inner.lock().reset_rate(key, now)
    }

    /// See [`FlowControl::key_info`].
    #[must_use]
    pub fn key_info(&self, key: &str, now: Timestamp) -> Option<KeyInfo> {
        self.inner.lock().key_info(key, now)
    }

    /// See [`FlowControl::keys`].
    #[must_use]
    pub fn keys(&self, now: Timestamp) -> Vec<KeyInfo> {
        self.inner.lock().keys(now)
    }

    /// See [`FlowControl::global_info`].
    #[must_use]
    pub fn global_info(&self) -> GlobalInfo {
        self.inner.lock().global_info()
    }

    /// See [`FlowControl::set_global_parallelism`].
    pub fn set_global_parallelism(&self, max: Option<NonZeroU32>) {
        self.inner.lock().set_global_parallelism(max);
    }

    /// See [`FlowControl::snapshot`].
    #[must_use]
    pub fn snapshot(&self) -> FlowSnapshot<M>
    where
        M: Clone,
    {
        self.inner.lock().snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_engine_is_send_and_sync_for_send_messages() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SharedFlowControl<String>>();
        assert_send_sync::<SharedFlowControl<std::sync::Arc<[u8]>>>();
    }
}
