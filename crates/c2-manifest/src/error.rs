//! The crate's one error type: validators return reports, so this is only for callers that
//! want a typed value or nothing.

/// Why a typed value could not be produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The manifest has error diagnostics.
    #[error("the manifest has {errors} error(s); read the report's diagnostics and fix them")]
    InvalidManifest {
        /// How many error-severity diagnostics the report holds.
        errors: usize,
    },
}
