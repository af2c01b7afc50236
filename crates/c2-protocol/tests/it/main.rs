//! Tests of the public API that need a runtime: the peer over duplex pipes, and the handshake
//! helper against the real fixture plugin.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

mod chunked_reads;
mod decode_cost;
mod handshake;
mod peer;
