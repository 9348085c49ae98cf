//! `xbar check`: runs the suites and prints the outcomes as a table or JSON.

use std::cell::Cell;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use xbarrier::{visit_backends, Backend, BackendKind, BackendVisitor};
use xbarrier_conformance::{all_cases, Outcome, Status, Suite};

use crate::device::{self, BackendArg, Image};
use crate::output::emit;

/// The widest the detail column gets in the table (unless `--full`).
const DETAIL_WIDTH: usize = 80;

/// Options of `xbar check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Run only the cases whose name contains SUBSTRING (e.g. `tx`, `max_values`)
    #[arg(short, long, value_name = "SUBSTRING")]
    filter: Option<String>,
    /// Which suite to run
    #[arg(short, long, value_enum, default_value_t = SuiteArg::All)]
    suite: SuiteArg,
    /// Run on this backend only (default: every backend this build has); its device 0 must open
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// How to print the outcomes
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// List the cases that would run, without running them
    #[arg(long)]
    list: bool,
    /// Print no progress lines on stderr
    #[arg(short, long)]
    quiet: bool,
    /// Print the detail column untruncated
    #[arg(long)]
    full: bool,
}

/// The suites `--suite` chooses from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SuiteArg {
    /// Semantics that must hold on every backend
    Conformance,
    /// Barrier misuse that checked device code must report as a fault
    Misuse,
    /// Both suites
    All,
}

impl SuiteArg {
    fn includes(self, suite: Suite) -> bool {
        match self {
            SuiteArg::All => true,
            SuiteArg::Conformance => suite == Suite::Conformance,
            SuiteArg::Misuse => suite == Suite::Misuse,
        }
    }
}

/// The output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A table grouped by feature, then a summary line
    Table,
    /// A JSON array with one object per case (the summary goes to stderr)
    Json,
}

/// One case of one backend, before it runs.
struct Entry {
    backend: BackendKind,
    feature: &'static str,
    case: &'static str,
    suite: Suite,
}

/// Lists every case of every enabled backend.
struct Catalog;

impl BackendVisitor for Catalog {
    type Output = Vec<Entry>;
    fn visit<B: Backend>(&mut self) -> Vec<Entry> {
        all_cases::<B>()
            .into_iter()
            .map(|c| Entry { backend: B::KIND, feature: c.feature, case: c.name, suite: c.suite })
            .collect()
    }
}

fn suite_name(suite: Suite) -> &'static str {
    match suite {
        Suite::Conformance => "conformance",
        Suite::Misuse => "misuse",
    }
}

