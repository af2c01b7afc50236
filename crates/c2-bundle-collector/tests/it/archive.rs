use std::io::{Cursor, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use c2_bundle_collector::{ArchiveFormat, Limits, codes, collect_archive, collect_archive_bytes};
use tar::{EntryType, Header};
use zip::write::SimpleFileOptions;

use crate::support::*;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// A .tar.gz of every file under `root`, named `./<path>` as `tar -C root -czf x .` would.
fn tar_gz_of_dir(root: &Path) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    builder.append_dir_all(".", root).unwrap();
    gzip(&builder.into_inner().unwrap())
}

/// A .tar.gz with raw entries: names are written byte for byte, unchecked, as an attacker would.
fn tar_gz_raw(entries: &[(&str, EntryType, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, kind, data) in entries {
        let mut header = Header::new_old();
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_entry_type(*kind);
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        if matches!(kind, EntryType::Symlink | EntryType::Link) {
            header.as_old_mut().linkname[..11].copy_from_slice(b"/etc/passwd");
        }
        header.set_cksum();
        builder.append(&header, *data).unwrap();
    }
    gzip(&builder.into_inner().unwrap())
}

fn zip_of(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data, mode) in entries {
        let options = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(*mode);
        writer.start_file(*name, options).unwrap();
        writer.write_all(data).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

fn hello_zip_entries() -> Vec<(&'static str, &'static [u8], u32)> {
    vec![
        ("plugin.json", MANIFEST.as_bytes(), 0o644),
        ("bin/hello", b"#!/bin/sh\necho hello\n", 0o755),
        ("lib/greet.txt", b"hello\n", 0o644),
        ("README.md", b"# hello\n", 0o644),
    ]
}

fn tar_gz(bytes: &[u8]) -> c2_bundle_collector::CollectedBundle {
    collect_archive_bytes(bytes, ArchiveFormat::TarGz, &Limits::default())
}

fn zip(bytes: &[u8]) -> c2_bundle_collector::CollectedBundle {
    collect_archive_bytes(bytes, ArchiveFormat::Zip, &Limits::default())
}

#[test]
fn a_tar_gz_of_a_bundle_has_the_same_digest_as_the_directory() {
    let dir = hello_bundle();
    let from_dir = collect(dir.path());
    let out = tempfile::tempdir().unwrap();
    let archive = out.path().join("hello-runtime.tar.gz");
    std::fs::write(&archive, tar_gz_of_dir(dir.path())).unwrap();
    let from_archive = collect_archive(&archive, &Limits::default()).unwrap();
    assert_valid(&from_archive);
    assert_eq!(from_archive.digest, from_dir.digest);
    assert!(from_archive.files["bin/hello"].executable);
    assert_eq!(
        from_archive.archive_digest.as_deref(),
        Some(
            blake3::hash(&std::fs::read(&archive).unwrap())
                .to_hex()
                .as_str()
        )
    );
}

#[test]
fn a_zip_of_a_bundle_has_the_same_digest_as_the_directory() {
    let dir = hello_bundle();
    let from_zip = zip(&zip_of(&hello_zip_entries()));
    assert_valid(&from_zip);
    assert_eq!(from_zip.digest, collect(dir.path()).digest);
}

#[test]
fn archive_formats_are_recognized_by_extension_only() {
    assert_eq!(
        ArchiveFormat::from_path(Path::new("a.tar.gz")),
        Some(ArchiveFormat::TarGz)
    );
    assert_eq!(
        ArchiveFormat::from_path(Path::new("a.TGZ")),
        Some(ArchiveFormat::TarGz)
    );
    assert_eq!(
        ArchiveFormat::from_path(Path::new("a.zip")),
        Some(ArchiveFormat::Zip)
    );
    assert_eq!(ArchiveFormat::from_path(Path::new("a.tar")), None);
    assert_eq!(ArchiveFormat::from_path(Path::new("bundle")), None);
}

#[test]
fn a_tar_entry_climbing_out_with_dot_dot_is_refused() {
    let bytes = tar_gz_raw(&[
        ("plugin.json", EntryType::Regular, MANIFEST.as_bytes()),
        ("../evil", EntryType::Regular, b"x"),
    ]);
    let bundle = tar_gz(&bytes);
    assert!(
        error_codes(&bundle).contains(&codes::ARCHIVE_UNSAFE_PATH),
        "{:#?}",
        bundle.diagnostics
    );
    assert!(bundle.files.keys().all(|path| !path.contains("evil")));
}

#[test]
fn a_zip_slip_entry_is_refused() {
    let mut entries = hello_zip_entries();
    entries.push(("lib/../../evil.sh", b"rm -rf ~", 0o755));
    let bundle = zip(&zip_of(&entries));
    let d = only_error(&bundle, codes::ARCHIVE_UNSAFE_PATH);
    assert!(d.message.contains("evil.sh"), "{d:?}");
}

#[test]
fn an_absolute_tar_entry_is_refused() {
    let bytes = tar_gz_raw(&[
        ("plugin.json", EntryType::Regular, MANIFEST.as_bytes()),
        ("/etc/evil", EntryType::Regular, b"x"),
    ]);
    assert!(error_codes(&tar_gz(&bytes)).contains(&codes::ARCHIVE_UNSAFE_PATH));
}

#[test]
fn an_absolute_zip_entry_is_refused() {
    let mut entries = hello_zip_entries();
    entries.push(("/tmp/evil", b"x", 0o644));
    only_error(&zip(&zip_of(&entries)), codes::ARCHIVE_UNSAFE_PATH);
}

#[test]
fn a_tar_symlink_entry_is_refused() {
    let bytes = tar_gz_raw(&[
        ("plugin.json", EntryType::Regular, MANIFEST.as_bytes()),
        ("passwd", EntryType::Symlink, b""),
    ]);
    assert!(error_codes(&tar_gz(&bytes)).contains(&codes::ARCHIVE_LINK));
}

#[test]
fn a_tar_hard_link_entry_is_refused() {
    let bytes = tar_gz_raw(&[
        ("plugin.json", EntryType::Regular, MANIFEST.as_bytes()),
        ("passwd", EntryType::Link, b""),
    ]);
    assert!(error_codes(&tar_gz(&bytes)).contains(&codes::ARCHIVE_LINK));
}

#[test]
fn a_zip_symlink_entry_is_refused() {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data, mode) in hello_zip_entries() {
        writer
            .start_file(name, SimpleFileOptions::default().unix_permissions(mode))
            .unwrap();
        writer.write_all(data).unwrap();
    }
    writer
        .add_symlink("docs", "/etc", SimpleFileOptions::default())
        .unwrap();
    let bundle = zip(&writer.finish().unwrap().into_inner());
    let d = only_error(&bundle, codes::ARCHIVE_LINK);
    assert_eq!(d.file.as_deref(), Some("docs"));
}

#[test]
fn a_tar_fifo_or_device_entry_is_refused() {
    let bytes = tar_gz_raw(&[
        ("plugin.json", EntryType::Regular, MANIFEST.as_bytes()),
        ("pipe", EntryType::Fifo, b""),
        ("tty", EntryType::Char, b""),
    ]);
    let bundle = tar_gz(&bytes);
    let special: Vec<_> = bundle
        .diagnostics
        .iter()
        .filter(|d| d.code == codes::ARCHIVE_SPECIAL_ENTRY)
        .collect();
    assert_eq!(special.len(), 2, "{:#?}", bundle.diagnostics);
}

#[test]
fn a_duplicate_archive_entry_is_refused() {
    let bytes = tar_gz_raw(&[
        ("plugin.json", EntryType::Regular, MANIFEST.as_bytes()),
        ("plugin.json", EntryType::Regular, b"{}"),
    ]);
    assert!(error_codes(&tar_gz(&bytes)).contains(&codes::ARCHIVE_DUPLICATE_ENTRY));
}

#[test]
fn an_archive_wrapping_the_bundle_in_one_folder_is_refused_with_a_repack_hint() {
    let dir = tempfile::tempdir().unwrap();
    fill_hello(&dir.path().join("hello-runtime"));
    let bundle = tar_gz(&tar_gz_of_dir(dir.path()));
    let d = only_error(&bundle, codes::ARCHIVE_WRAPPED_ROOT);
    assert!(
        d.help
            .as_deref()
            .unwrap_or_default()
            .contains("hello-runtime"),
        "{d:?}"
    );
}

#[test]
fn a_gzip_bomb_is_stopped_at_the_file_limit_while_inflating() {
    let zeros = vec![0u8; 8 * 1024 * 1024];
    let bytes = tar_gz_raw(&[
        ("plugin.json", EntryType::Regular, MANIFEST.as_bytes()),
        ("bomb", EntryType::Regular, &zeros),
    ]);
    assert!(bytes.len() < 64 * 1024, "the bomb is small compressed");
    let limits = Limits {
        max_file_bytes: 64 * 1024,
        ..Limits::default()
    };
    let bundle = collect_archive_bytes(&bytes, ArchiveFormat::TarGz, &limits);
    let d = only_error(&bundle, codes::LIMIT_FILE_SIZE);
    assert_eq!(d.file.as_deref(), Some("bomb"));
}

#[test]
fn a_tar_stream_inflating_past_the_archive_limit_is_refused() {
    let padding = vec![0u8; 200 * 1024];
    let bytes = tar_gz_raw(&[
        ("plugin.json", EntryType::Regular, MANIFEST.as_bytes()),
        ("big", EntryType::Regular, &padding),
    ]);
    let limits = Limits {
        max_archive_bytes: 64 * 1024,
        ..Limits::default()
    };
    only_error(
        &collect_archive_bytes(&bytes, ArchiveFormat::TarGz, &limits),
        codes::LIMIT_ARCHIVE_SIZE,
    );
}

#[test]
fn a_zip_bomb_is_stopped_at_the_file_limit_while_inflating() {
    let zeros = vec![0u8; 8 * 1024 * 1024];
    let mut entries = hello_zip_entries();
    entries.push(("bomb", &zeros, 0o644));
    let bytes = zip_of(&entries);
    assert!(bytes.len() < 64 * 1024, "the bomb is small compressed");
    let limits = Limits {
        max_file_bytes: 64 * 1024,
        ..Limits::default()
    };
    only_error(
        &collect_archive_bytes(&bytes, ArchiveFormat::Zip, &limits),
        codes::LIMIT_FILE_SIZE,
    );
}

#[test]
fn an_archive_file_larger_than_the_archive_limit_is_refused() {
    let bytes = zip_of(&hello_zip_entries());
    let limits = Limits {
        max_archive_bytes: bytes.len() as u64 - 1,
        ..Limits::default()
    };
    only_error(
        &collect_archive_bytes(&bytes, ArchiveFormat::Zip, &limits),
        codes::LIMIT_ARCHIVE_SIZE,
    );
    let limits = Limits {
        max_archive_bytes: bytes.len() as u64,
        ..Limits::default()
    };
    assert_valid(&collect_archive_bytes(&bytes, ArchiveFormat::Zip, &limits));
}

#[test]
fn archive_entries_obey_the_depth_and_file_count_limits() {
    let mut entries = hello_zip_entries();
    entries.push(("a/b/c/d/e", b"x", 0o644));
    let limits = Limits {
        max_depth: 4,
        ..Limits::default()
    };
    only_error(
        &collect_archive_bytes(&zip_of(&entries), ArchiveFormat::Zip, &limits),
        codes::LIMIT_DEPTH,
    );
    let limits = Limits {
        max_files: 3,
        ..Limits::default()
    };
    only_error(
        &collect_archive_bytes(&zip_of(&hello_zip_entries()), ArchiveFormat::Zip, &limits),
        codes::LIMIT_FILES,
    );
}

#[test]
fn vcs_folders_in_an_archive_are_skipped_and_reported_once() {
    let mut entries = hello_zip_entries();
    entries.push((".git/config", b"x", 0o644));
    entries.push((".git/HEAD", b"x", 0o644));
    let bundle = zip(&zip_of(&entries));
    assert_valid(&bundle);
    assert_eq!(warning_codes(&bundle), [codes::SKIPPED_DIRECTORY]);
    assert!(!bundle.files.keys().any(|path| path.starts_with(".git")));
}

#[test]
fn a_corrupt_archive_is_refused_as_malformed() {
    only_error(&tar_gz(b"not a gzip stream"), codes::ARCHIVE_MALFORMED);
    only_error(&zip(b"PK not really"), codes::ARCHIVE_MALFORMED);
}

#[test]
fn an_unknown_extension_is_not_collected_as_an_archive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bundle.rar");
    std::fs::write(&path, b"x").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(matches!(
        collect_archive(&path, &Limits::default()),
        Err(c2_bundle_collector::Error::UnsupportedArchive { .. })
    ));
}

