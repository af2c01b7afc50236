//! In-memory tests of the public API that need a runtime: the peer over duplex pipes.

mod decode_cost;
mod peer;
