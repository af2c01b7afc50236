use std::time::Duration;

use c2_supervisor::{Error, Exit, ProcessSpec, RunOptions};

use crate::support::{self, is_our_child, sh};

#[tokio::test]
async fn a_one_shot_command_returns_its_status_and_both_outputs() {
    let _guard = support::shared().await;
    let output = c2_supervisor::run(
        &sh("echo out; echo err >&2; exit 3"),
        &RunOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(output.exit, Exit::Code(3));
    assert_eq!(output.stdout, b"out\n");
    assert_eq!(output.stderr, b"err\n");
}

#[tokio::test]
async fn a_one_shot_command_gets_an_empty_stdin() {
    let _guard = support::shared().await;
    let output = c2_supervisor::run(&sh("cat; echo end"), &RunOptions::default())
        .await
        .unwrap();
    assert_eq!(output.stdout, b"end\n");
}

#[tokio::test]
async fn output_past_the_cap_is_an_error_naming_the_cap_and_the_group_is_killed() {
    let _guard = support::shared().await;
    let options = RunOptions {
        stdout_max: 1000,
        ..RunOptions::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let script = "echo $$ > pid; head -c 5000 /dev/zero; sleep 300 & wait";
    let spec = ProcessSpec::new("sh", dir.path()).args(["-c", script]);

    let error = c2_supervisor::run(&spec, &options).await.unwrap_err();

    assert!(
        matches!(
            error,
            Error::OutputTooLarge {
                stream: "stdout",
                cap: 1000,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("more than 1000 bytes to stdout"),
        "{error}"
    );
    let leader: i32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!is_our_child(leader));
    assert!(
        support::group_dies(leader).await,
        "group {leader} has survivors"
    );
}

#[tokio::test]
async fn output_exactly_at_the_cap_is_accepted() {
    let _guard = support::shared().await;
    let options = RunOptions {
        stdout_max: 1000,
        ..RunOptions::default()
    };
    let output = c2_supervisor::run(&sh("head -c 1000 /dev/zero"), &options)
        .await
        .unwrap();
    assert_eq!(output.stdout.len(), 1000);
}

#[tokio::test]
async fn a_command_past_its_deadline_is_killed_with_its_group() {
    let _guard = support::shared().await;
    let options = RunOptions {
        deadline: Duration::from_millis(300),
        ..RunOptions::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let spec = ProcessSpec::new("sh", dir.path()).args(["-c", "echo $$ > pid; sleep 300 & wait"]);

    let error = c2_supervisor::run(&spec, &options).await.unwrap_err();

    assert!(matches!(error, Error::DeadlineExceeded { .. }), "{error:?}");
    let leader: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!is_our_child(leader));
    assert!(
        support::group_dies(leader).await,
        "group {leader} has survivors"
    );
}
