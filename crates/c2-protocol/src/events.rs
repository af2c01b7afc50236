//! The event names only the host may emit: a plugin cannot pose as the host.

/// The names the host publishes on the bus, which a plugin may not emit.
pub const HOST_EVENT_NAMES: [&str; 3] = ["engine/event", "skills/changed", "scenes/changed"];

/// The namespaces reserved for the host's events.
pub const HOST_EVENT_PREFIXES: [&str; 4] = ["engine/", "host/", "plugins/", "kernel/"];

/// True for an event name only the host may emit: one of [`HOST_EVENT_NAMES`], or any name in
/// one of [`HOST_EVENT_PREFIXES`].
pub fn is_host_event(name: &str) -> bool {
    HOST_EVENT_NAMES.contains(&name) || HOST_EVENT_PREFIXES.iter().any(|p| name.starts_with(p))
}
