//! `xbar bench`: runs the benchmarks (the `xbarrier-bench` crate) on one backend's device and
//! prints the table (or `--format json|csv|markdown`); writes it as markdown (`--out`) and
//! JSON (`--json`), and draws it as SVG bars (`--plot`).

mod cells;
mod csv;
mod json;
mod markdown;
mod plot;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use xbarrier::{visit_backends, Backend, BackendKind, BackendVisitor, Device};
use xbarrier_bench::{Benchmark, Config, Report, Row, Status, Verdict};

use crate::device::{self, BackendArg, Image};
use crate::output::emit;

/// Options of `xbar bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The backend to run on (default: cuda if built in, else hip, else host)
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// The device ordinal
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Run only these benchmarks (comma-separated)
    #[arg(long, value_enum, value_delimiter = ',', value_name = "BENCHMARK")]
    only: Vec<BenchmarkArg>,
    /// What to print on stdout
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Also write the report as markdown to FILE
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Also write the report as JSON to FILE
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also draw the measurements to FILE as SVG: grouped bars per configuration, xb beside each baseline
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Smaller sizes and fewer repetitions, for a smoke run (not for the record)
    #[arg(long)]
    quick: bool,
    /// Timed launches per row (the value is their median)
    #[arg(long, value_name = "N")]
    reps: Option<u32>,
    /// Block sizes of the round trip (comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "THREADS")]
    threads: Vec<u32>,
    /// MiB the reduction reads and the copy copies
    #[arg(long, value_name = "MIB")]
    size_mib: Option<u64>,
    /// Shared-memory stages of the reduction and copy pipelines
    #[arg(long, value_name = "N")]
    stages: Option<u32>,
    /// KiB per pipeline stage
    #[arg(long, value_name = "KIB")]
    stage_kib: Option<u32>,
    /// Persistent pipeline blocks per multiprocessor
    #[arg(long, value_name = "N")]
    blocks_per_sm: Option<u32>,
    /// Consumer warps per reduction block
    #[arg(long, value_name = "N")]
    consumer_warps: Option<u32>,
    /// Fail (exit 1) when a target is missed, not only when a result is wrong
    #[arg(long)]
    strict: bool,
    /// Print no progress lines on stderr
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BenchmarkArg {
    /// Block barrier arrive + wait (cycles per phase)
    RoundTrip,
    /// Streaming reduction through shared-memory stages (GB/s)
    Reduction,
    /// Streaming copy: bulk loads and stores (GB/s)
    Copy,
    /// Device-scope barrier across a cooperative grid (ns)
    GridBarrier,
    /// Messages through a flag in plain memory between two blocks (ns)
    MessagePassing,
    /// A host thread and a kernel thread meeting phase after phase (us)
    HostRoundTrip,
    /// Kernels on two devices meeting phase after phase (us)
    MultiGpu,
}

impl BenchmarkArg {
    fn benchmark(self) -> Benchmark {
        match self {
            BenchmarkArg::RoundTrip => Benchmark::RoundTrip,
            BenchmarkArg::Reduction => Benchmark::Reduction,
            BenchmarkArg::Copy => Benchmark::Copy,
            BenchmarkArg::GridBarrier => Benchmark::GridBarrier,
            BenchmarkArg::MessagePassing => Benchmark::MessagePassing,
            BenchmarkArg::HostRoundTrip => Benchmark::HostRoundTrip,
            BenchmarkArg::MultiGpu => Benchmark::MultiGpu,
        }
    }
}

/// What goes to stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// The table, then a summary line
    Table,
    /// The JSON report
    Json,
    /// CSV: a header, then one line per row
    Csv,
    /// The markdown report
    Markdown,
}

/// Runs `xbar bench`.
pub fn run(args: &BenchArgs) -> ExitCode {
    let enabled = xbarrier::enabled_backends();
    let kind = match args.backend.map(BackendArg::kind) {
        Some(kind) => match device::require_built(kind) {
            Ok(()) => kind,
            Err(message) => {
                eprintln!("xbar: error: {message}");
                return ExitCode::from(2);
            }
        },
        None => {
            match [BackendKind::Cuda, BackendKind::Hip, BackendKind::Host].into_iter().find(|k| enabled.contains(k)) {
                Some(kind) => kind,
                None => {
                    eprintln!(
                        "xbar: error: this build has no backend enabled; rebuild with `--features cuda` (or host)"
                    );
                    return ExitCode::from(2);
                }
            }
        }
    };
    visit_backends(&mut OnBackend { args, kind }).into_iter().flatten().next().unwrap_or(ExitCode::from(2))
}

/// Runs the benchmarks on the backend `kind` (the one visit whose backend it is).
struct OnBackend<'a> {
    args: &'a BenchArgs,
    kind: BackendKind,
}

impl BackendVisitor for OnBackend<'_> {
    type Output = Option<ExitCode>;
    fn visit<B: Backend>(&mut self) -> Option<ExitCode> {
        (B::KIND == self.kind).then(|| run_on::<B>(self.args))
    }
}

