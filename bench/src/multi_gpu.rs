//! Kernels on two devices meeting phase after phase. xb: one cooperative grid per device, one
//! launch each for every phase, at a [`PeerBarrier`] in the first device's memory that the
//! second device's kernels reach as a peer; the participants are every thread, or thread 0
//! of each block between two `__syncthreads` (a grid barrier across both devices); the grid
//! barrier again with the barrier and the data in memory the system shares
//! ([`PeerPlacement::SystemMemory`], for devices without a peer path with atomics). The usual
//! alternatives, in the same process, launch a kernel on each device per phase and order the
//! phases from the host: a synchronize of both streams after each phase, or stream events
//! (each stream records one and waits for the other's, [`Stream::wait_event`]; one
//! synchronize at the end). Every implementation checks what it saw of the other device in
//! each phase. Microseconds per phase, over the phases after the warm-up ones: xb's from the
//! kernels' own clock (the slower device's), the baselines' from the host's clock around
//! their phases, which end in a synchronize. Rows are skipped, with the reason, where there
//! are fewer than two devices or they cannot share memory in the row's placement.

use std::time::{Duration, Instant};

use xbarrier::{
    Backend, BackendKind, Device, Error, Launch, LaunchArg, LaunchConfig, Module, PeerBarrier, PeerBuffer,
    PeerPlacement, Result, Stream,
};

use crate::host_round_trip::{per_phase_us, repeat};
use crate::kernels::Images;
use crate::report::{Row, Status, Target, Unit};
use crate::suite::{finish, Progress};
use crate::{Benchmark, Config};

const XB_ALL: &str = "xb PeerBarrier, every thread";
const XB_GRID: &str = "xb PeerBarrier, grid barrier";
const XB_GRID_SYSTEM: &str = "xb PeerBarrier, grid barrier, system memory";
const LAUNCH: &str = "launch + synchronize";
const EVENTS: &str = "stream events";
/// Phases before the timed ones, in each rep: the kernels' start and the memory's first moves.
const WARMUP_PHASES: u32 = 16;
/// A grid whose partner on the other device never comes waits for ever: the host backend
/// ends it after this (a GPU kernel cannot be aborted; there it is reported when it ends).
const LAUNCH_LIMIT: Duration = Duration::from_secs(120);

/// What a row runs.
#[derive(Clone, Copy)]
enum Form {
    /// xb's kernels, with every thread a participant or only thread 0 of each block, the
    /// barrier and the data in `placement`.
    Xb { every_thread: bool, placement: PeerPlacement },
    /// A launch on each device per phase, ordered by the host or by stream events.
    Baseline(Order),
}

/// How the baselines order one phase's launches after the previous phase's.
#[derive(Clone, Copy)]
enum Order {
    /// Both streams synchronized after each phase.
    Synchronize,
    /// Each stream waits for an event the other recorded after its launch.
    Events,
}

/// One device's part: the device, the bench kernels loaded there, a stream of it.
struct Side<'a, B: Backend> {
    device: &'a Device<B>,
    module: &'a Module<B>,
    stream: &'a Stream<B>,
}

/// The second device, with its own kernels and stream.
struct Other<B: Backend> {
    device: Device<B>,
    module: Module<B>,
    stream: Stream<B>,
}

pub(crate) fn run<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    config: &Config,
    progress: Progress<'_>,
) -> Vec<Row> {
    let label = label(config.multi_gpu_blocks, config.multi_gpu_threads);
    let xb = |name, every_thread, placement| {
        // In system memory the barrier's page moves between the devices: no target, a figure.
        let target = (placement == PeerPlacement::DeviceMemory).then_some(Target::RatioAtMost(1.0));
        (
            Row::new(Benchmark::MultiGpu, &label, name, Unit::Microseconds).against(LAUNCH, target),
            Form::Xb { every_thread, placement },
        )
    };
    let rows = [
        xb(XB_ALL, true, PeerPlacement::DeviceMemory),
        xb(XB_GRID, false, PeerPlacement::DeviceMemory),
        xb(XB_GRID_SYSTEM, false, PeerPlacement::SystemMemory),
        (Row::new(Benchmark::MultiGpu, &label, LAUNCH, Unit::Microseconds), Form::Baseline(Order::Synchronize)),
        (
            Row::new(Benchmark::MultiGpu, &label, EVENTS, Unit::Microseconds).against(LAUNCH, None),
            Form::Baseline(Order::Events),
        ),
    ];
    let other = match second_device(device, config) {
        Ok(Ok(other)) => Ok(other),
        Ok(Err(reason)) => Err(Status::Skipped(reason)),
        Err(e) => Err(status_of(e)),
    };
    rows.into_iter()
        .map(|(row, form)| {
            let status = match &other {
                Err(status) => status.clone(),
                Ok(other) => {
                    let sides = [
                        Side { device, module: &images.native, stream },
                        Side { device: &other.device, module: &other.module, stream: &other.stream },
                    ];
                    match form {
                        Form::Xb { every_thread, placement } => xb_barrier(&sides, config, every_thread, placement),
                        Form::Baseline(order) => baseline(&sides, config, order),
                    }
                    .unwrap_or_else(status_of)
                }
            };
            finish(row, Ok(status), progress)
        })
        .collect()
}

