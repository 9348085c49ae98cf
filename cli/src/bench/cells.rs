//! One report row as text cells, shared by the table and the markdown.

use xbarrier_bench::{Report, Row, Status, Unit};

/// The column headers, in order.
pub const HEADER: [&str; 10] =
    ["BENCHMARK", "CONFIG", "IMPLEMENTATION", "VALUE", "UNIT", "VS", "RATIO", "TARGET", "VERDICT", "CORRECT"];

/// A value with the precision its unit deserves.
pub fn value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::GigabytesPerSecond => format!("{v:.0}"),
        Unit::Cycles | Unit::Nanoseconds => format!("{v:.1}"),
        Unit::Microseconds => format!("{v:.2}"),
    }
}

/// The row's cells, in [`HEADER`] order.
pub fn cells(row: &Row) -> [String; 10] {
    [
        row.benchmark.name().to_owned(),
        row.config.clone(),
        row.implementation.to_owned(),
        row.value().map_or_else(|| "-".to_owned(), |v| value(row.unit, v)),
        row.unit.name().to_owned(),
        row.baseline.unwrap_or("").to_owned(),
        row.ratio.map_or_else(String::new, |r| format!("{r:.2}")),
        row.target_text(),
        row.verdict().name().to_owned(),
        row.correctness().to_owned(),
    ]
}

/// Why a row has no value (empty when it has one).
pub fn detail(row: &Row) -> String {
    match &row.status {
        Status::Measured { .. } => String::new(),
        Status::Incorrect(why) => format!("wrong: {why}"),
        Status::Skipped(why) => format!("skipped: {why}"),
        Status::Failed(why) => format!("failed: {why}"),
    }
}

/// The samples' range, `min-max`, when there is more than one.
pub fn spread(row: &Row) -> String {
    match &row.status {
        Status::Measured { samples, .. } if samples.len() > 1 => {
            let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
            let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("{}-{}", value(row.unit, min), value(row.unit, max))
        }
        _ => String::new(),
    }
}

/// `NVIDIA H200; sm_90, 132 multiprocessors; cuda backend; release build ...`.
pub fn device_line(report: &Report) -> String {
    let d = &report.device;
    format!(
        "{}; {}, {} multiprocessors; {} backend; {}",
        d.name,
        d.arch,
        d.multiprocessors,
        d.backend,
        if report.checked { "checked build (numbers not comparable)" } else { "release build (unchecked device code)" }
    )
}
