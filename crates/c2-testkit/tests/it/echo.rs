//! The raw `echo` mode the benchmarks use as their floor.

use c2_testkit::{Fixture, Mode};
use serde_json::json;

use crate::harness::start;

#[test]
fn echo_mode_writes_every_line_back_unchanged_and_speaks_no_protocol() {
    let mut fixture = start(&Fixture::new().mode(Mode::Echo));
    let lines = [
        json!("a bare string is no protocol message"),
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
        json!("y".repeat(64 * 1024)),
    ];
    for line in lines {
        fixture.send(&line);
        assert_eq!(fixture.raw_line(), format!("{line}\n").into_bytes());
    }
    fixture.close_stdin();
    assert!(fixture.exit_status().success());
}

#[test]
fn echo_survives_a_round_trip_through_its_mode_text() {
    assert_eq!(c2_testkit::parse_modes("echo").unwrap(), vec![Mode::Echo]);
    assert_eq!(Mode::Echo.to_string(), "echo");
}