/// Rewrites the compression method of every entry (local and central headers) in a zip.
fn set_zip_method(mut bytes: Vec<u8>, method: u16) -> Vec<u8> {
    let patch = |bytes: &mut Vec<u8>, signature: &[u8; 4], offset: usize| {
        let mut at = 0;
        while let Some(found) = bytes[at..].windows(4).position(|w| w == signature) {
            let start = at + found + offset;
            bytes[start..start + 2].copy_from_slice(&method.to_le_bytes());
            at = at + found + 4;
        }
    };
    patch(&mut bytes, b"PK\x03\x04", 8);
    patch(&mut bytes, b"PK\x01\x02", 10);
    bytes
}

#[test]
fn a_zip_entry_with_a_compression_other_than_deflate_or_stored_is_refused() {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    writer.start_file("plugin.json", stored).unwrap();
    writer.write_all(MANIFEST.as_bytes()).unwrap();
    let bytes = set_zip_method(writer.finish().unwrap().into_inner(), 12);
    let bundle = zip(&bytes);
    let d = only_error(&bundle, codes::ARCHIVE_UNSUPPORTED_COMPRESSION);
    assert_eq!(d.file.as_deref(), Some("plugin.json"));
}

#[test]
fn a_tar_entry_whose_name_is_not_utf8_is_refused() {
    let manifest = manifest_with_command("node");
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in [
        (&b"plugin.json"[..], manifest.as_bytes()),
        (&b"bad-\xff"[..], &b"x"[..]),
    ] {
        let mut header = Header::new_old();
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, data).unwrap();
    }
    let bundle = tar_gz(&gzip(&builder.into_inner().unwrap()));
    only_error(&bundle, codes::NON_UTF8_NAME);
}

