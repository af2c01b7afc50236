//! Bytes from elsewhere: `npm pack` with scripts disabled (its tarball checked against the
//! integrity npm reports and any the caller expects) and https downloads with `curl`, plus the
//! hashes a provenance records.

use std::path::PathBuf;

use c2_bundle_collector::{NpmProvenance, read_contained_file};
use c2_supervisor::{ProcessSpec, RunOptions};
use serde::Deserialize;
use sha2::Digest;

use crate::error::SourceError;
use crate::fetch::{FetchOptions, WorkDir};

/// Lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The Subresource Integrity string npm records for a tarball: `sha512-<base64>`.
pub(crate) fn sha512_integrity(bytes: &[u8]) -> String {
    format!("sha512-{}", base64(&sha2::Sha512::digest(bytes)))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                text.push(char::from(ALPHABET[(n >> shift & 63) as usize]));
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// A tarball packed by npm, with what its provenance records.
#[derive(Debug)]
pub(crate) struct Packed {
    pub(crate) bytes: Vec<u8>,
    pub(crate) npm: NpmProvenance,
    pub(crate) sha256: String,
}

/// Runs `npm pack` on `spec` (a registry `name@version`, or an absolute package directory or
/// tarball) in a private work directory and reads the tarball. Its sha512 integrity must be
/// the one npm reports (the registry's, for a registry package) and `expected` when given;
/// otherwise nothing is returned ([`SourceError::IntegrityMismatch`]).
pub(crate) async fn npm_pack(
    spec: &str,
    expected: Option<&str>,
    options: &FetchOptions,
) -> Result<Packed, SourceError> {
    if spec.starts_with('-') {
        return Err(SourceError::Unsafe(format!(
            "the npm package `{spec}` starts with `-`; nothing was fetched"
        )));
    }
    let hub = &options.hub;
    let work = WorkDir::new(options)?;
    let (cwd, cache, dest) = (
        work.subdir("cwd")?,
        work.subdir("cache")?,
        work.subdir("dest")?,
    );
    let process = ProcessSpec::new(&hub.npm_program, &cwd)
        .args(["pack", "--ignore-scripts", "--json", "--pack-destination"])
        .args([dest.as_os_str()])
        .args(["--", spec])
        .env("npm_config_ignore_scripts", "true")
        .env("npm_config_cache", cache.as_os_str())
        .env("npm_config_audit", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_update_notifier", "false")
        .env("npm_config_loglevel", "error")
        .label("npm");
    let output = c2_supervisor::run(&process, &hub.fetch_run)
        .await
        .map_err(|error| SourceError::NpmFailed(format!("npm pack {spec}: {error}")))?;
    if !output.exit.success() {
        return Err(SourceError::NpmFailed(format!(
            "`npm pack {spec}` {}: {}; nothing was stored",
            output.exit,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    #[derive(Deserialize)]
    struct Reported {
        filename: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        version: String,
        #[serde(default)]
        integrity: Option<String>,
    }
    let reported: Vec<Reported> = serde_json::from_slice(&output.stdout).map_err(|error| {
        SourceError::NpmFailed(format!(
            "`npm pack {spec}` printed no package list ({error})"
        ))
    })?;
    let [reported] = reported.as_slice() else {
        return Err(SourceError::NpmFailed(format!(
            "`npm pack {spec}` packed {} packages, not one",
            reported.len()
        )));
    };
    // npm names a scoped package's tarball `scope-name-1.0.0.tgz`: a plain file name.
    let max = options.collect.limits.max_archive_bytes;
    let bytes = read_contained_file(&dest, &reported.filename, max).map_err(|why| {
        SourceError::NpmFailed(format!(
            "`npm pack {spec}` left no tarball {}: {why}",
            reported.filename
        ))
    })?;
    let actual = sha512_integrity(&bytes);
    for (claimed, by) in [
        (reported.integrity.as_deref(), "npm reports"),
        (expected, "was expected"),
    ] {
        if let Some(claimed) = claimed
            && claimed != actual
        {
            return Err(SourceError::IntegrityMismatch {
                package: spec.to_owned(),
                expected: format!("{claimed} ({by})"),
                actual,
            });
        }
    }
    let sha256 = sha256_hex(&bytes);
    Ok(Packed {
        bytes,
        npm: NpmProvenance {
            name: reported.name.clone(),
            version: reported.version.clone(),
            integrity: actual,
        },
        sha256,
    })
}

/// Downloads `url` (https only, redirects to https only) with `curl`, bounded by the archive
/// limit.
pub(crate) async fn download(url: &str, options: &FetchOptions) -> Result<Vec<u8>, SourceError> {
    let max = options.collect.limits.max_archive_bytes;
    let run = RunOptions {
        stdout_max: usize::try_from(max).unwrap_or(usize::MAX).saturating_add(1),
        ..options.hub.fetch_run.clone()
    };
    let process = ProcessSpec::new(&options.hub.curl_program, &options.work_dir)
        .args([
            "--silent",
            "--show-error",
            "--fail",
            "--location",
            "--proto",
            "=https",
            "--proto-redir",
            "=https",
            "--max-redirs",
            "5",
            "--max-filesize",
        ])
        .args([max.to_string()])
        .args(["--", url])
        .label("curl");
    let output = c2_supervisor::run(&process, &run)
        .await
        .map_err(|error| SourceError::FetchFailed(format!("download {url}: {error}")))?;
    if !output.exit.success() {
        return Err(SourceError::FetchFailed(format!(
            "download {url} {}: {}; nothing was stored",
            output.exit,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(output.stdout)
}

/// Reads the local file `path` (no link followed on its last step), bounded by the archive
/// limit.
pub(crate) fn read_local_file(
    path: &std::path::Path,
    options: &FetchOptions,
) -> Result<Vec<u8>, SourceError> {
    let dir = path
        .parent()
        .map_or_else(|| PathBuf::from("/"), PathBuf::from);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    read_contained_file(&dir, &name, options.collect.limits.max_archive_bytes)
        .map_err(|why| SourceError::FetchFailed(format!("cannot read {}: {why}", path.display())))
}
