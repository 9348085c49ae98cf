//! Every benchmark on the CPU backend at small sizes: the xb kernels (pipelines, bulk copy,
//! device-scope barrier) must compute the right results through the protocol, the
//! CUDA-only baselines must say why they were skipped, the host round trip's std::barrier
//! and std::sync::Barrier baselines must run and check, the multi-GPU benchmark must run on
//! the backend's two stand-in devices, and ratios must be wired.

use std::cell::RefCell;

use xbarrier::{Device, Host};
use xbarrier_bench::{Benchmark, Config, Pipeline, Row, Status, Unit};

fn small() -> Config {
    Config {
        benchmarks: Benchmark::ALL.to_vec(),
        round_trip_threads: vec![2, 8],
        round_trip_iters: 100,
        grid_iters: 50,
        messages: 200,
        host_phases: 100,
        multi_gpu_phases: 50,
        multi_gpu_blocks: 2,
        multi_gpu_threads: 3,
        check_iters: 50,
        stream_bytes: (1 << 20) + 48, // a last tile shorter than a stage
        reduction: Pipeline { stages: 3, stage_bytes: 4096, blocks_per_sm: 2 },
        consumer_warps: 2,
        copy: Pipeline { stages: 3, stage_bytes: 4096, blocks_per_sm: 1 },
        grid_threads: 3,
        warmup: 1,
        reps: 2,
    }
}

#[test]
fn every_benchmark_runs_correctly_on_the_host() {
    let device = Device::<Host>::open(0).expect("the host device");
    let seen = RefCell::new(Vec::new());
    let report = xbarrier_bench::run(&device, &small(), &|row: &Row| seen.borrow_mut().push(row.implementation))
        .expect("the run starts");
    assert_eq!(seen.borrow().len(), report.rows.len(), "one progress call per row");
    for row in &report.rows {
        let cuda_only = matches!(row.implementation, "raw PTX pipeline" | "cg grid.sync");
        match &row.status {
            Status::Measured { value, samples } => {
                assert!(!cuda_only, "{row:?}");
                assert!(*value > 0.0 && samples.len() == 2, "{row:?}");
            }
            Status::Skipped(reason) => assert!(cuda_only && reason.contains("CUDA baseline"), "{row:?}"),
            other => panic!("{} {} {}: {other:?}", row.benchmark, row.config, row.implementation),
        }
    }
    let names: Vec<(Benchmark, &str)> = report.rows.iter().map(|r| (r.benchmark, r.implementation)).collect();
    for expected in [
        (Benchmark::RoundTrip, "xb"),
        (Benchmark::RoundTrip, "C++20 std::barrier"),
        (Benchmark::RoundTrip, "Rust std::sync::Barrier"),
        (Benchmark::Reduction, "xb pipeline"),
        (Benchmark::Reduction, "grid-stride"),
        (Benchmark::Copy, "xb bulk copy"),
        (Benchmark::Copy, "memcpy"),
        (Benchmark::GridBarrier, "xb device barrier"),
        (Benchmark::MessagePassing, "xb, flag in global memory"),
        (Benchmark::HostRoundTrip, "xb SystemBarrier"),
        (Benchmark::HostRoundTrip, "xb SystemBarrier::split"),
        (Benchmark::HostRoundTrip, "launch + synchronize"),
        (Benchmark::HostRoundTrip, "flags in host-shared memory"),
        (Benchmark::MultiGpu, "xb PeerBarrier, every thread"),
        (Benchmark::MultiGpu, "xb PeerBarrier, grid barrier"),
        (Benchmark::MultiGpu, "launch + synchronize"),
        (Benchmark::MultiGpu, "stream events"),
    ] {
        assert!(names.contains(&expected), "{expected:?} missing from {names:?}");
    }
    // The host round trip: xb against C++20 std::barrier (the target), std::sync::Barrier
    // against xb, at every size, all in ns.
    for threads in ["2 threads", "8 threads"] {
        let of = |name: &str| {
            report
                .rows
                .iter()
                .find(|r| r.benchmark == Benchmark::RoundTrip && r.config == threads && r.implementation == name)
                .unwrap_or_else(|| panic!("no {threads} {name} row"))
        };
        let (xb, rust) = (of("xb"), of("Rust std::sync::Barrier"));
        assert_eq!(xb.baseline, Some("C++20 std::barrier"));
        assert_eq!(rust.baseline, Some("xb"));
        assert!(xb.ratio.is_some_and(|r| r > 0.0) && rust.ratio.is_some_and(|r| r > 0.0), "{xb:?} {rust:?}");
        assert_eq!(of("C++20 std::barrier").unit, Unit::Nanoseconds);
        // Release builds time checked device code against it (within 10x); a checked
        // build's own rows are checked code, and it has no such row.
        let checked = report
            .rows
            .iter()
            .find(|r| r.benchmark == Benchmark::RoundTrip && r.config == threads && r.implementation == "xb checked");
        assert_eq!(checked.is_some(), !xbarrier::CHECKED, "the {threads} `xb checked` row: {checked:?}");
        if let Some(row) = checked {
            assert_eq!(row.baseline, Some("xb"));
            assert_eq!(row.target, Some(xbarrier_bench::Target::RatioAtMost(10.0)));
            assert!(row.ratio.is_some_and(|r| r > 0.0), "{row:?}");
        }
    }
    // The host <-> kernel round trip: xb against a launch and a synchronize per phase, in µs.
    for form in ["xb SystemBarrier", "xb SystemBarrier::split"] {
        let host_rt = report.rows.iter().find(|r| r.implementation == form).expect("host round trip row");
        assert_eq!((host_rt.baseline, host_rt.unit), (Some("launch + synchronize"), Unit::Microseconds));
        assert!(host_rt.ratio.is_some_and(|r| r > 0.0), "{host_rt:?}");
    }
    // The copy is compared with memcpy, both measured: a ratio exists.
    let xb_copy = report.rows.iter().find(|r| r.implementation == "xb bulk copy").expect("copy row");
    assert!(xb_copy.ratio.is_some_and(|r| r > 0.0), "{xb_copy:?}");
    assert_eq!(xb_copy.unit, Unit::GigabytesPerSecond);
    assert_eq!(report.incorrect() + report.failed(), 0);
    assert_eq!(report.checked, xbarrier::CHECKED);
}

