//! What an uninstall takes ([`UninstallOptions`]) and returns ([`Uninstalled`]).

use c2_bundle_collector::InstalledRecord;
use serde::Serialize;

/// How [`crate::PluginHost::uninstall_with`] removes a bundle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UninstallOptions {
    /// Keep the bundle's data directory (`.data/<id>/`) instead of removing it with the bundle.
    pub keep_data: bool,
}

/// The result of an uninstall: the id and its record, `None` when the entry's record was
/// unreadable. Serialized as the record itself, or `{"id": ..., "record": null}`.
#[derive(Debug, Clone)]
pub struct Uninstalled {
    /// The removed id.
    pub id: String,
    /// What installed.json said, when it could be read.
    pub record: Option<InstalledRecord>,
}

impl Serialize for Uninstalled {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.record {
            Some(record) => record.serialize(serializer),
            None => serde_json::json!({ "id": self.id, "record": null }).serialize(serializer),
        }
    }
}
