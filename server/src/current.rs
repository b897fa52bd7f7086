//! The service every request, the committer and the dispatcher use. It is replaced whole
//! when a follower installs a snapshot from the leader, so each user takes the current one
//! per request (an `Arc` clone) instead of keeping a reference.

use std::sync::Arc;

use flowvec::wire::Service;
use parking_lot::RwLock;

pub(crate) struct Current {
    service: RwLock<Arc<Service>>,
}

impl Current {
    pub(crate) fn new(service: Service) -> Self {
        Self {
            service: RwLock::new(Arc::new(service)),
        }
    }

    /// The service as of now.
    pub(crate) fn get(&self) -> Arc<Service> {
        Arc::clone(&self.service.read())
    }

    /// Puts `service` in place of the current one (a snapshot was installed).
    pub(crate) fn replace(&self, service: Service) {
        *self.service.write() = Arc::new(service);
    }
}