/// The configuration: the backend's defaults, `--quick`, then the explicit options.
fn config_for(kind: BackendKind, args: &BenchArgs) -> Config {
    let mut config = if kind == BackendKind::Host { Config::host() } else { Config::gpu() };
    if args.quick && kind != BackendKind::Host {
        config.stream_bytes = 256 << 20;
        config.round_trip_iters = 2_000;
        config.grid_iters = 1_000;
        config.multi_gpu_phases = 500;
        config.warmup = 1;
        config.reps = 3;
    }
    if !args.only.is_empty() {
        config.benchmarks =
            Benchmark::ALL.into_iter().filter(|b| args.only.iter().any(|o| o.benchmark() == *b)).collect();
    }
    if !args.threads.is_empty() {
        config.round_trip_threads.clone_from(&args.threads);
    }
    if let Some(reps) = args.reps {
        config.reps = reps;
    }
    if let Some(mib) = args.size_mib {
        config.stream_bytes = mib.saturating_mul(1 << 20);
    }
    for pipeline in [&mut config.reduction, &mut config.copy] {
        if let Some(stages) = args.stages {
            pipeline.stages = stages;
        }
        if let Some(kib) = args.stage_kib {
            pipeline.stage_bytes = kib.saturating_mul(1 << 10);
        }
        if let Some(blocks) = args.blocks_per_sm {
            pipeline.blocks_per_sm = blocks;
        }
    }
    if let Some(warps) = args.consumer_warps {
        config.consumer_warps = warps;
    }
    config
}

