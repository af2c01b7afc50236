//! Dev-only test support: the `c2-fixture` binary, a plugin process that speaks the C2 Plugin
//! Protocol correctly by default and misbehaves on request, plus this small library that
//! configures it and finds it, and ([`bundles`]) the fixture bundles, git repositories and
//! `/proc` checks the host's end-to-end tests share (c2-host, c2-contributions). It deliberately does not depend on `c2-protocol` (it speaks the wire
//! format with `serde_json` alone, so a bug there cannot hide a bug here) and it never spawns the
//! fixture itself: spawning belongs to `c2-supervisor` or to the test. Only `[dev-dependencies]`
//! may name this crate.
//!
//! # Environment
//!
//! | variable | meaning |
//! |---|---|
//! | `C2_FIXTURE_MODE` | comma-separated misbehaviour modes (below); empty or unset: well-behaved |
//! | `C2_FIXTURE_COMMANDS` | JSON array answered as `commands` in `initialize`; default `[{"name":"fixture.echo"}]` |
//! | `C2_FIXTURE_EVENTS` | JSON array of event names answered as `events`; default `[]` |
//! | `C2_FIXTURE_BIN` | read by [`fixture_path`] only: an explicit path to the binary |
//!
//! # Behaviour
//!
//! `initialize` is answered with `name` `c2-fixture`, `version` `0.1.0`, `protocolVersion`
//! `1.0.0`, and the commands and events above. `command/invoke` handles these names whether or not
//! they are declared: `fixture.echo` (returns the args' exact text), `fixture.info` (returns `pid`, `pgid`,
//! `cwd`, `env`, `dataDir`, `projectPath`, `hostCommands`, `hostObservations`, `config`, `children`; `env` holds the
//! variables named in args `{"env": [..]}`, or every `C2_*` variable without it), `fixture.call`
//! (args `{name, args}`: sends `command/call` to the host and answers with the host's result or
//! error), `fixture.request` (args `{method, params}`: sends that request to the host and answers
//! with the host's result or error), `fixture.emit` (args `{name, payload}`: sends `event/emit`), `fixture.log` (args
//! `{level, message}`: sends `log`), `fixture.sleep` (args `{ms}`: answers after that long,
//! without blocking other requests), `fixture.fail` (args `{message}`: error `-32000`),
//! `fixture.events` (the `event/emit` params received so far), `fixture.crash` (args `{code}`: exits
//! with that code without answering). Any other declared command answers `{command, args}`; an
//! undeclared one gets error `-32000`. Other request methods get `-32601`. The fixture exits
//! with code 0 when stdin closes.
//!
//! # Modes
//!
//! Startup modes act before the first line is read, in this order: `ignore-sigterm` (blocks
//! SIGTERM with the signal mask, so only SIGKILL stops it), `grandchild` (starts a child of itself
//! in the same process group that sleeps 300 s), `setsid-grandchild` (starts a child of itself that
//! calls `setsid`, so it leaves the group, and then lives until its stdin, inherited from the
//! fixture, closes, or 300 s), `stderr-flood:<bytes>` (writes that many bytes of 99-character
//! lines to stderr), `banner` (a non-JSON line on stdout), `invalid-utf8` (a line that is not
//! UTF-8 on stdout), `huge-line:<bytes>` (a line of that many `x` bytes on stdout, followed by a
//! newline). Handshake modes: `slow-init:<ms>` (answers `initialize` that late), `no-init` (never
//! answers it), `reply-unknown-id` (sends a response to an id the host never used just before the
//! `initialize` answer), `reply-twice` (sends every response twice), `protocol:<version>`,
//! `no-protocol-version`, `extra-command` (adds `fixture.extra`), `missing-command` (drops the last
//! declared command), `duplicate-command` (repeats the first), `schema-drift` (gives the first
//! command a schema that was not declared), `exit-after-init` (exits with code 0 right after the
//! answer), `close-stdout` (after the answer, stdout is replaced by `/dev/null`, closing the pipe,
//! and the fixture keeps serving stdin). `ignore-stdin-eof`: keeps running for up to 300 s after
//! stdin closes. `echo`: no protocol at all; every stdin line is written back to stdout
//! unchanged, flushed, until stdin closes (the floor baseline of `cargo xtask bench`).

pub mod archive;
pub mod bundles;
mod error;
mod fixture;

/// A Python plugin runtime that fights back: it escapes its process group, leaves a `setsid`
/// daemon holding its stdout, or hangs ignoring SIGTERM, SIGINT and stdin EOF, by the command
/// invoked (`hostile.escape`, `hostile.daemon`, `hostile.hang`; `hostile.ping` answers), and
/// with the argument `lsp` it is a language server that ignores stdin EOF. The commands to
/// confirm are read from `C2_HOSTILE_COMMANDS` (a JSON array). Write it to a bundle and run it
/// with `python3`; the script's docstring has the details.
pub const HOSTILE_RUNTIME: &str = include_str!("hostile.py");

pub use error::Error;
pub use fixture::{
    DEFAULT_COMMANDS, ENV_BIN, ENV_COMMANDS, ENV_EVENTS, ENV_HELPER, ENV_MODE, Fixture, Mode,
    fixture_path, parse_modes,
};
