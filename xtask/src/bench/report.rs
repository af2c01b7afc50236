//! One figure per benchmark, its bar, and the two renderings: a table for people and one JSON
//! document for machines.

use serde_json::{Value, json};

use super::machine::Machine;
use super::pin::Mode;

/// The mode each row was measured in: a `_pinned` row in pinned rounds, a row with a `_pinned`
/// twin in free ones, any other in no particular mode (in-process CPU costs, memory, rates).
pub(crate) fn modes(figures: &[Figure]) -> Vec<Option<Mode>> {
    let names: std::collections::HashSet<&str> = figures.iter().map(|f| f.name.as_str()).collect();
    figures
        .iter()
        .map(|f| {
            if f.name.ends_with(Mode::Pinned.suffix()) {
                Some(Mode::Pinned)
            } else if names.contains(format!("{}{}", f.name, Mode::Pinned.suffix()).as_str()) {
                Some(Mode::Free)
            } else {
                None
            }
        })
        .collect()
}

/// Whether each row is flagged on `machine`: a reason whose scope covers the row's mode.
pub(crate) fn flagged(figures: &[Figure], machine: &Machine) -> Vec<bool> {
    let reasons = machine.reasons();
    modes(figures)
        .into_iter()
        .map(|mode| reasons.iter().any(|r| r.scope.covers(mode)))
        .collect()
}

/// What a figure's bar is checked against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Bar {
    /// The ratio to the baseline must not exceed the limit.
    RatioAtMost(f64),
    /// The ratio to the baseline must reach the limit.
    RatioAtLeast(f64),
    /// The value itself must not exceed the limit.
    ValueAtMost(f64),
    /// Informational: no bar.
    None,
}

impl Bar {
    fn text(self) -> String {
        match self {
            Bar::RatioAtMost(limit) => format!("ratio <= {limit}"),
            Bar::RatioAtLeast(limit) => format!("ratio >= {limit}"),
            Bar::ValueAtMost(limit) => format!("value <= {limit}"),
            Bar::None => "-".to_owned(),
        }
    }
}

/// One measured figure against a baseline measured in the same run.
#[derive(Debug, Clone)]
pub(crate) struct Figure {
    pub(crate) name: String,
    pub(crate) value: f64,
    pub(crate) unit: &'static str,
    pub(crate) baseline: String,
    pub(crate) baseline_value: f64,
    pub(crate) bar: Bar,
}

impl Figure {
    pub(crate) fn ratio(&self) -> f64 {
        self.value / self.baseline_value
    }

    /// `None` for an informational figure; a figure that could not be computed (NaN) fails.
    pub(crate) fn pass(&self) -> Option<bool> {
        let ratio = self.ratio();
        match self.bar {
            Bar::RatioAtMost(limit) => Some(ratio <= limit),
            Bar::RatioAtLeast(limit) => Some(ratio >= limit),
            Bar::ValueAtMost(limit) => Some(self.value <= limit),
            Bar::None => None,
        }
    }
}

/// Rounds to three significant decimals for display and JSON; NaN and infinities become null.
fn number(value: f64) -> Value {
    if value.is_finite() {
        json!((value * 1000.0).round() / 1000.0)
    } else {
        Value::Null
    }
}

/// `{"machine":{...},"flagged":bool,"reasons":[...],"benchmarks":[...]}`, one object per
/// figure, each with its own `flagged`; a reason is `{"rows": "all"|"free"|"pinned", "reason"}`.
pub(crate) fn json(figures: &[Figure], machine: &Machine) -> Value {
    let benchmarks: Vec<Value> = figures
        .iter()
        .zip(flagged(figures, machine))
        .map(|(f, flagged)| {
            json!({
                "name": f.name,
                "value": number(f.value),
                "unit": f.unit,
                "baseline": f.baseline,
                "baseline_value": number(f.baseline_value),
                "ratio": number(f.ratio()),
                "bar": f.bar.text(),
                "pass": f.pass(),
                "flagged": flagged,
            })
        })
        .collect();
    let reasons: Vec<Value> = machine
        .reasons()
        .into_iter()
        .map(|r| json!({"rows": r.scope.as_str(), "reason": r.text}))
        .collect();
    json!({
        "machine": machine.json(),
        "flagged": !reasons.is_empty(),
        "reasons": reasons,
        "benchmarks": benchmarks,
    })
}

