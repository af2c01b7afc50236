use std::os::unix::fs::PermissionsExt;

use c2_bundle_collector::{Limits, codes, collect_dir, read_parts};

use crate::support::*;

#[test]
fn a_valid_bundle_is_collected_with_every_file_and_its_executable_bit() {
    let dir = hello_bundle();
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    let paths: Vec<_> = bundle.files.keys().map(String::as_str).collect();
    assert_eq!(
        paths,
        ["README.md", "bin/hello", "lib/greet.txt", "plugin.json"]
    );
    assert!(bundle.files["bin/hello"].executable);
    assert!(!bundle.files["README.md"].executable);
    assert_eq!(bundle.files["lib/greet.txt"].bytes, b"hello\n");
    assert_eq!(bundle.name(), Some("hello-runtime"));
    assert_eq!(bundle.version(), Some("1.0.0"));
    assert_eq!(bundle.digest.len(), 64);
    assert!(bundle.directories.contains("bin"));
}

#[test]
fn a_directory_without_root_plugin_json_is_refused_and_children_are_not_searched() {
    let dir = tempfile::tempdir().unwrap();
    fill_hello(&dir.path().join("inner"));
    let bundle = collect(dir.path());
    only_error(&bundle, codes::MISSING_MANIFEST);
}

#[test]
fn an_invalid_manifest_carries_its_diagnostics_with_file_plugin_json() {
    let dir = hello_bundle();
    write(dir.path(), "plugin.json", r#"{"name": "hello-runtime"}"#);
    let bundle = collect(dir.path());
    assert!(!bundle.is_valid());
    assert!(bundle.manifest.is_none());
    assert!(
        bundle
            .diagnostics
            .iter()
            .all(|d| d.file.as_deref() == Some("plugin.json")),
        "{:#?}",
        bundle.diagnostics
    );
}

#[test]
fn a_manifest_that_is_not_utf8_is_refused() {
    let dir = hello_bundle();
    write_bytes(dir.path(), "plugin.json", b"{\"name\": \"\xff\"}");
    only_error(&collect(dir.path()), codes::MANIFEST_NOT_UTF8);
}

#[test]
fn a_file_as_root_is_an_error_not_a_bundle() {
    let dir = hello_bundle();
    let result = collect_dir(&dir.path().join("README.md"), &Limits::default());
    assert!(matches!(
        result,
        Err(c2_bundle_collector::Error::NotADirectory { .. })
    ));
}

#[test]
fn the_default_limits_are_the_decided_values() {
    let limits = Limits::default();
    assert_eq!(limits.max_files, 5_000);
    assert_eq!(limits.max_file_bytes, 4 * 1024 * 1024);
    assert_eq!(limits.max_bundle_bytes, 20 * 1024 * 1024);
    assert_eq!(limits.max_depth, 12);
    assert_eq!(limits.max_entries, 10_000);
    assert_eq!(limits.max_name_bytes, 255);
    assert_eq!(limits.max_archive_bytes, 32 * 1024 * 1024);
}

/// A bundle of `plugin.json` plus `extra` other files; the manifest counts as one file.
fn bundle_with_files(extra: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "plugin.json", &manifest_with_command("node"));
    for i in 0..extra {
        write(dir.path(), &format!("f{i}"), "x");
    }
    dir
}

#[test]
fn the_file_count_limit_admits_exactly_max_files() {
    let limits = small_limits();
    assert_valid(&collect_with(
        bundle_with_files(limits.max_files - 1).path(),
        limits,
    ));
    let over = collect_with(bundle_with_files(limits.max_files).path(), limits);
    let d = only_error(&over, codes::LIMIT_FILES);
    assert!(
        d.message.contains(&limits.max_files.to_string()) && d.file.is_some(),
        "{d:?}"
    );
}

