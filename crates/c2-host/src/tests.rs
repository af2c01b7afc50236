//! Unit tests of the crate's small pure pieces.

use crate::error::{ErrorKind, HostError};

#[test]
fn every_error_kind_has_one_snake_case_name_that_round_trips() {
    let mut seen = std::collections::BTreeSet::new();
    for &kind in ErrorKind::ALL {
        let name = kind.as_str();
        assert!(
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{name}"
        );
        assert!(seen.insert(name), "`{name}` is used twice");
        assert_eq!(ErrorKind::from_name(name), Some(kind));
        let json = serde_json::to_value(kind).unwrap();
        assert_eq!(json, serde_json::Value::String(name.to_owned()));
        assert_eq!(serde_json::from_value::<ErrorKind>(json).unwrap(), kind);
        assert_eq!(kind.to_string(), name);
    }
    assert_eq!(ErrorKind::from_name("no_such_kind"), None);
    assert!(serde_json::from_str::<ErrorKind>(r#""no_such_kind""#).is_err());
}

#[test]
fn kernel_failures_keep_their_kind_their_remote_error_and_the_kernel_error_as_source() {
    let kernel = c2_kernel::Error::remote_failure(
        "command_failed",
        "quota used up",
        c2_kernel::RemoteError::new(-32050, Some(serde_json::json!({"retryAfter": 30}))),
    );
    let error = HostError::from(kernel.clone());
    assert_eq!(error.kind(), ErrorKind::CommandFailed);
    let plugin = error.plugin_error().unwrap();
    assert_eq!(plugin.code, -32050);
    assert_eq!(plugin.data, Some(serde_json::json!({"retryAfter": 30})));
    let source = std::error::Error::source(&error).unwrap();
    assert_eq!(source.downcast_ref::<c2_kernel::Error>(), Some(&kernel));
    // A kind the host knows maps to its variant; a module's own kind is command_failed.
    let timeout = HostError::from(c2_kernel::Error::failure("handshake_timeout", "slow"));
    assert_eq!(timeout.kind(), ErrorKind::HandshakeTimeout);
    let own = HostError::from(c2_kernel::Error::failure("my_module_kind", "no"));
    assert_eq!(own.kind(), ErrorKind::CommandFailed);
    assert_eq!(
        std::error::Error::source(&own)
            .and_then(|s| s.downcast_ref::<c2_kernel::Error>())
            .and_then(c2_kernel::Error::kind),
        Some("my_module_kind")
    );
    assert!(own.plugin_error().is_none());
}

#[test]
fn hints_are_kept_apart_from_messages() {
    let error = HostError::new(ErrorKind::NotTrusted, "x is not trusted").with_hint("trust x");
    assert_eq!(error.to_string(), "x is not trusted");
    assert_eq!(error.hint(), Some("trust x"));
    let missing = HostError::NotInstalled { id: "x".to_owned() };
    assert!(!missing.to_string().contains("c2-plugins"), "{missing}");
    assert!(
        missing
            .hint()
            .is_some_and(|h| h.contains("c2-plugins list"))
    );
    assert_eq!(HostError::new(ErrorKind::Io, "x").hint(), None);
}
