//! Host <-> kernel round trips: one host thread and one kernel thread meet phase after phase.
//! xb: a [`SystemBarrier`] both arrive and wait on, in its shared form and in its split form
//! (the kernel runs all phases in one launch). The usual alternatives, in the same process: a kernel launch and a stream
//! synchronize per phase, and a pair of flags in memory both sides reach (the host stores
//! flag m and spins until the kernel echoes m). Microseconds per round trip, from the host's
//! clock around the phases after the warm-up ones (the kernel's start is not in them).

use std::sync::atomic::{fence, Ordering};
use std::time::Instant;

use xbarrier::{Backend, Device, Error, Launch, LaunchArg, LaunchConfig, Result, Stream, SystemBarrier};

use crate::kernels::Images;
use crate::report::{Row, Status, Target, Unit};
use crate::suite::{finish, Progress};
use crate::{stats, Benchmark, Config};

const XB: &str = "xb SystemBarrier";
const XB_SPLIT: &str = "xb SystemBarrier::split";
const LAUNCH: &str = "launch + synchronize";
const FLAGS: &str = "flags in host-shared memory";
/// Phases before the timed ones, in each rep: the kernel's start and the pages' first moves.
const WARMUP_PHASES: u32 = 16;

pub(crate) fn run<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    config: &Config,
    progress: Progress<'_>,
) -> Vec<Row> {
    let label = "1 host thread + 1 kernel thread";
    let phases = config.host_phases;
    let rows = [
        (
            Row::new(Benchmark::HostRoundTrip, label, XB, Unit::Microseconds)
                .against(LAUNCH, Some(Target::RatioAtMost(1.0))),
            0,
        ),
        (
            Row::new(Benchmark::HostRoundTrip, label, XB_SPLIT, Unit::Microseconds)
                .against(LAUNCH, Some(Target::RatioAtMost(1.0))),
            3,
        ),
        (Row::new(Benchmark::HostRoundTrip, label, LAUNCH, Unit::Microseconds), 1),
        (Row::new(Benchmark::HostRoundTrip, label, FLAGS, Unit::Microseconds).against(LAUNCH, None), 2),
    ];
    rows.into_iter()
        .map(|(row, which)| {
            let status = repeat(config, || match which {
                0 => barrier(device, images, stream, phases, Form::Shared),
                3 => barrier(device, images, stream, phases, Form::Split),
                1 => launches(device, images, stream, phases),
                _ => flags(device, images, stream, phases),
            });
            finish(row, status, progress)
        })
        .collect()
}

/// The median of the reps (after the warm-up reps) of `sample`, in µs per round trip (or per
/// phase: the multi-GPU benchmark's too).
pub(crate) fn repeat(config: &Config, mut sample: impl FnMut() -> Result<Result<f64, String>>) -> Result<Status> {
    let mut samples = Vec::with_capacity(config.reps as usize);
    for rep in 0..config.warmup + config.reps {
        match sample()? {
            Ok(us) if rep >= config.warmup => samples.push(us),
            Ok(_) => {}
            Err(wrong) => return Ok(Status::Incorrect(wrong)),
        }
    }
    Ok(match stats::median(&samples) {
        Some(value) => Status::Measured { value, samples },
        None => Status::Failed("no samples".into()),
    })
}

pub(crate) fn per_phase_us(start: Instant, phases: u32) -> f64 {
    start.elapsed().as_secs_f64() * 1e6 / f64::from(phases)
}

/// Runs `host` on a thread of its own while this thread launches the kernel and waits for it
/// (`launch`), and returns what the host thread returned once both have ended.
fn beside_kernel<T: Send>(host: impl FnOnce() -> Result<T> + Send, launch: impl FnOnce() -> Result<()>) -> Result<T> {
    std::thread::scope(|s| {
        let host = s.spawn(host);
        let launched = launch();
        let host = host
            .join()
            .map_err(|_| Error::InvalidArgument { call: "bench", reason: "the host thread panicked".into() })?;
        launched?;
        host
    })
}

/// The barrier's form: [`SystemBarrier::new`] or [`SystemBarrier::split`].
enum Form {
    Shared,
    Split,
}

/// One launch runs every phase; the host thread times the phases after the warm-up ones.
fn barrier<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    phases: u32,
    form: Form,
) -> Result<Result<f64, String>> {
    let kernel = images.native.kernel("xbb_host_barrier")?;
    let barrier = match form {
        Form::Shared => SystemBarrier::new(device, 2)?,
        Form::Split => SystemBarrier::split(device, 1, 1)?, // one participant a side
    };
    let total = WARMUP_PHASES + phases;
    let host = || -> Result<f64> {
        for _ in 0..WARMUP_PHASES {
            barrier.arrive_and_wait()?;
        }
        let start = Instant::now();
        for _ in 0..phases {
            barrier.arrive_and_wait()?;
        }
        Ok(per_phase_us(start, phases))
    };
    // SAFETY: xbb_host_barrier(xb::barrier<xb::thread_scope_system>* bar, unsigned phases).
    let launch =
        || unsafe { Launch::start(stream, &kernel, &LaunchConfig::new(1, 32), &[barrier.arg(), total.into()]) }?.wait();
    // The barrier's own phases are its correctness: a lost phase would hang, not count.
    beside_kernel(host, launch).map(Ok)
}

/// A launch of a one-thread kernel and a synchronize per phase; the counter it bumps must
/// end at the number of launches.
fn launches<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    phases: u32,
) -> Result<Result<f64, String>> {
    let kernel = images.native.kernel("xbb_host_step")?;
    let counter = device.alloc::<u64>(1)?;
    let step = || -> Result<()> {
        // SAFETY: xbb_host_step(unsigned long long* counter); `counter` outlives the synchronize.
        unsafe { stream.launch(&kernel, &LaunchConfig::new(1, 32), &[counter.arg()])? };
        stream.synchronize()
    };
    for _ in 0..WARMUP_PHASES {
        step()?;
    }
    let start = Instant::now();
    for _ in 0..phases {
        step()?;
    }
    let us = per_phase_us(start, phases);
    let count = counter.download()?[0];
    let total = u64::from(WARMUP_PHASES + phases);
    Ok(if count == total { Ok(us) } else { Err(format!("the kernel ran {count} times of {total}")) })
}

/// Flag m from the host, echoed by the kernel, for every message.
fn flags<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    phases: u32,
) -> Result<Result<f64, String>> {
    let kernel = images.native.kernel("xbb_host_flag")?;
    let words = device.alloc_system::<u64>(2)?;
    let total = WARMUP_PHASES + phases;
    let host = || -> Result<Result<f64, String>> {
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        let mut start = Instant::now();
        for m in 1..=u64::from(total) {
            if m == u64::from(WARMUP_PHASES) + 1 {
                start = Instant::now();
            }
            fence(Ordering::Release);
            words.store(0, m)?;
            loop {
                let echoed = words.load(1)?;
                if echoed == m {
                    break;
                }
                if echoed > m || Instant::now() > deadline {
                    return Ok(Err(format!("message {m}: the kernel echoed {echoed}")));
                }
                std::hint::spin_loop();
            }
            fence(Ordering::Acquire);
        }
        Ok(Ok(per_phase_us(start, phases)))
    };
    let args = [LaunchArg::system(&words), total.into()];
    // SAFETY: xbb_host_flag(unsigned long long* words, unsigned messages); `words` holds 2.
    let launch = || unsafe { Launch::start(stream, &kernel, &LaunchConfig::new(1, 32), &args) }?.wait();
    beside_kernel(host, launch)
}