#[test]
fn the_file_size_limit_admits_exactly_max_file_bytes_and_refuses_one_more_byte() {
    let limits = small_limits();
    let dir = bundle_with_files(0);
    write_bytes(
        dir.path(),
        "data.bin",
        &vec![7u8; limits.max_file_bytes as usize],
    );
    assert_valid(&collect_with(dir.path(), limits));
    // The reader takes max+1 bytes: the extra byte is what proves the file too large.
    write_bytes(
        dir.path(),
        "data.bin",
        &vec![7u8; limits.max_file_bytes as usize + 1],
    );
    let over = collect_with(dir.path(), limits);
    let d = only_error(&over, codes::LIMIT_FILE_SIZE);
    assert_eq!(d.file.as_deref(), Some("data.bin"));
    assert!(
        !over.files.contains_key("data.bin"),
        "an oversized file is never truncated and stored"
    );
}

#[test]
fn a_file_far_larger_than_the_limit_is_refused_without_reading_it_whole() {
    let limits = small_limits();
    let dir = bundle_with_files(0);
    write_bytes(dir.path(), "big.bin", &vec![1u8; 3 * 1024 * 1024]);
    only_error(&collect_with(dir.path(), limits), codes::LIMIT_FILE_SIZE);
}

#[test]
fn the_bundle_size_limit_admits_exactly_max_bundle_bytes() {
    let limits = small_limits();
    let dir = bundle_with_files(0);
    let manifest_len = std::fs::metadata(dir.path().join("plugin.json"))
        .unwrap()
        .len();
    let mut remaining = limits.max_bundle_bytes - manifest_len;
    let mut i = 0;
    while remaining > 0 {
        let chunk = remaining.min(limits.max_file_bytes);
        write_bytes(dir.path(), &format!("d{i}"), &vec![0u8; chunk as usize]);
        remaining -= chunk;
        i += 1;
    }
    assert_valid(&collect_with(dir.path(), limits));
    write(dir.path(), "z-one-more", "x");
    let d = only_error(&collect_with(dir.path(), limits), codes::LIMIT_BUNDLE_SIZE);
    assert_eq!(d.file.as_deref(), Some("z-one-more"));
}

#[test]
fn the_depth_limit_admits_exactly_max_depth_components() {
    let limits = small_limits();
    let dir = bundle_with_files(0);
    write(dir.path(), "a/b/c/leaf", "x");
    assert_valid(&collect_with(dir.path(), limits));
    write(dir.path(), "a/b/c/d/leaf", "x");
    let d = only_error(&collect_with(dir.path(), limits), codes::LIMIT_DEPTH);
    assert_eq!(d.file.as_deref(), Some("a/b/c/d/leaf"));
}

#[test]
fn the_name_length_limit_admits_exactly_max_name_bytes() {
    let limits = small_limits();
    let dir = bundle_with_files(0);
    write(dir.path(), &"n".repeat(limits.max_name_bytes), "x");
    assert_valid(&collect_with(dir.path(), limits));
    write(dir.path(), &"m".repeat(limits.max_name_bytes + 1), "x");
    only_error(&collect_with(dir.path(), limits), codes::LIMIT_NAME_LENGTH);
}

#[test]
fn the_entry_limit_counts_folders_and_links_and_admits_exactly_max_entries() {
    let limits = small_limits();
    let dir = bundle_with_files(0);
    // plugin.json plus max_entries - 1 empty folders and links.
    for i in 0..limits.max_entries - 1 {
        if i % 2 == 0 {
            std::fs::create_dir(dir.path().join(format!("e{i:02}"))).unwrap();
        } else {
            symlink(dir.path(), &format!("e{i:02}"), "plugin.json");
        }
    }
    let at_limit = collect_with(dir.path(), limits);
    assert!(at_limit.is_valid(), "{:#?}", at_limit.diagnostics);
    std::fs::create_dir(dir.path().join("z-one-more")).unwrap();
    only_error(&collect_with(dir.path(), limits), codes::LIMIT_ENTRIES);
}

#[test]
fn a_name_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let dir = hello_bundle();
    let name = std::ffi::OsStr::from_bytes(b"bad-\xff-name");
    std::fs::write(dir.path().join(name), "x").unwrap();
    only_error(&collect(dir.path()), codes::NON_UTF8_NAME);
}