#[test]
fn a_zip_naming_a_file_twice_is_refused_like_a_tar() {
    let manifest = MANIFEST.as_bytes();
    for (first, second) in [
        ("plugin.json", "plugin.json"),
        ("README.md", "./README.md"),
        ("lib/greet.txt", "lib//greet.txt"),
    ] {
        let bytes = c2_testkit::archive::stored_zip(&[
            ("plugin.json", manifest),
            (first, b"what a reviewer reads"),
            (second, b"what would run"),
        ]);
        let bundle = zip(&bytes);
        let d = only_error(&bundle, codes::ARCHIVE_DUPLICATE_ENTRY);
        assert!(d.message.contains("appears twice"), "{d:?}");
        assert!(bundle.files.is_empty(), "nothing is inflated: {bundle:?}");
    }
    // The same archive without the repeat is a valid bundle.
    let plain = br#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "plain", "version": "1.0.0", "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}}"#;
    let bytes = c2_testkit::archive::stored_zip(&[("plugin.json", plain), ("a", b"x")]);
    let bundle = zip(&bytes);
    assert_valid(&bundle);
    assert_eq!(bundle.files["a"].bytes, b"x");
}

#[test]
fn a_zip_of_too_many_entries_is_refused_from_its_central_directory() {
    let names: Vec<String> = (0..340_000).map(|i| format!("d/{i:06}")).collect();
    let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b""[..])).collect();
    let bytes = c2_testkit::archive::stored_zip(&entries);
    assert!(bytes.len() < 32 * 1024 * 1024, "{} bytes", bytes.len());
    let started = std::time::Instant::now();
    let bundle = zip(&bytes);
    let elapsed = started.elapsed();
    let d = only_error(&bundle, codes::LIMIT_ENTRIES);
    assert!(
        d.message.contains("central directory lists 340000"),
        "{d:?}"
    );
    assert!(bundle.files.is_empty());
    // Reading one end record is instant; inflating 340k entries took seconds. Generous bound.
    assert!(elapsed < std::time::Duration::from_secs(2), "{elapsed:?}");

    // An end record that understates the count does not get past: the records are counted.
    let small = c2_testkit::archive::stored_zip(&entries[..20]);
    let limits = Limits {
        max_entries: 10,
        ..Limits::default()
    };
    let d = only_error(
        &collect_archive_bytes(&small, ArchiveFormat::Zip, &limits),
        codes::LIMIT_ENTRIES,
    );
    assert!(d.message.contains("limit (10)"), "{d:?}");
    let mut lying = small.clone();
    let end = lying.len() - 22;
    lying[end + 8..end + 12].copy_from_slice(&[5, 0, 5, 0]);
    let d = only_error(
        &collect_archive_bytes(&lying, ArchiveFormat::Zip, &limits),
        codes::LIMIT_ENTRIES,
    );
    assert!(d.message.contains("11 or more"), "{d:?}");
}

