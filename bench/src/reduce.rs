//! Streaming reduction: the u64 sum of `stream_bytes` of u32 data, read once per launch. The
//! xb pipeline (bulk loads into a ring of stages, full/empty barriers) against the same
//! pipeline in raw PTX and a plain grid-stride kernel; GB/s read, each launch's sum checked
//! against the exact sum the host computes meanwhile.

use xbarrier::{Backend, BackendKind, Buffer, Device, Error, Kernel, KernelArg, LaunchConfig, Result, Stream};

use crate::kernels::{raw_ptx_missing, DeviceReport, Heard, Images};
use crate::report::{Row, Status, Target, Unit};
use crate::suite::{bytes_text, fill, finish, Progress};
use crate::timing::timed;
use crate::{pattern, stats, Benchmark, Config};

const XB: &str = "xb pipeline";
const RAW_PTX: &str = "raw PTX pipeline";
const PLAIN: &str = "grid-stride";
const SEED: u32 = 0x5eed;
/// Blocks per multiprocessor of the grid-stride kernel, and its block size.
const PLAIN_BLOCKS_PER_SM: u32 = 8;
const PLAIN_THREADS: u32 = 256;

/// Runs the three implementations (the raw-PTX one on sm_90 CUDA devices only).
pub(crate) fn run<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    config: &Config,
    progress: Progress<'_>,
) -> Vec<Row> {
    let label = format!("{} u32", bytes_text(config.stream_bytes));
    let unit = Unit::GigabytesPerSecond;
    // Target (CUDA, where the raw-PTX pipeline runs): at least the raw-PTX pipeline's GB/s.
    let target = (B::KIND == BackendKind::Cuda).then_some(Target::RatioAtLeast(1.0));
    let rows = [
        Row::new(Benchmark::Reduction, &label, XB, unit).against(RAW_PTX, target),
        Row::new(Benchmark::Reduction, &label, RAW_PTX, unit),
        Row::new(Benchmark::Reduction, &label, PLAIN, unit).against(RAW_PTX, None),
    ];
    let n = config.stream_bytes / 4;
    // The host adds the data up while the device allocates and fills it.
    std::thread::scope(|scope| {
        let expected = scope.spawn(move || pattern::sum(n, SEED));
        let setup = || -> Result<(Buffer<B, u32>, u64)> {
            let data = device.alloc::<u32>(usize::try_from(n).map_err(|_| too_big(n))?)?;
            fill(device, images, stream, &data, SEED)?;
            let sum = expected.join().map_err(|_| Error::InvalidArgument {
                call: "bench",
                reason: "the host thread computing the expected sum panicked".into(),
            })?;
            Ok((data, sum))
        };
        let (data, sum) = match setup() {
            Ok(ready) => ready,
            Err(e) => {
                let text = e.to_string();
                return rows.map(|row| finish(row, Ok(Status::Failed(format!("setup: {text}"))), progress)).to_vec();
            }
        };
        let ctx = Ctx { device, stream, config, data: &data, sum };
        rows.map(|row| {
            let status = match row.implementation {
                XB => images.native.kernel("xbb_reduce_xb").and_then(|k| ctx.measure(&k, Shape::Pipeline, false)),
                RAW_PTX => match raw_ptx_missing(B::KIND, &device.info().arch) {
                    Some(reason) => Ok(Status::Skipped(reason)),
                    None => images.native.kernel("xbb_reduce_ptx").and_then(|k| ctx.measure(&k, Shape::Pipeline, true)),
                },
                _ => images.native.kernel("xbb_reduce_plain").and_then(|k| ctx.measure(&k, Shape::GridStride, false)),
            };
            finish(row, status, progress)
        })
        .to_vec()
    })
}

fn too_big(n: u64) -> Error {
    Error::InvalidArgument { call: "bench", reason: format!("{n} elements do not fit this host's usize") }
}

