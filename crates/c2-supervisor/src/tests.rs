use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::error::{CommandProblem, Error};
use crate::process::Exit;
use crate::resolve_command;
use crate::stderr::LineSplitter;

fn write_file(path: &Path, mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b"#!/bin/sh\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn problem(result: Result<std::path::PathBuf, Error>) -> CommandProblem {
    match result {
        Err(Error::Command { problem, .. }) => problem,
        other => panic!("expected a command problem, got {other:?}"),
    }
}

fn lines(max: usize, chunks: &[&[u8]]) -> Vec<String> {
    let mut splitter = LineSplitter::new(max);
    let mut out = Vec::new();
    for chunk in chunks {
        splitter.push(chunk, &mut |line| out.push(line));
    }
    splitter.finish(&mut |line| out.push(line));
    out
}

#[test]
fn a_bare_name_prefers_the_executable_in_the_bundle_root() {
    let bundle = tempfile::tempdir().unwrap();
    let path_dir = tempfile::tempdir().unwrap();
    write_file(&bundle.path().join("tool"), 0o755);
    write_file(&path_dir.path().join("tool"), 0o755);
    let resolved =
        resolve_command(bundle.path(), "tool", Some(path_dir.path().as_os_str())).unwrap();
    assert_eq!(resolved, bundle.path().join("tool"));
}

#[test]
fn a_bare_name_falls_back_to_the_first_executable_on_path() {
    let bundle = tempfile::tempdir().unwrap();
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    write_file(&bundle.path().join("tool"), 0o644);
    write_file(&first.path().join("tool"), 0o644);
    write_file(&second.path().join("tool"), 0o755);
    let path = std::env::join_paths([first.path(), second.path()]).unwrap();
    let resolved = resolve_command(bundle.path(), "tool", Some(&path)).unwrap();
    assert_eq!(resolved, second.path().join("tool"));
}

#[test]
fn a_bare_name_found_nowhere_says_where_it_looked() {
    let bundle = tempfile::tempdir().unwrap();
    let error =
        resolve_command(bundle.path(), "no-such-tool", Some("/nonexistent".as_ref())).unwrap_err();
    assert_eq!(
        error.to_string(),
        "runtime command `no-such-tool` is neither an executable in the bundle root nor on PATH; ship it in the bundle or install it"
    );
}

#[test]
fn relative_path_entries_are_never_searched() {
    let bundle = tempfile::tempdir().unwrap();
    assert_eq!(
        problem(resolve_command(
            bundle.path(),
            "sh",
            Some("bin:.:".as_ref())
        )),
        CommandProblem::NotFound
    );
}

#[test]
fn a_path_with_a_slash_resolves_inside_the_bundle() {
    let bundle = tempfile::tempdir().unwrap();
    write_file(&bundle.path().join("bin/run"), 0o755);
    let resolved = resolve_command(bundle.path(), "./bin/run", None).unwrap();
    assert_eq!(resolved, bundle.path().join("bin/run"));
}

#[test]
fn an_absolute_command_is_refused() {
    let bundle = tempfile::tempdir().unwrap();
    assert_eq!(
        problem(resolve_command(bundle.path(), "/bin/sh", None)),
        CommandProblem::Absolute
    );
}

#[test]
fn a_parent_segment_is_refused_even_when_it_stays_inside() {
    let bundle = tempfile::tempdir().unwrap();
    write_file(&bundle.path().join("bin/run"), 0o755);
    assert_eq!(
        problem(resolve_command(bundle.path(), "bin/../bin/run", None)),
        CommandProblem::ParentSegment
    );
}

#[test]
fn a_missing_component_is_named() {
    let bundle = tempfile::tempdir().unwrap();
    assert_eq!(
        problem(resolve_command(bundle.path(), "bin/run", None)),
        CommandProblem::Missing("bin".to_owned())
    );
}

