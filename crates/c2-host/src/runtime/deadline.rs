//! A runtime's deadline (`runtime.commandTimeoutMs`, else `HostOptions::invoke_deadline`) on its
//! host callbacks, and the failure every call pending on an expired runtime gets.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use c2_kernel::Error as KernelError;
use c2_protocol::{ErrorObject, Peer, Request, RequestHandler, codes};

use super::Live;
use crate::error::{ErrorKind, raise};

/// Shared by a live process and its callback handler: whether the deadline stopped it, and the
/// process for a callback that outlives the deadline to stop.
#[derive(Default)]
pub(super) struct Expiry {
    expired: AtomicBool,
    pub(super) live: OnceLock<Weak<Live>>,
}

impl Expiry {
    pub(super) fn expired(&self) -> bool {
        self.expired.load(Ordering::Relaxed)
    }

    pub(super) fn expire(&self) {
        self.expired.store(true, Ordering::Relaxed);
    }
}

/// The failure of a call whose runtime outlived its deadline.
pub(super) fn exceeded(limit: Duration) -> KernelError {
    raise(
        ErrorKind::DeadlineExceeded,
        format!(
            "no answer within the {limit:?} deadline; the process was stopped and the next call starts it again"
        ),
    )
}

/// `inner`, with each request bounded by the deadline when there is one: a callback that
/// outlives it marks the runtime expired, stops its process and closes the connection, which
/// fails every call pending on it.
pub(super) fn bounded(
    inner: impl RequestHandler,
    deadline: Option<(Duration, Arc<Expiry>)>,
) -> impl RequestHandler {
    let inner = Arc::new(inner);
    move |request: Request, peer: Peer| {
        let inner = inner.clone();
        let deadline = deadline.clone();
        async move {
            let answer = inner.handle(request, peer.clone());
            let Some((limit, expiry)) = deadline else {
                return answer.await;
            };
            match tokio::time::timeout(limit, answer).await {
                Ok(answer) => answer,
                Err(_) => {
                    expiry.expire();
                    if let Some(live) = expiry.live.get().and_then(Weak::upgrade) {
                        // Its own task: closing the connection may end this one.
                        tokio::spawn(async move { live.stop().await });
                    }
                    peer.close();
                    Err(ErrorObject::new(
                        codes::COMMAND_FAILED,
                        format!("the host callback outlived the {limit:?} deadline"),
                    ))
                }
            }
        }
    }
}