/// `2 devices x 4 blocks x 32 threads`.
fn label(blocks: u32, threads: u32) -> String {
    let plural = |n: u32, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    format!("2 devices x {} x {}", plural(blocks, "block"), plural(threads, "thread"))
}

/// Why the benchmark cannot run with `count` devices of backend `kind`, if it cannot.
fn too_few(kind: BackendKind, count: usize) -> Option<String> {
    let hint = if kind == BackendKind::Host { " (XBAR_HOST_DEVICES sets how many)" } else { "" };
    (count < 2).then(|| format!("needs two devices; the {kind} backend has {count}{hint}"))
}

/// An error inside a row: a missing capability (no peer path, no stream waits) skips it,
/// anything else fails it.
fn status_of(e: Error) -> Status {
    match e {
        Error::Unsupported { .. } => Status::Skipped(e.to_string()),
        e => Status::Failed(e.to_string()),
    }
}

/// The device after `device` (the first one after the last), its kernels and a stream; `Err`
/// says why the benchmark cannot run (fewer than two devices, grids too large for either).
fn second_device<B: Backend>(device: &Device<B>, config: &Config) -> Result<std::result::Result<Other<B>, String>> {
    let count = Device::<B>::count()?;
    if let Some(reason) = too_few(B::KIND, count) {
        return Ok(Err(reason));
    }
    let other = Device::<B>::open((device.info().ordinal + 1) % count)?;
    for info in [device.info(), other.info()] {
        if info.max_cooperative_blocks < config.multi_gpu_blocks
            || info.max_threads_per_block < config.multi_gpu_threads
        {
            return Ok(Err(format!(
                "{} (device {}) cannot run {} blocks of {} threads at once",
                info.name, info.ordinal, config.multi_gpu_blocks, config.multi_gpu_threads
            )));
        }
    }
    let module = other.load(&crate::bundle()?)?;
    let stream = other.stream()?;
    Ok(Ok(Other { device: other, module, stream }))
}

/// Runs `side(1)` on a thread of its own and `side(0)` on this one (the host backend's
/// launches return at their end, and each side's grid waits for the other's).
fn both_sides(side: impl Fn(usize) -> Result<()> + Sync) -> Result<()> {
    std::thread::scope(|s| {
        let second = s.spawn(|| side(1));
        let first = side(0);
        let second = second.join().map_err(|_| Error::InvalidArgument {
            call: "bench",
            reason: "the second side's thread panicked".into(),
        })?;
        first.and(second)
    })
}

