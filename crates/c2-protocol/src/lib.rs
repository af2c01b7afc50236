//! The C2 Plugin Protocol 1.0.0 wire: framing, JSON-RPC messages, handshake rules and a bounded async peer.
