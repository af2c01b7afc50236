//! Bisect over policy: which enabled bundles make a problem appear.
//!
//! A pure state machine over an ordered candidate list. It assumes the problem is monotone
//! (enabling more bundles never makes it go away) and that it shows with every candidate
//! enabled. Each step names the candidates to enable (the others are disabled); the person's
//! verdict (`good`, `bad`, `skip`) moves it on. The search:
//!
//! 1. **Prefix search.** Find the smallest `k` such that the first `k` candidates fail. Its
//!    invariant is "the first `lo - 1` are good, the first `hi` are bad", so the `k`-th
//!    candidate is needed for the failure. At most `ceil(log2 n)` steps.
//! 2. **Confirm alone.** Enable the `k`-th candidate alone (skipped when `k` is 1: that set was
//!    already seen to fail). Bad: it is the culprit. One step.
//! 3. **Partner search.** Good: it only fails together with something earlier. Find the
//!    smallest `j` such that the first `j` candidates plus the `k`-th fail: the `j`-th is its
//!    partner. At most `ceil(log2 (k - 1))` steps.
//! 4. **Confirm the pair.** Enable the two alone (skipped when `j` is 1). Bad: the pair is the
//!    smallest culprit set. Good: the failure needs three or more bundles, and the smallest
//!    failing set found is reported instead.
//!
//! A single culprit among `n` takes at most `ceil(log2 n) + 1` verdicts (12 bundles: isolated
//! in 4, confirmed in the 5th); a pair at most `2 * ceil(log2 n) + 2`. A skipped step tries
//! another split point in the same range; when every point was skipped, the search ends with
//! the range it could not narrow.
//!
//! The machine knows nothing of files or hosts: [`BisectFile`] stores it beside the policy
//! document and the caller applies each step through ordinary policy changes.

mod file;

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]
mod tests;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

pub use file::{BISECT_FILE, BisectFile, BisectRecord, Restore};

/// A person's verdict on one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Verdict {
    /// The problem did not show.
    Good,
    /// The problem showed.
    Bad,
    /// The step could not be judged.
    Skip,
}

/// One judged step: the candidates that were enabled and the verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The candidates enabled during the step (every other candidate was disabled).
    pub enabled: Vec<String>,
    /// The verdict.
    pub verdict: Verdict,
}

/// How a bisect ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
#[non_exhaustive]
pub enum Outcome {
    /// One bundle makes the problem show on its own.
    Culprit {
        /// Its id.
        id: String,
    },
    /// Two bundles make it show together, and neither does alone.
    Pair {
        /// The two ids, in candidate order.
        ids: [String; 2],
    },
    /// No set of at most two does; the smallest failing set the search found.
    Set {
        /// The ids, in candidate order.
        ids: Vec<String>,
    },
    /// Skipped steps left the search unable to narrow further.
    Inconclusive {
        /// The bundles it could not tell apart.
        suspects: Vec<String>,
    },
}

/// Where the search is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "phase")]
enum Phase {
    /// `k` in `lo..=hi`: the first `lo - 1` are good, the first `hi` are bad.
    Prefix {
        lo: usize,
        hi: usize,
        skipped: BTreeSet<usize>,
    },
    /// Does candidate `k` (1-based) fail alone?
    ConfirmAlone {
        k: usize,
    },
    /// `j` in `lo..=hi`: the first `lo - 1` plus `k` are good, the first `hi` plus `k` are bad.
    Partner {
        k: usize,
        lo: usize,
        hi: usize,
        skipped: BTreeSet<usize>,
    },
    /// Do candidates `j` and `k` fail together alone?
    ConfirmPair {
        j: usize,
        k: usize,
    },
    Done {
        outcome: Outcome,
    },
}

/// The search over one ordered candidate list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bisection {
    candidates: Vec<String>,
    phase: Phase,
    steps: Vec<Step>,
}

impl Bisection {
    /// Starts a search over `candidates` (in this order), which fail all enabled together.
    pub fn new(candidates: Vec<String>) -> Self {
        let n = candidates.len();
        let phase = if n == 0 {
            Phase::Done {
                outcome: Outcome::Inconclusive {
                    suspects: Vec::new(),
                },
            }
        } else {
            Phase::Prefix {
                lo: 1,
                hi: n,
                skipped: BTreeSet::new(),
            }
        };
        let mut bisection = Self {
            candidates,
            phase,
            steps: Vec::new(),
        };
        bisection.settle();
        bisection
    }

    /// The candidates, in search order.
    pub fn candidates(&self) -> &[String] {
        &self.candidates
    }

    /// The steps judged so far.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The result, once the search has ended.
    pub fn outcome(&self) -> Option<&Outcome> {
        match &self.phase {
            Phase::Done { outcome } => Some(outcome),
            _ => None,
        }
    }

    /// The candidates to enable for the next step (every other candidate disabled); `None`
    /// once the search has ended.
    pub fn testing(&self) -> Option<Vec<String>> {
        let ids = |indices: Vec<usize>| {
            indices
                .into_iter()
                .map(|i| self.candidates[i - 1].clone())
                .collect()
        };
        match &self.phase {
            Phase::Prefix { lo, hi, skipped } => {
                let mid = split(*lo, *hi, skipped)?;
                Some(ids((1..=mid).collect()))
            }
            Phase::ConfirmAlone { k } => Some(ids(vec![*k])),
            Phase::Partner { k, lo, hi, skipped } => {
                let mid = split(*lo, *hi, skipped)?;
                Some(ids((1..=mid).chain([*k]).collect()))
            }
            Phase::ConfirmPair { j, k } => Some(ids(vec![*j, *k])),
            Phase::Done { .. } => None,
        }
    }