fn run_on<B: Backend>(args: &BenchArgs) -> ExitCode {
    let device = match Device::<B>::open(args.device) {
        Ok(device) => device,
        Err(e) => {
            eprintln!("xbar: error: no {} device {} to benchmark: {e}", B::KIND, args.device);
            eprintln!("  fix: {}", device::fix(B::KIND, &e));
            return ExitCode::from(2);
        }
    };
    // What a bug report needs about the device; printed with the error if nothing runs.
    let facts = xbarrier_bench::bundle().and_then(|bundle| {
        let variants = bundle.variants(B::KIND);
        device::facts(B::KIND, args.device, &Image { bundle: &bundle, variants })
    });
    if xbarrier::CHECKED {
        let features = if B::KIND == BackendKind::Host { String::new() } else { format!(" --features {}", B::KIND) };
        eprintln!(
            "xbar: warning: checked build: device code checks every barrier operation and runs the protocol, so these numbers say little and no target is judged; benchmark a release build (`cargo run --release -p xbar{features} -- bench`)"
        );
    }
    let config = config_for(B::KIND, args);
    let quiet = args.quiet;
    let progress = |row: &Row| {
        if !quiet {
            eprintln!("[bench] {}", table::progress_line(row));
        }
    };
    let mut report = match xbarrier_bench::run(&device, &config, &progress) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("xbar: error: the benchmarks cannot run: {e}");
            match &facts {
                Ok(facts) => eprint!("{}", facts.render()),
                Err(e) => eprintln!("(the device's facts are unavailable too: {e})"),
            }
            return ExitCode::from(2);
        }
    };
    report.facts = match facts {
        Ok(facts) => facts.lines.into_iter().map(|(label, value)| (label.to_owned(), value)).collect(),
        Err(e) => vec![("facts".to_owned(), format!("unavailable: {e}"))],
    };
    if B::KIND == BackendKind::Host && args.only.is_empty() {
        report.notes.push(
            "the CPU backend runs the round trip and message passing (its kernel threads are fibers): the \
             reduction, copy and grid-barrier benchmarks measure GPUs; build xbar with `--features cuda` (`--only` \
             runs them here at small sizes)"
                .to_owned(),
        );
    }

    for (path, text) in [(&args.out, markdown::render(&report)), (&args.json, json::render(&report))] {
        if let Some(path) = path {
            if let Err(e) = std::fs::write(path, text) {
                eprintln!("xbar: error: writing {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    if let Some(path) = &args.plot {
        if let Err(e) = plot::write(&report, path) {
            eprintln!("xbar: error: plotting to {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    let code = exit_code(&report, args.strict);
    let text = match args.format {
        Format::Table => table::render(&report),
        Format::Json | Format::Csv => {
            // stdout is for the machine; the summary goes to the person.
            eprintln!("{}", summary(&report));
            if args.format == Format::Json {
                json::render(&report)
            } else {
                csv::render(&report)
            }
        }
        Format::Markdown => markdown::render(&report),
    };
    emit(&text, code)
}

/// 1 when a result was wrong or a measurement failed (or, with `--strict`, a target was
/// missed or could not be judged); else 0.
fn exit_code(report: &Report, strict: bool) -> ExitCode {
    let unjudged = report.rows.iter().filter(|r| r.verdict() == Verdict::Unknown).count();
    if report.incorrect() > 0 || report.failed() > 0 || (strict && report.missed() + unjudged > 0) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `N measured, N wrong, N failed, N skipped; targets: N pass, N MISS`.
pub(crate) fn summary(report: &Report) -> String {
    let count = |pred: fn(&Status) -> bool| report.rows.iter().filter(|r| pred(&r.status)).count();
    let measured = count(|s| matches!(s, Status::Measured { .. }));
    let skipped = count(|s| matches!(s, Status::Skipped(_)));
    format!(
        "{measured} measured, {} wrong, {} failed, {skipped} skipped; targets: {} pass, {} MISS",
        report.incorrect(),
        report.failed(),
        report.passed(),
        report.missed()
    )
}

#[cfg(test)]
mod tests {
    use xbarrier::{BackendKind, DeviceInfo};
    use xbarrier_bench::{Benchmark, Report, Row, Status, Target, Unit};

    use super::{csv, exit_code, json, markdown, plot, table};

    fn row(implementation: &'static str, status: Status) -> Row {
        Row {
            benchmark: Benchmark::RoundTrip,
            config: "256 threads".into(),
            implementation,
            unit: Unit::Cycles,
            status,
            baseline: None,
            ratio: None,
            target: None,
        }
    }

    /// A report as an H200 run would produce it, rendered every way.
    #[test]
    fn a_gpu_report_renders_in_every_format() {
        let measured = |v: f64| Status::Measured { value: v, samples: vec![v - 1.0, v, v + 2.0] };
        let mut xb = row("xb native", measured(86.0));
        xb.baseline = Some("raw PTX");
        xb.ratio = Some(86.0 / 84.0);
        xb.target = Some(Target::RatioAtMost(1.0));
        let mut emulated = row("xb emulated", Status::Incorrect("3 threads read a stale | slot".into()));
        emulated.baseline = Some("raw PTX");
        emulated.target = Some(Target::RatioAtMost(2.0));
        let report = Report {
            device: DeviceInfo::new(BackendKind::Cuda, 0, "NVIDIA H200", "sm_90"),
            checked: false,
            rows: vec![xb, emulated, row("raw PTX", measured(84.0))],
            notes: vec!["a note".into()],
            facts: vec![("wall clock".into(), "100 MHz (hipDeviceAttributeWallClockRate)".into())],
        };
        let text = table::render(&report);
        let xb_line = text.lines().find(|l| l.contains("xb native")).unwrap_or_default();
        for cell in ["86.0", "cycles", "raw PTX", "1.02", "<= 1.00x raw PTX", "MISS", "ok"] {
            assert!(xb_line.contains(cell), "{cell} missing from {xb_line}\n{text}");
        }
        assert!(text.contains("WRONG") && text.contains("wrong: 3 threads"), "{text}");
        assert!(text.contains("2 measured, 1 wrong, 0 failed, 0 skipped; targets: 0 pass, 1 MISS"), "{text}");
        assert_eq!(text.lines().nth(1), Some("  wall clock: 100 MHz (hipDeviceAttributeWallClockRate)"), "{text}");

        let md = markdown::render(&report);
        assert!(md.contains("| round-trip | 256 threads | xb native | 86.0 | cycles | raw PTX | 1.02 |"), "{md}");
        assert!(md.contains("| 85.0-88.0 |") && md.contains("stale \\| slot"), "{md}");
        assert!(md.contains("\n- wall clock: 100 MHz (hipDeviceAttributeWallClockRate)\n"), "{md}");

        let json = json::render(&report);
        for field in [
            "\"verdict\": \"miss\"",
            "\"status\": \"incorrect\"",
            "\"samples\": [85.000000, 86.000000, 88.000000]",
            "\"facts\": {\"wall clock\": \"100 MHz (hipDeviceAttributeWallClockRate)\"}",
        ] {
            assert!(json.contains(field), "{field} missing from {json}");
        }
        assert_eq!(exit_code(&report, false), std::process::ExitCode::FAILURE);

        let csv = csv::render(&report);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4, "{csv}");
        assert!(lines[0].starts_with("benchmark,config,implementation,value,unit,vs,ratio,"), "{csv}");
        assert!(lines[1].starts_with("round-trip,256 threads,xb native,86,cycles,raw PTX,1.0238"), "{csv}");
        assert!(lines[1].contains(",<= 1.00x raw PTX,miss,ok,measured,85;86;88,"), "{csv}");
        assert!(lines[2].ends_with(",WRONG,incorrect,,3 threads read a stale | slot"), "{csv}");

        // Two bars (the wrong row has no value), a linear axis (84 to 86 is no 30x span).
        let path = std::env::temp_dir().join(format!("xbar-plot-unit-{}.svg", std::process::id()));
        plot::write(&report, &path).unwrap_or_else(|e| panic!("{e}"));
        let svg = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        for text in ["round-trip", "xb native", "raw PTX", "256 threads", "cycles per phase (lower is better)"] {
            assert!(svg.lines().any(|l| l.trim() == text), "{text} missing from {svg}");
        }
        assert!(!svg.contains("xb emulated"), "a row without a value is not drawn: {svg}");
    }
}