/// Runs `xbar check`.
pub fn run(args: &CheckArgs) -> ExitCode {
    let catalog: Vec<Entry> = visit_backends(&mut Catalog).into_iter().flatten().collect();
    if catalog.is_empty() {
        eprintln!("xbar: error: this build has no backend enabled; rebuild with `--features host` (or cuda, hip)");
        return ExitCode::from(2);
    }
    let only = args.backend.map(BackendArg::kind);
    if let Some(Err(message)) = only.map(device::require_built) {
        eprintln!("xbar: error: {message}");
        return ExitCode::from(2);
    }
    let matches = |entry: &Entry| {
        args.suite.includes(entry.suite)
            && args.filter.as_deref().is_none_or(|f| entry.case.contains(f))
            && only.is_none_or(|kind| entry.backend == kind)
    };
    let selected: Vec<&Entry> = catalog.iter().filter(|e| matches(e)).collect();
    if selected.is_empty() {
        let filter = args.filter.as_deref().map(|f| format!(" --filter {f:?}")).unwrap_or_default();
        eprintln!(
            "xbar: error: no case matched{filter} in the {} suite{} ({} cases exist; `xbar check --list` shows them)",
            match args.suite {
                SuiteArg::All => "conformance and misuse",
                SuiteArg::Conformance => "conformance",
                SuiteArg::Misuse => "misuse",
            },
            if args.suite == SuiteArg::All { "s" } else { "" },
            catalog.len()
        );
        return ExitCode::from(2);
    }

    if args.list {
        let text = match args.format {
            Format::Table => list_table(&selected),
            Format::Json => list_json(&selected),
        };
        return emit(&text, ExitCode::SUCCESS);
    }

    // The devices the selected cases run on: with --backend, one that does not open is an
    // error; otherwise such a backend's cases are ignored (their detail says why).
    let mut backends: Vec<BackendKind> = Vec::new();
    for entry in &selected {
        if !backends.contains(&entry.backend) {
            backends.push(entry.backend);
        }
    }
    let mut facts = String::new();
    for &kind in backends.iter().filter(|&&kind| kind != BackendKind::Host || only.is_some()) {
        match device_facts(kind) {
            Ok(text) => {
                facts.push_str(&text);
                facts.push('\n');
            }
            Err(e) if only.is_some() => {
                eprintln!("xbar: error: no {kind} device 0 to check: {e}");
                eprintln!("  fix: {}", device::fix(kind, &e));
                return ExitCode::from(2);
            }
            Err(_) => {}
        }
    }
    if args.format == Format::Json && !args.quiet {
        eprint!("{facts}");
    }

    // Case names are unique within a backend, so a name decides whether a case runs.
    let names: HashSet<&str> = selected.iter().map(|e| e.case).collect();
    let total = selected.len();
    let done = Cell::new(0usize);
    let progress = |outcome: &Outcome| {
        done.set(done.get() + 1);
        if !args.quiet {
            let (result, _) = result_and_detail(&outcome.status);
            eprintln!(
                "[{:>width$}/{total}] {} {}: {result} ({:.2} s)",
                done.get(),
                outcome.target(),
                outcome.case,
                outcome.seconds,
                width = total.to_string().len()
            );
        }
    };
    let mut outcomes = xbarrier_conformance::check_on(&backends, &|name| names.contains(name), &progress);
    if gpu_required() {
        require_gpus(&mut outcomes);
    }

    let count = |pred: fn(&Status) -> bool| outcomes.iter().filter(|o| pred(&o.status)).count();
    let passed = count(|s| matches!(s, Status::Passed(_)));
    let failed = count(|s| matches!(s, Status::Failed(_)));
    let ignored = count(|s| matches!(s, Status::Ignored(_)));
    let summary = format!("{passed} passed, {failed} failed, {ignored} ignored");

    let text = match args.format {
        Format::Table => {
            let mut text = facts;
            text.push_str(&table(&outcomes, args.full));
            text.push_str(&summary);
            text.push('\n');
            text
        }
        Format::Json => {
            eprintln!("{summary}");
            json(&outcomes)
        }
    };
    let code = if failed > 0 {
        ExitCode::FAILURE
    } else if passed == 0 {
        if ignored > 0 {
            eprintln!(
                "xbar: error: no case ran: all {ignored} matching cases were ignored (see the detail column for why)"
            );
        } else {
            eprintln!("xbar: error: no case ran");
        }
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    };
    emit(&text, code)
}

/// What `xbar check` prints about device 0 of `kind` before the table, or why it does not open.
fn device_facts(kind: BackendKind) -> Result<String, xbarrier::Error> {
    let bundle = xbarrier_conformance::bundle()?;
    let variants = bundle.variants(kind);
    Ok(device::facts(kind, 0, &Image { bundle: &bundle, variants })?.render())
}

