//! Running the host's work on the runtime the embedder chose ([`crate::HostOptions::runtime`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future polled with a runtime's context entered, so whatever it spawns, and every timer
/// and pipe it registers, belongs to that runtime and not to the caller's. Without a handle it
/// is the future itself.
pub(crate) struct OnRuntime<F> {
    handle: Option<tokio::runtime::Handle>,
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for OnRuntime<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let _entered = this.handle.as_ref().map(tokio::runtime::Handle::enter);
        this.inner.as_mut().poll(cx)
    }
}

/// `future`, polled inside `handle`'s runtime context when there is one.
pub(crate) fn on_runtime<F: Future>(
    handle: Option<&tokio::runtime::Handle>,
    future: F,
) -> OnRuntime<F> {
    OnRuntime {
        handle: handle.cloned(),
        inner: Box::pin(future),
    }
}
