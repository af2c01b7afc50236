//! Process-level tests: the store under SIGKILL and under two concurrent writers.
//! The children are this test binary re-executed with `ROLE_VAR` naming their job.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

mod crash;
