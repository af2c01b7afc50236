//! [`ProtocolVersion`]: a protocol version as this crate's own type, so no SemVer library
//! appears in the public API.

use std::fmt;
use std::str::FromStr;

/// A C2 Plugin Protocol version: SemVer (`MAJOR.MINOR.PATCH`, optionally with pre-release and
/// build parts). Two versions are compatible when their major versions are equal
/// ([`crate::check_protocol_version`]).
///
/// ```
/// use c2_protocol::ProtocolVersion;
///
/// let v: ProtocolVersion = "1.2.3".parse().unwrap();
/// assert_eq!((v.major(), v.minor(), v.patch()), (1, 2, 3));
/// assert_eq!(ProtocolVersion::CURRENT.to_string(), c2_protocol::PROTOCOL_VERSION);
/// assert!("one".parse::<ProtocolVersion>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProtocolVersion(semver::Version);

impl ProtocolVersion {
    /// The version this crate speaks, [`crate::PROTOCOL_VERSION`] (1.0.0).
    pub const CURRENT: ProtocolVersion = ProtocolVersion(semver::Version::new(1, 0, 0));

    /// A release version without pre-release or build parts.
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        Self(semver::Version::new(major, minor, patch))
    }

    /// Parses SemVer text (surrounding whitespace is not allowed).
    pub fn parse(text: &str) -> Result<Self, ParseVersionError> {
        semver::Version::parse(text)
            .map(Self)
            .map_err(|error| ParseVersionError {
                text: text.to_owned(),
                reason: error.to_string(),
            })
    }

    /// The major version: only equal majors are compatible.
    pub fn major(&self) -> u64 {
        self.0.major
    }

    /// The minor version.
    pub fn minor(&self) -> u64 {
        self.0.minor
    }

    /// The patch version.
    pub fn patch(&self) -> u64 {
        self.0.patch
    }
}

impl Default for ProtocolVersion {
    /// [`ProtocolVersion::CURRENT`].
    fn default() -> Self {
        Self::CURRENT
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for ProtocolVersion {
    type Err = ParseVersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// Text that is not a SemVer version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("\"{text}\" is not a version ({reason}); write MAJOR.MINOR.PATCH, e.g. \"1.0.0\"")]
pub struct ParseVersionError {
    /// The text given.
    pub text: String,
    /// Why it does not parse.
    pub reason: String,
}
