//! Streaming copy of `stream_bytes`: the xb kernel (bulk loads into shared stages completing
//! on barriers, bulk stores out) against the driver's device-to-device copy; GB/s counting
//! bytes read plus bytes written. The whole output is compared with the pattern on the
//! device, after the first launch (into a destination filled with other data) and after the
//! timed ones.

use xbarrier::{Backend, BackendKind, Buffer, Device, LaunchConfig, Result, Stream};

use crate::kernels::{DeviceReport, Heard, Images};
use crate::report::{Row, Status, Target, Unit};
use crate::suite::{bytes_text, fill, finish, Progress};
use crate::timing::timed;
use crate::{stats, Benchmark, Config};

const XB: &str = "xb bulk copy";
const SEED: u32 = 0xc0de;

/// The driver's copy, named after what a CUDA programmer calls it.
fn memcpy_name(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::Cuda => "cudaMemcpy D2D",
        BackendKind::Hip => "hipMemcpy D2D",
        BackendKind::Host => "memcpy",
    }
}

/// Runs both implementations.
pub(crate) fn run<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    config: &Config,
    progress: Progress<'_>,
) -> Vec<Row> {
    let label = bytes_text(config.stream_bytes);
    let unit = Unit::GigabytesPerSecond;
    let memcpy = memcpy_name(B::KIND);
    // Target (CUDA): at least 0.93x cudaMemcpy, the ceiling bulk loads and stores reached
    // on an H200 in every stage shape tried (bench/cpp/bulk_copy_ceiling.cu).
    let target = (B::KIND == BackendKind::Cuda).then_some(Target::RatioAtLeast(0.93));
    let rows = [
        Row::new(Benchmark::Copy, &label, XB, unit).against(memcpy, target),
        Row::new(Benchmark::Copy, &label, memcpy, unit),
    ];
    let n = (config.stream_bytes / 4) as usize;
    let setup = || -> Result<(Buffer<B, u32>, Buffer<B, u32>)> {
        let src = device.alloc::<u32>(n)?;
        fill(device, images, stream, &src, SEED)?;
        Ok((src, device.alloc::<u32>(n)?))
    };
    let (src, mut dst) = match setup() {
        Ok(buffers) => buffers,
        Err(e) => {
            let text = e.to_string();
            return rows.map(|row| finish(row, Ok(Status::Failed(format!("setup: {text}"))), progress)).to_vec();
        }
    };
    let mut out = Vec::new();
    for row in rows {
        let status = if row.implementation == XB {
            images.native.kernel("xbb_copy_xb").and_then(|kernel| {
                let pipeline = config.copy;
                let launch =
                    LaunchConfig::new(device.info().multiprocessors * pipeline.blocks_per_sm, device.info().wave_size)
                        .shared(pipeline.stages * pipeline.stage_bytes);
                let args = [
                    src.arg(),
                    dst.arg(),
                    config.stream_bytes.into(),
                    pipeline.stage_bytes.into(),
                    pipeline.stages.into(),
                ];
                measure(device, images, stream, config, &mut dst, |_| {
                    // SAFETY: xbb_copy_xb(const unsigned char* src, unsigned char* dst,
                    // unsigned long long bytes, unsigned stage_bytes, unsigned stages): both
                    // buffers hold `bytes` bytes and outlive the synchronize after every call.
                    unsafe { stream.launch(&kernel, &launch, &args) }
                })
            })
        } else {
            measure(device, images, stream, config, &mut dst, |dst| stream.copy(dst, &src))
        };
        out.push(finish(row, status, progress));
    }
    out
}

/// Mismatches between `data` and the pattern, counted on the device.
fn mismatches<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    data: &Buffer<B, u32>,
) -> Result<u64> {
    let kernel = images.native.kernel("xbb_check_pattern")?;
    let mut report = DeviceReport::new(device)?;
    report.clear()?;
    let info = device.info();
    let launch = LaunchConfig::new(info.multiprocessors * 4, 256.min(info.max_threads_per_block));
    // SAFETY: xbb_check_pattern(const unsigned*, unsigned long long n, unsigned seed,
    // unsigned long long* mismatches): `data` has n elements, the report two words; both
    // outlive the synchronize below.
    unsafe {
        stream.launch(&kernel, &launch, &[data.arg(), (data.len() as u64).into(), SEED.into(), report.words.arg()])?
    };
    stream.synchronize()?;
    Ok(match report.read()? {
        Heard::Wrong(n) => n,
        Heard::Clean | Heard::Unsupported => 0,
    })
}

/// Checks one launch of `copy` into a scrambled destination, times `reps` more, checks again.
fn measure<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    config: &Config,
    dst: &mut Buffer<B, u32>,
    mut copy: impl FnMut(&mut Buffer<B, u32>) -> Result<()>,
) -> Result<Status> {
    fill(device, images, stream, dst, SEED ^ 0xffff)?;
    copy(dst)?;
    stream.synchronize()?;
    let wrong = mismatches(device, images, stream, dst)?;
    if wrong > 0 {
        return Ok(Status::Incorrect(format!("{wrong} of {} elements differ from the source", dst.len())));
    }
    let seconds = timed(stream, config.warmup, config.reps, || copy(dst))?;
    let wrong = mismatches(device, images, stream, dst)?;
    if wrong > 0 {
        return Ok(Status::Incorrect(format!("after the timed runs: {wrong} of {} elements differ", dst.len())));
    }
    let samples: Vec<f64> = seconds.iter().map(|s| 2.0 * config.stream_bytes as f64 / s / 1e9).collect();
    Ok(match stats::median(&samples) {
        Some(value) => Status::Measured { value, samples },
        None => Status::Failed("no samples".into()),
    })
}
