//! The hint table: the command lines a check's advice names. A report's details are advice for
//! the bundle's author, who runs the check from the command line; these are the only places that
//! name it.

/// The validator of a bundle without running it.
pub(crate) const VALIDATE: &str = "`c2-plugins validate`";
/// This check, as the stand-in host names it to the plugin.
pub(crate) const CHECK: &str = "`c2-plugins check`";
/// A real run of one command, with a real host behind it.
pub(crate) const RUN: &str = "`c2-plugins run`";