#[test]
fn a_symlinked_directory_on_the_way_is_refused() {
    let bundle = tempfile::tempdir().unwrap();
    write_file(&bundle.path().join("real/run"), 0o755);
    std::os::unix::fs::symlink(bundle.path().join("real"), bundle.path().join("bin")).unwrap();
    assert_eq!(
        problem(resolve_command(bundle.path(), "bin/run", None)),
        CommandProblem::Symlink("bin".to_owned())
    );
}

#[test]
fn a_symlinked_final_file_is_refused() {
    let bundle = tempfile::tempdir().unwrap();
    write_file(&bundle.path().join("bin/real"), 0o755);
    std::os::unix::fs::symlink("real", bundle.path().join("bin/run")).unwrap();
    assert_eq!(
        problem(resolve_command(bundle.path(), "bin/run", None)),
        CommandProblem::Symlink("bin/run".to_owned())
    );
}

#[test]
fn a_symlink_in_the_bundle_root_is_not_the_bundles_program() {
    let bundle = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    write_file(&elsewhere.path().join("tool"), 0o755);
    std::os::unix::fs::symlink(elsewhere.path().join("tool"), bundle.path().join("tool")).unwrap();
    assert_eq!(
        problem(resolve_command(
            bundle.path(),
            "tool",
            Some("/nonexistent".as_ref())
        )),
        CommandProblem::NotFound
    );
}

#[test]
fn a_file_without_execute_bit_is_refused() {
    let bundle = tempfile::tempdir().unwrap();
    write_file(&bundle.path().join("bin/run"), 0o644);
    assert_eq!(
        problem(resolve_command(bundle.path(), "bin/run", None)),
        CommandProblem::NotExecutable
    );
}

#[test]
fn a_directory_is_not_a_program() {
    let bundle = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(bundle.path().join("bin/run")).unwrap();
    assert_eq!(
        problem(resolve_command(bundle.path(), "bin/run", None)),
        CommandProblem::NotAFile
    );
}

#[test]
fn an_empty_command_is_refused() {
    assert_eq!(
        problem(resolve_command(Path::new("/"), "", None)),
        CommandProblem::Empty
    );
}

#[test]
fn lines_are_split_across_chunks_and_carriage_returns_dropped() {
    assert_eq!(
        lines(64, &[b"one\r\ntw", b"o\nthree"]),
        ["one", "two", "three"]
    );
}

#[test]
fn a_long_line_is_cut_with_a_marker_and_the_next_line_is_intact() {
    let long = vec![b'a'; 10];
    let out = lines(4, &[&long, b"bc\nok\n"]);
    assert_eq!(
        out,
        ["aaaa [… 8 more bytes cut: line longer than 4 bytes]", "ok"]
    );
}

#[test]
fn invalid_utf8_is_shown_lossily() {
    assert_eq!(lines(64, &[b"bad \xff byte\n"]), ["bad \u{fffd} byte"]);
}

#[test]
fn exits_read_as_sentences() {
    assert_eq!(Exit::Code(3).to_string(), "exited with code 3");
    assert_eq!(Exit::Signal(9).to_string(), "killed by signal 9 (SIGKILL)");
    assert!(Exit::Code(0).success());
    assert!(!Exit::Signal(15).success());
}

#[test]
fn shim_arguments_carry_the_host_pid_program_argv0_and_args_in_order() {
    use std::ffi::{OsStr, OsString};
    let args = crate::shim::shim_args(
        42,
        OsStr::new("/bin/prog"),
        OsStr::new("prog"),
        &[OsString::from("a b"), OsString::from("")],
    );
    let expected: Vec<OsString> = [crate::shim::SHIM_FLAG, "42", "/bin/prog", "prog", "a b", ""]
        .iter()
        .map(OsString::from)
        .collect();
    assert_eq!(args, expected);
}

#[test]
fn group_containment_needs_no_shim_and_a_missing_explicit_shim_is_named() {
    use crate::Containment;
    assert_eq!(crate::shim::locate(&Containment::Group), Ok(None));
    let missing = std::path::PathBuf::from("/nonexistent/shim");
    assert_eq!(
        crate::shim::locate(&Containment::ShimAt(missing.clone())),
        Err(vec![missing])
    );
    let here = std::env::current_exe().unwrap();
    assert_eq!(
        crate::shim::locate(&Containment::ShimAt(here.clone())),
        Ok(Some(here))
    );
}