/// Whether a GPU backend without a device fails the run (`XBAR_REQUIRE_GPU=1`, as for the
/// libtest suites).
fn gpu_required() -> bool {
    std::env::var("XBAR_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Turns the cases a GPU backend skipped for want of a device into failures.
fn require_gpus(outcomes: &mut [Outcome]) {
    for outcome in outcomes.iter_mut().filter(|o| o.backend != BackendKind::Host) {
        if let Status::Ignored(reason) = &outcome.status {
            if reason.starts_with("no device") {
                outcome.status =
                    Status::Failed(format!("XBAR_REQUIRE_GPU=1 but the {} backend has {reason}", outcome.backend));
            }
        }
    }
}

/// The RESULT column and the detail of a status.
fn result_and_detail(status: &Status) -> (&'static str, &str) {
    match status {
        Status::Passed(detail) => ("PASS", detail),
        Status::Failed(detail) => ("FAIL", detail),
        Status::Ignored(detail) => ("IGNORED", detail),
    }
}

/// `text` on one line, cut to `width` characters (with `...` when cut).
fn one_line(text: &str, width: Option<usize>) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match width {
        Some(width) if flat.chars().count() > width => {
            let mut cut: String = flat.chars().take(width.saturating_sub(3)).collect();
            cut.push_str("...");
            cut
        }
        _ => flat,
    }
}

/// The table: rows grouped by feature (features in order of first appearance), a blank
/// line between groups, then the full text of every failure.
fn table(outcomes: &[Outcome], full: bool) -> String {
    let mut features: Vec<&str> = Vec::new();
    for o in outcomes {
        if !features.contains(&o.feature) {
            features.push(o.feature);
        }
    }
    let header = ["BACKEND", "FEATURE", "CASE", "RESULT", "SECONDS", "DETAIL"];
    let rows: Vec<(&str, [String; 6])> = features
        .iter()
        .flat_map(|&feature| outcomes.iter().filter(move |o| o.feature == feature))
        .map(|o| {
            let (result, detail) = result_and_detail(&o.status);
            let detail = one_line(detail, (!full).then_some(DETAIL_WIDTH));
            (
                o.feature,
                [
                    o.target(),
                    o.feature.to_owned(),
                    o.case.to_owned(),
                    result.to_owned(),
                    format!("{:.3}", o.seconds),
                    detail,
                ],
            )
        })
        .collect();
    let mut widths = header.map(str::len);
    for (_, row) in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 6]| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            match i {
                4 => s.push_str(&format!("{}{cell}", " ".repeat(pad))),
                5 => s.push_str(cell),
                _ => s.push_str(&format!("{cell}{}", " ".repeat(pad))),
            }
            if i < 5 {
                s.push_str("  ");
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut text = line(header);
    let mut previous: Option<&str> = None;
    for (feature, row) in &rows {
        if previous.is_some_and(|p| p != *feature) {
            text.push('\n');
        }
        previous = Some(feature);
        text.push_str(&line([&row[0], &row[1], &row[2], &row[3], &row[4], &row[5]]));
    }
    let failures: Vec<&Outcome> = outcomes.iter().filter(|o| matches!(o.status, Status::Failed(_))).collect();
    if !failures.is_empty() {
        text.push_str("\nfailures:\n");
        for o in failures {
            let (_, detail) = result_and_detail(&o.status);
            let _ = writeln!(
                text,
                "  [{}] {} ({}): {}",
                o.target(),
                o.case,
                o.feature,
                detail.trim_end().replace('\n', "\n      ")
            );
        }
    }
    text.push('\n');
    text
}

/// `text` as a JSON string literal.
pub(crate) fn json_string(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", u32::from(c));
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// `x` as a JSON number (`null` when not finite).
pub(crate) fn json_number(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        "null".to_owned()
    }
}

/// The outcomes as a JSON array, one object per case, in run order.
fn json(outcomes: &[Outcome]) -> String {
    let objects: Vec<String> = outcomes
        .iter()
        .map(|o| {
            let (result, detail) = result_and_detail(&o.status);
            format!(
                "  {{\"backend\": {}, \"variant\": {}, \"feature\": {}, \"case\": {}, \"suite\": {}, \"result\": {}, \"seconds\": {}, \"detail\": {}}}",
                json_string(o.backend.name()),
                json_string(o.variant.name()),
                json_string(o.feature),
                json_string(o.case),
                json_string(suite_name(o.suite)),
                json_string(result),
                json_number(o.seconds),
                json_string(detail)
            )
        })
        .collect();
    if objects.is_empty() {
        "[]\n".to_owned()
    } else {
        format!("[\n{}\n]\n", objects.join(",\n"))
    }
}

/// `--list` as a table.
fn list_table(entries: &[&Entry]) -> String {
    let w_case = entries.iter().map(|e| e.case.len()).max().unwrap_or(0).max("CASE".len());
    let w_feature = entries.iter().map(|e| e.feature.len()).max().unwrap_or(0).max("FEATURE".len());
    let mut text = format!("{:<7}  {:<w_feature$}  {:<w_case$}  SUITE\n", "BACKEND", "FEATURE", "CASE");
    for e in entries {
        let _ = writeln!(
            text,
            "{:<7}  {:<w_feature$}  {:<w_case$}  {}",
            e.backend.name(),
            e.feature,
            e.case,
            suite_name(e.suite)
        );
    }
    let _ = writeln!(text, "{} cases", entries.len());
    text
}

/// `--list` as JSON.
fn list_json(entries: &[&Entry]) -> String {
    let objects: Vec<String> = entries
        .iter()
        .map(|e| {
            format!(
                "  {{\"backend\": {}, \"feature\": {}, \"case\": {}, \"suite\": {}}}",
                json_string(e.backend.name()),
                json_string(e.feature),
                json_string(e.case),
                json_string(suite_name(e.suite))
            )
        })
        .collect();
    format!("[\n{}\n]\n", objects.join(",\n"))
}

#[cfg(test)]
mod tests {
    use super::{json_string, one_line};

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_string("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
    }

    #[test]
    fn details_are_flattened_and_cut() {
        assert_eq!(one_line("a\n  b", None), "a b");
        assert_eq!(one_line("abcdefgh", Some(6)), "abc...");
        assert_eq!(one_line("äöü", Some(3)), "äöü");
    }
}
