//! Typosquat warnings at install: a bundle whose name resembles the name of an installed
//! bundle from another source (c2-manifest's [`c2_manifest::lookalike`]: the same name, the
//! same once folded, or one edit away) is worth a second look before it is trusted.

use crate::digest::SourceIdentity;
use crate::store::Summary;

/// One warning per installed bundle from a source other than `source` whose name resembles
/// `name`; none when `name` is `None` (no valid manifest).
pub fn lookalike_warnings<'r>(
    name: Option<&str>,
    source: &SourceIdentity,
    installed: impl IntoIterator<Item = &'r Summary>,
) -> Vec<String> {
    let Some(name) = name else {
        return Vec::new();
    };
    let new_name = c2_manifest::LookalikeName::new(name);
    installed
        .into_iter()
        .filter(|summary| &summary.source != source)
        .filter_map(|summary| {
            let how = new_name.lookalike(&summary.name)?.describe();
            Some(format!(
                "possible typosquat: {name} is {how} {} (installed as {} from another source); make sure this is the bundle you meant",
                summary.name, summary.id
            ))
        })
        .collect()
}