#[test]
fn an_npm_tarball_loses_its_package_folder_and_only_there() {
    let dir = tempfile::tempdir().unwrap();
    fill_hello(&dir.path().join("package"));
    let packed = {
        let mut builder = tar::Builder::new(Vec::new());
        builder
            .append_dir_all("package", dir.path().join("package"))
            .unwrap();
        gzip(&builder.into_inner().unwrap())
    };
    let npm = c2_bundle_collector::collect_npm_tarball_bytes(&packed, &Limits::default());
    assert_valid(&npm);
    let plain = collect(&dir.path().join("package"));
    assert_eq!(npm.digest, plain.digest);
    // The same tarball as a bundle archive keeps the rule: one wrapping folder is refused.
    only_error(&tar_gz(&packed), codes::ARCHIVE_WRAPPED_ROOT);
    // An entry outside package/ refuses the npm tarball.
    let stray = tar_gz_raw(&[
        (
            "package/plugin.json",
            EntryType::Regular,
            MANIFEST.as_bytes(),
        ),
        ("other/evil.txt", EntryType::Regular, b"x"),
    ]);
    let npm = c2_bundle_collector::collect_npm_tarball_bytes(&stray, &Limits::default());
    assert!(!npm.is_valid());
    let d = npm
        .diagnostics
        .iter()
        .find(|d| d.code == codes::ARCHIVE_UNSAFE_PATH)
        .expect("an unsafe-path refusal");
    assert!(d.message.contains("outside the package/ folder"), "{d:?}");
    assert_eq!(d.file.as_deref(), Some("other/evil.txt"));
    // The archive limits apply to it as to any archive.
    let limits = Limits {
        max_archive_bytes: 16,
        ..Limits::default()
    };
    let npm = c2_bundle_collector::collect_npm_tarball_bytes(&packed, &limits);
    assert!(!npm.is_valid());
    assert!(
        npm.diagnostics
            .iter()
            .any(|d| d.code == codes::LIMIT_ARCHIVE_SIZE),
        "{:?}",
        npm.diagnostics
    );
}
