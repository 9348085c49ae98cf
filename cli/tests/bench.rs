//! `xbar bench` as a user runs it: on the CPU backend it times the round trip against C++20
//! std::barrier and std::sync::Barrier and writes the same report as table, markdown, JSON
//! and CSV, and as an SVG plot, and runs the multi-GPU benchmark on the backend's two
//! stand-in devices (skipping it, with the reason, with one); without a GPU the GPU backends
//! exit 2 with a fix.

mod common;

use common::{text, xbar};

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
    // The round trip's six rows and message passing's one.
    assert!(stdout.contains("7 measured, 0 wrong, 0 failed, 0 skipped"), "{stdout}");
    let row = stdout.lines().find(|l| l.starts_with("message-passing")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains(" ns ") && row.trim_end().ends_with("ok"), "{row}");
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

/// The implementations of the host round trip, in row order.
const HOST_ROUND_TRIP: [&str; 3] = ["xb", "C++20 std::barrier", "Rust std::sync::Barrier"];

#[test]
fn host_round_trip_as_csv() {
    let output = xbar(&["bench", "--backend", "host", "--threads", "2,3", "--reps", "1", "--format", "csv"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next(),
        Some("benchmark,config,implementation,value,unit,vs,ratio,target,verdict,correct,status,samples,detail"),
        "{stdout}"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 7, "one line per measurement:\n{stdout}");
    // The implementation's name holds a comma, quoted: the line splits into one more field.
    assert!(rows[6][0] == "message-passing" && rows[6][2] == "\"xb", "{stdout}");
    for (k, row) in rows[..6].iter().enumerate() {
        assert_eq!(row.len(), 13, "{row:?}");
        let threads = if k < 3 { "2 threads" } else { "3 threads" };
        assert_eq!(row[..3], ["round-trip", threads, HOST_ROUND_TRIP[k % 3]], "{stdout}");
        let value: f64 = row[3].parse().unwrap_or_else(|e| panic!("value {:?}: {e}", row[3]));
        assert!(value > 0.0 && row[4] == "ns" && row[9] == "ok" && row[10] == "measured", "{row:?}");
        assert_eq!(row[11].parse::<f64>().ok(), Some(value), "one rep: the sample is the value: {row:?}");
        // xb is compared with C++20 std::barrier, std::sync::Barrier with xb (how many times
        // xb's time it takes); the C++ baseline with nothing.
        let vs = ["C++20 std::barrier", "", "xb"][k % 3];
        assert_eq!(row[5], vs, "{row:?}");
        assert_eq!(row[6].parse::<f64>().is_ok_and(|r| r > 0.0), !vs.is_empty(), "{row:?}");
    }
    // The summary goes to stderr, so stdout stays CSV.
    assert!(stderr.contains("7 measured, 0 wrong"), "{stderr}");
}

#[test]
fn host_round_trip_as_json_and_svg() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("xbar-bench-plot");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let svg = dir.join("host.svg");
    let _ = std::fs::remove_file(&svg);
    let output = xbar(&[
        "bench",
        "--backend",
        "host",
        "--threads",
        "2,3",
        "--reps",
        "1",
        "--format",
        "json",
        "--quiet",
        "--plot",
        svg.to_str().unwrap_or_default(),
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"));
    assert_eq!(json["device"]["backend"], "host", "{json}");
    assert_eq!(json["checked"], xbarrier::CHECKED, "{json}");
    assert_eq!(json["summary"]["measured"], 7, "{json}");
    let rows = json["rows"].as_array().unwrap_or_else(|| panic!("no rows: {json}"));
    assert_eq!(rows.len(), 7, "{json}");
    assert_eq!(rows[6]["benchmark"], "message-passing", "{json}");
    for (k, row) in rows[..6].iter().enumerate() {
        for key in ["benchmark", "config", "implementation", "unit", "status", "value", "samples", "baseline", "ratio"]
        {
            assert!(row.get(key).is_some(), "{key} missing from {row}");
        }
        assert_eq!(row["implementation"], HOST_ROUND_TRIP[k % 3], "{row}");
        assert_eq!(
            (&row["benchmark"], &row["unit"], &row["status"]),
            (&"round-trip".into(), &"ns".into(), &"measured".into())
        );
        assert!(row["value"].as_f64().is_some_and(|v| v > 0.0), "{row}");
        assert_eq!(row["samples"].as_array().map(Vec::len), Some(1), "{row}");
    }
    // Release builds judge xb against C++20 std::barrier; checked builds judge nothing.
    let xb = &rows[0];
    assert_eq!(xb["baseline"], "C++20 std::barrier", "{xb}");
    let target = if xbarrier::CHECKED { serde_json::Value::Null } else { "<= 1.00x C++20 std::barrier".into() };
    assert_eq!(xb["target"], target, "{xb}");

    let svg = std::fs::read_to_string(&svg).unwrap_or_else(|e| panic!("{}: {e}", svg.display()));
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
    assert!(svg.contains("round-trip"), "no panel title:\n{svg}");
    // Every text element holds its text on a line of its own: the groups and the legend's
    // implementation names.
    for text in ["2 threads", "3 threads"].into_iter().chain(HOST_ROUND_TRIP) {
        assert!(svg.lines().any(|l| l.trim() == text), "{text} missing from the plot:\n{svg}");
    }
    // Six bars, three legend swatches, the background (and the axes' own rects, if any).
    assert!(svg.matches("<rect").count() >= 10, "{svg}");
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

/// The implementations of the multi-GPU benchmark, in row order.
const MULTI_GPU: [&str; 5] = [
    "xb PeerBarrier, every thread",
    "xb PeerBarrier, grid barrier",
    "xb PeerBarrier, grid barrier, system memory",
    "launch + synchronize",
    "stream events",
];

#[test]
fn multi_gpu_runs_on_the_two_host_devices() {
    let output = xbar(&["bench", "--backend", "host", "--only", "multi-gpu", "--reps", "2", "--format", "json"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"));
    let rows = json["rows"].as_array().unwrap_or_else(|| panic!("no rows: {json}"));
    assert_eq!(rows.len(), MULTI_GPU.len(), "{json}");
    for (row, implementation) in rows.iter().zip(MULTI_GPU) {
        assert_eq!(row["implementation"], implementation, "{row}");
        assert_eq!(
            (&row["benchmark"], &row["config"], &row["unit"], &row["status"]),
            (&"multi-gpu".into(), &"2 devices x 2 blocks x 4 threads".into(), &"us".into(), &"measured".into()),
            "{row}"
        );
        assert!(row["value"].as_f64().is_some_and(|v| v > 0.0), "{row}");
        assert_eq!(row["samples"].as_array().map(Vec::len), Some(2), "{row}");
        let baseline = if implementation == "launch + synchronize" {
            serde_json::Value::Null
        } else {
            "launch + synchronize".into()
        };
        assert_eq!(row["baseline"], baseline, "{row}");
    }
    // Release builds judge xb against a launch + synchronize per phase; checked builds nothing.
    let target = if xbarrier::CHECKED { serde_json::Value::Null } else { "<= 1.00x launch + synchronize".into() };
    assert_eq!(rows[0]["target"], target, "{json}");
    assert_eq!(rows[2]["target"], serde_json::Value::Null, "system memory is a figure, not judged: {json}");
    assert!(stderr.contains("5 measured, 0 wrong, 0 failed, 0 skipped"), "{stderr}");
    let line = "[bench] multi-gpu 2 devices x 2 blocks x 4 threads stream events: ";
    assert!(stderr.contains(line), "no progress line {line}: {stderr}");

    // With one device the rows are skipped, saying why, and the run succeeds.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_xbar"))
        .args(["bench", "--backend", "host", "--only", "multi-gpu", "--quiet"])
        .env("XBAR_HOST_DEVICES", "1")
        .output()
        .unwrap_or_else(|e| panic!("could not run xbar: {e}"));
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("0 measured, 0 wrong, 0 failed, 5 skipped"), "{stdout}");
    let skipped = stdout
        .lines()
        .filter(|l| l.starts_with("multi-gpu") && l.contains("skipped: needs two devices; the host backend has 1"));
    assert_eq!(skipped.count(), MULTI_GPU.len(), "{stdout}");
}
