//! What a supervised process costs and how it answers: its tree's resource usage read from
//! /proc ([`Process::usage`]), and a fixed-size meter of the calls its owner made to it
//! ([`CallMeter`]).

use std::io::Read;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::Process;

/// The most processes of one tree [`Process::usage`] visits; a tree past it is reported with
/// what was read ([`Usage::truncated`]).
pub const MAX_TREE_PROCESSES: usize = 4096;

/// The most bytes read of one /proc file (`stat`, `status`, a task's `children`).
const MAX_PROC_FILE: u64 = 64 * 1024;

/// The most descriptors counted per process.
const MAX_FDS_COUNTED: u64 = 1 << 20;

/// Clock ticks per second of the times in /proc/<pid>/stat: Linux reports them in `USER_HZ`,
/// which is 100 on every architecture it supports for user space.
const USER_HZ: u64 = 100;

/// The resources a process tree holds at one moment, summed over its processes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// Resident memory (`VmRSS`), in bytes.
    pub rss_bytes: u64,
    /// User and system CPU time consumed so far.
    pub cpu_time: Duration,
    /// Open file descriptors.
    pub open_fds: u64,
    /// Processes counted (0 once the tree has ended).
    pub processes: u32,
    /// The tree had more than [`MAX_TREE_PROCESSES`] processes; the rest were not read.
    pub truncated: bool,
}

impl Process {
    /// The resources of the program's whole process tree, read from /proc now: under a shim
    /// every process below the shim (the shim itself is not counted), otherwise the direct
    /// child and its descendants. Empty once the process has ended. Reads are bounded: at most
    /// [`MAX_TREE_PROCESSES`] processes, each file read at most 64 KiB.
    pub fn usage(&self) -> Usage {
        if self.try_exit().is_some() {
            return Usage::default();
        }
        let root = self.pid();
        if self.contained() {
            tree_usage(&children(root), None)
        } else {
            tree_usage(&[root], None)
        }
    }
}

/// The usage of the trees rooted at `roots` (each root and its descendants). `limit` lowers
/// [`MAX_TREE_PROCESSES`] (for tests).
pub(crate) fn tree_usage(roots: &[u32], limit: Option<usize>) -> Usage {
    let limit = limit.unwrap_or(MAX_TREE_PROCESSES);
    let mut usage = Usage::default();
    let mut queue: Vec<u32> = roots.to_vec();
    let mut seen = std::collections::HashSet::new();
    while let Some(pid) = queue.pop() {
        if !seen.insert(pid) {
            continue;
        }
        if seen.len() > limit {
            usage.truncated = true;
            break;
        }
        let Some(one) = process_usage(pid) else {
            continue;
        };
        usage.rss_bytes = usage.rss_bytes.saturating_add(one.rss_bytes);
        usage.cpu_time = usage.cpu_time.saturating_add(one.cpu_time);
        usage.open_fds = usage.open_fds.saturating_add(one.open_fds);
        usage.processes = usage.processes.saturating_add(1);
        queue.extend(children(pid));
    }
    usage
}

/// One process's usage; `None` when it is gone.
fn process_usage(pid: u32) -> Option<Usage> {
    let stat = read_proc(&format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces and parentheses): state is the
    // third field of the line, utime and stime the 14th and 15th.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    let ticks = |n: usize| fields.get(n).and_then(|v| v.parse::<u64>().ok());
    let cpu_ticks = ticks(11)?.saturating_add(ticks(12)?);
    let cpu_time = Duration::from_millis(cpu_ticks.saturating_mul(1000 / USER_HZ));
    let rss_kib = read_proc(&format!("/proc/{pid}/status"))
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmRSS:")?
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
        })
        .unwrap_or(0);
    Some(Usage {
        rss_bytes: rss_kib.saturating_mul(1024),
        cpu_time,
        open_fds: count_fds(pid),
        processes: 1,
        truncated: false,
    })
}

/// The children of every thread of `pid`.
fn children(pid: u32) -> Vec<u32> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the supervisor reads /proc for the processes it supervises"
    )]
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.filter_map(Result::ok).take(MAX_TREE_PROCESSES) {
        let path = task.path().join("children");
        let Some(listed) = read_proc(&path.to_string_lossy()) else {
            continue;
        };
        out.extend(
            listed
                .split_whitespace()
                .filter_map(|pid| pid.parse::<u32>().ok()),
        );
        if out.len() >= MAX_TREE_PROCESSES {
            break;
        }
    }
    out
}

