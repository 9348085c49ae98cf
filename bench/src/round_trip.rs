//! Block barrier round trip: every thread of a block arrives and waits, `iters` times, one
//! block per multiprocessor; the value is cycles per phase (median over blocks, then over
//! reps), read from the kernels' own clock.
//!
//! On the host backend it is one block, and the value is nanoseconds per phase: there the
//! baselines are C++20 `std::barrier` and Rust's `std::sync::Barrier` on as many OS threads
//! ([`host_baselines`](crate::host_baselines)), one group of threads on one barrier each, so
//! xb runs one block too (blocks on other cores would compete for the same few cores).

use xbarrier::{Backend, BackendKind, Buffer, Device, Kernel, LaunchConfig, Module, Result, Stream};

use crate::host_baselines::{self, CPP_BARRIER};
use crate::kernels::{raw_ptx_missing, DeviceReport, Heard, Images};
use crate::report::{Row, Status, Target, Unit};
use crate::suite::{finish, Progress};
use crate::{stats, Benchmark, Config};

/// The baseline every round trip is compared with: raw mbarrier PTX in the loop every row
/// runs, and the same PTX in a plain loop of its own (the way a CUDA programmer writes it).
/// The native rows are judged against whichever of the two was faster at that size.
const RAW_PTX: &str = "raw PTX";
const RAW_PTX_PLAIN: &str = "raw PTX, plain loop";

/// The software barrier the emulated and completion-function rows are held to: CCCL's
/// `cuda::barrier` with a completion function, which runs on one 64-bit word in shared
/// memory (its atomics path), as the portable protocol does.
const CCCL_COMPLETION: &str = "CCCL cuda::barrier, completion fn";

/// One implementation: its row name, the module holding it (or why none does), its kernel,
/// and the baseline it is compared with and the target it must meet (CUDA rows only).
struct Implementation<'a, B: Backend> {
    name: &'static str,
    module: std::result::Result<&'a Module<B>, String>,
    kernel: &'static str,
    against: Option<(&'static str, Option<Target>)>,
}

/// Checked device code is held to this many times the release round trip.
const CHECKED_AT_MOST: f64 = 10.0;

fn implementations<'a, B: Backend>(device: &Device<B>, images: &'a Images<B>) -> Vec<Implementation<'a, B>> {
    let native = || Ok(&images.native);
    // Release builds only: a checked build's own rows are checked code.
    let checked = |release| {
        images.checked.as_ref().map(|module| Implementation {
            name: "xb checked",
            module: module.as_ref().map_err(Clone::clone),
            kernel: "xbb_rt_xb",
            against: Some((release, Some(Target::RatioAtMost(CHECKED_AT_MOST)))),
        })
    };
    if B::KIND != BackendKind::Cuda {
        let xb = Implementation { name: "xb", module: native(), kernel: "xbb_rt_xb", against: None };
        return std::iter::once(xb).chain(checked("xb")).collect();
    }
    let raw = || match raw_ptx_missing(B::KIND, &device.info().arch) {
        None => native(),
        Some(reason) => Err(reason),
    };
    let emulated = || images.emulated.as_ref().map_err(Clone::clone);
    let grouped = || images.grouped.as_ref().map_err(Clone::clone);
    // Targets: the native round trip no slower than raw mbarrier PTX; the emulated one and
    // both with a completion function no slower than CCCL's software barrier; checked code
    // within CHECKED_AT_MOST of the release native one. The grouped rows (AMD's code path,
    // whose lane groups NVIDIA does not need) are shown beside CCCL without a target.
    let vs_ptx = |target| Some((RAW_PTX, target));
    let vs_cccl = Some((CCCL_COMPLETION, Some(Target::RatioAtMost(1.0))));
    let beside_cccl = Some((CCCL_COMPLETION, None));
    let mut all = vec![
        Implementation {
            name: "xb native",
            module: native(),
            kernel: "xbb_rt_xb",
            against: vs_ptx(Some(Target::RatioAtMost(1.0))),
        },
        Implementation {
            name: "xb native, wait_parity",
            module: native(),
            kernel: "xbb_rt_xb_parity",
            against: vs_ptx(Some(Target::RatioAtMost(1.0))),
        },
        Implementation { name: "xb emulated", module: emulated(), kernel: "xbb_rt_xb", against: vs_cccl },
        Implementation { name: "xb grouped", module: grouped(), kernel: "xbb_rt_xb", against: beside_cccl },
        Implementation { name: RAW_PTX, module: raw(), kernel: "xbb_rt_ptx", against: None },
        Implementation { name: RAW_PTX_PLAIN, module: raw(), kernel: "xbb_rt_ptx_plain", against: vs_ptx(None) },
        Implementation { name: "CCCL cuda::barrier", module: native(), kernel: "xbb_rt_cccl", against: vs_ptx(None) },
        Implementation { name: "__syncthreads", module: native(), kernel: "xbb_rt_syncthreads", against: vs_ptx(None) },
        // With a completion function: CCCL keeps it on its atomics path; xb native runs
        // it on mbarriers (engine_sm90_completion.hpp), emulated on the protocol.
        Implementation {
            name: "xb native, completion fn",
            module: native(),
            kernel: "xbb_rt_xb_completion",
            against: vs_cccl,
        },
        Implementation {
            name: "xb emulated, completion fn",
            module: emulated(),
            kernel: "xbb_rt_xb_completion",
            against: vs_cccl,
        },
        Implementation {
            name: "xb grouped, completion fn",
            module: grouped(),
            kernel: "xbb_rt_xb_completion",
            against: beside_cccl,
        },
        Implementation {
            name: CCCL_COMPLETION,
            module: native(),
            kernel: "xbb_rt_cccl_completion",
            against: vs_ptx(None),
        },
        // The floor of a software barrier on one shared word (a monotonic counter, no
        // tx-count, drops or completion step), to size what the protocol costs.
        Implementation {
            name: "LDS counter barrier, 32-bit word",
            module: native(),
            kernel: "xbb_rt_counter32",
            against: vs_ptx(None),
        },
        Implementation {
            name: "LDS counter barrier, 64-bit word",
            module: native(),
            kernel: "xbb_rt_counter64",
            against: vs_ptx(None),
        },
    ];
    all.extend(checked("xb native"));
    all
}

