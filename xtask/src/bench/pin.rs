//! Free and pinned rounds: before each round the bench sets the CPU affinity of every thread of
//! this process and of every process it started (plugins, the supervisor shim, echo children,
//! the relay service and its clients) to either the whole allowed set or one CPU.
//!
//! Affinity is per thread and inherited by threads and processes created after it is set, so
//! setting it on the live tree at the start of a round covers what runs then and, through
//! inheritance, what that round starts: a plugin spawned by a pinned shim, the shim's warm spare
//! started by a pinned host thread. Threads are found in `/proc/<pid>/task`, processes by their
//! parent in `/proc/<pid>/stat`.

use std::collections::BTreeSet;

use anyhow::{Context, Result, bail};
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// How a round runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Every CPU the bench was started with; the scheduler places host and plugin.
    Free,
    /// Host threads and every child process on one CPU.
    Pinned,
}

impl Mode {
    /// Both modes, in the order the first round runs them.
    pub(crate) const BOTH: [Mode; 2] = [Mode::Free, Mode::Pinned];

    /// The suffix of a figure measured in this mode: none for free, `_pinned` for pinned.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Mode::Free => "",
            Mode::Pinned => "_pinned",
        }
    }
}

/// The two affinity sets of a run.
#[derive(Debug, Clone)]
pub(crate) struct Affinity {
    free: CpuSet,
    pinned: CpuSet,
    /// The CPU of pinned rounds: the highest one the bench was allowed.
    pub(crate) cpu: usize,
    /// How many CPUs the bench was allowed.
    pub(crate) cpus: usize,
}

impl Affinity {
    /// Reads the affinity this process was started with; pinned rounds use its last CPU.
    pub(crate) fn detect() -> Result<Self> {
        let free = sched_getaffinity(Pid::from_raw(0)).context("sched_getaffinity failed")?;
        let allowed: Vec<usize> = (0..CpuSet::count())
            .filter(|&cpu| free.is_set(cpu).unwrap_or(false))
            .collect();
        let Some(&cpu) = allowed.last() else {
            bail!("this process may run on no CPU at all");
        };
        let mut pinned = CpuSet::new();
        pinned.set(cpu).context("cannot build a one-CPU set")?;
        Ok(Self {
            free,
            pinned,
            cpu,
            cpus: allowed.len(),
        })
    }

    /// Sets `mode`'s affinity on every thread of this process and of all its descendants.
    /// A thread or process that exits meanwhile is skipped; any other refusal is an error, so
    /// a pinned figure is never silently a free one.
    pub(crate) fn apply(&self, mode: Mode) -> Result<()> {
        let set = match mode {
            Mode::Free => &self.free,
            Mode::Pinned => &self.pinned,
        };
        for pid in tree(std::process::id()) {
            for tid in tasks(pid) {
                match sched_setaffinity(Pid::from_raw(tid), set) {
                    Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
                    Err(error) => {
                        bail!("cannot set the affinity of thread {tid} of process {pid}: {error}")
                    }
                }
            }
        }
        Ok(())
    }
}

impl Affinity {
    /// Checks that every thread of process `pid` runs with `mode`'s set, so a figure labelled
    /// pinned was measured pinned.
    pub(crate) fn verify(&self, pid: u32, mode: Mode) -> Result<()> {
        let expected: Vec<usize> = match mode {
            Mode::Free => (0..CpuSet::count())
                .filter(|&cpu| self.free.is_set(cpu).unwrap_or(false))
                .collect(),
            Mode::Pinned => vec![self.cpu],
        };
        for tid in threads_of(pid) {
            let allowed = allowed_cpus(tid)?;
            if allowed != expected {
                bail!(
                    "thread {tid} of process {pid} may run on CPUs {allowed:?} in a {mode:?} round, not {expected:?}"
                );
            }
        }
        Ok(())
    }
}

/// Numeric entries of a `/proc` directory.
fn numeric_entries(dir: &str) -> Vec<i32> {
    #[expect(
        clippy::disallowed_methods,
        reason = "listing processes and threads in /proc is not bundle collection"
    )]
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The threads of `pid`.
fn tasks(pid: i32) -> Vec<i32> {
    numeric_entries(&format!("/proc/{pid}/task"))
}

