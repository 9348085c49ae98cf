//! What a benchmark run produces: one [`Row`] per implementation and configuration, with its
//! measurement, its ratio to the baseline it is compared with, and the target it must meet.

use std::fmt;

use xbarrier::DeviceInfo;

use crate::Benchmark;

/// The unit of a row's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// SM clock cycles per barrier phase (the host backend has no cycle counter: there it is
    /// nanoseconds, see [`Unit::Nanoseconds`]).
    Cycles,
    /// Nanoseconds per barrier.
    Nanoseconds,
    /// Gigabytes (10^9 bytes) per second.
    GigabytesPerSecond,
    /// Microseconds per round trip (host clock).
    Microseconds,
}

impl Unit {
    /// The short name used in tables: `cycles`, `ns`, `GB/s`.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Cycles => "cycles",
            Unit::Nanoseconds => "ns",
            Unit::GigabytesPerSecond => "GB/s",
            Unit::Microseconds => "us",
        }
    }
    /// Whether a smaller value is better (time) or a larger one (bandwidth).
    pub fn lower_is_better(self) -> bool {
        !matches!(self, Unit::GigabytesPerSecond)
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a row must achieve: the project's performance targets (docs/performance.md), for
/// release builds, each against a baseline measured in the same process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// value / baseline's value ≤ the ratio (times: lower is better).
    RatioAtMost(f64),
    /// value / baseline's value ≥ the ratio (bandwidths: higher is better).
    RatioAtLeast(f64),
    /// value ≥ this, in the row's unit.
    AtLeast(f64),
    /// value ≤ this, in the row's unit.
    AtMost(f64),
}

impl Target {
    /// Whether `value` (with `ratio` to the baseline, if measured) meets the target; `None`
    /// when a ratio target has no ratio.
    pub fn met(self, value: f64, ratio: Option<f64>) -> Option<bool> {
        match self {
            Target::RatioAtMost(limit) => ratio.map(|r| r <= limit),
            Target::RatioAtLeast(limit) => ratio.map(|r| r >= limit),
            Target::AtLeast(limit) => Some(value >= limit),
            Target::AtMost(limit) => Some(value <= limit),
        }
    }
    /// Whether the target compares with a baseline (rather than with a fixed value).
    pub fn is_ratio(self) -> bool {
        matches!(self, Target::RatioAtMost(_) | Target::RatioAtLeast(_))
    }
    /// The target as text, e.g. `<= 1.00x raw PTX`, `>= 0.93x cudaMemcpy D2D` or `>= 4300 GB/s`.
    pub fn describe(self, unit: Unit, baseline: Option<&str>) -> String {
        match self {
            Target::RatioAtMost(limit) => format!("<= {limit:.2}x {}", baseline.unwrap_or("baseline")),
            Target::RatioAtLeast(limit) => format!(">= {limit:.2}x {}", baseline.unwrap_or("baseline")),
            Target::AtLeast(limit) => format!(">= {limit} {unit}"),
            Target::AtMost(limit) => format!("<= {limit} {unit}"),
        }
    }
}

/// How one measurement went.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Ran, its results were correct; `value` is the median of `samples` (one per timed rep).
    Measured {
        /// The median.
        value: f64,
        /// Every timed rep, in run order.
        samples: Vec<f64>,
    },
    /// Ran, and its results were wrong: the value (if any) means nothing.
    Incorrect(String),
    /// Not run here, and why (no such image, needs sm_90, CUDA-only baseline).
    Skipped(String),
    /// The device or driver failed.
    Failed(String),
}

/// Whether a row met its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Measured and met.
    Pass,
    /// Measured and missed.
    Miss,
    /// There is a target but no value (or baseline) to judge it by.
    Unknown,
    /// The row has no target (a baseline, or a checked build).
    None,
}

impl Verdict {
    /// `pass`, `MISS`, `?` or an empty string.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Miss => "MISS",
            Verdict::Unknown => "?",
            Verdict::None => "",
        }
    }
}

