//! Process-level tests: the store under SIGKILL and under two concurrent writers.
//! The children are this test binary re-executed with `ROLE_VAR` naming their job.

mod crash;
