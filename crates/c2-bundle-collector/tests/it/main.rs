//! Adversarial bundles built at test time in temporary directories.

#[cfg(feature = "archive")]
mod archive;
mod collect;
mod components;
mod marketplace;
mod scaffold;
mod store;
mod support;
mod symlinks;
