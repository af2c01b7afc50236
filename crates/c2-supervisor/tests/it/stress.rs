use std::collections::HashSet;

use c2_supervisor::SupervisorOptions;
use tokio::task::JoinSet;

use crate::support::{self, eventually, fd_count, our_children, sh};

async fn cycle(batch: usize) -> Vec<i32> {
    let mut tasks = JoinSet::new();
    for _ in 0..batch {
        tasks.spawn(async {
            let spawned = c2_supervisor::spawn(&sh("true"), &SupervisorOptions::default()).unwrap();
            let pid = support::pid(&spawned.process);
            spawned.process.stop().await;
            pid
        });
    }
    tasks.join_all().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_spawn_stop_cycles_leave_no_zombie_descendant_or_descriptor() {
    let _guard = support::exclusive().await;
    // Warm up once: the runtime creates some descriptors lazily on first use.
    cycle(4).await;
    // The pre-started shim is this process's child by design: release it (and any a refill
    // thread still adds) so that only leaks are counted.
    let idle_released = || {
        c2_supervisor::release_warm_shim();
        our_children().is_empty()
    };
    assert!(eventually(idle_released).await);
    let before = fd_count();

    let mut pids = HashSet::new();
    for _ in 0..10 {
        pids.extend(cycle(50).await);
    }

    assert_eq!(pids.len(), 500);
    assert!(
        eventually(idle_released).await,
        "no zombie and no direct child is left: {:?}",
        our_children()
    );
    let survivors = || -> Vec<i32> {
        support::all_pids()
            .into_iter()
            .filter(|&pid| {
                support::stat(pid).is_some_and(|s| pids.contains(&s.pgrp) && support::is_alive(&s))
            })
            .collect()
    };
    assert!(
        eventually(|| survivors().is_empty()).await,
        "survivors: {:?}",
        survivors()
    );
    // stderr drain tasks close their pipe when they see EOF, which may be a moment after stop.
    assert!(
        eventually(|| {
            c2_supervisor::release_warm_shim();
            fd_count() <= before
        })
        .await,
        "descriptors leaked: {} before, {} after",
        before,
        fd_count()
    );
}

/// This process's threads named `name` now.
#[expect(
    clippy::disallowed_methods,
    reason = "the test counts this process's threads in /proc"
)]
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.trim_end() == name)
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_burst_of_children_a_few_reaper_threads_wait_for_the_next_and_no_more() {
    let _guard = support::exclusive().await;
    // Fifty children at once: fifty reaper threads, each serving its own child.
    let pids = cycle(50).await;
    assert_eq!(pids.len(), 50);
    // Once they are reaped, the pool keeps a few waiting (4) and the others end.
    assert!(
        eventually(|| threads_named("c2-reaper") <= 4).await,
        "{} reaper threads are left",
        threads_named("c2-reaper")
    );
    let waiting = threads_named("c2-reaper");
    assert!(waiting >= 1, "no reaper thread waits for the next child");
    // Children one after another are handed to the waiting threads and stay within the bound.
    for _ in 0..20 {
        cycle(1).await;
    }
    assert!(threads_named("c2-reaper") <= 4);
}
