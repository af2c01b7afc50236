//! The machine a run measured on, and whether its figures may be published: the load average
//! at start and end, the CPU count, and the floor's own level and spread, free and pinned,
//! against the quiet values kept in `bench/quiet-floor.json`. A run waits, bounded, for the load
//! average to settle before it measures; one that starts on a busy machine anyway (or a
//! `--quick` one) is flagged whole. A floor more than [`FLOOR_TOLERANCE`] times off its quiet
//! value either way flags the rows of its own mode: the free floor the free rows, the pinned
//! floor the `_pinned` rows, so a run whose free wake-ups drew a slow mode still publishes its
//! pinned figures and the in-process ones, which no wake-up touches. The table, the JSON and
//! the exit message say which rows are flagged and why.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::{Value, json};

use super::pin::Mode;
use super::stats::{Rounds, median, median_over_rounds, p99};

/// How far (as a factor, either way) a run's floor p50 may be from its quiet value.
pub(crate) const FLOOR_TOLERANCE: f64 = 2.0;

/// The highest 1-minute load average per CPU at the start of a publishable run.
pub(crate) const LOAD_PER_CPU: f64 = 0.3;

/// How long a run waits at most, before it measures, for the 1-minute load average to come
/// under [`LOAD_PER_CPU`]: the builds `cargo xtask bench` runs first raise it for a minute or
/// two, which would flag the whole run.
pub(crate) const LOAD_SETTLE_BOUND: Duration = Duration::from_secs(180);

/// How often the load average is read while waiting for it.
pub(crate) const LOAD_SETTLE_POLL: Duration = Duration::from_secs(5);

/// How a wait for a quiet machine ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Settled {
    /// The load was under the limit (after `waited`).
    Quiet { load: f64, waited: Duration },
    /// The bound passed with the load still over the limit; the run goes on, flagged.
    StillBusy { load: f64 },
    /// The load average could not be read; the run goes on and says so.
    Unknown,
}

/// Waits until the 1-minute load average `read` returns is at most `limit`, sleeping `poll`
/// between reads and giving up after `bound`. The reader and the sleeper are the caller's, so
/// the rule is tested without a clock.
pub(crate) fn settle_load(
    limit: f64,
    bound: Duration,
    poll: Duration,
    mut read: impl FnMut() -> Option<f64>,
    mut sleep: impl FnMut(Duration),
) -> Settled {
    let mut waited = Duration::ZERO;
    loop {
        let Some(load) = read() else {
            return Settled::Unknown;
        };
        if load <= limit {
            return Settled::Quiet { load, waited };
        }
        if waited >= bound {
            return Settled::StillBusy { load };
        }
        sleep(poll);
        waited += poll;
    }
}

/// Where the quiet reference values live, relative to the repository root.
pub(crate) const QUIET_FLOOR_FILE: &str = "bench/quiet-floor.json";

/// The floor's p50 on a quiet machine of the reference kind (`bench/quiet-floor.json`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct QuietFloor {
    /// Free rounds, microseconds.
    pub(crate) floor_p50_us: f64,
    /// Pinned rounds, microseconds.
    pub(crate) floor_p50_us_pinned: f64,
    /// Where the values come from (machine, date, run).
    pub(crate) source: String,
}

impl QuietFloor {
    /// Reads and checks the reference file.
    pub(crate) fn load(root: &Path) -> Result<Self> {
        let path = root.join(QUIET_FLOOR_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let quiet: Self = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} must be {{\"floor_p50_us\", \"floor_p50_us_pinned\", \"source\"}}",
                path.display()
            )
        })?;
        if !(quiet.floor_p50_us > 0.0 && quiet.floor_p50_us_pinned > 0.0) {
            anyhow::bail!("{}: the floor values must be positive", path.display());
        }
        Ok(quiet)
    }
}

/// The floor of one mode: its p50 and p99 and how much its per-round p50 moved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spread {
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) round_p50_min_us: f64,
    pub(crate) round_p50_max_us: f64,
}

