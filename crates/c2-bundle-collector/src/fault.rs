//! The store's crash-test hook: with the `fault-injection` feature, [`FaultPoint`] and
//! `StoreOptions::inject_fault` stop a change after a chosen step, leaving the disk exactly as a
//! crash there would. Without the feature the steps are still marked in `store.rs`, and marking
//! one does nothing.

#[cfg(feature = "fault-injection")]
use crate::error::Error;
use crate::error::Result;
use crate::store::StoreOptions;

/// The steps of a store change after which a fault can be injected, in order (crash tests only,
/// with the `fault-injection` feature).
#[cfg(feature = "fault-injection")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// The new tree is complete and synced in staging; nothing live has changed.
    AfterStaging,
    /// The live tree has been moved to the trash; the new one is not in place yet.
    AfterOldTrashed,
    /// The new tree is in place and the store directory synced; the trash still exists.
    AfterNewInPlace,
    /// Uninstall: the live tree has been moved to the trash, which is not deleted yet.
    AfterUninstallTrashed,
}

#[cfg(feature = "fault-injection")]
impl FaultPoint {
    /// Every fault point, for tests that crash after each step.
    pub const ALL: [FaultPoint; 4] = [
        FaultPoint::AfterStaging,
        FaultPoint::AfterOldTrashed,
        FaultPoint::AfterNewInPlace,
        FaultPoint::AfterUninstallTrashed,
    ];

    /// The step's name, as [`Error::InjectedFault`] carries it.
    pub const fn name(self) -> &'static str {
        match self {
            FaultPoint::AfterStaging => "AfterStaging",
            FaultPoint::AfterOldTrashed => "AfterOldTrashed",
            FaultPoint::AfterNewInPlace => "AfterNewInPlace",
            FaultPoint::AfterUninstallTrashed => "AfterUninstallTrashed",
        }
    }
}

/// A step of a store change: a [`FaultPoint`] with the feature, a private twin without it.
#[cfg(feature = "fault-injection")]
pub(crate) type Step = FaultPoint;

/// A step of a store change; without the `fault-injection` feature nothing stops at one.
#[cfg(not(feature = "fault-injection"))]
#[derive(Clone, Copy)]
#[expect(clippy::enum_variant_names, reason = "the same names as FaultPoint's")]
pub(crate) enum Step {
    AfterStaging,
    AfterOldTrashed,
    AfterNewInPlace,
    AfterUninstallTrashed,
}

/// [`Error::InjectedFault`] if `options` asks for a fault at `step`.
#[cfg(feature = "fault-injection")]
pub(crate) fn check(options: &StoreOptions, step: Step) -> Result<()> {
    if options.inject_fault == Some(step) {
        return Err(Error::InjectedFault(step.name()));
    }
    Ok(())
}

/// Nothing to check: the crash-test hook is not built.
#[cfg(not(feature = "fault-injection"))]
pub(crate) fn check(_options: &StoreOptions, _step: Step) -> Result<()> {
    Ok(())
}