fn cell(value: f64) -> String {
    if !value.is_finite() {
        "n/a".to_owned()
    } else if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

/// The machine's state, then an aligned plain-text table; a flagged row's pass column ends in
/// `*`.
pub(crate) fn table(figures: &[Figure], machine: &Machine) -> String {
    let header = [
        "name",
        "value",
        "unit",
        "baseline",
        "baseline value",
        "ratio",
        "bar",
        "pass",
    ]
    .map(str::to_owned);
    let mut rows = vec![header.to_vec()];
    for (f, flagged) in figures.iter().zip(flagged(figures, machine)) {
        let pass = match f.pass() {
            Some(true) => "pass",
            Some(false) => "FAIL",
            None => "-",
        };
        let pass = if flagged {
            format!("{pass}*")
        } else {
            pass.to_owned()
        };
        rows.push(vec![
            f.name.clone(),
            cell(f.value),
            f.unit.to_owned(),
            f.baseline.clone(),
            cell(f.baseline_value),
            cell(f.ratio()),
            f.bar.text(),
            pass,
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = machine.text();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(text, width)| format!("{text:<width$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(value: f64, baseline_value: f64, bar: Bar) -> Figure {
        Figure {
            name: "invoke_warm_p50".to_owned(),
            value,
            unit: "us",
            baseline: "echo_floor_p50".to_owned(),
            baseline_value,
            bar,
        }
    }

    #[test]
    fn bars_judge_the_ratio_or_the_value_as_declared() {
        assert_eq!(figure(40.0, 4.0, Bar::RatioAtMost(10.0)).pass(), Some(true));
        assert_eq!(
            figure(44.0, 4.0, Bar::RatioAtMost(10.0)).pass(),
            Some(false)
        );
        assert_eq!(figure(20.0, 4.0, Bar::RatioAtLeast(5.0)).pass(), Some(true));
        assert_eq!(
            figure(16.0, 4.0, Bar::RatioAtLeast(5.0)).pass(),
            Some(false)
        );
        assert_eq!(
            figure(33.0, 1.0, Bar::ValueAtMost(32.0)).pass(),
            Some(false)
        );
        assert_eq!(figure(1.0, 1.0, Bar::None).pass(), None);
    }

    #[test]
    fn a_figure_that_could_not_be_measured_fails_its_bar() {
        assert_eq!(
            figure(f64::NAN, 4.0, Bar::RatioAtMost(10.0)).pass(),
            Some(false)
        );
    }

    #[test]
    fn json_output_is_one_document_with_the_documented_keys() {
        let doc = json(
            &[figure(40.0, 4.0, Bar::RatioAtMost(10.0))],
            &Machine::example(),
        );
        let entry = &doc["benchmarks"][0];
        for key in [
            "name",
            "value",
            "unit",
            "baseline",
            "baseline_value",
            "ratio",
        ] {
            assert!(entry.get(key).is_some(), "missing {key} in {entry}");
        }
        assert_eq!(entry["ratio"], json!(10.0));
        assert_eq!(entry["pass"], json!(true));
        assert_eq!(doc["flagged"], json!(true));
        assert_eq!(entry["flagged"], json!(true));
        assert!(doc["machine"]["cpus"].is_number());
        assert_eq!(doc["reasons"][0]["rows"], json!("all"));
    }

    #[test]
    fn the_table_has_a_header_and_one_line_per_figure() {
        let machine = Machine::example();
        let text = table(&[figure(40.0, 4.0, Bar::RatioAtMost(10.0))], &machine);
        let lines: Vec<&str> = text.lines().skip(machine.text().lines().count()).collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("name"));
        assert!(text.contains("not a measurement, do not publish"));
        assert!(lines[1].contains("invoke_warm_p50") && lines[1].ends_with("pass*"));
    }

    #[test]
    fn a_floor_off_flags_only_the_rows_of_its_mode() {
        let mut machine = Machine::example();
        machine.load_start = Some([0.1, 0.1, 0.1]);
        machine.quiet.floor_p50_us = 60.0;
        machine.quiet.floor_p50_us_pinned = 6.0;
        let named = |name: &str| Figure {
            name: name.to_owned(),
            ..figure(1.0, 1.0, Bar::None)
        };
        let figures = [
            named("invoke_warm_p50"),
            named("invoke_warm_p50_pinned"),
            named("validate_manifest"),
        ];
        assert_eq!(
            modes(&figures),
            [Some(Mode::Free), Some(Mode::Pinned), None]
        );
        // The free floor of the example (6 us) is 10x off the quiet 60: the free row only.
        assert_eq!(flagged(&figures, &machine), [true, false, false]);
        let text = table(&figures, &machine);
        assert!(text.contains("the free rows"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("validate_manifest") && l.ends_with('-'))
        );
    }
}
