//! The host's built-in modules: `git.status` (the one extension-public command) and the
//! essential `plugins.*` management plane. Each registers itself with an opening host through
//! its `install` function (listed in lib.rs's `WIRING`); no core file imports them.

pub(crate) mod git;
pub(crate) mod management;
