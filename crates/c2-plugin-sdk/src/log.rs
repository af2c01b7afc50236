//! `tracing` events forwarded to the host as `log` notifications, without ever blocking the
//! code that logs.

use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use c2_protocol::{LogLevel, LogParams};
use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context as LayerContext, Layer};

/// A `tracing_subscriber` layer that sends each event to the host as a `log` notification
/// `{level, message}` once the handshake is done, and writes it to stderr before and after.
///
/// Sending is a `try_send` on a bounded queue: a full queue drops the event and counts it.
/// [`Plugin::run`](crate::Plugin::run) installs one; build your own with [`LogLayer::new`] to
/// compose it with other layers, and hand its [`LogHandle`] to
/// [`Plugin::log_handle`](crate::Plugin::log_handle).
#[derive(Debug)]
pub struct LogLayer {
    shared: Arc<LogShared>,
}

/// Connects a [`LogLayer`] to a running plugin's connection.
#[derive(Debug, Clone)]
pub struct LogHandle {
    shared: Arc<LogShared>,
}

#[derive(Debug)]
struct LogShared {
    max_level: Level,
    sink: Mutex<Option<mpsc::Sender<LogParams>>>,
    dropped: AtomicU64,
}

impl LogLayer {
    /// A layer forwarding events up to `max_level` (e.g. `Level::INFO` forwards error, warn
    /// and info), with the handle that connects it.
    pub fn new(max_level: Level) -> (LogLayer, LogHandle) {
        let shared = Arc::new(LogShared {
            max_level,
            sink: Mutex::new(None),
            dropped: AtomicU64::new(0),
        });
        (
            LogLayer {
                shared: Arc::clone(&shared),
            },
            LogHandle { shared },
        )
    }
}

impl LogHandle {
    /// Log events dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    pub(crate) fn connect(&self, sink: mpsc::Sender<LogParams>) {
        *c2_lock::lock(&self.shared.sink) = Some(sink);
    }

    pub(crate) fn disconnect(&self) {
        *c2_lock::lock(&self.shared.sink) = None;
    }
}

impl<S: Subscriber> Layer<S> for LogLayer {
    fn enabled(&self, metadata: &Metadata<'_>, _ctx: LayerContext<'_, S>) -> bool {
        *metadata.level() <= self.shared.max_level
    }

    // What `enabled` lets through, told to `tracing` up front: a callsite above the level is
    // then skipped without asking the subscriber.
    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::from_level(self.shared.max_level))
    }

    fn on_event(&self, event: &Event<'_>, _ctx: LayerContext<'_, S>) {
        let metadata = event.metadata();
        if *metadata.level() > self.shared.max_level {
            return;
        }
        let mut visitor = MessageVisitor::default();
        event.record(&mut visitor);
        let params = LogParams {
            level: level(*metadata.level()),
            message: visitor.finish(),
        };
        let sink = c2_lock::lock(&self.shared.sink).clone();
        match sink {
            Some(sink) => {
                if sink.try_send(params).is_err() {
                    self.shared.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                let line = format!(
                    "{} {}: {}\n",
                    metadata.level(),
                    metadata.target(),
                    params.message
                );
                // stderr is the log channel of last resort; if it is gone there is nowhere left.
                let _ = std::io::stderr().write_all(line.as_bytes());
            }
        }
    }
}

/// The subscriber [`Plugin::run`](crate::Plugin::run) puts under its [`LogLayer`]: it takes
/// every event the layer lets through and keeps no spans, because nothing the SDK forwards
/// reads them. A span gets a fresh id and is otherwise ignored. (tracing-subscriber's
/// `Registry` stores every span; building one, its slab of shards included, is about a tenth of
/// what a plugin does between its `main` and its first answer: some 20 us and seven page faults
/// in a fresh process.) An author who wants spans installs a registry with the layer before
/// [`Plugin::run`](crate::Plugin::run), which then keeps it.
#[derive(Debug)]
pub(crate) struct EventsOnly {
    next_span: AtomicU64,
}

impl EventsOnly {
    pub(crate) fn new() -> Self {
        EventsOnly {
            next_span: AtomicU64::new(1),
        }
    }

    /// Puts the span counter where its next id would be 0.
    #[cfg(test)]
    pub(crate) fn wrap_to_zero_for_tests(&self) {
        self.next_span.store(0, Ordering::Relaxed);
    }
}

impl Subscriber for EventsOnly {
    fn enabled(&self, _metadata: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _span: &Attributes<'_>) -> Id {
        // An id is never 0; after 2^64 spans it wraps to 1 rather than panicking.
        let id = self.next_span.fetch_add(1, Ordering::Relaxed);
        Id::from_u64(id.max(1))
    }

    fn record(&self, _span: &Id, _values: &Record<'_>) {}

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, _event: &Event<'_>) {}

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}
}

fn level(level: Level) -> LogLevel {
    match level {
        Level::ERROR => LogLevel::Error,
        Level::WARN => LogLevel::Warn,
        Level::INFO => LogLevel::Info,
        Level::DEBUG => LogLevel::Debug,
        Level::TRACE => LogLevel::Trace,
    }
}

/// Renders an event as its message followed by ` key=value` for every other field.
#[derive(Debug, Default)]
struct MessageVisitor {
    message: String,
    fields: String,
}

impl MessageVisitor {
    fn finish(mut self) -> String {
        if self.message.is_empty() {
            self.fields.trim_start().to_owned()
        } else {
            self.message.push_str(&self.fields);
            self.message
        }
    }
}

impl Visit for MessageVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            // Writing to a String cannot fail.
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}
