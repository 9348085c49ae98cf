//! Runs the selected benchmarks on one device and assembles the report.

use xbarrier::{Backend, BackendKind, Buffer, Device, LaunchConfig, Result, Stream};

use crate::kernels::Images;
use crate::report::{set_ratios, Report, Row, Status};
use crate::{copy, grid, host_round_trip, message, multi_gpu, reduce, round_trip, Benchmark, Config};

/// Called with each row as soon as it is measured (for progress lines).
pub(crate) type Progress<'a> = &'a dyn Fn(&Row);

/// Runs `config`'s benchmarks on `device`; `progress` sees each row as it is measured.
///
/// `Err` only when nothing can run (bad configuration, no kernel image for the device);
/// a failure inside a benchmark becomes that row's [`Status::Failed`]. Targets are judged in
/// release builds only (they are for unchecked device code), each as a ratio to a baseline
/// measured in the same process (docs/performance.md lists them).
pub fn run<B: Backend>(device: &Device<B>, config: &Config, progress: &dyn Fn(&Row)) -> Result<Report> {
    config.validate(device.info())?;
    let images = Images::load(device)?;
    let stream = device.stream()?;
    let mut rows = Vec::new();
    for &benchmark in &config.benchmarks {
        rows.extend(match benchmark {
            Benchmark::RoundTrip => round_trip::run(device, &images, &stream, config, progress),
            Benchmark::Reduction => reduce::run(device, &images, &stream, config, progress),
            Benchmark::Copy => copy::run(device, &images, &stream, config, progress),
            Benchmark::GridBarrier => grid::run(device, &images, &stream, config, progress),
            Benchmark::MessagePassing => message::run(device, &images, &stream, config, progress),
            Benchmark::HostRoundTrip => host_round_trip::run(device, &images, &stream, config, progress),
            Benchmark::MultiGpu => multi_gpu::run(device, &images, &stream, config, progress),
        });
    }
    set_ratios(&mut rows);
    let info = device.info();
    let notes = judged_targets(&mut rows, B::KIND, xbarrier::CHECKED, &info.name);
    Ok(Report { device: info.clone(), checked: xbarrier::CHECKED, rows, notes, facts: Vec::new() })
}

/// Keeps the targets that apply and says why others were dropped (the report's notes):
/// checked builds judge nothing; a target with a fixed value is judged on CUDA only, except
/// message passing's, which is the CPU backend's own; ratio targets compare with a baseline
/// that ran in the same process and stay on every backend. The GPU targets were set from H200 measurements, so
/// another GPU gets a note.
fn judged_targets(rows: &mut [Row], kind: BackendKind, checked: bool, device: &str) -> Vec<String> {
    let mut notes = Vec::new();
    if checked {
        for row in rows.iter_mut() {
            row.target = None;
        }
        notes.push(
            "checked build: device code checks every barrier operation and runs the protocol everywhere, so the \
             numbers are not comparable and no target applies; benchmark a release build (cargo build --release)"
                .to_owned(),
        );
    } else if kind != BackendKind::Cuda {
        let mut dropped = false;
        for row in rows.iter_mut().filter(|r| r.benchmark != Benchmark::MessagePassing) {
            if row.target.is_some_and(|t| !t.is_ratio()) {
                row.target = None;
                dropped = true;
            }
        }
        if dropped {
            notes.push(format!(
                "the fixed-value targets (GB/s, ns) are NVIDIA H200 figures: the {kind} backend is not judged against them"
            ));
        }
    } else if !device.contains("H200") && rows.iter().any(|r| r.target.is_some()) {
        notes.push(format!(
            "the GPU targets were set from NVIDIA H200 measurements; this is {device}: read the verdicts as indicative"
        ));
    }
    notes
}

/// Sets `row`'s status from `status` (an error becomes [`Status::Failed`]) and reports it.
pub(crate) fn finish(mut row: Row, status: Result<Status>, progress: Progress<'_>) -> Row {
    row.status = status.unwrap_or_else(|e| Status::Failed(e.to_string()));
    progress(&row);
    row
}

/// Fills `data` with the benchmark pattern for `seed` (on the device) and waits for it.
pub(crate) fn fill<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    data: &Buffer<B, u32>,
    seed: u32,
) -> Result<()> {
    let kernel = images.native.kernel("xbb_fill")?;
    // Four blocks per multiprocessor; the kernel strides over the rest.
    let launch = LaunchConfig::new(device.info().multiprocessors * 4, 256);
    // SAFETY: xbb_fill(unsigned* data, unsigned long long n, unsigned seed): `data` has n
    // elements and outlives the synchronize below.
    unsafe { stream.launch(&kernel, &launch, &[data.arg(), (data.len() as u64).into(), seed.into()])? };
    stream.synchronize()
}

/// `2 GiB`, `4 MiB`, or a byte count.
pub(crate) fn bytes_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Target, Unit};

    fn rows() -> Vec<Row> {
        vec![
            Row::new(Benchmark::RoundTrip, "2 threads", "xb", Unit::Nanoseconds)
                .against("C++20 std::barrier", Some(Target::RatioAtMost(1.0))),
            Row::new(Benchmark::GridBarrier, "2 blocks", "xb device barrier", Unit::Nanoseconds)
                .target(Target::AtMost(1000.0)),
        ]
    }

    #[test]
    fn which_targets_are_judged() {
        let mut host = rows();
        let notes = judged_targets(&mut host, BackendKind::Host, false, "host CPU");
        assert!(host[0].target.is_some() && host[1].target.is_none(), "{host:?}");
        assert!(notes.len() == 1 && notes[0].contains("H200"), "{notes:?}");
        let mut only_ratios = rows()[..1].to_vec();
        assert!(judged_targets(&mut only_ratios, BackendKind::Host, false, "host CPU").is_empty());
        let mut checked = rows();
        let notes = judged_targets(&mut checked, BackendKind::Host, true, "host CPU");
        assert!(checked.iter().all(|r| r.target.is_none()) && notes[0].starts_with("checked build"));
        let mut h200 = rows();
        assert!(judged_targets(&mut h200, BackendKind::Cuda, false, "NVIDIA H200").is_empty());
        assert!(h200.iter().all(|r| r.target.is_some()));
        let mut a100 = rows();
        assert!(judged_targets(&mut a100, BackendKind::Cuda, false, "NVIDIA A100")[0].contains("A100"));
    }

    #[test]
    fn byte_counts() {
        assert_eq!(super::bytes_text(2 << 30), "2 GiB");
        assert_eq!(super::bytes_text(3 << 20), "3 MiB");
        assert_eq!(super::bytes_text(48), "48 bytes");
    }
}
