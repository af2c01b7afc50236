use std::fmt;
use std::path::PathBuf;

use crate::Error;

/// Comma-separated misbehaviour modes.
pub const ENV_MODE: &str = "C2_FIXTURE_MODE";
/// The JSON array answered as `commands` in `initialize`.
pub const ENV_COMMANDS: &str = "C2_FIXTURE_COMMANDS";
/// The JSON array answered as `events` in `initialize`.
pub const ENV_EVENTS: &str = "C2_FIXTURE_EVENTS";
/// An explicit path to the fixture binary, read by [`fixture_path`].
pub const ENV_BIN: &str = "C2_FIXTURE_BIN";
/// Set by the fixture on the grandchildren it starts from its own executable; not for tests.
pub const ENV_HELPER: &str = "C2_FIXTURE_HELPER";
/// The commands declared when `C2_FIXTURE_COMMANDS` is unset.
pub const DEFAULT_COMMANDS: &str = r#"[{"name":"fixture.echo"}]"#;

/// One misbehaviour of the fixture; the crate docs describe each.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// `slow-init:<ms>`
    SlowInit(u64),
    /// `no-init`
    NoInit,
    /// `banner`
    Banner,
    /// `invalid-utf8`
    InvalidUtf8,
    /// `huge-line:<bytes>`
    HugeLine(u64),
    /// `stderr-flood:<bytes>`
    StderrFlood(u64),
    /// `grandchild`
    Grandchild,
    /// `setsid-grandchild`
    SetsidGrandchild,
    /// `ignore-sigterm`
    IgnoreSigterm,
    /// `exit-after-init`
    ExitAfterInit,
    /// `close-stdout`
    CloseStdout,
    /// `reply-unknown-id`
    ReplyUnknownId,
    /// `reply-twice`
    ReplyTwice,
    /// `protocol:<version>`
    Protocol(String),
    /// `no-protocol-version`
    NoProtocolVersion,
    /// `extra-command`
    ExtraCommand,
    /// `missing-command`
    MissingCommand,
    /// `duplicate-command`
    DuplicateCommand,
    /// `schema-drift`
    SchemaDrift,
    /// `ignore-stdin-eof`
    IgnoreStdinEof,
    /// `echo`
    Echo,
}

impl Mode {
    /// Parses one entry of `C2_FIXTURE_MODE`.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let text = text.trim();
        let (name, value) = match text.split_once(':') {
            Some((name, value)) => (name, Some(value)),
            None => (text, None),
        };
        let number = |value: Option<&str>| -> Result<u64, Error> {
            let value = value.unwrap_or_default();
            value.parse().map_err(|_| Error::BadModeValue {
                mode: name.to_owned(),
                value: value.to_owned(),
            })
        };
        let mode = match (name, value) {
            ("slow-init", v) => Self::SlowInit(number(v)?),
            ("huge-line", v) => Self::HugeLine(number(v)?),
            ("stderr-flood", v) => Self::StderrFlood(number(v)?),
            ("protocol", Some(v)) if !v.is_empty() => Self::Protocol(v.to_owned()),
            ("no-init", None) => Self::NoInit,
            ("banner", None) => Self::Banner,
            ("invalid-utf8", None) => Self::InvalidUtf8,
            ("grandchild", None) => Self::Grandchild,
            ("setsid-grandchild", None) => Self::SetsidGrandchild,
            ("ignore-sigterm", None) => Self::IgnoreSigterm,
            ("exit-after-init", None) => Self::ExitAfterInit,
            ("close-stdout", None) => Self::CloseStdout,
            ("reply-unknown-id", None) => Self::ReplyUnknownId,
            ("reply-twice", None) => Self::ReplyTwice,
            ("no-protocol-version", None) => Self::NoProtocolVersion,
            ("extra-command", None) => Self::ExtraCommand,
            ("missing-command", None) => Self::MissingCommand,
            ("duplicate-command", None) => Self::DuplicateCommand,
            ("schema-drift", None) => Self::SchemaDrift,
            ("ignore-stdin-eof", None) => Self::IgnoreStdinEof,
            ("echo", None) => Self::Echo,
            _ => return Err(Error::UnknownMode(text.to_owned())),
        };
        Ok(mode)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SlowInit(ms) => write!(f, "slow-init:{ms}"),
            Self::HugeLine(bytes) => write!(f, "huge-line:{bytes}"),
            Self::StderrFlood(bytes) => write!(f, "stderr-flood:{bytes}"),
            Self::Protocol(version) => write!(f, "protocol:{version}"),
            Self::NoInit => f.write_str("no-init"),
            Self::Banner => f.write_str("banner"),
            Self::InvalidUtf8 => f.write_str("invalid-utf8"),
            Self::Grandchild => f.write_str("grandchild"),
            Self::SetsidGrandchild => f.write_str("setsid-grandchild"),
            Self::IgnoreSigterm => f.write_str("ignore-sigterm"),
            Self::ExitAfterInit => f.write_str("exit-after-init"),
            Self::CloseStdout => f.write_str("close-stdout"),
            Self::ReplyUnknownId => f.write_str("reply-unknown-id"),
            Self::ReplyTwice => f.write_str("reply-twice"),
            Self::NoProtocolVersion => f.write_str("no-protocol-version"),
            Self::ExtraCommand => f.write_str("extra-command"),
            Self::MissingCommand => f.write_str("missing-command"),
            Self::DuplicateCommand => f.write_str("duplicate-command"),
            Self::SchemaDrift => f.write_str("schema-drift"),
            Self::IgnoreStdinEof => f.write_str("ignore-stdin-eof"),
            Self::Echo => f.write_str("echo"),
        }
    }
}

