//! The report as an aligned text table (stdout) and one-line progress messages (stderr).

use std::fmt::Write as _;

use xbarrier_bench::{Report, Row};

use super::cells::{cells, detail, device_line, value, HEADER};
use super::summary;

/// The widest the detail column gets.
const DETAIL_WIDTH: usize = 90;

/// `round-trip 256 threads xb native: 84.1 cycles` (or why it has no value).
pub fn progress_line(row: &Row) -> String {
    let outcome = match row.value() {
        Some(v) => format!("{} {}", value(row.unit, v), row.unit),
        None => detail(row),
    };
    format!("{} {} {}: {outcome}", row.benchmark, row.config, row.implementation)
}

/// `text` on one line, cut to `width` characters.
fn one_line(text: &str, width: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= width {
        return flat;
    }
    let mut cut: String = flat.chars().take(width.saturating_sub(3)).collect();
    cut.push_str("...");
    cut
}

/// The device line and its facts, the table (a blank line between benchmarks), notes, and
/// the summary.
pub fn render(report: &Report) -> String {
    let mut text = format!("xbar bench: {}\n", device_line(report));
    let width = report.facts.iter().map(|(label, _)| label.len()).max().unwrap_or(0) + 1;
    for (label, value) in &report.facts {
        let _ = writeln!(text, "  {:<width$} {value}", format!("{label}:"));
    }
    text.push('\n');
    let rows: Vec<[String; 11]> = report
        .rows
        .iter()
        .map(|row| {
            let [a, b, c, d, e, f, g, h, i, j] = cells(row);
            [a, b, c, d, e, f, g, h, i, j, one_line(&detail(row), DETAIL_WIDTH)]
        })
        .collect();
    let header: [&str; 11] = {
        let [a, b, c, d, e, f, g, h, i, j] = HEADER;
        [a, b, c, d, e, f, g, h, i, j, "DETAIL"]
    };
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 11]| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i].saturating_sub(cell.chars().count()));
            // Numbers right-aligned, text left-aligned.
            if matches!(i, 3 | 6) {
                s.push_str(&pad);
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&pad);
            }
            s.push_str("  ");
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    text.push_str(&line(header));
    let mut previous = None;
    for (row, cells) in report.rows.iter().zip(&rows) {
        if previous.is_some_and(|p| p != row.benchmark) {
            text.push('\n');
        }
        previous = Some(row.benchmark);
        text.push_str(&line(cells.each_ref().map(String::as_str)));
    }
    if !report.notes.is_empty() {
        text.push_str("\nnotes:\n");
        for note in &report.notes {
            let _ = writeln!(text, "  - {note}");
        }
    }
    let _ = writeln!(text, "\n{}", summary(report));
    text
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn details_are_flattened_and_cut() {
        assert_eq!(one_line("a\n b", 10), "a b");
        assert_eq!(one_line("abcdefgh", 6), "abc...");
    }
}