/// Runs the round trip at every block size of `config`.
pub(crate) fn run<B: Backend>(
    device: &Device<B>,
    images: &Images<B>,
    stream: &Stream<B>,
    config: &Config,
    progress: Progress<'_>,
) -> Vec<Row> {
    let unit = if B::KIND == BackendKind::Host { Unit::Nanoseconds } else { Unit::Cycles };
    let mut rows = Vec::new();
    for &threads in &config.round_trip_threads {
        let label = format!("{threads} threads");
        for imp in implementations(device, images) {
            let mut row = Row::new(Benchmark::RoundTrip, &label, imp.name, unit);
            if let Some((baseline, target)) = imp.against {
                row = row.against(baseline, target);
            }
            if B::KIND == BackendKind::Host && imp.against.is_none() {
                // The CPU backend's target: no slower than C++20 std::barrier at every size.
                row = row.against(CPP_BARRIER, Some(Target::RatioAtMost(1.0)));
            }
            let status = match imp.module {
                Err(reason) => Ok(Status::Skipped(reason)),
                Ok(module) => {
                    module.kernel(imp.kernel).and_then(|kernel| measure(device, stream, &kernel, threads, config))
                }
            };
            rows.push(finish(row, status, progress));
        }
        against_faster_ptx(&mut rows, &label);
        if B::KIND == BackendKind::Host {
            for baseline in &host_baselines::ALL {
                let mut row = Row::new(Benchmark::RoundTrip, &label, baseline.name, unit);
                if baseline.name != CPP_BARRIER {
                    // How many times xb's time it takes.
                    row = row.against("xb", None);
                }
                rows.push(finish(row, Ok(baseline.measure(threads, config)), progress));
            }
        }
    }
    rows
}

/// Where the plain-loop PTX was faster than the harness's at this size, the rows compared
/// with raw PTX are compared with it instead (and the harness's PTX row with it too).
fn against_faster_ptx(rows: &mut [Row], config: &str) {
    let value = |name: &str| {
        rows.iter()
            .find(|r| r.benchmark == Benchmark::RoundTrip && r.config == config && r.implementation == name)
            .and_then(Row::value)
    };
    let (Some(harness), Some(plain)) = (value(RAW_PTX), value(RAW_PTX_PLAIN)) else { return };
    if plain >= harness {
        return;
    }
    for row in rows.iter_mut().filter(|r| r.benchmark == Benchmark::RoundTrip && r.config == config) {
        if row.implementation == RAW_PTX_PLAIN {
            row.baseline = None;
        } else if row.implementation == RAW_PTX || row.baseline == Some(RAW_PTX) {
            row.baseline = Some(RAW_PTX_PLAIN);
        }
    }
}

