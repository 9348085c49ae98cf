//! Runs the selected benchmarks on one device and assembles the report.

use xbarrier::{Backend, BackendKind, Buffer, Device, LaunchConfig, Result, Stream};

use crate::kernels::Images;
use crate::report::{set_ratios, Report, Row, Status};
use crate::{copy, grid, reduce, round_trip, Benchmark, Config};

/// Called with each row as soon as it is measured (for progress lines).
pub(crate) type Progress<'a> = &'a dyn Fn(&Row);

/// Runs `config`'s benchmarks on `device`; `progress` sees each row as it is measured.
///
/// `Err` only when nothing can run (bad configuration, no kernel image for the device);
/// a failure inside a benchmark becomes that row's [`Status::Failed`]. Targets are judged on
/// the CUDA backend in release builds only: DESIGN's targets are H200 figures for unchecked
/// device code.
pub fn run<B: Backend>(device: &Device<B>, config: &Config, progress: &dyn Fn(&Row)) -> Result<Report> {
    config.validate(device.info())?;
    let images = Images::load(device)?;
    let stream = device.stream()?;
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for &benchmark in &config.benchmarks {
        rows.extend(match benchmark {
            Benchmark::RoundTrip => round_trip::run(device, &images, &stream, config, progress),
            Benchmark::Reduction => reduce::run(device, &images, &stream, config, progress),
            Benchmark::Copy => copy::run(device, &images, &stream, config, progress),
            Benchmark::GridBarrier => grid::run(device, &images, &stream, config, progress),
        });
    }
    set_ratios(&mut rows);
    let info = device.info();
    let why_no_targets = if xbarrier::CHECKED {
        Some(
            "checked build: device code checks every barrier operation and runs the protocol everywhere, so the \
             numbers are not comparable and no target applies; benchmark a release build (cargo build --release)"
                .to_owned(),
        )
    } else if B::KIND != BackendKind::Cuda {
        Some(format!("the targets are NVIDIA H200 figures: the {} backend is not judged against them", B::KIND))
    } else {
        None
    };
    match why_no_targets {
        Some(why) => {
            for row in &mut rows {
                row.target = None;
            }
            notes.push(why);
        }
        None if !info.name.contains("H200") => notes.push(format!(
            "the absolute targets (GB/s, ns) are NVIDIA H200 figures; this is {}: judge it by the ratios",
            info.name
        )),
        None => {}
    }
    Ok(Report { device: info.clone(), checked: xbarrier::CHECKED, rows, notes })
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
    #[test]
    fn byte_counts() {
        assert_eq!(super::bytes_text(2 << 30), "2 GiB");
        assert_eq!(super::bytes_text(3 << 20), "3 MiB");
        assert_eq!(super::bytes_text(48), "48 bytes");
    }
}
