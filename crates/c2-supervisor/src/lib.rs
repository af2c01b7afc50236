//! The only crate that spawns and signals processes: process groups, stderr draining, awaited stop.
