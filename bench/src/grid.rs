//! Grid-wide barrier: `xb::barrier<thread_scope_device>` in global memory across a
//! cooperative grid of one block per multiprocessor, against cooperative groups'
//! `grid.sync()`; nanoseconds per barrier from stream events around `grid_iters` barriers.

use xbarrier::{Backend, BackendKind, Buffer, Device, KernelArg, LaunchConfig, Result, Stream};

use crate::kernels::{DeviceReport, Heard, Images};
use crate::report::{Row, Status, Target, Unit};
use crate::suite::{finish, Progress};
use crate::timing::timed;
use crate::{stats, Benchmark, Config};

const XB: &str = "xb device barrier";
const CG: &str = "cg grid.sync";

/// Runs both implementations (cooperative groups on CUDA only).
pub(crate) fn run<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    config: &Config,
    progress: Progress<'_>,
) -> Vec<Row> {
    let info = device.info();
    let blocks = info.multiprocessors.min(info.max_cooperative_blocks);
    let label = format!("{blocks} blocks x {} threads", config.grid_threads);
    let unit = Unit::Nanoseconds;
    // Target (CUDA, where cooperative groups run): at most 0.95x grid.sync's time.
    let target = (B::KIND == BackendKind::Cuda).then_some(Target::RatioAtMost(0.95));
    let rows = [
        Row::new(Benchmark::GridBarrier, &label, XB, unit).against(CG, target),
        Row::new(Benchmark::GridBarrier, &label, CG, unit),
    ];
    let launch = LaunchConfig::new(blocks, config.grid_threads).cooperative();
    rows.map(|row| {
        let status = if blocks == 0 {
            Ok(Status::Skipped(format!("{} has no cooperative launch", info.name)))
        } else if row.implementation == XB {
            measure_xb(device, images, stream, config, &launch)
        } else if B::KIND == BackendKind::Cuda {
            images.native.kernel("xbb_grid_cg").and_then(|kernel| {
                measure(device, stream, config, |iters, check, state, report| {
                    // SAFETY: xbb_grid_cg(unsigned iters, unsigned check, unsigned long long* state,
                    // unsigned long long* report): `state` has blocks + 1 words, `report` two;
                    // both outlive the synchronize after every call.
                    unsafe {
                        stream.launch(&kernel, &launch, &[iters.into(), check.into(), state.arg(), report.words.arg()])
                    }
                })
            })
        } else {
            Ok(Status::Skipped(format!("a CUDA baseline; the {} backend has no such kernel", B::KIND)))
        };
        finish(row, status, progress)
    })
    .to_vec()
}

fn measure_xb<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    config: &Config,
    launch: &LaunchConfig,
) -> Result<Status> {
    let init = images.native.kernel("xbb_grid_init")?;
    let kernel = images.native.kernel("xbb_grid_xb")?;
    // The barrier: one 8-byte word (xb::barrier<thread_scope_device> without a completion).
    let barrier = device.alloc::<u64>(1)?;
    let blocks = launch.grid.x;
    // SAFETY: xbb_grid_init(grid_barrier*, unsigned expected): `barrier` is the 8-byte
    // barrier word and outlives the synchronize in `measure`. Every launch completes whole
    // phases, so the barrier stays ready for the next one without a new init.
    unsafe { stream.launch(&init, &LaunchConfig::new(1, 1), &[barrier.arg(), blocks.into()])? };
    measure(device, stream, config, |iters, check, state, report| {
        let args: [KernelArg; 5] = [barrier.arg(), iters.into(), check.into(), state.arg(), report.words.arg()];
        // SAFETY: xbb_grid_xb(grid_barrier*, unsigned iters, unsigned check, unsigned long long*
        // state, unsigned long long* report): `state` has blocks + 1 words, `report` two; all
        // outlive the synchronize after every call.
        unsafe { stream.launch(&kernel, launch, &args) }
    })
}

/// A checking launch (flags and counter verified after every barrier), then timed ones.
fn measure<B: Backend>(
    device: &Device<B>,
    stream: &Stream<B>,
    config: &Config,
    launch: impl Fn(u32, u32, &Buffer<B, u64>, &DeviceReport<B>) -> Result<()>,
) -> Result<Status> {
    let blocks = device.info().multiprocessors.min(device.info().max_cooperative_blocks);
    // One flag per block and the counter, zeroed.
    let state = device.alloc::<u64>(blocks as usize + 1)?;
    let mut report = DeviceReport::new(device)?;
    report.clear()?;
    launch(config.check_iters, 1, &state, &report)?;
    stream.synchronize()?;
    if let Heard::Wrong(n) = report.read()? {
        return Ok(Status::Incorrect(format!(
            "{n} inconsistent flags or counts after a barrier ({} barriers x {blocks} blocks)",
            config.check_iters
        )));
    }
    let seconds = timed(stream, config.warmup, config.reps, || launch(config.grid_iters, 0, &state, &report))?;
    let samples: Vec<f64> = seconds.iter().map(|s| s * 1e9 / f64::from(config.grid_iters)).collect();
    Ok(match stats::median(&samples) {
        Some(value) => Status::Measured { value, samples },
        None => Status::Failed("no samples".into()),
    })
}
