//! Dev-only test support: a fixture plugin process with misbehaviour modes, and temporary stores.
