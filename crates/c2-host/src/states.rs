//! The states and kinds the host reports as values, each serialized as the string the command
//! line and the relay have always shown.

use std::fmt;

/// Declares a `#[non_exhaustive]` enum whose values are strings on the wire: `as_str`,
/// `Display`, `Serialize`, `Deserialize` and comparison with `&str` from one table.
macro_rules! string_enum {
    (
        $(#[doc = $doc:literal])+
        $name:ident {
            $($(#[doc = $vdoc:literal])+ $variant:ident => $text:literal,)+
        }
    ) => {
        $(#[doc = $doc])+
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[doc = $vdoc])+ $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The string shown for it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The value shown as `text`, if there is one.
            pub fn from_name(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                $name::from_name(&text).ok_or_else(|| {
                    let known: Vec<&str> = $name::ALL.iter().map(|v| v.as_str()).collect();
                    serde::de::Error::custom(format!(
                        "`{text}` is not one of {}",
                        known.join(", ")
                    ))
                })
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

string_enum! {
    /// Where an installed bundle stands ([`crate::BundleStatus::state`]).
    BundleState {
        /// A deny entry matches it; nothing from it runs (the reason names the entry).
        Blocked => "blocked",
        /// The files on disk are not the installed ones; nothing from it runs.
        ContentChanged => "content_changed",
        /// Its content is not trusted.
        Untrusted => "untrusted",
        /// Trusted, not enabled for the user.
        Disabled => "disabled",
        /// Trusted and enabled; its process (if any) is dormant.
        Ready => "ready",
        /// Its process is running.
        Active => "active",
        /// Waiting for services it injects.
        Pending => "pending",
        /// Its activation or runtime failed.
        Failed => "failed",
    }
}

string_enum! {
    /// Who may call a command ([`crate::CommandRow::visibility`]).
    CommandVisibility {
        /// Frontends and the host only.
        Internal => "internal",
        /// Also plugins, through `command/call`.
        ExtensionPublic => "extension-public",
    }
}

string_enum! {
    /// Where a command's implementation stands ([`crate::CommandRow::state`]).
    CommandState {
        /// A bundle command whose process is not running.
        Dormant => "dormant",
        /// A bundle command whose process is running.
        Active => "active",
        /// A bundle command whose runtime failed.
        Failed => "failed",
        /// A command of a host or embedder module.
        BuiltIn => "built-in",
    }
}

string_enum! {
    /// What a `host.actions` activation does (c2-contributions' `UiRequest::operation`).
    UiOperation {
        /// Ask the plugin for the slot's current actions (the default).
        Render => "render",
        /// Activate one rendered action (`actionId`).
        Invoke => "invoke",
    }
}

#[expect(
    clippy::derivable_impls,
    reason = "string_enum! declares the enum; deriving Default would need a #[default] it does not pass"
)]
impl Default for UiOperation {
    fn default() -> Self {
        UiOperation::Render
    }
}

/// A realm as text: `global`, or the project's normalized path.
pub fn realm_text(realm: &c2_kernel::Realm) -> String {
    match realm {
        c2_kernel::Realm::Global => "global".to_owned(),
        c2_kernel::Realm::Project(key) => key.as_str().to_owned(),
    }
}
