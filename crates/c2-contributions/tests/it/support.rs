//! A temporary store and a host with every contribution on it (c2-host's tests' `env.rs`, shared);
//! the fixture bundles and process checks come from c2-testkit.

use c2_host::seam::Install;

#[path = "../../../c2-host/tests/it/env.rs"]
mod env;

pub(crate) use c2_testkit::bundles::{
    FixtureBundle, KIT_LANGUAGE, alive, component_kit, git_repo, gone, pid_of,
};
pub(crate) use env::{Env, assert_disabled, component, options};

/// The host of these tests: `c2_contributions::open`'s, every contribution.
const INSTALLS: &[Install] = c2_contributions::ALL;
