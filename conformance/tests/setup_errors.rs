//! A broken kernel bundle or image fails the suites' cases; it is not reported as a missing
//! device. Only a missing runtime library or device is a reason to skip
//! (`trials.rs` tests that classification).

use std::sync::OnceLock;

use libtest_mimic::{Arguments, Conclusion, Trial};
use xbarrier::{BackendKind, KernelBundle};
use xbarrier_conformance::{check_with, trials_with, Status, Suite};

/// The conformance bundle with its host image changed by `damage`, every other image intact.
fn damaged_host_image(damage: fn(&mut Vec<u8>)) -> xbarrier::Result<KernelBundle> {
    let real = xbarrier_conformance::bundle()?;
    let mut images = Vec::new();
    for kind in real.backends() {
        for variant in real.variants(kind) {
            let mut bytes = real.image_of(kind, variant)?.to_vec();
            if kind == BackendKind::Host {
                damage(&mut bytes);
            }
            images.push((kind, variant, bytes));
        }
    }
    let encoded = KernelBundle::encode(real.checked(), &images);
    KernelBundle::parse("conformance", Box::leak(encoded.into_boxed_slice()))
}

/// The host image with its ELF magic broken: not a shared object.
fn bad_elf_magic() -> xbarrier::Result<KernelBundle> {
    static BUNDLE: OnceLock<xbarrier::Result<KernelBundle>> = OnceLock::new();
    clone(BUNDLE.get_or_init(|| damaged_host_image(|image| image[0] = 0)))
}

/// The host image cut short: its segments reach past its end (the loader would map pages
/// that do not exist, and reading them would kill the process).
fn truncated_host_image() -> xbarrier::Result<KernelBundle> {
    static BUNDLE: OnceLock<xbarrier::Result<KernelBundle>> = OnceLock::new();
    clone(BUNDLE.get_or_init(|| damaged_host_image(|image| image.truncate(4096))))
}

/// Bytes that are no bundle at all.
fn bad_bundle_magic() -> xbarrier::Result<KernelBundle> {
    KernelBundle::parse("conformance", b"XBK0 not a kernel bundle")
}

fn clone(bundle: &xbarrier::Result<KernelBundle>) -> xbarrier::Result<KernelBundle> {
    match bundle {
        Ok(bundle) => Ok(bundle.clone()),
        Err(e) => panic!("building the damaged bundle failed: {e}"),
    }
}

/// Runs `trials` (those whose name contains `filter`) one at a time, logging to a file named
/// after `log` (their failures are expected; the log keeps them out of this test's output).
/// Returns the conclusion and the log.
fn run(trials: Vec<Trial>, filter: &str, log: &str) -> (Conclusion, String) {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("setup_errors-{log}.log"));
    let args = Arguments {
        filter: Some(filter.to_owned()),
        test_threads: Some(1),
        logfile: Some(path.to_string_lossy().into_owned()),
        ..Arguments::default()
    };
    let conclusion = libtest_mimic::run(&args, trials);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| format!("({} unreadable: {e})", path.display()));
    (conclusion, text)
}

/// `cases` trials ran and every one failed with `error` (none passed or was ignored).
fn assert_every_case_fails((conclusion, log): &(Conclusion, String), cases: u64, error: &str) {
    assert!(cases > 0);
    assert_eq!(
        (conclusion.num_failed, conclusion.num_passed, conclusion.num_ignored),
        (cases, 0, 0),
        "every case must fail, none be ignored: {conclusion:?}\n{log}"
    );
    assert_eq!(log.matches(error).count() as u64, cases, "each failure names the error {error:?}:\n{log}");
}

fn host_cases(suite: Suite) -> u64 {
    let host = xbarrier_conformance::all_cases::<xbarrier::Host>();
    host.iter().filter(|case| case.suite == suite).count() as u64
}

#[test]
fn a_host_image_that_is_no_shared_object_fails_the_host_cases() {
    for suite in [Suite::Conformance, Suite::Misuse] {
        let run = run(trials_with(suite, bad_elf_magic), "[host]", &format!("{suite:?}-elf-magic"));
        assert_every_case_fails(&run, host_cases(suite), "not a shared object for this machine: no ELF header");
    }
}

#[test]
fn a_truncated_host_image_fails_the_host_cases_without_crashing() {
    let run = run(trials_with(Suite::Conformance, truncated_host_image), "[host]", "truncated");
    assert_every_case_fails(
        &run,
        host_cases(Suite::Conformance),
        "the host image is not a shared object for this machine: truncated",
    );
}

#[test]
fn a_bundle_that_does_not_parse_fails_every_case_on_every_backend() {
    let trials = trials_with(Suite::Conformance, bad_bundle_magic);
    let count = trials.len() as u64;
    let run = run(trials, "", "bundle-magic");
    assert_every_case_fails(&run, count, "the kernel bundle does not parse: malformed kernel bundle");
}

#[test]
fn xbar_check_reports_the_setup_error_as_a_failure() {
    let outcomes = check_with(&[BackendKind::Host], bad_elf_magic, &|_| true, &|_| {});
    assert_eq!(outcomes.len() as u64, host_cases(Suite::Conformance) + host_cases(Suite::Misuse));
    for outcome in outcomes {
        match &outcome.status {
            Status::Failed(message) => {
                assert!(message.starts_with("[host] setup failed: "), "{message}");
                assert!(message.contains("not a shared object for this machine: no ELF header"), "{message}");
            }
            other => panic!("{}: expected a failure, got {other:?}", outcome.case),
        }
    }
}
