//! The statistics every figure is made of: per-round order statistics, medians across rounds,
//! and the interleaving of a measurement with its baseline so drift hits both alike.

use std::time::{Duration, Instant};

/// The `q` quantile (0..=1) of `samples` by the nearest-rank method; `None` when empty.
///
/// Nearest rank (no interpolation) so a p99 is always a latency that really happened.
pub(crate) fn quantile(samples: &[f64], q: f64) -> Option<f64> {
    if samples.is_empty() || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    // The smallest rank r with r / n >= q, 1-based; rank 1 for q = 0.
    let n = sorted.len();
    let rank = (q * n as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(n) - 1).copied()
}

/// The median (nearest rank, lower middle for an even count).
pub(crate) fn median(samples: &[f64]) -> Option<f64> {
    quantile(samples, 0.5)
}

/// The 99th percentile (nearest rank).
pub(crate) fn p99(samples: &[f64]) -> Option<f64> {
    quantile(samples, 0.99)
}

/// Samples taken round by round: one inner vector per round.
pub(crate) type Rounds = Vec<Vec<f64>>;

/// Runs `rounds` rounds of every side, rotating which side goes first (A B, B A, A B, ... for
/// two sides), so a slow drift of the machine, or a cache warmed by one side, lands on every
/// side alike. Each closure runs one round and returns its samples; the result has one
/// [`Rounds`] per side, in the order given.
pub(crate) fn interleave(rounds: usize, sides: &mut [&mut dyn FnMut() -> Vec<f64>]) -> Vec<Rounds> {
    let n = sides.len();
    let mut out: Vec<Rounds> = vec![Vec::with_capacity(rounds); n];
    for round in 0..rounds {
        for k in 0..n {
            let side = (round + k) % n;
            out[side].push(sides[side]());
        }
    }
    out
}

/// The median over rounds of `statistic` applied to each round; rounds without samples are
/// skipped, and no round at all gives NaN (which fails any bar).
pub(crate) fn median_over_rounds(rounds: &Rounds, statistic: fn(&[f64]) -> Option<f64>) -> f64 {
    let per_round: Vec<f64> = rounds.iter().filter_map(|r| statistic(r)).collect();
    median(&per_round).unwrap_or(f64::NAN)
}

/// Every sample of every round, for figures with one sample per round.
pub(crate) fn flatten(rounds: &Rounds) -> Vec<f64> {
    rounds.iter().flatten().copied().collect()
}

/// Microseconds, the unit every latency is reported in.
pub(crate) fn micros(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1e6
}

/// Times `iterations` calls of `work` and returns microseconds per call; for operations too
/// short to time one by one.
pub(crate) fn per_call_us(iterations: usize, mut work: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..iterations {
        work();
    }
    micros(start.elapsed()) / iterations.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_an_odd_count_is_the_middle_value_whatever_the_order() {
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
    }

    #[test]
    fn median_of_an_even_count_is_the_lower_middle() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.0));
    }

    #[test]
    fn quantiles_of_nothing_are_none() {
        assert_eq!(median(&[]), None);
        assert_eq!(p99(&[]), None);
        assert_eq!(quantile(&[1.0], 1.5), None);
    }

    #[test]
    fn p99_of_a_hundred_samples_is_the_ninety_ninth_smallest() {
        let samples: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(p99(&samples), Some(99.0));
        assert_eq!(quantile(&samples, 1.0), Some(100.0));
        assert_eq!(quantile(&samples, 0.0), Some(1.0));
    }

    #[test]
    fn p99_of_few_samples_is_their_maximum() {
        assert_eq!(p99(&[3.0, 9.0, 1.0]), Some(9.0));
    }

    #[test]
    fn interleaving_rotates_which_side_runs_first() {
        let log = std::cell::RefCell::new(String::new());
        let mut a = || {
            log.borrow_mut().push('A');
            vec![1.0]
        };
        let mut b = || {
            log.borrow_mut().push('B');
            vec![2.0]
        };
        let sides = interleave(4, &mut [&mut a, &mut b]);
        assert_eq!(log.take(), "ABBAABBA");
        assert_eq!(sides, vec![vec![vec![1.0]; 4], vec![vec![2.0]; 4]]);
    }

    #[test]
    fn three_sides_each_lead_in_turn() {
        let log = std::cell::RefCell::new(String::new());
        let mut a = || {
            log.borrow_mut().push('A');
            Vec::new()
        };
        let mut b = || {
            log.borrow_mut().push('B');
            Vec::new()
        };
        let mut c = || {
            log.borrow_mut().push('C');
            Vec::new()
        };
        interleave(3, &mut [&mut a, &mut b, &mut c]);
        assert_eq!(log.take(), "ABCBCACAB");
    }

    #[test]
    fn the_median_over_rounds_takes_each_rounds_statistic_first() {
        let subject = vec![
            vec![1.0, 100.0, 2.0],
            vec![3.0, 4.0, 5.0],
            vec![10.0, 11.0, 12.0],
        ];
        // Round medians 2, 4, 11 -> 4; round maxima 100, 5, 12 -> 12.
        assert_eq!(median_over_rounds(&subject, median), 4.0);
        assert_eq!(median_over_rounds(&subject, p99), 12.0);
        // The empty round is skipped: 1, 2 -> 1; no rounds at all is NaN.
        assert_eq!(
            median_over_rounds(&vec![vec![1.0], vec![], vec![2.0]], median),
            1.0
        );
        assert!(median_over_rounds(&Vec::new(), median).is_nan());
    }

    #[test]
    fn flatten_keeps_every_sample_in_round_order() {
        assert_eq!(
            flatten(&vec![vec![1.0], vec![2.0, 3.0]]),
            vec![1.0, 2.0, 3.0]
        );
    }
}