/// One implementation at one block size: a checking launch, then the timed ones.
fn measure<B: Backend>(
    device: &Device<B>,
    stream: &Stream<B>,
    kernel: &Kernel<B>,
    threads: u32,
    config: &Config,
) -> Result<Status> {
    // One block on the host, like the baselines' one group of threads (see the module docs).
    let blocks = if B::KIND == BackendKind::Host { 1 } else { device.info().multiprocessors };
    let launch = LaunchConfig::new(blocks, threads).shared(2 * threads * 4);
    let cycles: Buffer<B, u64> = device.alloc(blocks as usize)?;
    let mut report = DeviceReport::new(device)?;
    report.clear()?;
    let run = |iters: u32, check: u32| {
        // SAFETY: xbb_rt_*(unsigned iters, unsigned check, unsigned long long* cycles,
        // unsigned long long* report): `cycles` has one word per block, `report` two; both
        // outlive the synchronize that follows every call.
        unsafe { stream.launch(kernel, &launch, &[iters.into(), check.into(), cycles.arg(), report.words.arg()]) }
    };

    run(config.check_iters, 1)?;
    stream.synchronize()?;
    match report.read()? {
        Heard::Unsupported => return Ok(Status::Skipped("this image lacks the instructions".into())),
        Heard::Wrong(n) => {
            return Ok(Status::Incorrect(format!(
                "{n} threads read a stale neighbour slot after the barrier ({} phases x {blocks} blocks)",
                config.check_iters
            )))
        }
        Heard::Clean => {}
    }

    for _ in 0..config.warmup {
        run(config.round_trip_iters, 0)?;
    }
    stream.synchronize()?;
    let mut samples = Vec::with_capacity(config.reps as usize);
    for _ in 0..config.reps {
        run(config.round_trip_iters, 0)?;
        stream.synchronize()?;
        let per_block: Vec<f64> =
            cycles.download()?.iter().map(|&c| c as f64 / f64::from(config.round_trip_iters)).collect();
        samples.extend(stats::median(&per_block));
    }
    Ok(match stats::median(&samples) {
        Some(value) => Status::Measured { value, samples },
        None => Status::Failed("no samples".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{set_ratios, Verdict};

    fn row(config: &str, implementation: &'static str, value: f64, baseline: Option<&'static str>) -> Row {
        let mut row = Row::new(Benchmark::RoundTrip, config, implementation, Unit::Cycles);
        row.status = Status::Measured { value, samples: vec![value] };
        match baseline {
            Some(b) => row.against(b, (implementation == "xb native").then_some(Target::RatioAtMost(1.0))),
            None => row,
        }
    }

    fn rows(harness: f64, plain: f64) -> Vec<Row> {
        vec![
            row("128 threads", "xb native", 69.0, Some(RAW_PTX)),
            row("128 threads", RAW_PTX, harness, None),
            row("128 threads", RAW_PTX_PLAIN, plain, Some(RAW_PTX)),
            row("256 threads", "xb native", 69.0, Some(RAW_PTX)),
        ]
    }

    #[test]
    fn native_rows_are_judged_against_the_faster_raw_ptx() {
        // The plain loop faster: xb native (69) is judged against it (58.5) and misses.
        let mut faster = rows(71.2, 58.5);
        against_faster_ptx(&mut faster, "128 threads");
        set_ratios(&mut faster);
        assert_eq!(faster[0].baseline, Some(RAW_PTX_PLAIN));
        assert_eq!(faster[0].verdict(), Verdict::Miss);
        assert_eq!(faster[1].baseline, Some(RAW_PTX_PLAIN));
        assert_eq!(faster[2].baseline, None);
        // Other sizes keep their own baseline.
        assert_eq!(faster[3].baseline, Some(RAW_PTX));
        // The harness's loop as fast: nothing changes, and xb native passes.
        let mut same = rows(71.2, 71.2);
        against_faster_ptx(&mut same, "128 threads");
        set_ratios(&mut same);
        assert_eq!(same[0].baseline, Some(RAW_PTX));
        assert_eq!(same[0].verdict(), Verdict::Pass);
        assert_eq!(same[2].baseline, Some(RAW_PTX));
    }
}