/// One implementation in one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Which benchmark.
    pub benchmark: Benchmark,
    /// The configuration within it: `256 threads`, `2 GiB`, `132 blocks`.
    pub config: String,
    /// The implementation: `xb native`, `raw PTX`, `cudaMemcpy D2D`, ...
    pub implementation: &'static str,
    /// The unit of the value.
    pub unit: Unit,
    /// The outcome.
    pub status: Status,
    /// The implementation (same benchmark and config) the ratio is taken against.
    pub baseline: Option<&'static str>,
    /// value / the baseline's value, when both were measured.
    pub ratio: Option<f64>,
    /// What the row must achieve.
    pub target: Option<Target>,
}

impl Row {
    /// A row not measured yet.
    pub(crate) fn new(benchmark: Benchmark, config: &str, implementation: &'static str, unit: Unit) -> Row {
        Row {
            benchmark,
            config: config.to_owned(),
            implementation,
            unit,
            status: Status::Skipped("not run".into()),
            baseline: None,
            ratio: None,
            target: None,
        }
    }
    /// Compares the row with `baseline` (and sets a target).
    pub(crate) fn against(mut self, baseline: &'static str, target: Option<Target>) -> Row {
        self.baseline = Some(baseline);
        self.target = target;
        self
    }
    /// Sets a fixed-value target (message passing's on the CPU backend; the others compare
    /// with baselines instead).
    pub(crate) fn target(mut self, target: Target) -> Row {
        self.target = Some(target);
        self
    }

    /// The measured value, if the row ran correctly.
    pub fn value(&self) -> Option<f64> {
        match self.status {
            Status::Measured { value, .. } => Some(value),
            _ => None,
        }
    }
    /// Whether the row met its target.
    pub fn verdict(&self) -> Verdict {
        match (self.target, self.value()) {
            (None, _) => Verdict::None,
            (Some(_), None) => Verdict::Unknown,
            (Some(target), Some(value)) => match target.met(value, self.ratio) {
                Some(true) => Verdict::Pass,
                Some(false) => Verdict::Miss,
                None => Verdict::Unknown,
            },
        }
    }
    /// `ok` when its results were checked and right, `WRONG` when not, `-` when it did not run.
    pub fn correctness(&self) -> &'static str {
        match self.status {
            Status::Measured { .. } => "ok",
            Status::Incorrect(_) => "WRONG",
            Status::Skipped(_) | Status::Failed(_) => "-",
        }
    }
    /// The target as text (empty without one).
    pub fn target_text(&self) -> String {
        self.target.map(|t| t.describe(self.unit, self.baseline)).unwrap_or_default()
    }
}

/// Fills in every row's ratio to its baseline (same benchmark and configuration).
pub(crate) fn set_ratios(rows: &mut [Row]) {
    for i in 0..rows.len() {
        let Some(baseline) = rows[i].baseline else { continue };
        let base = rows
            .iter()
            .find(|r| r.benchmark == rows[i].benchmark && r.config == rows[i].config && r.implementation == baseline)
            .and_then(Row::value);
        rows[i].ratio = match (rows[i].value(), base) {
            (Some(v), Some(b)) if b > 0.0 => Some(v / b),
            _ => None,
        };
    }
}

/// A whole run.
#[derive(Clone, Debug)]
pub struct Report {
    /// The device it ran on.
    pub device: DeviceInfo,
    /// Whether device code was checked (targets do not apply then).
    pub checked: bool,
    /// Every row, in run order.
    pub rows: Vec<Row>,
    /// Things the reader should know (skipped benchmarks, checked builds).
    pub notes: Vec<String>,
    /// What the device and its runtime say beyond `device` (the target's code object,
    /// runtime versions, clock rate), label and value, for bug reports; empty from [`run`],
    /// filled by the caller.
    ///
    /// [`run`]: crate::run
    pub facts: Vec<(String, String)>,
}

