//! Language-id matching.

use super::fold;

#[test]
fn language_ids_fold_case() {
    assert_eq!(fold("TypeScriptReact"), fold("typescriptreact"));
    assert_ne!(fold("c"), fold("cpp"));
}