impl Spread {
    /// From the floor's rounds (one inner vector of round trips per round).
    pub(crate) fn of(rounds: &Rounds) -> Self {
        let per_round: Vec<f64> = rounds.iter().filter_map(|r| median(r)).collect();
        Self {
            p50_us: median_over_rounds(rounds, median),
            p99_us: median_over_rounds(rounds, p99),
            round_p50_min_us: per_round.iter().copied().fold(f64::NAN, f64::min),
            round_p50_max_us: per_round.iter().copied().fold(f64::NAN, f64::max),
        }
    }

    /// The largest round's p50 over the smallest's.
    pub(crate) fn round_spread(&self) -> f64 {
        self.round_p50_max_us / self.round_p50_min_us
    }

    fn json(&self) -> Value {
        json!({
            "p50_us": round(self.p50_us),
            "p99_us": round(self.p99_us),
            "round_p50_min_us": round(self.round_p50_min_us),
            "round_p50_max_us": round(self.round_p50_max_us),
            "round_spread": round(self.round_spread()),
        })
    }
}

fn round(value: f64) -> Value {
    if value.is_finite() {
        json!((value * 1000.0).round() / 1000.0)
    } else {
        Value::Null
    }
}

/// The rows a reason keeps from being published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Every row of the run.
    All,
    /// The rows measured in free rounds (those with a `_pinned` twin).
    Free,
    /// The `_pinned` rows.
    Pinned,
}

impl Scope {
    /// Whether a reason of this scope flags a row measured in `mode` (`None`: a row measured
    /// in no particular mode, such as an in-process CPU cost).
    pub(crate) fn covers(self, mode: Option<Mode>) -> bool {
        match self {
            Scope::All => true,
            Scope::Free => mode == Some(Mode::Free),
            Scope::Pinned => mode == Some(Mode::Pinned),
        }
    }

    /// The scope's name in the JSON report.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scope::All => "all",
            Scope::Free => "free",
            Scope::Pinned => "pinned",
        }
    }

    fn rows(self) -> &'static str {
        match self {
            Scope::All => "any row of this run",
            Scope::Free => "the free rows (those with a `_pinned` twin)",
            Scope::Pinned => "the `_pinned` rows",
        }
    }
}

/// Why some rows of a run are not a measurement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reason {
    pub(crate) scope: Scope,
    pub(crate) text: String,
}

/// Everything the report says about the machine.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    pub(crate) cpus: usize,
    pub(crate) pinned_cpu: usize,
    pub(crate) load_start: Option<[f64; 3]>,
    pub(crate) load_end: Option<[f64; 3]>,
    pub(crate) floor: Spread,
    pub(crate) floor_pinned: Spread,
    pub(crate) quiet: QuietFloor,
    /// A `--quick` smoke run: never a measurement.
    pub(crate) quick: bool,
}

impl Machine {
    /// Why rows of this run are not a measurement, and which; empty when none is flagged.
    pub(crate) fn reasons(&self) -> Vec<Reason> {
        let all = |text: String| Reason {
            scope: Scope::All,
            text,
        };
        let mut reasons = Vec::new();
        if self.quick {
            reasons.push(all("--quick is a smoke run with too few samples".to_owned()));
        }
        match self.load_start {
            Some([one, ..]) if one > LOAD_PER_CPU * self.cpus as f64 => reasons.push(all(format!(
                "the 1-minute load average was {one:.2} at the start, over {LOAD_PER_CPU} per CPU ({:.2} for {} CPUs)",
                LOAD_PER_CPU * self.cpus as f64,
                self.cpus
            ))),
            Some(_) => {}
            None => reasons.push(all(
                "the load average could not be read (/proc/loadavg)".to_owned(),
            )),
        }
        for (scope, mode, spread, quiet) in [
            (Scope::Free, "free", &self.floor, self.quiet.floor_p50_us),
            (
                Scope::Pinned,
                "pinned",
                &self.floor_pinned,
                self.quiet.floor_p50_us_pinned,
            ),
        ] {
            let factor = spread.p50_us / quiet;
            if !(factor.is_finite() && (1.0 / FLOOR_TOLERANCE..=FLOOR_TOLERANCE).contains(&factor))
            {
                reasons.push(Reason {
                    scope,
                    text: format!(
                        "the {mode} floor p50 was {:.2} us, {factor:.2}x its quiet value of {quiet} us (allowed: within {FLOOR_TOLERANCE}x)",
                        spread.p50_us
                    ),
                });
            }
        }
        reasons
    }

