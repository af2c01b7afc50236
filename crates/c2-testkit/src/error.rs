use std::path::PathBuf;

/// What can go wrong when configuring or locating the fixture.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A `C2_FIXTURE_MODE` entry is not one of the documented modes.
    #[error("unknown fixture mode `{0}`; see the c2-testkit docs for the list of modes")]
    UnknownMode(String),
    /// A mode that takes a number got something else.
    #[error("fixture mode `{mode}` needs a number after the colon, got `{value}`")]
    BadModeValue {
        /// The mode name.
        mode: String,
        /// The text after the colon.
        value: String,
    },
    /// The fixture binary is not where a dependent's test expects it.
    #[error(
        "the c2-fixture binary is not built at {}; run `cargo build -p c2-testkit --bins` first (or set C2_FIXTURE_BIN)",
        .0.display()
    )]
    NotBuilt(PathBuf),
    /// The running test executable's own path is unknown, so the fixture cannot be located.
    #[error(
        "cannot locate the test executable to find c2-fixture beside it: {0}; set C2_FIXTURE_BIN"
    )]
    NoCurrentExe(std::io::Error),
}
