//! Message passing through plain memory: two blocks hand `messages` values back and forth
//! through a flag in global memory, each polling with `__nanosleep`, no barrier; nanoseconds
//! (cycles on a GPU) per message (the sender's own clock around all of them, cooperative
//! launch so that both
//! blocks run at once). On the CPU backend this measures how soon a kernel thread that
//! polls plain memory runs again, which no barrier publish announces.

use xbarrier::{Backend, BackendKind, Device, LaunchConfig, Result, Stream};

use crate::kernels::{DeviceReport, Heard, Images};
use crate::report::{Row, Status, Target, Unit};
use crate::suite::{finish, Progress};
use crate::{stats, Benchmark, Config};

/// The CPU backend's target: at most 100 µs per message, 10^4 messages per second.
const HOST_MAX_NS_PER_MESSAGE: f64 = 100_000.0;

pub(crate) fn run<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    config: &Config,
    progress: Progress<'_>,
) -> Vec<Row> {
    // The sender's clock: ns on the host, the SM clock on a GPU.
    let unit = if B::KIND == BackendKind::Host { Unit::Nanoseconds } else { Unit::Cycles };
    let mut row = Row::new(Benchmark::MessagePassing, "2 blocks", "xb, flag in global memory", unit);
    if B::KIND == BackendKind::Host {
        row = row.target(Target::AtMost(HOST_MAX_NS_PER_MESSAGE));
    }
    let status = measure(device, images, stream, config);
    vec![finish(row, status, progress)]
}

fn measure<B: Backend>(device: &Device<B>, images: &Images<B>, stream: &Stream<B>, config: &Config) -> Result<Status> {
    if device.info().max_cooperative_blocks < 2 {
        return Ok(Status::Skipped(format!("{} cannot run two blocks at once", device.info().name)));
    }
    let kernel = images.native.kernel("xbb_mp")?;
    let launch = LaunchConfig::new(2, 1).cooperative();
    let mut words = device.alloc::<u64>(3)?;
    let elapsed = device.alloc::<u64>(1)?;
    let mut report = DeviceReport::new(device)?;
    report.clear()?;
    let mut samples = Vec::with_capacity(config.reps as usize);
    for rep in 0..config.warmup + config.reps {
        words.write(&[0; 3])?;
        // SAFETY: xbb_mp(unsigned messages, unsigned long long* words, unsigned long long*
        // cycles, unsigned long long* report): `words` has 3 zeroed words, `elapsed` one,
        // `report` two; all outlive the synchronize below.
        unsafe {
            stream.launch(
                &kernel,
                &launch,
                &[config.messages.into(), words.arg(), elapsed.arg(), report.words.arg()],
            )?
        };
        stream.synchronize()?;
        if let Heard::Wrong(n) = report.read()? {
            return Ok(Status::Incorrect(format!("{n} of {} messages arrived with a wrong payload", config.messages)));
        }
        if rep >= config.warmup {
            samples.push(elapsed.download()?[0] as f64 / f64::from(config.messages));
        }
    }
    Ok(match stats::median(&samples) {
        Some(value) => Status::Measured { value, samples },
        None => Status::Failed("no samples".into()),
    })
}
