//! bench-echo: the SDK plugin `cargo xtask bench` measures beside the c2-testkit fixture. It
//! binds one command, `sdk.echo`, whose result is its args, through the SDK exactly as a plugin
//! author would (manifest read and validated at start, args checked against `argsSchema`).
//!
//! With `C2_SDK_ECHO_MODE=raw` it speaks no protocol at all: every stdin line is written back
//! to stdout through blocking std handles, the same raw echo the fixture's `echo` mode does.
//! The bench times spawning this same binary in that mode for one echo as the baseline of the
//! SDK's cold activation, so the ratio isolates what the SDK and the host add to a start.

use std::io::{BufRead, Write};

use c2_plugin_sdk::{CommandError, Context, Error, Plugin};
use serde_json::Value;

/// The variable that selects the raw echo.
const MODE: &str = "C2_SDK_ECHO_MODE";

fn main() -> Result<(), Error> {
    if std::env::var_os(MODE).is_some_and(|mode| mode == "raw") {
        raw_echo();
        return Ok(());
    }
    Plugin::from_manifest()?
        .command("sdk.echo", |_ctx: Context, args: Value| async move {
            Ok::<Value, CommandError>(args)
        })
        .run()
}

/// Every line back as it came, until stdin closes or stdout is gone.
fn raw_echo() {
    let mut stdin = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    let mut line = Vec::with_capacity(128 * 1024);
    loop {
        line.clear();
        match stdin.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if out.write_all(&line).and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}