#[test]
fn the_parent_of_this_process_is_read_from_proc() {
    let me = i32::try_from(std::process::id()).unwrap();
    let parent = u32::try_from(nix::unistd::getppid().as_raw()).unwrap();
    assert_eq!(crate::shim::parent_of(me), Some(parent));
}

#[test]
fn a_spec_frame_round_trips_and_a_bad_frame_is_refused() {
    use std::ffi::OsString;
    let spec = crate::ProcessSpec::new("prog", "/work dir")
        .args(["a", "", "b c"])
        .env("NAME", "value=with=equals")
        .env("EMPTY", "");
    let prepared = crate::process::Prepared {
        program: "prog".to_owned(),
        resolved: "/usr/bin/prog".into(),
        shim: None,
    };
    let frame = crate::warm::encode(&spec, &prepared);
    let mut rest = frame.as_slice();
    let decoded = crate::warm::decode(|buf: &mut [u8]| {
        let (head, tail) = rest.split_at(buf.len());
        buf.copy_from_slice(head);
        rest = tail;
        Ok(())
    })
    .unwrap();
    assert!(rest.is_empty(), "exactly the frame is read");
    assert_eq!(decoded.program, OsString::from("/usr/bin/prog"));
    assert_eq!(decoded.arg0, OsString::from("prog"));
    assert_eq!(decoded.cwd, std::path::PathBuf::from("/work dir"));
    assert_eq!(
        decoded.args,
        vec![OsString::from("a"), OsString::new(), OsString::from("b c")]
    );
    assert_eq!(decoded.env.len(), 2);
    let bad = crate::warm::decode(|buf: &mut [u8]| {
        buf.fill(b'x');
        Ok(())
    });
    assert!(bad.unwrap_err().contains("spec frame"));
}

mod reaper_pool {
    use std::sync::mpsc;
    use std::thread::ThreadId;
    use std::time::{Duration, Instant};

    use crate::reaper::Pool;

    /// Runs a job on `pool` that reports the thread it ran on.
    fn thread_of(pool: &'static Pool) -> ThreadId {
        let (tx, rx) = mpsc::channel();
        pool.run(Box::new(move || {
            tx.send(std::thread::current().id()).unwrap();
        }))
        .unwrap();
        rx.recv_timeout(Duration::from_secs(10)).unwrap()
    }

