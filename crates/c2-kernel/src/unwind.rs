//! Panic containment for module futures without an extra dependency.
//!
//! A module's `apply`, a cleanup, a listener and a handler are all futures we do not control. A
//! panic inside one must fail that scope only, so every poll runs under `catch_unwind`.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Polls `F`, turning a panic during any poll into `Err(message)`.
pub(crate) struct CatchUnwind<F>(pub(crate) F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        // The future is dropped right after a panic, so no broken invariant is observed later.
        match catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *inner).poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload.as_ref()))),
        }
    }
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// Builds and polls a future, containing a panic in either step.
pub(crate) async fn guarded<'a, T>(
    make: impl FnOnce() -> crate::module::BoxFuture<'a, T>,
) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(make)) {
        Ok(future) => CatchUnwind(future).await,
        Err(payload) => Err(panic_message(payload.as_ref())),
    }
}