#[test]
fn bad_configurations_are_refused_before_anything_runs() {
    let device = Device::<Host>::open(0).expect("the host device");
    let mut config = small();
    config.copy.stages = 1;
    let err = xbarrier_bench::run(&device, &config, &|_: &Row| panic!("nothing may run")).expect_err("refused");
    assert!(err.to_string().contains("copy: 1 stages"), "{err}");
}

#[test]
fn the_checked_round_trip_is_checked_device_code() {
    let bundle = xbarrier_bench::checked_bundle().expect("the bench_checked bundle");
    assert!(bundle.checked(), "bench_checked must hold checked device code in every build");
    let device = Device::<Host>::open(0).expect("the host device");
    let module = device.load(&bundle).expect("loads on the host");
    assert!(module.checked());
    module.kernel("xbb_rt_xb").expect("xb's round trip");
}

/// The multi-GPU benchmark on the host backend's two stand-in devices: the xb forms (the grid
/// barrier in both placements) and both baselines run and check, in µs per phase, xb against
/// a launch + synchronize per phase; only the device-memory rows have a target.
#[test]
fn multi_gpu_runs_on_the_two_host_devices() {
    let device = Device::<Host>::open(0).expect("the host device");
    let config = Config { benchmarks: vec![Benchmark::MultiGpu], multi_gpu_phases: 40, reps: 3, ..small() };
    let report = xbarrier_bench::run(&device, &config, &|_: &Row| {}).expect("the run starts");
    let names: Vec<&str> = report.rows.iter().map(|r| r.implementation).collect();
    assert_eq!(
        names,
        [
            "xb PeerBarrier, every thread",
            "xb PeerBarrier, grid barrier",
            "xb PeerBarrier, grid barrier, system memory",
            "launch + synchronize",
            "stream events"
        ]
    );
    for row in &report.rows {
        assert_eq!(
            (row.benchmark, row.config.as_str(), row.unit),
            (Benchmark::MultiGpu, "2 devices x 2 blocks x 3 threads", Unit::Microseconds)
        );
        match &row.status {
            Status::Measured { value, samples } => assert!(*value > 0.0 && samples.len() == 3, "{row:?}"),
            other => panic!("{}: {other:?}", row.implementation),
        }
        if row.implementation != "launch + synchronize" {
            assert_eq!(row.baseline, Some("launch + synchronize"), "{row:?}");
            assert!(row.ratio.is_some_and(|r| r > 0.0), "{row:?}");
        }
        let judged = row.implementation.starts_with("xb")
            && !row.implementation.ends_with("system memory")
            && !xbarrier::CHECKED;
        assert_eq!(row.target.is_some(), judged, "{row:?}");
    }
    assert_eq!(report.incorrect() + report.failed(), 0);
}
