//! `xbar check --backend hip` and `xbar bench --backend hip` as an AMD GPU owner runs them:
//! the device's facts come before the results, and a missing backend or device is exit
//! status 2 with a fix, never a panic.
//!
//! Where this xbar has the `hip` backend (`cargo test -p xbar --features hip`), the tests run
//! it against backend-hip's stand-in runtime (`backend-hip/tests/fake_hip.c`, compiled with
//! `$CC`, else `cc`, into a `libamdhip64.so` found through `LD_LIBRARY_PATH`): one "AMD
//! Instinct" (gfx942) whose counter rate `XBAR_FAKE_HIP_WALL_CLOCK` sets, and which refuses real
//! kernel images, so the cases themselves are ignored and the benchmarks cannot run.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

use common::text;
use xbarrier::BackendKind;

fn hip_built() -> bool {
    xbarrier::enabled_backends().contains(&BackendKind::Hip)
}

/// The directory holding the fake `libamdhip64.so`, built on first use.
fn fake_library_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("xbar-fake-hip");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../backend-hip/tests/fake_hip.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
        let status = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(dir.join("libamdhip64.so"))
            .arg(&source)
            .status()
            .unwrap_or_else(|e| panic!("this test needs a C compiler (`{cc}`, or set CC): {e}"));
        assert!(status.success(), "{cc} failed on {}", source.display());
        dir
    })
}

/// Runs `xbar args` on the fake runtime, its counter at `wall_clock` (`XBAR_FAKE_HIP_WALL_CLOCK`).
fn xbar_on_fake(args: &[&str], wall_clock: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xbar"))
        .args(args)
        .env("LD_LIBRARY_PATH", fake_library_dir())
        .env("XBAR_FAKE_HIP_WALL_CLOCK", wall_clock)
        .env_remove("ROCM_PATH")
        .env_remove("HIP_PATH")
        .env_remove("XBAR_REQUIRE_GPU")
        .output()
        .unwrap_or_else(|e| panic!("could not run xbar {args:?}: {e}"))
}

/// The facts every report of the fake device carries, at `wall_clock`.
fn assert_facts(text: &str, wall_clock: &str, image: &str) {
    for line in [
        "hip device 0: Fake AMD Instinct".to_owned(),
        "gfx target:   gfx942 (gcnArchName gfx942:sramecc+:xnack-)".to_owned(),
        "HIP runtime:  6.3.42134 (hipRuntimeGetVersion 60342134), libamdhip64.so".to_owned(),
        "HIP driver:   6.3.42133 (hipDriverGetVersion 60342133)".to_owned(),
        format!("wall clock:   {wall_clock} (hipDeviceAttributeWallClockRate)"),
        format!("image:        {image} (native variant); "),
    ] {
        assert!(text.contains(&line), "{line:?} missing from:\n{text}");
    }
    let objects =
        text.lines().find(|l| l.contains("code objects:")).unwrap_or_else(|| panic!("no code objects:\n{text}"));
    assert!(objects.contains("gfx942") && objects.ends_with("matches the device: gfx942"), "{objects}");
    let checked = if xbarrier::CHECKED { "; checked device code" } else { "; unchecked device code" };
    assert!(text.contains(checked), "{checked:?} missing from:\n{text}");
}

#[test]
fn check_reports_the_amd_device_before_the_results() {
    if !hip_built() {
        let output = common::xbar(&["check", "--backend", "hip"]);
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("--features hip"), "{stderr}");
        return;
    }
    for (setting, rate) in [("25000", "25 MHz"), ("99999", "99.999 MHz")] {
        let output = xbar_on_fake(&["check", "--backend", "hip", "--filter", "max_values"], setting);
        let (stdout, stderr) = text(&output);
        assert_facts(&stdout, rate, "conformance");
        // Only the hip backend ran; the fake refuses the real image, so its case is ignored.
        let row = stdout.lines().find(|l| l.contains("max_values")).unwrap_or_else(|| panic!("no row:\n{stdout}"));
        assert!(row.starts_with("hip ") && row.contains("IGNORED") && row.contains("hipModuleLoadData"), "{row}");
        assert!(!stdout.lines().any(|l| l.starts_with("host ")), "--backend hip ran the host:\n{stdout}");
        assert!(stdout.contains("0 passed, 0 failed, 1 ignored"), "{stdout}");
        assert_eq!(output.status.code(), Some(2), "{stderr}");
    }
    // JSON stays an array on stdout; the facts go to stderr.
    let output = xbar_on_fake(&["check", "--backend", "hip", "--filter", "max_values", "--format", "json"], "25000");
    let (stdout, stderr) = text(&output);
    assert!(stdout.trim_start().starts_with('[') && !stdout.contains("wall clock"), "{stdout}");
    assert_facts(&stderr, "25 MHz", "conformance");
}

#[test]
fn check_and_bench_without_a_usable_device_are_errors_with_a_fix() {
    if !hip_built() {
        return;
    }
    // The runtime fails the rate query: the device does not open, and the error names the call.
    for args in [&["check", "--backend", "hip"][..], &["bench", "--backend", "hip", "--quiet"]] {
        let output = xbar_on_fake(args, "error:801");
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stdout}\n{stderr}");
        assert!(stderr.contains("no hip device 0 to "), "{stderr}");
        assert!(stderr.contains("`hipDeviceGetAttribute(hipDeviceAttributeWallClockRate)` failed"), "{stderr}");
        assert!(stderr.contains("  fix: "), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn bench_reports_the_amd_device_when_it_cannot_run() {
    if !hip_built() {
        let output = common::xbar(&["bench", "--backend", "hip"]);
        assert_eq!(output.status.code(), Some(2));
        return;
    }
    let output = xbar_on_fake(&["bench", "--backend", "hip", "--quiet", "--only", "round-trip"], "unknown");
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("xbar: error: the benchmarks cannot run: "), "{stderr}");
    // A runtime without the attribute (ROCm 5.2): the default rate, said to be assumed.
    let assumed = "wall clock:   100 MHz (assumed: the runtime does not report hipDeviceAttributeWallClockRate)";
    assert!(stderr.contains(assumed), "{assumed:?} missing from:\n{stderr}");
    assert!(stderr.contains("image:        bench (native variant)"), "{stderr}");
}