/// The parent pid from a `/proc/<pid>/stat` text (the field after the state, which follows
/// the parenthesised command name, itself free to contain spaces and parentheses).
pub(crate) fn parent_of(stat: &str) -> Option<i32> {
    let (_, rest) = split_stat(stat)?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// A `/proc/<pid>/stat` line's command name (which may hold spaces and parentheses) and the
/// fields after it, from the state on.
fn split_stat(stat: &str) -> Option<(&str, &str)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    Some((stat.get(open + 1..close)?, &stat[close + 1..]))
}

/// `root` and every process descended from it, by parent links read now.
fn tree(root: u32) -> Vec<i32> {
    let root = root as i32;
    let links: Vec<(i32, i32)> = numeric_entries("/proc")
        .into_iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            Some((pid, parent_of(&stat)?))
        })
        .collect();
    descendants(root, &links)
}

/// `root` and its descendants in the `(pid, parent)` links, `root` first.
pub(crate) fn descendants(root: i32, links: &[(i32, i32)]) -> Vec<i32> {
    let mut found = vec![root];
    let mut seen = BTreeSet::from([root]);
    let mut at = 0;
    while let Some(&parent) = found.get(at) {
        for &(pid, ppid) in links {
            if ppid == parent && seen.insert(pid) {
                found.push(pid);
            }
        }
        at += 1;
    }
    found
}

/// The CPU set a thread may run on, as CPU numbers.
pub(crate) fn allowed_cpus(tid: i32) -> Result<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(tid)).context("sched_getaffinity failed")?;
    Ok((0..CpuSet::count())
        .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
        .collect())
}

/// Every thread of `pid`.
pub(crate) fn threads_of(pid: u32) -> Vec<i32> {
    tasks(pid as i32)
}

/// Samples of every side in one mode: one [`Rounds`](super::stats::Rounds) per side.
pub(crate) type BySide = Vec<super::stats::Rounds>;

/// How long [`settle`] waits at most for the background work of the last round to end.
const SETTLE_BOUND: std::time::Duration = std::time::Duration::from_millis(100);

