use super::*;

fn args(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn options_accept_both_format_spellings_and_quick() {
    let json = Options {
        json: true,
        quick: true,
        peers: false,
        only: Vec::new(),
    };
    assert_eq!(parse_options(&args("--format json --quick")).unwrap(), json);
    assert_eq!(parse_options(&args("--quick --format=json")).unwrap(), json);
    assert!(!parse_options(&args("--format table")).unwrap().json);
}

#[test]
fn only_selects_phases_and_nothing_selects_all() {
    let options = parse_options(&args("--only throughput,64k")).unwrap();
    assert!(options.runs("throughput") && options.runs("64k"));
    assert!(!options.runs("invoke"));
    let all = parse_options(&[]).unwrap();
    assert!(PHASES.iter().all(|p| all.runs(p)));
    let peers = parse_options(&args("--peers --only relay")).unwrap();
    assert!(peers.peers && peers.runs("sdk") && peers.runs("relay"));
    assert!(!peers.runs("invoke"));
}

#[test]
fn every_timed_row_has_a_pinned_twin_and_no_row_is_expected_twice() {
    let mut all = parse_options(&args("--peers")).unwrap();
    let rows = expected_rows(&all);
    let mut sorted = rows.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), rows.len());
    for row in [
        "invoke_warm_p50",
        "sdk_cold_activation",
        "relay_ts_invoke_p50",
    ] {
        assert!(rows.contains(&row.to_owned()));
        assert!(rows.contains(&format!("{row}_pinned")));
    }
    assert!(rows.contains(&"vs_rmcp_warm_p50_pinned".to_owned()));
    all.peers = false;
    assert!(!expected_rows(&all).iter().any(|r| r.contains("rmcp")));
    let only = parse_options(&args("--only 64k")).unwrap();
    assert_eq!(expected_rows(&only), ["invoke_64k", "invoke_64k_pinned"]);
}

#[test]
fn a_missing_row_fails_the_run() {
    let options = parse_options(&args("--only 64k")).unwrap();
    let figure = |name: &str| report::Figure {
        name: name.to_owned(),
        value: 1.0,
        unit: "us",
        baseline: "b".to_owned(),
        baseline_value: 1.0,
        bar: report::Bar::None,
    };
    let one = [figure("invoke_64k")];
    let error = check_rows(&one, &options).unwrap_err().to_string();
    assert!(error.contains("invoke_64k_pinned"), "{error}");
    let both = [figure("invoke_64k"), figure("invoke_64k_pinned")];
    assert!(check_rows(&both, &options).is_ok());
    let twice = [
        figure("invoke_64k"),
        figure("invoke_64k"),
        figure("invoke_64k_pinned"),
    ];
    assert!(check_rows(&twice, &options).is_err());
}

#[test]
fn unknown_options_and_formats_are_refused() {
    assert!(parse_options(&args("--fast")).is_err());
    assert!(parse_options(&args("--format yaml")).is_err());
    assert!(parse_options(&args("--format")).is_err());
    assert!(parse_options(&args("--only warp")).is_err());
    assert!(parse_options(&args("--only")).is_err());
}

#[test]
fn options_survive_forwarding_to_the_release_run() {
    for text in [
        "",
        "--quick",
        "--format json",
        "--format json --quick --only invoke,dormant",
        "--peers --only relay",
    ] {
        let options = parse_options(&args(text)).unwrap();
        assert_eq!(parse_options(&forwarded(&options)).unwrap(), options);
    }
}
