//! Tests of the public API that need a runtime: the peer over duplex pipes, and the handshake
//! helper against the real fixture plugin.

mod decode_cost;
mod handshake;
mod peer;