    /// Whether the next step confirms a result rather than narrowing a range.
    pub fn is_confirming(&self) -> bool {
        matches!(
            self.phase,
            Phase::ConfirmAlone { .. } | Phase::ConfirmPair { .. }
        )
    }

    /// The suspect the search has isolated so far: the candidate needed for the failure once
    /// the prefix search has ended.
    pub fn suspect(&self) -> Option<&str> {
        let k = match &self.phase {
            Phase::ConfirmAlone { k } | Phase::Partner { k, .. } | Phase::ConfirmPair { k, .. } => {
                *k
            }
            _ => return None,
        };
        Some(&self.candidates[k - 1])
    }

    /// Records the verdict on the step [`Bisection::testing`] named. Ignored once ended.
    pub fn record(&mut self, verdict: Verdict) {
        let Some(enabled) = self.testing() else {
            return;
        };
        self.steps.push(Step { enabled, verdict });
        self.phase = match std::mem::replace(
            &mut self.phase,
            Phase::Done {
                outcome: Outcome::Inconclusive {
                    suspects: Vec::new(),
                },
            },
        ) {
            Phase::Prefix {
                lo,
                hi,
                mut skipped,
            } => {
                let mid = split(lo, hi, &skipped).unwrap_or(lo);
                match verdict {
                    Verdict::Good => Phase::Prefix {
                        lo: mid + 1,
                        hi,
                        skipped,
                    },
                    Verdict::Bad => Phase::Prefix {
                        lo,
                        hi: mid,
                        skipped,
                    },
                    Verdict::Skip => {
                        skipped.insert(mid);
                        Phase::Prefix { lo, hi, skipped }
                    }
                }
            }
            Phase::ConfirmAlone { k } => match verdict {
                Verdict::Bad => self.done(Outcome::Culprit {
                    id: self.candidates[k - 1].clone(),
                }),
                Verdict::Good => Phase::Partner {
                    k,
                    lo: 1,
                    hi: k - 1,
                    skipped: BTreeSet::new(),
                },
                // Not confirmed alone: the first `k` fail, and `k` is needed.
                Verdict::Skip => self.done(Outcome::Inconclusive {
                    suspects: self.candidates[..k].to_vec(),
                }),
            },
            Phase::Partner {
                k,
                lo,
                hi,
                mut skipped,
            } => {
                let mid = split(lo, hi, &skipped).unwrap_or(lo);
                match verdict {
                    Verdict::Good => Phase::Partner {
                        k,
                        lo: mid + 1,
                        hi,
                        skipped,
                    },
                    Verdict::Bad => Phase::Partner {
                        k,
                        lo,
                        hi: mid,
                        skipped,
                    },
                    Verdict::Skip => {
                        skipped.insert(mid);
                        Phase::Partner { k, lo, hi, skipped }
                    }
                }
            }
            Phase::ConfirmPair { j, k } => match verdict {
                Verdict::Bad => self.pair(j, k),
                Verdict::Good => self.done(Outcome::Set {
                    ids: self.candidates[..j]
                        .iter()
                        .chain([&self.candidates[k - 1]])
                        .cloned()
                        .collect(),
                }),
                Verdict::Skip => self.done(Outcome::Inconclusive {
                    suspects: vec![
                        self.candidates[j - 1].clone(),
                        self.candidates[k - 1].clone(),
                    ],
                }),
            },
            done @ Phase::Done { .. } => done,
        };
        self.settle();
    }

    fn done(&self, outcome: Outcome) -> Phase {
        Phase::Done { outcome }
    }

    fn pair(&self, j: usize, k: usize) -> Phase {
        self.done(Outcome::Pair {
            ids: [
                self.candidates[j - 1].clone(),
                self.candidates[k - 1].clone(),
            ],
        })
    }

    /// Moves through phases that need no verdict: a narrowed range, a range whose every split
    /// was skipped, a confirmation already observed.
    fn settle(&mut self) {
        loop {
            let next = match &self.phase {
                Phase::Prefix { lo, hi, .. } if lo == hi => {
                    if *lo == 1 {
                        // The first candidate alone was seen to fail (or is all there is).
                        self.done(Outcome::Culprit {
                            id: self.candidates[0].clone(),
                        })
                    } else {
                        Phase::ConfirmAlone { k: *lo }
                    }
                }
                Phase::Prefix { lo, hi, skipped } if split(*lo, *hi, skipped).is_none() => self
                    .done(Outcome::Inconclusive {
                        suspects: self.candidates[lo - 1..*hi].to_vec(),
                    }),
                Phase::Partner { k, lo, hi, .. } if lo == hi => {
                    if *lo == 1 {
                        // The first candidate and `k` together were seen to fail.
                        self.pair(1, *k)
                    } else {
                        Phase::ConfirmPair { j: *lo, k: *k }
                    }
                }
                Phase::Partner { k, lo, hi, skipped } if split(*lo, *hi, skipped).is_none() => {
                    let mut suspects = self.candidates[lo - 1..*hi].to_vec();
                    suspects.push(self.candidates[k - 1].clone());
                    self.done(Outcome::Inconclusive { suspects })
                }
                _ => return,
            };
            self.phase = next;
        }
    }
}

/// The split point to test in `lo..=hi` (the upper end is known bad): the middle of the
/// points not yet skipped, or `None` when every point below `hi` was skipped.
fn split(lo: usize, hi: usize, skipped: &BTreeSet<usize>) -> Option<usize> {
    let open: Vec<usize> = (lo..hi).filter(|i| !skipped.contains(i)).collect();
    if open.is_empty() {
        return None;
    }
    let middle = lo + (hi - lo) / 2;
    open.iter()
        .copied()
        .min_by_key(|i| (i.abs_diff(middle), *i))
}
