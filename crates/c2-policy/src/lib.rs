//! Durable plugin policy: revision-bound plans, last-known-good and safe mode.