    /// Whether a row measured in `mode` is flagged (see [`Scope::covers`]); the report asks
    /// [`report::flagged`](super::report::flagged), which reads the reasons once for all rows.
    #[cfg(test)]
    pub(crate) fn flags(&self, mode: Option<Mode>) -> bool {
        self.reasons().iter().any(|r| r.scope.covers(mode))
    }

    pub(crate) fn json(&self) -> Value {
        let load = |l: Option<[f64; 3]>| l.map_or(Value::Null, |l| json!(l));
        json!({
            "cpus": self.cpus,
            "pinned_cpu": self.pinned_cpu,
            "load_average_start": load(self.load_start),
            "load_average_end": load(self.load_end),
            "floor": self.floor.json(),
            "floor_pinned": self.floor_pinned.json(),
            "quiet_floor_p50_us": self.quiet.floor_p50_us,
            "quiet_floor_p50_us_pinned": self.quiet.floor_p50_us_pinned,
        })
    }

    /// The lines printed above the table.
    pub(crate) fn text(&self) -> String {
        let load = |l: Option<[f64; 3]>| {
            l.map_or("unknown".to_owned(), |[a, b, c]| {
                format!("{a:.2} {b:.2} {c:.2}")
            })
        };
        let floor = |s: &Spread| {
            format!(
                "p50 {:.2} us, p99 {:.2} us, round p50 {:.2}..{:.2} us (spread {:.2})",
                s.p50_us,
                s.p99_us,
                s.round_p50_min_us,
                s.round_p50_max_us,
                s.round_spread()
            )
        };
        let mut out = format!(
            "machine: {} CPUs (pinned rounds on CPU {}), load average {} at start, {} at end\n\
             floor free:   {} (quiet {} us)\n\
             floor pinned: {} (quiet {} us)\n",
            self.cpus,
            self.pinned_cpu,
            load(self.load_start),
            load(self.load_end),
            floor(&self.floor),
            self.quiet.floor_p50_us,
            floor(&self.floor_pinned),
            self.quiet.floor_p50_us_pinned,
        );
        let reasons = self.reasons();
        if reasons.is_empty() {
            out.push_str("not flagged: a measurement\n\n");
        } else {
            out.push_str("FLAGGED: not a measurement, do not publish the rows marked *:\n");
            for reason in &reasons {
                out.push_str(&format!("  - {} ({})\n", reason.text, reason.scope.rows()));
            }
            out.push('\n');
        }
        out
    }

