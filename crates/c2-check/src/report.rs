//! The verdicts of one check run.

use serde::Serialize;

/// One verdict: `detail` says what was seen and, on failure, what to fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckItem {
    /// A short stable name, e.g. `handshake` or `invoke hello.status`.
    pub name: String,
    /// Whether the check passed.
    pub pass: bool,
    /// What was seen; on failure, what to fix.
    pub detail: String,
}

/// Every verdict of one check run, in the order they were made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// True iff every check passed.
    pub ok: bool,
    /// The verdicts.
    pub checks: Vec<CheckItem>,
}

impl CheckReport {
    pub(crate) fn pass(&mut self, name: impl Into<String>, detail: impl Into<String>) {
        self.push(name, true, detail);
    }

    pub(crate) fn fail(&mut self, name: impl Into<String>, detail: impl Into<String>) {
        self.push(name, false, detail);
    }

    pub(crate) fn push(&mut self, name: impl Into<String>, pass: bool, detail: impl Into<String>) {
        self.checks.push(CheckItem {
            name: name.into(),
            pass,
            detail: detail.into(),
        });
    }

    pub(crate) fn finish(mut self) -> Self {
        self.ok = !self.checks.is_empty() && self.checks.iter().all(|c| c.pass);
        self
    }
}
