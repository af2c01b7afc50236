//! Bounded, symlink-safe bundle collection, component inventory, digest and atomic install.
