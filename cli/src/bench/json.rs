//! The report as JSON (`--json FILE`, `--format json`): every row with all its samples.

use xbarrier_bench::{Report, Row, Status, Verdict};

use crate::check::{json_number, json_string};

fn optional_string(text: Option<&str>) -> String {
    text.map_or_else(|| "null".to_owned(), json_string)
}

fn optional_number(x: Option<f64>) -> String {
    x.map_or_else(|| "null".to_owned(), json_number)
}

fn row(row: &Row) -> String {
    let (status, detail) = match &row.status {
        Status::Measured { .. } => ("measured", ""),
        Status::Incorrect(why) => ("incorrect", why.as_str()),
        Status::Skipped(why) => ("skipped", why.as_str()),
        Status::Failed(why) => ("failed", why.as_str()),
    };
    let samples = match &row.status {
        Status::Measured { samples, .. } => samples.iter().map(|&s| json_number(s)).collect::<Vec<_>>().join(", "),
        _ => String::new(),
    };
    let verdict = match row.verdict() {
        Verdict::Pass => Some("pass"),
        Verdict::Miss => Some("miss"),
        Verdict::Unknown => Some("unknown"),
        Verdict::None => None,
    };
    let target = row.target.map(|_| row.target_text());
    format!(
        "    {{\"benchmark\": {}, \"config\": {}, \"implementation\": {}, \"unit\": {}, \"status\": {}, \"value\": {}, \"samples\": [{samples}], \"baseline\": {}, \"ratio\": {}, \"target\": {}, \"verdict\": {}, \"detail\": {}}}",
        json_string(row.benchmark.name()),
        json_string(&row.config),
        json_string(row.implementation),
        json_string(row.unit.name()),
        json_string(status),
        optional_number(row.value()),
        optional_string(row.baseline),
        optional_number(row.ratio),
        optional_string(target.as_deref()),
        optional_string(verdict),
        json_string(detail)
    )
}

/// One object: the device, the build, the device's facts, every row, the notes and the counts.
pub fn render(report: &Report) -> String {
    let d = &report.device;
    let rows: Vec<String> = report.rows.iter().map(row).collect();
    let notes: Vec<String> = report.notes.iter().map(|n| json_string(n)).collect();
    let facts: Vec<String> =
        report.facts.iter().map(|(label, value)| format!("{}: {}", json_string(label), json_string(value))).collect();
    let count = |pred: fn(&Status) -> bool| report.rows.iter().filter(|r| pred(&r.status)).count();
    format!(
        "{{\n  \"xbar\": {},\n  \"device\": {{\"backend\": {}, \"name\": {}, \"arch\": {}, \"multiprocessors\": {}}},\n  \"checked\": {},\n  \"facts\": {{{}}},\n  \"rows\": [\n{}\n  ],\n  \"notes\": [{}],\n  \"summary\": {{\"measured\": {}, \"incorrect\": {}, \"failed\": {}, \"skipped\": {}, \"targets_passed\": {}, \"targets_missed\": {}}}\n}}\n",
        json_string(env!("CARGO_PKG_VERSION")),
        json_string(d.backend.name()),
        json_string(&d.name),
        json_string(&d.arch),
        d.multiprocessors,
        report.checked,
        facts.join(", "),
        rows.join(",\n"),
        notes.join(", "),
        count(|s| matches!(s, Status::Measured { .. })),
        report.incorrect(),
        report.failed(),
        count(|s| matches!(s, Status::Skipped(_))),
        report.passed(),
        report.missed()
    )
}
