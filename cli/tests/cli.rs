//! Runs the built `xbar` binary as a user would.

mod common;

use common::{text, xbar};

#[test]
fn info_lists_the_host_backend_and_toolchains() {
    let output = xbar(&["info"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "xbar info failed: {stdout}\n{stderr}");
    assert!(stdout.contains("enabled backends: host"), "{stdout}");
    // Two stand-in devices by default (XBAR_HOST_DEVICES), for code written for several GPUs.
    assert!(stdout.contains("host backend: 2 devices"), "{stdout}");
    assert!(stdout.contains("device 1: host CPU"), "{stdout}");
    assert!(stdout.contains("checked device code: "), "{stdout}");
    assert!(stdout.contains("host C++ compiler: found at "), "{stdout}");
    for tool in ["nvcc (CUDA): ", "clang for AMDGPU (HIP): ", "hipcc (HIP): ", "clang-22 (zig wheel): "] {
        assert!(stdout.contains(tool), "{tool} missing from:\n{stdout}");
    }
}

#[test]
fn check_max_values_passes() {
    let output = xbar(&["check", "--filter", "max_values"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let row =
        stdout.lines().find(|l| l.contains("max_values")).unwrap_or_else(|| panic!("no max_values row:\n{stdout}"));
    assert!(row.contains("PASS") && row.contains("host") && row.contains("limits"), "{row}");
    // One row per enabled backend; without a GPU feature that is the host's alone.
    let backends = xbarrier::enabled_backends().len();
    if backends == 1 {
        assert!(stdout.lines().any(|l| l == "1 passed, 0 failed, 0 ignored"), "{stdout}");
    } else {
        let summary = stdout.lines().find(|l| l.ends_with(" ignored")).unwrap_or_default();
        let counts: Vec<usize> = summary.split([' ', ',']).filter_map(|w| w.parse().ok()).collect();
        assert!(matches!(counts[..], [p, 0, i] if p >= 1 && p + i == backends), "{stdout}");
    }
    assert!(stderr.contains("host max_values: PASS"), "no progress line: {stderr}");
}

#[test]
fn check_without_a_matching_case_fails() {
    let output = xbar(&["check", "--filter", "no_such_case"]);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("no case matched"), "{stderr}");
    assert!(stderr.contains("no_such_case"), "{stderr}");
}

#[test]
fn check_misuse_deadlock_is_reported_or_ignored() {
    let output = xbar(&["check", "--suite", "misuse", "--filter", "deadlock"]);
    let (stdout, stderr) = text(&output);
    let row =
        stdout.lines().find(|l| l.contains("deadlock_is_reported")).unwrap_or_else(|| panic!("no row:\n{stdout}"));
    if xbarrier::CHECKED {
        assert!(output.status.success(), "{stdout}\n{stderr}");
        assert!(row.contains("PASS"), "{row}");
        if xbarrier::enabled_backends().len() == 1 {
            assert!(stdout.lines().any(|l| l == "1 passed, 0 failed, 0 ignored"), "{stdout}");
        }
    } else {
        // Unchecked device code: misuse cannot be detected, so the case is ignored and
        // nothing ran, which is not a success.
        assert!(!output.status.success(), "{stdout}\n{stderr}");
        assert!(row.contains("IGNORED"), "{row}");
        assert!(stdout.lines().any(|l| l.starts_with("0 passed, 0 failed, ")), "{stdout}");
    }
}

#[test]
fn check_suite_filter_keeps_to_its_suite() {
    let output = xbar(&["check", "--suite", "conformance", "--filter", "zero", "--list"]);
    let (stdout, stderr) = text(&output);
    // `init_with_zero` / `arrive_update_zero` are misuse cases: none is left in conformance.
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("no case matched"), "{stderr}");

    let output = xbar(&["check", "--suite", "misuse", "--list"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("deadlock_is_reported") && !stdout.contains("max_values"), "{stdout}");
}

#[test]
fn check_json_is_an_array_of_outcomes() {
    let output = xbar(&["check", "--filter", "max_values", "--format", "json", "--quiet"]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let json = stdout.trim();
    assert!(json.starts_with('[') && json.ends_with(']'), "{json}");
    for field in [
        "\"backend\": \"host\"",
        "\"feature\": \"limits\"",
        "\"case\": \"max_values\"",
        "\"suite\": \"conformance\"",
        "\"result\": \"PASS\"",
        "\"seconds\": ",
        "\"detail\": ",
    ] {
        assert!(json.contains(field), "{field} missing from {json}");
    }
    assert!(stderr.contains("1 passed, 0 failed, "), "{stderr}");
    assert!(!stderr.contains("max_values: PASS"), "--quiet still printed progress: {stderr}");
}

#[test]
fn bad_usage_is_an_error() {
    let output = xbar(&["check", "--suite", "bogus"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("possible values"));

    let output = xbar(&[]);
    assert!(!output.status.success());
}

#[test]
fn help_describes_the_commands() {
    let output = xbar(&["--help"]);
    let (stdout, _) = text(&output);
    assert!(output.status.success());
    assert!(stdout.contains("info") && stdout.contains("check"), "{stdout}");

    let output = xbar(&["check", "--help"]);
    let (stdout, _) = text(&output);
    assert!(output.status.success());
    for option in ["--filter", "--suite", "--format", "--list", "Exit status"] {
        assert!(stdout.contains(option), "{option} missing from:\n{stdout}");
    }
}

#[test]
fn lower_rejects_unknown_names() {
    for (args, what) in [
        (
            &["lower", "--target", "sm_99"][..],
            "unknown target `sm_99`; known: sm_90, sm_80, gfx90a, gfx942, gfx950, gfx1100, gfx1200, gfx1250, or an \
             AMDGPU target ID",
        ),
        (&["lower", "--op", "arrive,teleport"][..], "unknown operation `teleport`"),
        (&["lower", "--variant", "fast"][..], "unknown variant `fast`; known: default, emulated"),
        (&["lower", "--op", "arrive", "--fast-path"][..], "--fast-path needs a round-trip operation: arrive_and_wait"),
        (
            &["lower", "--target", "gfx90a", "--op", "wait", "--sleeping-poll"][..],
            "--sleeping-poll needs a round-trip operation",
        ),
        (
            &["lower", "--target", "sm_90", "--op", "arrive_and_wait", "--completing-wave"][..],
            "--completing-wave needs an AMD target",
        ),
        (&["lower", "--target", "gfx90a", "--fast-path", "--sleeping-poll"][..], "cannot be used with"),
    ] {
        let output = xbar(args);
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(what), "{args:?}: {stderr}");
    }
    let output = xbar(&["lower", "--list"]);
    let (stdout, _) = text(&output);
    assert!(output.status.success() && stdout.contains("operations: init, arrive, wait"), "{stdout}");
}

/// Any AMDGPU target the AMD compilers know lowers (a generic one, one with a feature); one
/// they do not know is an error naming what clang-19 knows. Without clang-19 (allowed unless
/// XBAR_REQUIRE_TOOLCHAINS=1) the error says so.
#[test]
fn lower_takes_any_amd_target_the_compiler_knows() {
    let required = std::env::var("XBAR_REQUIRE_TOOLCHAINS").is_ok_and(|v| v == "1");
    for target in ["gfx11-generic", "gfx1101", "gfx90a:xnack+"] {
        let output = xbar(&["lower", "--target", target, "--op", "arrive_and_wait", "--fast-path"]);
        let (stdout, stderr) = text(&output);
        if !output.status.success() && !required && stderr.contains("clang") {
            return; // no AMD compiler here
        }
        assert!(output.status.success(), "{target}: {stderr}");
        assert!(stdout.contains(&format!("== arrive_and_wait on {target} default (unchecked)")), "{stdout}");
        assert!(stdout.contains("ds_add_rtn_u64") && stdout.trim_end().ends_with("s_endpgm"), "{stdout}");
        // The header gives the other three walks, which their options list.
        assert!(
            stdout.contains(", completing wave ")
                && stdout.contains(", arming wave ")
                && stdout.contains(", sleeping poll "),
            "{stdout}"
        );
        // The completer returns without polling; the arming wave arms, then polls.
        let output = xbar(&["lower", "--target", target, "--op", "arrive_and_wait", "--completing-wave"]);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{target}: {stderr}");
        assert_eq!(stdout.matches("ds_add_rtn_u64").count(), 1, "{stdout}");
        assert!(!stdout.contains("ds_read_b64") && !stdout.contains("ds_load_b64"), "{stdout}");
        let output = xbar(&["lower", "--target", target, "--op", "arrive_and_wait", "--arming-wave"]);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{target}: {stderr}");
        assert_eq!(stdout.matches("ds_add_rtn_u64").count(), 2, "{stdout}");
        assert!(stdout.contains("ds_read_b64") || stdout.contains("ds_load_b64"), "{stdout}");
        let output = xbar(&["lower", "--target", target, "--op", "arrive_and_wait", "--sleeping-poll"]);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{target}: {stderr}");
        assert!(stdout.contains("s_sleep") && !stdout.contains("ds_add"), "{stdout}");
    }
    let output = xbar(&["lower", "--target", "gfx9999", "--op", "arrive"]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("`gfx9999` is not an AMDGPU processor") && stderr.contains("gfx1100"), "{stderr}");
}

/// With nvcc and cuobjdump, `arrive_tx` on sm_90 lists its mbarrier instruction; without them
/// (allowed unless XBAR_REQUIRE_TOOLCHAINS=1) the error says how to install them.
#[test]
fn lower_prints_the_instructions_of_an_op() {
    let output = xbar(&["lower", "--target", "sm_90", "--op", "arrive_tx"]);
    let (stdout, stderr) = text(&output);
    let required = std::env::var("XBAR_REQUIRE_TOOLCHAINS").is_ok_and(|v| v == "1");
    if output.status.success() {
        assert!(stdout.contains("== arrive_tx on sm_90 default (unchecked)"), "{stdout}");
        assert!(stdout.contains("SYNCS.ARRIVE.TRANS64"), "{stdout}");
        // A round trip's header gives its fast path, which --fast-path lists.
        let output = xbar(&["lower", "--target", "sm_90", "--op", "arrive_and_wait", "--fast-path"]);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stderr}");
        assert!(stdout.contains("instructions in kernel xbl_arrive_and_wait; fast path "), "{stdout}");
        assert!(stdout.contains("SYNCS.PHASECHK") && stdout.trim_end().ends_with("EXIT"), "{stdout}");
    } else {
        assert!(!required, "XBAR_REQUIRE_TOOLCHAINS=1 but xbar lower failed: {stderr}");
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("install-toolchains.sh"), "no install hint in: {stderr}");
    }
}
