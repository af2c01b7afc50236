//! End-to-end tests of the host with real plugin processes: the c2-testkit fixture, the Node
//! `hello-runtime` pack and the Python `hello-python` pack.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

mod support;

mod callbacks;
mod components;
mod embedder;
mod events;
mod fault;
mod health;
mod hostile;
mod hub;
mod lifecycle;
mod loading;
mod multihost;
mod options;
mod packs;
mod policy;
mod realms;
mod reference;
mod sources;