/// Parses a whole `C2_FIXTURE_MODE` value; blank entries are skipped.
pub fn parse_modes(text: &str) -> Result<Vec<Mode>, Error> {
    text.split(',')
        .filter(|entry| !entry.trim().is_empty())
        .map(Mode::parse)
        .collect()
}

/// Builds the environment that configures one fixture process.
#[derive(Debug, Clone, Default)]
pub struct Fixture {
    modes: Vec<Mode>,
    commands: Option<serde_json::Value>,
    events: Option<serde_json::Value>,
}

impl Fixture {
    /// A well-behaved fixture declaring the default commands.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a misbehaviour.
    #[must_use]
    pub fn mode(mut self, mode: Mode) -> Self {
        self.modes.push(mode);
        self
    }

    /// The `commands` array to answer in `initialize`.
    #[must_use]
    pub fn commands(mut self, commands: serde_json::Value) -> Self {
        self.commands = Some(commands);
        self
    }

    /// The `events` array to answer in `initialize`.
    #[must_use]
    pub fn events(mut self, events: serde_json::Value) -> Self {
        self.events = Some(events);
        self
    }

    /// The variables to add to the fixture's environment.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        if !self.modes.is_empty() {
            let modes: Vec<String> = self.modes.iter().map(Mode::to_string).collect();
            env.push((ENV_MODE.to_owned(), modes.join(",")));
        }
        if let Some(commands) = &self.commands {
            env.push((ENV_COMMANDS.to_owned(), commands.to_string()));
        }
        if let Some(events) = &self.events {
            env.push((ENV_EVENTS.to_owned(), events.to_string()));
        }
        env
    }
}

/// Where the `c2-fixture` binary is for a test of another crate.
///
/// A dev-dependency on this crate builds its library, not its binary, so the binary is looked for
/// beside the running test executable (`target/<profile>/c2-fixture`, the test itself living in
/// `target/<profile>/deps/`), or at `C2_FIXTURE_BIN`. Nothing is built or run here: a missing
/// binary is an error telling what to build. This crate's own tests use
/// `env!("CARGO_BIN_EXE_c2-fixture")` instead.
pub fn fixture_path() -> Result<PathBuf, Error> {
    if let Some(explicit) = std::env::var_os(ENV_BIN) {
        let path = PathBuf::from(explicit);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(Error::NotBuilt(path))
        };
    }
    let exe = std::env::current_exe().map_err(Error::NoCurrentExe)?;
    let mut dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    if dir.file_name().is_some_and(|name| name == "deps") {
        dir.pop();
    }
    let path = dir.join("c2-fixture");
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::NotBuilt(path))
    }
}