    fn until(what: &str, condition: impl Fn() -> bool) {
        let start = Instant::now();
        while !condition() {
            assert!(start.elapsed() < Duration::from_secs(10), "{what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_reaper_thread_whose_job_is_done_takes_the_next_one() {
        static POOL: Pool = Pool::new(2, Duration::from_secs(30));
        let first = thread_of(&POOL);
        until("the thread is idle", || POOL.idle() == 1);
        assert_eq!(thread_of(&POOL), first);
        until("the thread is idle again", || POOL.idle() == 1);
    }

    #[test]
    fn jobs_at_once_get_a_thread_each_and_only_the_bound_stays_idle() {
        static POOL: Pool = Pool::new(2, Duration::from_secs(30));
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = std::sync::Arc::new(std::sync::Mutex::new(release_rx));
        let (ran_tx, ran_rx) = mpsc::channel();
        for _ in 0..4 {
            let ran = ran_tx.clone();
            let release = release_rx.clone();
            POOL.run(Box::new(move || {
                ran.send(std::thread::current().id()).unwrap();
                // Blocks until released, like a reaper waiting for its child's death.
                let _ = release
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(10));
            }))
            .unwrap();
        }
        let mut threads: Vec<ThreadId> = (0..4)
            .map(|_| ran_rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        threads.sort_by_key(|id| format!("{id:?}"));
        threads.dedup();
        assert_eq!(threads.len(), 4, "no job waited for another's thread");
        drop(release_tx);
        until("two threads stay idle", || POOL.idle() == 2);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(POOL.idle(), 2, "the others ended");
    }

    #[test]
    fn an_idle_reaper_thread_ends_after_its_linger() {
        static POOL: Pool = Pool::new(2, Duration::from_millis(500));
        let first = thread_of(&POOL);
        until("the thread is idle", || POOL.idle() == 1);
        until("the idle thread ends", || POOL.idle() == 0);
        // A job after that gets a new thread.
        assert_ne!(thread_of(&POOL), first);
    }
}

#[test]
fn latency_buckets_are_ordered_and_each_holds_its_own_range() {
    let mut last = 0;
    for micros in [
        0u64,
        1,
        7,
        8,
        9,
        10,
        15,
        16,
        100,
        1_000,
        65_000,
        1 << 30,
        u64::MAX,
    ] {
        let index = crate::usage::bucket(micros);
        assert!(index >= last, "{micros}");
        last = index;
        if micros < 1 << 40 {
            assert!(micros < crate::usage::bucket_end(index), "{micros}");
            if index > 0 {
                assert!(micros >= crate::usage::bucket_end(index - 1), "{micros}");
            }
        }
    }
}

#[test]
fn a_call_meter_counts_and_gives_percentiles_within_a_quarter() {
    use std::time::Duration;
    let meter = crate::CallMeter::default();
    assert_eq!(meter.stats().p50, None);
    for _ in 0..98 {
        meter.record(Duration::from_millis(1), true);
    }
    meter.record(Duration::from_millis(400), false);
    meter.record(Duration::from_millis(400), true);
    let stats = meter.stats();
    assert_eq!((stats.served, stats.failed), (100, 1));
    let p50 = stats.p50.unwrap();
    assert!(
        p50 > Duration::from_millis(1) && p50 <= Duration::from_micros(1250),
        "{p50:?}"
    );
    let p99 = stats.p99.unwrap();
    assert!(
        p99 > Duration::from_millis(400) && p99 <= Duration::from_millis(500),
        "{p99:?}"
    );
}

#[test]
fn the_usage_of_a_tree_sums_its_processes() {
    let me = std::process::id();
    let usage = crate::usage::tree_usage(&[me], None);
    assert!(usage.processes >= 1);
    assert!(usage.rss_bytes > 0 && usage.open_fds > 0, "{usage:?}");
    assert!(!usage.truncated);
    let gone = crate::usage::tree_usage(&[u32::MAX - 1], None);
    assert_eq!(gone, crate::Usage::default());
}

#[test]
fn vitals_count_one_crash_per_process_within_the_window() {
    use std::time::{Duration, Instant};
    let vitals = crate::Vitals::default();
    let t0 = Instant::now();
    let window = Duration::from_secs(60);
    vitals.crashed(
        t0,
        "process_exited",
        "ignored: nothing started".into(),
        vec![],
    );
    vitals.started(t0);
    vitals.crashed(t0, "process_exited", "first".into(), vec![]);
    vitals.crashed(
        t0,
        "process_exited",
        "the same crash seen twice".into(),
        vec![],
    );
    vitals.started(t0 + Duration::from_secs(1));
    vitals.crashed(
        t0 + Duration::from_secs(2),
        "process_exited",
        "second".into(),
        vec!["boom".into()],
    );
    vitals.meter().record(Duration::from_millis(3), false);
    vitals.dropped_event();
    let health = vitals.snapshot(
        t0 + Duration::from_secs(3),
        window,
        crate::HealthState::Dormant,
        None,
    );
    assert_eq!((health.starts, health.crashes), (2, 2));
    let failure = health.last_failure.unwrap();
    assert_eq!(failure.message, "second");
    assert_eq!(failure.stderr_tail, ["boom"]);
    assert_eq!(failure.ago, Duration::from_secs(1));
    assert_eq!((health.calls.served, health.calls.failed), (1, 1));
    assert_eq!(health.dropped_events, 1);
    assert_eq!(health.pid, None);
    let later = vitals.snapshot(
        t0 + Duration::from_secs(100),
        window,
        crate::HealthState::Dormant,
        None,
    );
    assert_eq!((later.starts, later.crashes), (0, 0));
}