/// The pipeline's grid: `blocks_per_sm` persistent blocks per multiprocessor.
fn grid_of<B: Backend>(device: &Device<B>, config: &Config) -> u32 {
    device.info().multiprocessors * config.reduction.blocks_per_sm
}

#[derive(Clone, Copy)]
enum Shape {
    /// A producer warp and `consumer_warps` consumers over a ring of stages.
    Pipeline,
    /// The plain kernel: many blocks, no shared memory.
    GridStride,
}

struct Ctx<'a, B: Backend> {
    device: &'a Device<B>,
    stream: &'a Stream<B>,
    config: &'a Config,
    data: &'a Buffer<B, u32>,
    sum: u64,
}

impl<B: Backend> Ctx<'_, B> {
    fn measure(&self, kernel: &Kernel<B>, shape: Shape, with_report: bool) -> Result<Status> {
        let info = self.device.info();
        let bytes = self.config.stream_bytes;
        let pipeline = self.config.reduction;
        let launch = match shape {
            Shape::Pipeline => {
                LaunchConfig::new(grid_of(self.device, self.config), info.wave_size * (1 + self.config.consumer_warps))
                    .shared(pipeline.stages * pipeline.stage_bytes)
            }
            Shape::GridStride => LaunchConfig::new(info.multiprocessors * PLAIN_BLOCKS_PER_SM, PLAIN_THREADS),
        };
        // Zeroed, so that a kernel that writes nothing cannot pass on an earlier kernel's sums.
        let partials = self.device.alloc::<u64>(launch.grid.x as usize)?;
        let report = DeviceReport::new(self.device)?;
        let mut args: Vec<KernelArg> = match shape {
            Shape::Pipeline => {
                vec![self.data.arg(), bytes.into(), pipeline.stage_bytes.into(), pipeline.stages.into(), partials.arg()]
            }
            Shape::GridStride => vec![self.data.arg(), (bytes / 16).into(), partials.arg()],
        };
        if with_report {
            args.push(report.words.arg());
        }
        let run = || {
            // SAFETY: the argument lists match the kernels (reduce.cpp):
            //   xbb_reduce_xb(const unsigned char*, unsigned long long bytes, unsigned stage_bytes,
            //                 unsigned stages, unsigned long long* partials)
            //   xbb_reduce_ptx(... the same ..., unsigned long long* report)
            //   xbb_reduce_plain(const vec4*, unsigned long long vectors, unsigned long long* partials)
            // `data` holds `bytes` bytes, `partials` one word per block, `report` two words;
            // all outlive the synchronize that follows every call.
            unsafe { self.stream.launch(kernel, &launch, &args) }
        };
        let check = || -> Result<Heard> {
            // The reduction kernels only ever set the unsupported word.
            if let Heard::Unsupported = report.read()? {
                return Ok(Heard::Unsupported);
            }
            let got = partials.download()?.iter().fold(0u64, |a, &p| a.wrapping_add(p));
            Ok(if got == self.sum { Heard::Clean } else { Heard::Wrong(got) })
        };
        let wrong = |got: u64| format!("sum {got}, expected {} (off by {})", self.sum, got.abs_diff(self.sum));

        run()?;
        self.stream.synchronize()?;
        match check()? {
            Heard::Unsupported => return Ok(Status::Skipped("this image lacks the instructions".into())),
            Heard::Wrong(got) => return Ok(Status::Incorrect(wrong(got))),
            Heard::Clean => {}
        }
        let seconds = timed(self.stream, self.config.warmup, self.config.reps, run)?;
        if let Heard::Wrong(got) = check()? {
            return Ok(Status::Incorrect(format!("after the timed runs: {}", wrong(got))));
        }
        let samples: Vec<f64> = seconds.iter().map(|s| bytes as f64 / s / 1e9).collect();
        Ok(match stats::median(&samples) {
            Some(value) => Status::Measured { value, samples },
            None => Status::Failed("no samples".into()),
        })
    }
}
