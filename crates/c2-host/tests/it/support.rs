//! A temporary store and a host with the built-ins only (`env.rs`, shared with c2-contributions'
//! tests); the fixture bundles and process checks come from c2-testkit.

use c2_host::seam::Install;

#[path = "env.rs"]
mod env;

pub(crate) use c2_testkit::bundles::{
    FixtureBundle, alive, all_pids, component_kit, git, git_repo, gone, pid_of, stat_field,
};
pub(crate) use env::{Env, assert_disabled, options};

/// The host of these tests: `PluginHost::open`'s, no contribution.
const INSTALLS: &[Install] = &[];