impl Report {
    /// Rows whose results were wrong.
    pub fn incorrect(&self) -> usize {
        self.rows.iter().filter(|r| matches!(r.status, Status::Incorrect(_))).count()
    }
    /// Rows the device or driver failed.
    pub fn failed(&self) -> usize {
        self.rows.iter().filter(|r| matches!(r.status, Status::Failed(_))).count()
    }
    /// Rows that missed their target.
    pub fn missed(&self) -> usize {
        self.rows.iter().filter(|r| r.verdict() == Verdict::Miss).count()
    }
    /// Rows that met their target.
    pub fn passed(&self) -> usize {
        self.rows.iter().filter(|r| r.verdict() == Verdict::Pass).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(implementation: &'static str, value: f64) -> Row {
        let mut row = Row::new(Benchmark::RoundTrip, "256 threads", implementation, Unit::Cycles);
        row.status = Status::Measured { value, samples: vec![value] };
        row
    }

    #[test]
    fn ratios_and_verdicts() {
        let mut rows = vec![
            measured("xb", 90.0).against("ptx", Some(Target::RatioAtMost(1.0))),
            measured("ptx", 84.0),
            measured("cccl", 105.0).against("ptx", None),
            Row::new(Benchmark::RoundTrip, "256 threads", "emulated", Unit::Cycles)
                .against("ptx", Some(Target::RatioAtMost(2.0))),
        ];
        set_ratios(&mut rows);
        assert!((rows[0].ratio.unwrap_or_default() - 90.0 / 84.0).abs() < 1e-12);
        assert_eq!(rows[0].verdict(), Verdict::Miss);
        assert_eq!(rows[1].verdict(), Verdict::None);
        assert_eq!(rows[2].verdict(), Verdict::None);
        assert!(rows[2].ratio.is_some());
        assert_eq!(rows[3].verdict(), Verdict::Unknown);
        assert_eq!(rows[3].correctness(), "-");
        assert_eq!(rows[0].target_text(), "<= 1.00x ptx");
    }

    #[test]
    fn absolute_targets() {
        let mut row =
            Row::new(Benchmark::Reduction, "2 GiB", "xb", Unit::GigabytesPerSecond).target(Target::AtLeast(4300.0));
        row.status = Status::Measured { value: 4400.0, samples: vec![4400.0] };
        assert_eq!(row.verdict(), Verdict::Pass);
        assert_eq!(row.target_text(), ">= 4300 GB/s");
        row.status = Status::Incorrect("sum off by 3".into());
        assert_eq!((row.verdict(), row.correctness()), (Verdict::Unknown, "WRONG"));
        assert!(!Unit::GigabytesPerSecond.lower_is_better() && Unit::Nanoseconds.lower_is_better());
    }

    #[test]
    fn ratio_at_least() {
        let mut rows = vec![
            Row::new(Benchmark::Copy, "2 GiB", "xb", Unit::GigabytesPerSecond)
                .against("memcpy", Some(Target::RatioAtLeast(0.93))),
            Row::new(Benchmark::Copy, "2 GiB", "memcpy", Unit::GigabytesPerSecond),
        ];
        rows[0].status = Status::Measured { value: 3947.0, samples: vec![3947.0] };
        rows[1].status = Status::Measured { value: 4236.0, samples: vec![4236.0] };
        set_ratios(&mut rows);
        assert_eq!(rows[0].verdict(), Verdict::Pass, "{rows:?}");
        assert_eq!(rows[0].target_text(), ">= 0.93x memcpy");
        rows[0].status = Status::Measured { value: 3908.0, samples: vec![3908.0] };
        rows[1].status = Status::Measured { value: 4225.0, samples: vec![4225.0] };
        set_ratios(&mut rows);
        assert_eq!(rows[0].verdict(), Verdict::Miss, "{rows:?}");
        assert!(Target::RatioAtLeast(1.0).is_ratio() && !Target::AtLeast(1.0).is_ratio());
    }
}
