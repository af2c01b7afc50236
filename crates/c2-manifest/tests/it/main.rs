//! The crate's one integration binary: the conformance corpus and the public-API behaviour.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

mod catalogs;
mod corpus;
mod manifest;
mod marketplace;
mod mcp;
mod props;
mod realworld;
mod render;
mod schema;
mod skill;
mod skills_ref;