/// How many descriptors `pid` has open (0 when they cannot be listed).
fn count_fds(pid: u32) -> u64 {
    #[expect(
        clippy::disallowed_methods,
        reason = "the supervisor reads /proc for the processes it supervises"
    )]
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    let mut count = 0;
    for _ in fds.take(usize::try_from(MAX_FDS_COUNTED).unwrap_or(usize::MAX)) {
        count += 1;
    }
    count
}

/// A /proc file's text, at most [`MAX_PROC_FILE`] bytes.
fn read_proc(path: &str) -> Option<String> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the supervisor reads /proc for the processes it supervises"
    )]
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(MAX_PROC_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}

/// How many latency buckets a [`CallMeter`] has: 8 exact ones for 0 to 7 µs, then four per
/// power of two up to 2^40 µs (about 12 days); longer calls land in the last.
const BUCKETS: usize = 8 + 4 * 38;

/// Calls made to one process: how many were served and failed, and their latency in a
/// fixed-size log-linear histogram (each bucket a quarter of a power of two wide, so a
/// percentile is within 25 % of the truth). Recording is three relaxed atomic additions: cheap
/// enough to stay on for every call. Memory is fixed whatever the number of calls, and the
/// histogram is allocated at the first call: a host holding a thousand dormant bundles keeps
/// none of their 1.3 KB histograms.
#[derive(Debug, Default)]
pub struct CallMeter {
    served: AtomicU64,
    failed: AtomicU64,
    buckets: OnceLock<Box<[AtomicU64; BUCKETS]>>,
}

/// A [`CallMeter`]'s counts at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallStats {
    /// Calls answered (successfully or with an error).
    pub served: u64,
    /// Of those, the ones that failed.
    pub failed: u64,
    /// The median latency (the upper bound of its bucket); `None` before the first call.
    pub p50: Option<Duration>,
    /// The 99th percentile latency (the upper bound of its bucket).
    pub p99: Option<Duration>,
}

impl CallMeter {
    /// Notes one call that took `elapsed`; `ok` is false for a failed one.
    pub fn record(&self, elapsed: Duration, ok: bool) {
        self.served.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let buckets = self
            .buckets
            .get_or_init(|| Box::new(std::array::from_fn(|_| AtomicU64::new(0))));
        buckets[bucket(micros)].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn stats(&self) -> CallStats {
        let counts: Vec<u64> = self
            .buckets
            .get()
            .map(|buckets| {
                buckets
                    .iter()
                    .map(|bucket| bucket.load(Ordering::Relaxed))
                    .collect()
            })
            .unwrap_or_default();
        let total: u64 = counts.iter().sum();
        CallStats {
            served: self.served.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            p50: percentile(&counts, total, 50),
            p99: percentile(&counts, total, 99),
        }
    }
}

/// The bucket of a latency in µs.
pub(crate) fn bucket(micros: u64) -> usize {
    if micros < 8 {
        return usize::try_from(micros).unwrap_or(0);
    }
    let power = u64::from(63 - micros.leading_zeros());
    let quarter = (micros >> (power - 2)) & 3;
    let index = 8 + (power - 3) * 4 + quarter;
    usize::try_from(index)
        .unwrap_or(BUCKETS - 1)
        .min(BUCKETS - 1)
}

/// The smallest latency in µs past bucket `index` (its exclusive upper bound).
pub(crate) fn bucket_end(index: usize) -> u64 {
    if index < 8 {
        return index as u64 + 1;
    }
    let steps = (index - 8) as u64;
    let power = 3 + steps / 4;
    let quarter = steps % 4;
    (4 + quarter + 1) << (power - 2)
}

/// The upper bound of the bucket holding the `percent`th percentile of `total` calls.
fn percentile(counts: &[u64], total: u64, percent: u64) -> Option<Duration> {
    if total == 0 {
        return None;
    }
    // The rank of the percentile, 1-based, rounded up.
    let rank = (total.saturating_mul(percent)).div_ceil(100).max(1);
    let mut seen = 0u64;
    for (index, count) in counts.iter().enumerate() {
        seen += count;
        if seen >= rank {
            return Some(Duration::from_micros(bucket_end(index)));
        }
    }
    None
}
