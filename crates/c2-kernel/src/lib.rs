//! Scoped registries, realms and the live plugin graph.
