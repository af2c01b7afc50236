//! `check_bundle` end to end against real runtimes: the c2-testkit fixture, the Node and Python
//! packs, and the hostile Python runtime of the c2-host tests.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

mod check;
mod hostile;