/// Waits until no thread of this process tree but the caller's is running or runnable, and no
/// shim pre-start thread (`c2-shim-warm`) is left, or [`SETTLE_BOUND`] has passed. A round's
/// background work, above all the supervisor's pre-start of the next shim (an exec of about a
/// millisecond of CPU), then ends before the next round starts instead of landing in it: it is
/// charged to the round that started it, or to none, never to another side's measurement.
fn settle() {
    let deadline = std::time::Instant::now() + SETTLE_BOUND;
    let me = std::process::id();
    let caller = nix::unistd::gettid().as_raw();
    while std::time::Instant::now() < deadline && busy(me, caller) {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// Whether a thread of `root`'s tree other than `caller` is running, runnable or in a
/// pre-start.
fn busy(root: u32, caller: i32) -> bool {
    tree(root).into_iter().any(|pid| {
        tasks(pid).into_iter().any(|tid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat"));
            let Some((comm, rest)) = stat.as_deref().ok().and_then(split_stat) else {
                return false;
            };
            let state = rest.trim_start().chars().next();
            tid != caller && (matches!(state, Some('R' | 'D')) || comm == "c2-shim-warm")
        })
    })
}

/// Runs `rounds` rounds of every side in both modes, free and pinned rounds alternating and
/// the leading side rotating (like [`super::stats::interleave`]); before each side's round it
/// [`settle`]s, then sets the affinity of the whole process tree. Each closure is told the
/// mode it runs in. Returns the samples of the free rounds, then of the pinned ones.
pub(crate) fn interleave_modes(
    affinity: &Affinity,
    rounds: usize,
    sides: &mut [&mut dyn FnMut(Mode) -> Vec<f64>],
) -> Result<[BySide; 2]> {
    let n = sides.len();
    let mut out: [BySide; 2] = [vec![Vec::new(); n], vec![Vec::new(); n]];
    for round in 0..rounds {
        for k in 0..2 * n {
            // Free and pinned strictly alternate (each round has an even number of slots, so
            // across rounds too): side s free, side s pinned, the next side free, ...; the
            // side that leads rotates from round to round.
            let (side, m) = ((round + k / 2) % n, k % 2);
            let mode = Mode::BOTH[m];
            settle();
            affinity.apply(mode)?;
            let samples = sides[side](mode);
            out[m][side].push(samples);
        }
    }
    affinity.apply(Mode::Free)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests that set this process's affinity run one at a time, so one never reads the
    /// other's pinned set as the free one.
    static AFFINITY: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn the_parent_is_read_after_the_last_parenthesis() {
        assert_eq!(parent_of("42 (a) b) S 7 42 42 0"), Some(7));
        assert_eq!(parent_of("1 (init) S 0 1 1"), Some(0));
        assert_eq!(parent_of("garbage"), None);
    }

    #[test]
    fn settling_waits_for_a_running_thread_and_for_a_shim_pre_start() {
        let spin = std::time::Duration::from_millis(40);
        let spinner = std::thread::spawn(move || {
            let until = std::time::Instant::now() + spin;
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
        });
        let settling = || {
            let start = std::time::Instant::now();
            settle();
            start.elapsed()
        };
        assert!(settling() >= spin / 2, "settled while a thread still ran");
        spinner.join().unwrap();
        let pre_start = std::thread::Builder::new()
            .name("c2-shim-warm".to_owned())
            .spawn(move || std::thread::sleep(spin))
            .unwrap();
        assert!(
            settling() >= spin / 2,
            "settled while a pre-start thread was left"
        );
        pre_start.join().unwrap();
        // A quiet tree is not busy. The test harness runs other tests on threads of this
        // process, so the quiet tree is a sleeping child of its own, not this process.
        let mut quiet = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while busy(quiet.id(), 0) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let still_busy = busy(quiet.id(), 0);
        quiet.kill().unwrap();
        quiet.wait().unwrap();
        assert!(!still_busy, "a sleeping process counted as busy");
    }

    #[test]
    fn descendants_follow_parent_links_to_any_depth() {
        let links = [(2, 1), (3, 2), (4, 3), (5, 9), (6, 1)];
        assert_eq!(descendants(1, &links), vec![1, 2, 6, 3, 4]);
        assert_eq!(descendants(9, &links), vec![9, 5]);
    }

    #[test]
    fn modes_alternate_and_every_side_runs_in_both() {
        let _one_at_a_time = c2_lock::lock(&AFFINITY);
        let affinity = Affinity::detect().unwrap();
        let log = std::cell::RefCell::new(Vec::new());
        let mut a = |mode: Mode| {
            log.borrow_mut().push(('A', mode));
            vec![1.0]
        };
        let mut b = |mode: Mode| {
            log.borrow_mut().push(('B', mode));
            vec![2.0]
        };
        let [free, pinned] = interleave_modes(&affinity, 2, &mut [&mut a, &mut b]).unwrap();
        let log = log.take();
        assert_eq!(
            log,
            [
                ('A', Mode::Free),
                ('A', Mode::Pinned),
                ('B', Mode::Free),
                ('B', Mode::Pinned),
                ('B', Mode::Free),
                ('B', Mode::Pinned),
                ('A', Mode::Free),
                ('A', Mode::Pinned),
            ]
        );
        // No two consecutive rounds of the same mode.
        assert!(log.windows(2).all(|w| w[0].1 != w[1].1), "{log:?}");
        assert_eq!(free, vec![vec![vec![1.0]; 2], vec![vec![2.0]; 2]]);
        assert_eq!(pinned, free);
    }

    #[test]
    fn a_pinned_round_pins_this_process_and_a_child_started_in_it() {
        let _one_at_a_time = c2_lock::lock(&AFFINITY);
        let affinity = Affinity::detect().unwrap();
        let mut seen = Vec::new();
        let mut side = |mode: Mode| {
            #[expect(
                clippy::disallowed_methods,
                reason = "a bare child to check inheritance"
            )]
            let mut child = std::process::Command::new("sleep")
                .arg("5")
                .spawn()
                .unwrap();
            let threads = threads_of(std::process::id());
            let mine: Vec<Vec<usize>> = threads
                .iter()
                .map(|&t| allowed_cpus(t).unwrap_or_default())
                .collect();
            let its = allowed_cpus(child.id() as i32).unwrap();
            child.kill().unwrap();
            child.wait().unwrap();
            seen.push((mode, mine, its));
            Vec::new()
        };
        interleave_modes(&affinity, 1, &mut [&mut side]).unwrap();
        for (mode, mine, its) in seen {
            let expected = match mode {
                Mode::Pinned => vec![affinity.cpu],
                Mode::Free => allowed_cpus(0).unwrap(),
            };
            assert_eq!(its, expected, "{mode:?}");
            // Every thread alive at the start of the round got the round's set (threads the
            // test harness starts meanwhile inherit from their creator, not from us).
            assert!(mine.contains(&expected), "{mode:?}: {mine:?}");
        }
        assert_eq!(allowed_cpus(0).unwrap().len(), affinity.cpus);
    }
}
