use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("b{i:02}")).collect()
}

/// Runs a search to its end against a monotone oracle: the problem shows when every bundle of
/// some culprit set is enabled.
fn run(n: usize, culprits: &[Vec<usize>]) -> Bisection {
    let candidates = names(n);
    let mut bisection = Bisection::new(candidates.clone());
    let sets: Vec<BTreeSet<&str>> = culprits
        .iter()
        .map(|set| set.iter().map(|i| candidates[*i].as_str()).collect())
        .collect();
    while let Some(enabled) = bisection.testing() {
        assert!(bisection.steps().len() <= 4 * n + 4, "the search must end");
        let enabled: BTreeSet<&str> = enabled.iter().map(String::as_str).collect();
        let bad = sets.iter().any(|set| set.is_subset(&enabled));
        bisection.record(if bad { Verdict::Bad } else { Verdict::Good });
    }
    bisection
}

fn log2_ceil(n: usize) -> usize {
    (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize
}

#[test]
fn a_single_culprit_among_twelve_is_isolated_in_four_steps_and_confirmed_in_the_fifth() {
    for culprit in 0..12 {
        let candidates = names(12);
        let mut bisection = Bisection::new(candidates.clone());
        let mut halving = 0;
        while !bisection.is_confirming() && bisection.outcome().is_none() {
            let enabled = bisection.testing().unwrap();
            let bad = enabled.contains(&candidates[culprit]);
            bisection.record(if bad { Verdict::Bad } else { Verdict::Good });
            halving += 1;
        }
        assert!(halving <= 4, "culprit {culprit}: {halving} halving steps");
        assert_eq!(
            bisection.suspect().or(match bisection.outcome() {
                Some(Outcome::Culprit { id }) => Some(id.as_str()),
                _ => None,
            }),
            Some(candidates[culprit].as_str())
        );
        let done = run(12, &[vec![culprit]]);
        assert_eq!(
            done.outcome(),
            Some(&Outcome::Culprit {
                id: candidates[culprit].clone()
            })
        );
        assert!(done.steps().len() <= 5);
    }
}

#[test]
fn a_pair_that_only_fails_together_is_named() {
    let done = run(12, &[vec![2, 9]]);
    assert_eq!(
        done.outcome(),
        Some(&Outcome::Pair {
            ids: ["b02".into(), "b09".into()]
        })
    );
    assert!(done.steps().len() <= 2 * 4 + 2);
}

#[test]
fn a_failure_that_needs_three_reports_the_smallest_set_found() {
    let done = run(8, &[vec![1, 4, 6]]);
    // The first five and the seventh: the seventh and fifth are needed, the rest not narrowed.
    let expected = ["b00", "b01", "b02", "b03", "b04", "b06"]
        .map(String::from)
        .to_vec();
    assert_eq!(done.outcome(), Some(&Outcome::Set { ids: expected }));
}

#[test]
fn one_candidate_is_the_culprit_without_a_step_and_none_is_inconclusive() {
    let one = Bisection::new(names(1));
    assert_eq!(one.outcome(), Some(&Outcome::Culprit { id: "b00".into() }));
    let none = Bisection::new(Vec::new());
    assert!(matches!(none.outcome(), Some(Outcome::Inconclusive { .. })));
    assert_eq!(none.testing(), None);
}

#[test]
fn skipping_every_split_ends_inconclusive_with_the_range() {
    let mut bisection = Bisection::new(names(4));
    while bisection.testing().is_some() {
        bisection.record(Verdict::Skip);
    }
    assert_eq!(
        bisection.outcome(),
        Some(&Outcome::Inconclusive { suspects: names(4) })
    );
    assert_eq!(bisection.steps().len(), 3);
}

#[test]
fn a_skipped_split_is_replaced_by_a_neighbour() {
    let candidates = names(8);
    let mut bisection = Bisection::new(candidates.clone());
    let first = bisection.testing().unwrap();
    bisection.record(Verdict::Skip);
    let second = bisection.testing().unwrap();
    assert_ne!(first.len(), second.len());
    while let Some(enabled) = bisection.testing() {
        let bad = enabled.contains(&candidates[5]);
        bisection.record(if bad { Verdict::Bad } else { Verdict::Good });
    }
    assert_eq!(
        bisection.outcome(),
        Some(&Outcome::Culprit { id: "b05".into() })
    );
}

#[test]
fn the_state_round_trips_through_json() {
    let mut bisection = Bisection::new(names(6));
    bisection.record(Verdict::Good);
    bisection.record(Verdict::Skip);
    let text = serde_json::to_string(&bisection).unwrap();
    let back: Bisection = serde_json::from_str(&text).unwrap();
    assert_eq!(back, bisection);
}

#[test]
fn the_state_file_is_written_read_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let file = BisectFile::new(dir.path());
    assert_eq!(file.load().unwrap(), None);
    let mut record = BisectRecord::new(None, 7, Bisection::new(names(3)));
    record.disabled.insert("b01".into(), Restore::Enable);
    file.save(&record).unwrap();
    assert_eq!(file.load().unwrap(), Some(record));
    std::fs::write(file.path(), b"{").unwrap();
    assert!(matches!(
        file.load(),
        Err(crate::Error::BisectUnusable { .. })
    ));
    file.remove().unwrap();
    file.remove().unwrap();
    assert_eq!(file.load().unwrap(), None);
}

