//! Tests of the public API: the peer over duplex pipes, the handshake helper against the real
//! fixture plugin, and the handshake's rules on plain values.

mod decode_cost;
mod handshake;
mod peer;
mod verdicts;
