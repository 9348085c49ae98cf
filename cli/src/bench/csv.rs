//! The report as CSV (`--format csv`): a header, then one line per row (measured or not),
//! numbers unrounded, the samples `;`-separated in one field (RFC 4180 quoting).

use xbarrier_bench::{Report, Row, Status};

/// The header line's fields.
pub const HEADER: [&str; 13] = [
    "benchmark",
    "config",
    "implementation",
    "value",
    "unit",
    "vs",
    "ratio",
    "target",
    "verdict",
    "correct",
    "status",
    "samples",
    "detail",
];

/// Quotes a field that holds a comma, a quote or a line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

fn line(row: &Row) -> String {
    let (status, detail, samples) = match &row.status {
        Status::Measured { samples, .. } => {
            ("measured", "", samples.iter().map(f64::to_string).collect::<Vec<_>>().join(";"))
        }
        Status::Incorrect(why) => ("incorrect", why.as_str(), String::new()),
        Status::Skipped(why) => ("skipped", why.as_str(), String::new()),
        Status::Failed(why) => ("failed", why.as_str(), String::new()),
    };
    let fields = [
        row.benchmark.name().to_owned(),
        row.config.clone(),
        row.implementation.to_owned(),
        row.value().map(|v| v.to_string()).unwrap_or_default(),
        row.unit.name().to_owned(),
        row.baseline.unwrap_or_default().to_owned(),
        row.ratio.map(|r| r.to_string()).unwrap_or_default(),
        row.target_text(),
        row.verdict().name().to_lowercase(),
        row.correctness().to_owned(),
        status.to_owned(),
        samples,
        detail.to_owned(),
    ];
    fields.iter().map(|f| field(f)).collect::<Vec<_>>().join(",")
}

/// The header and every row, each line ending in `\n`.
pub fn render(report: &Report) -> String {
    let mut text = HEADER.join(",");
    text.push('\n');
    for row in &report.rows {
        text.push_str(&line(row));
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn quoting() {
        assert_eq!(field("raw PTX"), "raw PTX");
        assert_eq!(field("a, b"), "\"a, b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
