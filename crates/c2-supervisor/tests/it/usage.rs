//! `Process::usage` on a real tree: every process below the shim counted, nothing once it ended.

use c2_supervisor::Usage;

use crate::support::{self, Lines, sh, spawn};

#[tokio::test]
async fn usage_sums_the_whole_tree_under_the_shim_and_is_empty_once_it_ended() {
    let _guard = support::shared().await;
    let spawned = spawn(&sh("sleep 300 & sleep 300 & echo ready; wait"));
    let mut out = Lines::new(spawned.stdout);
    assert_eq!(out.next().await, "ready");
    let usage = spawned.process.usage();
    // sh and its two sleeps; the shim itself is not the program's.
    assert_eq!(usage.processes, 3, "{usage:?}");
    assert!(usage.rss_bytes > 0, "{usage:?}");
    assert!(usage.open_fds >= 3, "{usage:?}");
    assert!(!usage.truncated);
    spawned.process.stop().await;
    assert_eq!(spawned.process.usage(), Usage::default());
}
