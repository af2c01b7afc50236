use std::os::unix::fs::PermissionsExt;

use c2_bundle_collector::{Error, apply_scaffold};

use crate::support::*;

fn with_scaffold() -> c2_bundle_collector::CollectedBundle {
    let dir = hello_bundle();
    write(
        dir.path(),
        "scaffolds/app/scaffold.json",
        r#"{"name": "App"}"#,
    );
    write(dir.path(), "scaffolds/app/src/main.rs", "fn main() {}\n");
    write_exec(dir.path(), "scaffolds/app/run.sh", "#!/bin/sh\n");
    write(dir.path(), "templates/doc/README.md", "# doc\n");
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    bundle
}

#[test]
fn a_scaffold_is_copied_into_the_target_without_its_metadata() {
    let bundle = with_scaffold();
    let target = tempfile::tempdir().unwrap();
    let written = apply_scaffold(&bundle.files, "app", target.path()).unwrap();
    assert_eq!(written, ["run.sh", "src/main.rs"]);
    assert_eq!(
        std::fs::read_to_string(target.path().join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
    assert!(!target.path().join("scaffold.json").exists());
    let mode = std::fs::metadata(target.path().join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[test]
fn a_template_is_applied_like_a_scaffold() {
    let bundle = with_scaffold();
    let target = tempfile::tempdir().unwrap();
    assert_eq!(
        apply_scaffold(&bundle.files, "doc", target.path()).unwrap(),
        ["README.md"]
    );
}

#[test]
fn one_existing_destination_means_nothing_is_written() {
    let bundle = with_scaffold();
    let target = tempfile::tempdir().unwrap();
    write(target.path(), "src/main.rs", "mine\n");
    let result = apply_scaffold(&bundle.files, "app", target.path());
    let Err(Error::ScaffoldConflict { conflicts }) = result else {
        panic!("expected a conflict, got {result:?}")
    };
    assert_eq!(conflicts, ["src/main.rs already exists"]);
    assert!(
        !target.path().join("run.sh").exists(),
        "nothing is written when one file conflicts"
    );
    assert_eq!(
        std::fs::read_to_string(target.path().join("src/main.rs")).unwrap(),
        "mine\n"
    );
}

#[test]
fn a_dangling_symlink_at_a_destination_is_a_conflict() {
    let bundle = with_scaffold();
    let target = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/nonexistent/elsewhere", target.path().join("run.sh")).unwrap();
    assert!(matches!(
        apply_scaffold(&bundle.files, "app", target.path()),
        Err(Error::ScaffoldConflict { .. })
    ));
}

#[test]
fn a_symlinked_folder_inside_the_target_is_refused_so_nothing_escapes() {
    let bundle = with_scaffold();
    let target = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), target.path().join("src")).unwrap();
    let result = apply_scaffold(&bundle.files, "app", target.path());
    assert!(
        matches!(result, Err(Error::ScaffoldConflict { .. })),
        "{result:?}"
    );
    assert!(
        names(outside.path()).is_empty(),
        "nothing was written through the link"
    );
    assert!(!target.path().join("run.sh").exists());
}

#[test]
fn the_target_must_be_an_existing_real_directory() {
    let bundle = with_scaffold();
    let parent = tempfile::tempdir().unwrap();
    let missing = parent.path().join("missing");
    assert!(matches!(
        apply_scaffold(&bundle.files, "app", &missing),
        Err(Error::InvalidTarget { .. })
    ));
    let real = parent.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = parent.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert!(matches!(
        apply_scaffold(&bundle.files, "app", &link),
        Err(Error::InvalidTarget { .. })
    ));
}

#[test]
fn an_unknown_or_path_like_scaffold_name_is_refused() {
    let bundle = with_scaffold();
    let target = tempfile::tempdir().unwrap();
    for name in ["nope", "../scaffolds/app", "app/src", ""] {
        assert!(
            matches!(
                apply_scaffold(&bundle.files, name, target.path()),
                Err(Error::UnknownScaffold { .. })
            ),
            "{name:?}"
        );
    }
}