    /// A flagged example for the renderers' tests.
    #[cfg(test)]
    pub(crate) fn example() -> Self {
        let spread = Spread::of(&vec![vec![5.0, 6.0], vec![6.0, 7.0]]);
        Self {
            cpus: 2,
            pinned_cpu: 1,
            load_start: Some([1.5, 1.0, 1.0]),
            load_end: Some([1.0, 1.0, 1.0]),
            floor_pinned: spread.clone(),
            floor: spread,
            quiet: QuietFloor {
                floor_p50_us: 5.71,
                floor_p50_us_pinned: 3.0,
                source: "test".to_owned(),
            },
            quick: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet_machine() -> Machine {
        let mut machine = Machine::example();
        machine.load_start = Some([0.1, 0.1, 0.1]);
        machine.floor = Spread::of(&vec![vec![5.5, 5.7, 5.9]]);
        machine.floor_pinned = Spread::of(&vec![vec![2.9, 3.0, 3.1]]);
        machine
    }

    #[test]
    fn a_quiet_machine_near_its_floor_is_not_flagged() {
        assert_eq!(quiet_machine().reasons(), Vec::<Reason>::new());
        assert!(!quiet_machine().flags(Some(Mode::Free)));
        assert!(quiet_machine().text().contains("not flagged"));
    }

    #[test]
    fn load_over_the_limit_per_cpu_flags_the_run() {
        let mut machine = quiet_machine();
        machine.load_start = Some([0.61, 0.0, 0.0]);
        let reasons = machine.reasons();
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert!(reasons[0].text.contains("load average was 0.61"));
        assert_eq!(reasons[0].scope, Scope::All);
        assert!(machine.flags(None) && machine.flags(Some(Mode::Pinned)));
        machine.load_start = Some([0.59, 0.0, 0.0]);
        assert!(machine.reasons().is_empty());
    }

    #[test]
    fn a_floor_more_than_twice_off_either_way_flags_the_rows_of_its_mode() {
        let mut machine = quiet_machine();
        machine.floor = Spread::of(&vec![vec![11.5]]);
        assert!(
            machine.reasons()[0]
                .text
                .contains("free floor p50 was 11.50")
        );
        assert!(machine.flags(Some(Mode::Free)));
        assert!(!machine.flags(Some(Mode::Pinned)) && !machine.flags(None));
        machine.floor = Spread::of(&vec![vec![2.8]]);
        assert!(machine.reasons()[0].text.contains("free floor"));
        machine.floor = quiet_machine().floor;
        machine.floor_pinned = Spread::of(&vec![vec![6.1]]);
        assert!(machine.reasons()[0].text.contains("pinned floor"));
        assert!(machine.flags(Some(Mode::Pinned)) && !machine.flags(Some(Mode::Free)));
        machine.floor_pinned = Spread::of(&vec![]);
        assert!(machine.reasons()[0].text.contains("pinned floor"));
        assert!(machine.text().contains("the `_pinned` rows"));
    }

    #[test]
    fn quick_runs_are_always_flagged() {
        let mut machine = quiet_machine();
        machine.quick = true;
        assert!(machine.reasons()[0].text.contains("--quick"));
        assert!(machine.flags(None));
        assert!(machine.text().contains("do not publish"));
    }

    #[test]
    fn the_spread_is_the_range_of_the_round_medians() {
        let spread = Spread::of(&vec![vec![1.0, 2.0, 3.0], vec![4.0, 4.0, 100.0]]);
        assert_eq!(spread.round_p50_min_us, 2.0);
        assert_eq!(spread.round_p50_max_us, 4.0);
        assert_eq!(spread.round_spread(), 2.0);
        // The median over rounds of each round's p99: 3 and 100, the lower middle.
        assert_eq!(spread.p99_us, 3.0);
    }

    #[test]
    fn the_load_wait_ends_once_the_load_is_under_the_limit() {
        let mut loads = [1.2, 0.9, 0.55, 0.1].into_iter();
        let mut slept = Vec::new();
        let settled = settle_load(
            0.6,
            Duration::from_secs(180),
            Duration::from_secs(5),
            || loads.next(),
            |d| slept.push(d),
        );
        assert_eq!(
            settled,
            Settled::Quiet {
                load: 0.55,
                waited: Duration::from_secs(10)
            }
        );
        assert_eq!(slept.len(), 2);
    }

    #[test]
    fn the_load_wait_is_bounded_and_does_not_wait_on_a_quiet_or_unreadable_machine() {
        let mut slept = Duration::ZERO;
        let busy = settle_load(
            0.6,
            Duration::from_secs(20),
            Duration::from_secs(5),
            || Some(2.0),
            |d| slept += d,
        );
        assert_eq!(busy, Settled::StillBusy { load: 2.0 });
        assert_eq!(slept, Duration::from_secs(20));
        let never = |_| panic!("a quiet or unreadable machine is not waited for");
        let quiet = settle_load(
            0.6,
            LOAD_SETTLE_BOUND,
            LOAD_SETTLE_POLL,
            || Some(0.2),
            never,
        );
        assert_eq!(
            quiet,
            Settled::Quiet {
                load: 0.2,
                waited: Duration::ZERO
            }
        );
        let unknown = settle_load(0.6, LOAD_SETTLE_BOUND, LOAD_SETTLE_POLL, || None, never);
        assert_eq!(unknown, Settled::Unknown);
    }

    #[test]
    fn the_committed_quiet_floor_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let quiet = QuietFloor::load(&root).unwrap();
        assert!(quiet.floor_p50_us > 0.0 && quiet.floor_p50_us_pinned > 0.0);
    }
}
