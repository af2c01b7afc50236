//! The health record of one supervised slot (a plugin runtime in one realm, say): its starts,
//! crashes and last failure, a [`CallMeter`], dropped events, and a [`Health`] snapshot that
//! joins them with the live process's pid, uptime and [`Usage`].

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use c2_lock::lock;

use crate::{CallMeter, CallStats, Process, Usage};

/// How many start and crash times a [`Vitals`] keeps: enough for any crash window a host
/// would set, and fixed.
const KEPT_TIMES: usize = 64;

/// How a slot stands, as its owner says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HealthState {
    /// Nothing runs yet: it starts on first use.
    Dormant,
    /// Its process is being started.
    Starting,
    /// Its process runs.
    Running,
    /// It fails closed until its owner resets it (a crash loop, a refused start).
    Failed,
    /// Its owner stopped it for good.
    Stopped,
}

impl HealthState {
    /// The stable snake_case name: `dormant`, `starting`, `running`, `failed`, `stopped`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Dormant => "dormant",
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }
}

/// Why a process last failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failure {
    /// The owner's stable kind (`process_exited`, `crash_loop`, ...).
    pub kind: String,
    /// What happened.
    pub message: String,
    /// The process's last stderr lines then.
    pub stderr_tail: Vec<String>,
    /// How long before the snapshot it happened.
    pub ago: Duration,
}

/// A slot's health at one moment ([`Vitals::snapshot`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Health {
    /// How it stands.
    pub state: HealthState,
    /// The program's pid while it runs.
    pub pid: Option<u32>,
    /// How long the current process has run.
    pub uptime: Option<Duration>,
    /// Starts within the crash window.
    pub starts: u32,
    /// Crashes within the crash window.
    pub crashes: u32,
    /// The crash window the two counts are taken over.
    pub window: Duration,
    /// The last failure, if any.
    pub last_failure: Option<Failure>,
    /// The calls made to it since it was created.
    pub calls: CallStats,
    /// The running process tree's resources (empty when nothing runs).
    pub usage: Usage,
    /// Events not delivered to it because its queue was full.
    pub dropped_events: u64,
}

#[derive(Debug, Default)]
struct Record {
    starts: VecDeque<Instant>,
    crashes: VecDeque<Instant>,
    /// The current process's start, and whether its crash was noted.
    current: Option<(Instant, bool)>,
    last_failure: Option<(Instant, String, String, Vec<String>)>,
}

/// The health record of one slot; the owner notes starts, crashes and failures, and every
/// call through [`meter`](Self::meter).
#[derive(Debug, Default)]
pub struct Vitals {
    meter: CallMeter,
    dropped_events: AtomicU64,
    record: Mutex<Record>,
}

fn push_bounded(times: &mut VecDeque<Instant>, at: Instant) {
    if times.len() == KEPT_TIMES {
        times.pop_front();
    }
    times.push_back(at);
}

impl Vitals {
    /// The call meter: record every call's latency and outcome here.
    pub fn meter(&self) -> &CallMeter {
        &self.meter
    }

    /// Notes an event that could not be delivered.
    pub fn dropped_event(&self) {
        self.dropped_events.fetch_add(1, Ordering::Relaxed);
    }

    /// Notes that a process started at `at`.
    pub fn started(&self, at: Instant) {
        let mut record = lock(&self.record);
        push_bounded(&mut record.starts, at);
        record.current = Some((at, false));
    }

    /// Notes that the current process crashed: counted once per process, however many
    /// observers report it. The failure is kept as the last one.
    pub fn crashed(&self, at: Instant, kind: &str, message: String, stderr_tail: Vec<String>) {
        let mut record = lock(&self.record);
        match &mut record.current {
            Some((_, noted)) if !*noted => *noted = true,
            _ => return,
        }
        push_bounded(&mut record.crashes, at);
        record.last_failure = Some((at, kind.to_owned(), message, stderr_tail));
    }

    /// Notes that `process`, the current one, ended on its own: a crash (`process_exited`)
    /// with its exit and last stderr lines.
    pub fn process_ended(&self, process: &Process) {
        let how = process
            .try_exit()
            .map_or_else(|| "its output closed".to_owned(), |exit| exit.to_string());
        let message = format!("the process ended ({how})");
        self.crashed(
            Instant::now(),
            "process_exited",
            message,
            process.stderr_tail(),
        );
    }

    /// Notes a failure that is not a crash (a refused start, say).
    pub fn failed(&self, kind: &str, message: String) {
        let at = Instant::now();
        lock(&self.record).last_failure = Some((at, kind.to_owned(), message, Vec::new()));
    }

    /// The record at `now`, counted over `window`, with the running `process` (if any) read
    /// for its pid and usage. `state` is the owner's word, except that [`HealthState::Running`]
    /// with a process that has ended reads [`HealthState::Dormant`].
    pub fn snapshot(
        &self,
        now: Instant,
        window: Duration,
        state: HealthState,
        process: Option<&Process>,
    ) -> Health {
        let within = |times: &VecDeque<Instant>| {
            let count = times
                .iter()
                .filter(|at| now.saturating_duration_since(**at) <= window)
                .count();
            u32::try_from(count).unwrap_or(u32::MAX)
        };
        let (starts, crashes, current, last_failure) = {
            let record = lock(&self.record);
            (
                within(&record.starts),
                within(&record.crashes),
                record.current,
                record.last_failure.clone(),
            )
        };
        let running = process.filter(|process| process.try_exit().is_none());
        // A process said to run that has ended is not running: the next use starts another.
        let state = match (state, running) {
            (HealthState::Running, None) => HealthState::Dormant,
            (state, _) => state,
        };
        Health {
            state,
            pid: running.and_then(Process::program_pid),
            uptime: running
                .and(current)
                .map(|(at, _)| now.saturating_duration_since(at)),
            starts,
            crashes,
            window,
            last_failure: last_failure.map(|(at, kind, message, stderr_tail)| Failure {
                kind,
                message,
                stderr_tail,
                ago: now.saturating_duration_since(at),
            }),
            calls: self.meter.stats(),
            usage: running.map(Process::usage).unwrap_or_default(),
            dropped_events: self.dropped_events.load(Ordering::Relaxed),
        }
    }
}