#[test]
fn a_fifo_is_refused_and_never_blocks_collection() {
    let dir = hello_bundle();
    nix::unistd::mkfifo(
        &dir.path().join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let d = only_error(&collect(dir.path()), codes::SPECIAL_FILE);
    assert_eq!(d.file.as_deref(), Some("pipe"));
}

#[test]
fn a_socket_is_refused() {
    let dir = hello_bundle();
    let _listener = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
    let d = only_error(&collect(dir.path()), codes::SPECIAL_FILE);
    assert_eq!(d.file.as_deref(), Some("sock"));
}

#[test]
fn vcs_and_build_directories_are_skipped_and_reported() {
    let dir = hello_bundle();
    for skipped in ["node_modules", ".git", "target", ".venv"] {
        write(dir.path(), &format!("{skipped}/junk"), "x");
    }
    write(dir.path(), "lib/node_modules/deep", "x");
    let bundle = collect(dir.path());
    assert_valid(&bundle);
    assert!(
        bundle
            .files
            .keys()
            .all(|path| !path.contains("junk") && !path.contains("deep"))
    );
    let mut skipped: Vec<_> = bundle
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::SKIPPED_DIRECTORY)
        .filter_map(|d| d.file.as_deref())
        .collect();
    skipped.sort_unstable();
    assert_eq!(
        skipped,
        [
            ".git",
            ".venv",
            "lib/node_modules",
            "node_modules",
            "target"
        ]
    );
}

#[test]
fn a_missing_bundle_relative_runtime_command_is_refused() {
    let dir = hello_bundle();
    std::fs::remove_file(dir.path().join("bin/hello")).unwrap();
    let d = only_error(&collect(dir.path()), codes::COMMAND_MISSING);
    assert_eq!(d.file.as_deref(), Some("bin/hello"));
}