/// Whether `set` makes the problem show under `culprits`.
fn fails(set: &BTreeSet<usize>, culprits: &[Vec<usize>]) -> bool {
    culprits
        .iter()
        .any(|culprit| culprit.iter().all(|i| set.contains(i)))
}

proptest! {
    #[test]
    fn a_single_culprit_is_found_in_log2_steps_plus_one(n in 1usize..40, pick in any::<prop::sample::Index>()) {
        let culprit = pick.index(n);
        let done = run(n, &[vec![culprit]]);
        prop_assert_eq!(done.outcome(), Some(&Outcome::Culprit { id: names(n)[culprit].clone() }));
        prop_assert!(done.steps().len() <= log2_ceil(n) + 1);
    }

    #[test]
    fn a_pair_is_found_exactly(n in 2usize..40, a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let (a, b) = (a.index(n), b.index(n));
        prop_assume!(a != b);
        let (x, y) = (a.min(b), a.max(b));
        let done = run(n, &[vec![x, y]]);
        let candidates = names(n);
        prop_assert_eq!(done.outcome(), Some(&Outcome::Pair { ids: [candidates[x].clone(), candidates[y].clone()] }));
        prop_assert!(done.steps().len() <= 2 * log2_ceil(n) + 2);
    }

    /// Whatever the culprit sets (of at most two), the result fails and is minimal: it is
    /// one culprit set.
    #[test]
    fn any_culprit_family_yields_one_of_its_sets(
        n in 1usize..24,
        picks in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<bool>()), 1..4),
    ) {
        let culprits: Vec<Vec<usize>> = picks
            .iter()
            .map(|(a, b, pair)| {
                let mut set = vec![a.index(n)];
                if *pair && b.index(n) != a.index(n) {
                    set.push(b.index(n));
                }
                set
            })
            .collect();
        let done = run(n, &culprits);
        let candidates = names(n);
        let index = |id: &String| candidates.iter().position(|c| c == id).unwrap();
        let found: BTreeSet<usize> = match done.outcome().unwrap() {
            Outcome::Culprit { id } => [index(id)].into(),
            Outcome::Pair { ids } => ids.iter().map(index).collect(),
            other => return Err(TestCaseError::fail(format!("unexpected {other:?}"))),
        };
        prop_assert!(fails(&found, &culprits));
        for dropped in &found {
            let mut smaller = found.clone();
            smaller.remove(dropped);
            prop_assert!(!fails(&smaller, &culprits));
        }
    }
}