/// One launch per device runs every phase at a [`PeerBarrier`] in `placement`; each side
/// hands the other a value per phase through memory of the other's (xbb_multi_gpu_xb).
fn xb_barrier<B: Backend>(
    sides: &[Side<'_, B>; 2],
    config: &Config,
    every_thread: bool,
    placement: PeerPlacement,
) -> Result<Status> {
    let (blocks, threads, phases) = (config.multi_gpu_blocks, config.multi_gpu_threads, config.multi_gpu_phases);
    let per_side = if every_thread { u64::from(blocks) * u64::from(threads) } else { u64::from(blocks) };
    let barrier = PeerBarrier::new_in(placement, &[sides[0].device, sides[1].device], 2 * per_side)?;
    // inbox[s]: side s's, which side 1 - s writes and side s reads; two halves.
    let slots = 2 * per_side as usize;
    let inbox = |s: usize| sides[s].device.alloc_peer_in::<u32>(placement, slots, &[sides[1 - s].device]);
    let mut inbox = [inbox(0)?, inbox(1)?];
    let mut reports = [sides[0].device.alloc::<u64>(2)?, sides[1].device.alloc::<u64>(2)?];
    let kernels = [sides[0].module.kernel("xbb_multi_gpu_xb")?, sides[1].module.kernel("xbb_multi_gpu_xb")?];
    let launch = LaunchConfig::new(blocks, threads).cooperative().timeout(LAUNCH_LIMIT);
    let total = WARMUP_PHASES + phases;
    let zeros = vec![0u32; slots];
    repeat(config, || {
        for s in 0..2 {
            inbox[s].write_at(0, &zeros)?;
            reports[s].write(&[0, 0])?;
        }
        let (inbox, reports) = (&inbox, &reports);
        both_sides(|s| {
            let args = [
                barrier.arg(),
                LaunchArg::peer(&inbox[1 - s]),
                LaunchArg::peer(&inbox[s]),
                LaunchArg::buffer(&reports[s]),
                total.into(),
                WARMUP_PHASES.into(),
                (s as u32).into(),
                u32::from(every_thread).into(),
            ];
            // SAFETY: xbb_multi_gpu_xb(xb::barrier<xb::thread_scope_system>* bar, unsigned* out,
            // const unsigned* in, unsigned long long* report, unsigned phases, unsigned warmup,
            // unsigned side, unsigned every_thread): each inbox holds two slots per participant
            // of a side, `report` 2 words.
            unsafe { Launch::start(sides[s].stream, &kernels[s], &launch, &args) }?.wait()
        })?;
        let mut ns = 0;
        for (s, report) in reports.iter().enumerate() {
            let words = report.download()?;
            let (wrong, elapsed) = (words[0], words[1]);
            if wrong != 0 {
                return Ok(Err(format!(
                    "side {s}: {wrong} reads of the other device's value for the phase were wrong"
                )));
            }
            ns = ns.max(elapsed);
        }
        Ok(Ok(ns as f64 / 1e3 / f64::from(phases)))
    })
}

/// A launch of xbb_multi_gpu_step on each device per phase, the phases ordered by `order`;
/// each device's kernel checks the other's counter and bumps its own.
fn baseline<B: Backend>(sides: &[Side<'_, B>; 2], config: &Config, order: Order) -> Result<Status> {
    let phases = config.multi_gpu_phases;
    // counters[s]: side s's memory, which side s's kernels write and side 1 - s's read.
    let counter = |s: usize| sides[s].device.alloc_peer::<u64>(1, &[sides[1 - s].device]);
    let mut counters: [PeerBuffer<B, u64>; 2] = [counter(0)?, counter(1)?];
    let mut reports = [sides[0].device.alloc::<u64>(1)?, sides[1].device.alloc::<u64>(1)?];
    let kernels = [sides[0].module.kernel("xbb_multi_gpu_step")?, sides[1].module.kernel("xbb_multi_gpu_step")?];
    let launch = LaunchConfig::new(config.multi_gpu_blocks, config.multi_gpu_threads);
    let total = WARMUP_PHASES + phases;
    let synchronize = || sides.iter().try_for_each(|side| side.stream.synchronize());
    repeat(config, || {
        for s in 0..2 {
            counters[s].write_at(0, &[0])?;
            reports[s].write(&[0])?;
        }
        // The launches borrow the words; the checks below read them once that borrow ends.
        let us = {
            let (counters, reports) = (&counters, &reports);
            let phase = |p: u32| -> Result<()> {
                for s in 0..2 {
                    let args = [counters[s].arg(), counters[1 - s].arg(), reports[s].arg(), p.into()];
                    // SAFETY: xbb_multi_gpu_step(unsigned long long* mine, const unsigned long long*
                    // theirs, unsigned long long* report, unsigned phase): one word each, which
                    // outlive the synchronizes that end the rep.
                    unsafe { sides[s].stream.launch(&kernels[s], &launch, &args)? };
                }
                match order {
                    Order::Synchronize => synchronize(),
                    Order::Events => {
                        let ends = [sides[0].stream.record()?, sides[1].stream.record()?];
                        sides[0].stream.wait_event(&ends[1])?;
                        sides[1].stream.wait_event(&ends[0])
                    }
                }
            };
            for p in 0..WARMUP_PHASES {
                phase(p)?;
            }
            synchronize()?;
            let start = Instant::now();
            for p in WARMUP_PHASES..total {
                phase(p)?;
            }
            synchronize()?;
            per_phase_us(start, phases)
        };
        for s in 0..2 {
            let (count, wrong) = (counters[s].download()?[0], reports[s].download()?[0]);
            if count != u64::from(total) || wrong != 0 {
                return Ok(Err(format!(
                    "side {s}: its kernel ran {count} times of {total}, and {wrong} times saw the other device's \
                     counter outside its phase"
                )));
            }
        }
        Ok(Ok(us))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_reasons() {
        assert_eq!(label(4, 32), "2 devices x 4 blocks x 32 threads");
        assert_eq!(label(1, 1), "2 devices x 1 block x 1 thread");
        assert_eq!(too_few(BackendKind::Cuda, 2), None);
        assert_eq!(too_few(BackendKind::Cuda, 1).as_deref(), Some("needs two devices; the cuda backend has 1"));
        assert!(too_few(BackendKind::Host, 1).is_some_and(|r| r.contains("XBAR_HOST_DEVICES")));
        let unsupported = Error::Unsupported {
            backend: BackendKind::Cuda,
            what: "memory shared between devices",
            reason: "x".into(),
        };
        assert!(matches!(status_of(unsupported), Status::Skipped(_)));
        assert!(matches!(status_of(Error::InvalidArgument { call: "c", reason: "r".into() }), Status::Failed(_)));
    }
}