#[test]
fn a_runtime_command_without_execute_permission_is_refused_with_a_chmod_hint() {
    let dir = hello_bundle();
    std::fs::set_permissions(
        dir.path().join("bin/hello"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let d = only_error(&collect(dir.path()), codes::COMMAND_NOT_EXECUTABLE);
    assert!(
        d.help
            .as_deref()
            .unwrap_or_default()
            .contains("chmod +x bin/hello"),
        "{d:?}"
    );
}

#[test]
fn a_runtime_command_that_is_a_directory_is_refused() {
    let dir = hello_bundle();
    write(dir.path(), "plugin.json", &manifest_with_command("./lib"));
    only_error(&collect(dir.path()), codes::COMMAND_NOT_REGULAR);
}

#[test]
fn a_bare_command_matching_a_root_file_is_that_file_and_must_be_executable() {
    let dir = hello_bundle();
    write(dir.path(), "plugin.json", &manifest_with_command("server"));
    write(dir.path(), "server", "#!/bin/sh\n");
    only_error(&collect(dir.path()), codes::COMMAND_NOT_EXECUTABLE);
    std::fs::set_permissions(
        dir.path().join("server"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert_valid(&collect(dir.path()));
}

#[test]
fn a_bare_command_with_no_root_file_is_left_to_path_lookup() {
    let dir = hello_bundle();
    write(dir.path(), "plugin.json", &manifest_with_command("node"));
    assert_valid(&collect(dir.path()));
}

#[test]
fn a_missing_language_server_executable_is_refused() {
    let dir = hello_bundle();
    let manifest = MANIFEST.replace(
        r#""standardVersion": "1.2.0","#,
        r#""standardVersion": "1.2.0", "languageServers": [{"id": "zls", "languages": ["zig"], "command": "tools/zls"}],"#,
    );
    write(dir.path(), "plugin.json", &manifest);
    let d = only_error(&collect(dir.path()), codes::COMMAND_MISSING);
    assert_eq!(d.file.as_deref(), Some("tools/zls"));
    assert!(d.message.contains("language server zls"), "{d:?}");
}

#[test]
fn the_digest_changes_with_content_path_and_executable_bit() {
    let dir = hello_bundle();
    let base = collect(dir.path()).digest;
    assert_eq!(
        collect(dir.path()).digest,
        base,
        "the digest is deterministic"
    );

    std::fs::set_permissions(
        dir.path().join("README.md"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let exec = collect(dir.path()).digest;
    assert_ne!(exec, base);
    std::fs::set_permissions(
        dir.path().join("README.md"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();

    std::fs::rename(dir.path().join("README.md"), dir.path().join("README.txt")).unwrap();
    assert_ne!(collect(dir.path()).digest, base);
}

#[test]
fn the_digest_encoding_keeps_path_and_content_boundaries_apart() {
    use c2_bundle_collector::{FileEntry, content_digest};
    use std::collections::BTreeMap;
    let entry = |bytes: &[u8]| FileEntry {
        bytes: bytes.to_vec(),
        executable: false,
    };
    let a = BTreeMap::from([("ab".to_owned(), entry(b"c"))]);
    let b = BTreeMap::from([("a".to_owned(), entry(b"bc"))]);
    assert_ne!(content_digest(&a), content_digest(&b));
}

#[test]
fn installed_ids_are_the_name_and_eight_hex_of_the_source_identity() {
    use c2_bundle_collector::{SourceIdentity, installed_id};
    let dir = hello_bundle();
    let local = SourceIdentity::local(dir.path()).unwrap();
    let id = installed_id("hello-runtime", &local);
    let (name, suffix) = id.rsplit_once('-').unwrap();
    assert_eq!(name, "hello-runtime");
    assert_eq!(suffix.len(), 8);
    assert!(
        suffix
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );

    // The same directory through a dotted path and through a symlink is one source.
    let dotted = SourceIdentity::local(&dir.path().join("bin/..")).unwrap();
    assert_eq!(installed_id("hello-runtime", &dotted), id);
    let other = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(dir.path(), other.path().join("link")).unwrap();
    let linked = SourceIdentity::local(&other.path().join("link")).unwrap();
    assert_eq!(installed_id("hello-runtime", &linked), id);

    let git = |url, sub| installed_id("hello-runtime", &SourceIdentity::git(url, sub));
    assert_eq!(
        git("https://example.org/r.git", "packs/a/"),
        git("https://example.org/r.git", "./packs//a")
    );
    assert_ne!(
        git("https://example.org/r.git", "packs/a"),
        git("https://example.org/r.git", "packs/b")
    );
    assert_ne!(git("https://example.org/r.git", ""), id);
    let archive = installed_id("hello-runtime", &SourceIdentity::archive(b"bytes"));
    assert_ne!(
        archive,
        installed_id("hello-runtime", &SourceIdentity::archive(b"other bytes"))
    );
}

#[test]
fn collect_validates_with_the_callers_manifest_and_skill_options() {
    let dir = hello_bundle();
    write(
        dir.path(),
        "skills/greet/SKILL.md",
        "---\nname: greet\ndescription: Greets whoever asks, at some length.\n---\nSay hello.\n",
    );
    // The defaults accept both the `hello` namespace and the skill.
    let default = c2_bundle_collector::collect(dir.path(), &Limits::default()).unwrap();
    assert_valid(&default);
    assert!(
        default
            .inventory
            .contributions
            .iter()
            .any(|c| c.id == "greet")
    );

    let mut manifest = c2_manifest::ManifestOptions::default();
    manifest.reserved_namespaces.insert("hello".to_owned());
    let skills = c2_manifest::SkillOptions {
        max_description_chars: 10,
        ..c2_manifest::SkillOptions::default()
    };
    let options = c2_bundle_collector::CollectOptions::new()
        .with_manifest(manifest)
        .with_skills(skills);
    let bundle = c2_bundle_collector::collect(dir.path(), &options).unwrap();
    let reserved = only_error(&bundle, "command-namespace-reserved");
    assert_eq!(reserved.file.as_deref(), Some("plugin.json"));
    assert!(
        bundle
            .diagnostics
            .iter()
            .any(|d| !d.is_error() && d.file.as_deref() == Some("skills/greet/SKILL.md")),
        "{:#?}",
        bundle.diagnostics
    );
    // collect_dir takes the same options by value.
    assert_eq!(
        collect_dir(dir.path(), options.clone())
            .unwrap()
            .diagnostics,
        bundle.diagnostics
    );
}

#[test]
fn lenient_skill_options_load_a_skill_named_unlike_its_folder_with_a_warning() {
    let dir = hello_bundle();
    write(
        dir.path(),
        "skills/greet/SKILL.md",
        "---\nname: greeter\ndescription: Greets whoever asks.\n---\nSay hello.\n",
    );
    let has_skill = |bundle: &c2_bundle_collector::CollectedBundle| {
        bundle
            .inventory
            .contributions
            .iter()
            .any(|c| c.id == "greet")
    };
    let strict = c2_bundle_collector::collect(dir.path(), &Limits::default()).unwrap();
    assert!(!has_skill(&strict), "{:#?}", strict.diagnostics);
    let options =
        c2_bundle_collector::CollectOptions::new().with_skills(c2_manifest::SkillOptions {
            lenient: true,
            ..c2_manifest::SkillOptions::default()
        });
    let lenient = c2_bundle_collector::collect(dir.path(), &options).unwrap();
    assert_valid(&lenient);
    assert!(has_skill(&lenient), "{:#?}", lenient.diagnostics);
    assert!(
        lenient
            .diagnostics
            .iter()
            .any(|d| d.code == "skill-name-mismatch" && !d.is_error()),
        "{:#?}",
        lenient.diagnostics
    );
}

/// A directory-only build (no `archive` feature) recognizes an archive and says why it cannot
/// read it, instead of calling it "not a directory".
#[cfg(not(feature = "archive"))]
#[test]
fn without_the_archive_feature_an_archive_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bundle.tgz");
    std::fs::write(&path, b"not read").unwrap();
    let error = c2_bundle_collector::collect(&path, &Limits::default()).unwrap_err();
    assert!(
        matches!(&error, c2_bundle_collector::Error::ArchiveSupportNotBuilt { path: p } if *p == path),
        "{error:?}"
    );
    assert!(error.to_string().contains("`archive` feature"), "{error}");
}

#[test]
fn reading_parts_reads_only_the_named_top_level_folders() {
    let dir = hello_bundle();
    write(
        dir.path(),
        "skills/greet/SKILL.md",
        "---\nname: greet\n---\nhi\n",
    );
    write(dir.path(), "skills/greet/scripts/run.sh", "echo hi\n");
    write(dir.path(), "commands/hello.md", "say hello\n");
    // Outside the named folders nothing is opened: a FIFO would block a read, a large file
    // would pass the byte budget.
    nix::unistd::mkfifo(
        &dir.path().join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let limits = Limits {
        max_bundle_bytes: 4096,
        ..Limits::default()
    };
    write(dir.path(), "lib/large.bin", &"x".repeat(8192));
    let parts = read_parts(dir.path(), limits, &["skills", "commands"]).unwrap();
    assert!(!parts.refused);
    let paths: Vec<_> = parts.files.keys().map(String::as_str).collect();
    assert_eq!(
        paths,
        [
            "commands/hello.md",
            "skills/greet/SKILL.md",
            "skills/greet/scripts/run.sh"
        ]
    );
    assert!(parts.directories.contains("skills/greet"));
    assert!(!parts.directories.contains("lib"));
}

#[test]
fn reading_parts_keeps_the_walks_refusals_inside_the_folders() {
    let dir = hello_bundle();
    write(
        dir.path(),
        "skills/greet/SKILL.md",
        "---\nname: greet\n---\nhi\n",
    );
    nix::unistd::mkfifo(
        &dir.path().join("skills/greet/pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let parts = read_parts(dir.path(), Limits::default(), &["skills"]).unwrap();
    assert!(parts.refused);
    assert!(parts.files.contains_key("skills/greet/SKILL.md"));
}
