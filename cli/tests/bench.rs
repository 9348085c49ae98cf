//! `xbar bench` as a user runs it: on the CPU backend it times the round trip and writes the
//! same report as table, markdown and JSON; without a GPU the GPU backends exit 2 with a fix.

use std::process::{Command, Output};

fn xbar(args: &[&str]) -> Output {
    match Command::new(env!("CARGO_BIN_EXE_xbar")).args(args).output() {
        Ok(output) => output,
        Err(e) => panic!("could not run xbar {args:?}: {e}"),
    }
}

fn text(output: &Output) -> (String, String) {
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn host_round_trip_writes_table_markdown_and_json() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("xbar-bench");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let (md, json) = (dir.join("bench.md"), dir.join("bench.json"));
    let output = xbar(&[
        "bench",
        "--backend",
        "host",
        "--threads",
        "2,4",
        "--reps",
        "2",
        "--out",
        md.to_str().unwrap_or_default(),
        "--json",
        json.to_str().unwrap_or_default(),
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("xbar bench: host CPU"), "{stdout}");
    for threads in ["2 threads", "4 threads"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with("round-trip") && l.contains(threads))
            .unwrap_or_else(|| panic!("no {threads} row:\n{stdout}"));
        assert!(row.contains(" ns ") && row.trim_end().ends_with("ok"), "{row}");
    }
    assert!(stdout.contains("6 measured, 0 wrong, 0 failed, 0 skipped"), "{stdout}");
    assert!(stdout.contains("--features cuda"), "no hint about the GPU benchmarks:\n{stdout}");
    // A progress line for every row: xb and both baselines at each size.
    for threads in ["2 threads", "4 threads"] {
        for implementation in ["xb", "C++20 std::barrier", "Rust std::sync::Barrier"] {
            let line = format!("[bench] round-trip {threads} {implementation}: ");
            assert!(stderr.contains(&line), "no progress line {line}: {stderr}");
        }
    }

    let md = std::fs::read_to_string(&md).unwrap_or_default();
    assert!(md.starts_with("# xbar bench") && md.contains("| round-trip | 4 threads | xb |"), "{md}");
    let json = std::fs::read_to_string(&json).unwrap_or_default();
    for field in
        ["\"backend\": \"host\"", "\"benchmark\": \"round-trip\"", "\"status\": \"measured\"", "\"samples\": ["]
    {
        assert!(json.contains(field), "{field} missing from {json}");
    }
    assert_eq!(json.matches("\"implementation\": \"xb\"").count(), 2, "{json}");
}

#[test]
fn gpu_benchmarks_on_the_host_check_their_results() {
    let output = xbar(&[
        "bench",
        "--backend",
        "host",
        "--only",
        "reduction,copy",
        "--size-mib",
        "1",
        "--stage-kib",
        "4",
        "--reps",
        "1",
        "--format",
        "markdown",
        "--quiet",
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for row in
        ["| reduction | 1 MiB u32 | xb pipeline |", "| copy | 1 MiB | xb bulk copy |", "| copy | 1 MiB | memcpy |"]
    {
        let line = stdout.lines().find(|l| l.starts_with(row)).unwrap_or_else(|| panic!("no {row}:\n{stdout}"));
        assert!(line.contains("| ok |"), "{line}");
    }
    assert!(stdout.contains("skipped: a CUDA baseline"), "{stdout}");
    assert!(!stderr.contains("[bench]"), "--quiet printed progress: {stderr}");
}

#[test]
fn a_missing_gpu_backend_or_device_is_exit_2_with_a_fix() {
    let cuda_built = xbarrier::enabled_backends().contains(&xbarrier::BackendKind::Cuda);
    let output = xbar(&["bench", "--backend", "cuda", "--quiet"]);
    let (stdout, stderr) = text(&output);
    match output.status.code() {
        Some(2) if !cuda_built => assert!(stderr.contains("--features cuda"), "{stderr}"),
        Some(2) => assert!(stderr.contains("no cuda device 0") && stderr.contains("fix:"), "{stderr}"),
        // A build with the cuda feature on a machine with a GPU runs for real.
        _ => assert!(cuda_built && stdout.contains("cuda backend"), "{stdout}\n{stderr}"),
    }
}

#[test]
fn bad_pipeline_shapes_are_refused() {
    let output = xbar(&["bench", "--backend", "host", "--only", "copy", "--stages", "1", "--quiet"]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("copy: 1 stages"), "{stderr}");

    let output = xbar(&["bench", "--only", "everything"]);
    assert_eq!(output.status.code(), Some(2));
}
