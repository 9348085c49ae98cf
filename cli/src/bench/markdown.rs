//! The report as markdown (`--out FILE`): a record of one run, with its device and notes.

use std::fmt::Write as _;

use xbarrier_bench::Report;

use super::cells::{cells, detail, device_line, spread, HEADER};
use super::summary;

/// `|` would end a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A heading, the device, the table with each row's sample range and detail, notes, summary.
pub fn render(report: &Report) -> String {
    let mut text = String::from("# xbar bench\n\n");
    let _ = writeln!(text, "- device: {}", device_line(report));
    for (label, value) in &report.facts {
        let _ = writeln!(text, "- {label}: {value}");
    }
    let _ = writeln!(text, "- xbar {}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(
        text,
        "- values are medians of the timed launches (range in `samples`); ratios are value / the `vs` row's value; \
         every row's results were checked (`correct`)\n"
    );
    let header: Vec<String> =
        HEADER.iter().map(|h| h.to_lowercase()).chain(["samples".to_owned(), "detail".to_owned()]).collect();
    let _ = writeln!(text, "| {} |", header.join(" | "));
    let align: Vec<&str> = (0..header.len()).map(|i| if matches!(i, 3 | 6) { "---:" } else { "---" }).collect();
    let _ = writeln!(text, "| {} |", align.join(" | "));
    for row in &report.rows {
        let mut fields: Vec<String> = cells(row).iter().map(|c| cell(c)).collect();
        fields.push(cell(&spread(row)));
        fields.push(cell(&detail(row)));
        let _ = writeln!(text, "| {} |", fields.join(" | "));
    }
    if !report.notes.is_empty() {
        text.push_str("\nNotes:\n\n");
        for note in &report.notes {
            let _ = writeln!(text, "- {note}");
        }
    }
    let _ = writeln!(text, "\n{}", summary(report));
    text
}
