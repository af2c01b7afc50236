//! Adversarial bundles built at test time in temporary directories.
#![expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]

#[cfg(feature = "archive")]
mod archive;
mod claims;
mod collect;
mod components;
mod development;
mod installed;
mod marketplace;
mod provenance;
mod scaffold;
mod store;
mod support;
mod surface;
mod symlinks;
