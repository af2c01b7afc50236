//! What the kernel accounts per process: context switches and resident memory, from `/proc`.

use std::path::Path;

/// A numeric `Key:   value ...` field of a `/proc/.../status` text.
fn status_field(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Voluntary plus involuntary context switches of every thread of `pid` (`self` for this
/// process). The process-level status file counts the main thread only, so threads are summed.
pub(crate) fn context_switches(pid: &str) -> u64 {
    let dir = Path::new("/proc").join(pid).join("task");
    #[expect(
        clippy::disallowed_methods,
        reason = "listing a process's threads in /proc is not bundle collection"
    )]
    let Ok(tasks) = std::fs::read_dir(&dir) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("status")).ok())
        .map(|status| {
            status_field(&status, "voluntary_ctxt_switches").unwrap_or(0)
                + status_field(&status, "nonvoluntary_ctxt_switches").unwrap_or(0)
        })
        .sum()
}

/// This process's resident set in KiB.
pub(crate) fn rss_kib() -> Option<u64> {
    rss_kib_of("self")
}

/// The resident set of process `pid` (`self` for this one) in KiB.
pub(crate) fn rss_kib_of(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status_field(&status, "VmRSS")
}

/// The 1, 5 and 15 minute load averages.
pub(crate) fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(str::parse::<f64>);
    Some([
        fields.next()?.ok()?,
        fields.next()?.ok()?,
        fields.next()?.ok()?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read_by_exact_key() {
        let status = "Name:\tx\nVmRSS:\t  1234 kB\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t2\n";
        assert_eq!(status_field(status, "VmRSS"), Some(1234));
        assert_eq!(status_field(status, "voluntary_ctxt_switches"), Some(7));
        assert_eq!(status_field(status, "nonvoluntary_ctxt_switches"), Some(2));
        assert_eq!(status_field(status, "VmHWM"), None);
    }
}
