//! Runs the cases: as libtest trials (`tests/`) or as a table (`xbar check`).
//!
//! A backend's cases are reported ignored only when it cannot run here: its runtime library
//! is missing ([`Error::LibraryNotFound`]) or it has no device ([`Error::NoDevice`]), and
//! not even then with `XBAR_REQUIRE_GPU=1`. Any other error while setting up (a bundle that
//! does not parse, a missing or broken image, a driver error) fails every case with it. A
//! case that needs more devices than the backend has (the `multi_gpu_*` cases), or devices
//! that cannot share memory in the case's placement, is reported ignored with the count or
//! with what is missing, unless `XBAR_REQUIRE_MULTI_GPU=1`.

use std::sync::{Arc, Mutex, PoisonError};

use libtest_mimic::Trial;
use xbarrier::{visit_backends, Backend, BackendKind, BackendVisitor, Error, KernelBundle, PeerPlacement, Variant};

use crate::cases::{all_cases, Case, Suite};
use crate::harness::{target_label, variants, Ctx};

/// Where the suites get their kernels: [`crate::bundle`], or a stand-in in tests.
pub type BundleSource = fn() -> xbarrier::Result<KernelBundle>;

/// The variable that makes a missing GPU runtime or device fail the run.
pub const REQUIRE_GPU_VAR: &str = "XBAR_REQUIRE_GPU";

/// Whether a missing runtime or device must fail the run (`XBAR_REQUIRE_GPU=1`, set on GPU machines).
fn gpu_required() -> bool {
    std::env::var(REQUIRE_GPU_VAR).is_ok_and(|v| v == "1")
}

/// The variable that makes the cases needing several devices run (and fail) where the
/// backend has fewer, for machines that should have them.
pub const REQUIRE_MULTI_GPU_VAR: &str = "XBAR_REQUIRE_MULTI_GPU";

/// How setting up one backend and variant went.
enum Setup<B: Backend> {
    /// Device open and module loaded.
    Ready(Arc<Ctx<B>>),
    /// The backend cannot run here (no runtime library, no device); why.
    Unavailable(String),
    /// Something is broken; the message every case fails with.
    Broken(String),
}

/// What a setup error means: `Ok(reason)` to report the cases ignored, `Err(message)` to
/// fail them. Only a missing runtime library or device is a reason, and only while
/// `required` (`XBAR_REQUIRE_GPU=1`) is false.
fn classify(label: &str, error: &Error, required: bool) -> Result<String, String> {
    let missing = match error {
        Error::LibraryNotFound { .. } => "no runtime library",
        Error::NoDevice { .. } => "no device",
        _ => return Err(format!("[{label}] setup failed: {error}")),
    };
    if required {
        Err(format!("{REQUIRE_GPU_VAR}=1 but the {label} backend has {missing}: {error}"))
    } else {
        Ok(format!("{missing}: {error}"))
    }
}

fn setup<B: Backend>(bundle: &xbarrier::Result<KernelBundle>, variant: Variant) -> Setup<B> {
    let label = target_label(B::KIND, variant);
    let opened = match bundle {
        Ok(bundle) => Ctx::<B>::open_bundle(bundle, variant),
        Err(error) => return Setup::Broken(format!("[{label}] the kernel bundle does not parse: {error}")),
    };
    match opened {
        Ok(ctx) => Setup::Ready(Arc::new(ctx)),
        Err(error) => match classify(&label, &error, gpu_required()) {
            Ok(reason) => Setup::Unavailable(reason),
            Err(message) => Setup::Broken(message),
        },
    }
}

/// The variants to set up: those the bundle must carry, or just the default one when it
/// does not parse (its cases then fail with the parse error).
fn variants_of<B: Backend>(bundle: &xbarrier::Result<KernelBundle>) -> Vec<Variant> {
    bundle.as_ref().map_or_else(|_| vec![Variant::Default], variants::<B>)
}

/// Why a case cannot run on a module, if it cannot: misuse is reported only by checked code,
/// and a case that needs more devices than the backend has, or devices that cannot share
/// memory in its placement, cannot run (unless `XBAR_REQUIRE_MULTI_GPU=1`, where it runs and
/// fails).
fn skip_reason<B: Backend>(case: &Case<B>, ctx: &Ctx<B>) -> Option<String> {
    if case.suite == Suite::Misuse && !ctx.module.checked() {
        return Some(
            "unchecked device code: misuse is undefined behaviour there, not reported (build in debug or with the `checked` feature)".to_owned(),
        );
    }
    if case.devices > 1 && !std::env::var(REQUIRE_MULTI_GPU_VAR).is_ok_and(|v| v == "1") {
        let found = xbarrier::Device::<B>::count().unwrap_or(0);
        if found < case.devices {
            return Some(format!(
                "needs {} devices, the {} backend has {found} (set {REQUIRE_MULTI_GPU_VAR}=1 to fail instead)",
                case.devices,
                B::KIND
            ));
        }
        return missing_shared_memory(ctx, case.devices, case.placement);
    }
    None
}

/// Why devices `0..devices` cannot share memory in `placement`, if they cannot: what the
/// backend says when asked for a word of it owned by each device in turn
/// (Error::Unsupported; the peer access it enables is what the cases would enable first).
/// Other errors are left to the case. Asked once per backend, device count and placement:
/// every case and variant shares the answer.
fn missing_shared_memory<B: Backend>(ctx: &Ctx<B>, devices: usize, placement: PeerPlacement) -> Option<String> {
    type Answers = Vec<((BackendKind, usize, PeerPlacement), Option<String>)>;
    static ANSWERS: Mutex<Answers> = Mutex::new(Vec::new());
    let mut answers = ANSWERS.lock().unwrap_or_else(PoisonError::into_inner);
    let key = (B::KIND, devices, placement);
    if let Some((_, answer)) = answers.iter().find(|(k, _)| *k == key) {
        return answer.clone();
    }
    let answer = probe_shared_memory(ctx, devices, placement);
    answers.push((key, answer.clone()));
    answer
}

fn probe_shared_memory<B: Backend>(ctx: &Ctx<B>, devices: usize, placement: PeerPlacement) -> Option<String> {
    let others: Vec<xbarrier::Device<B>> = (1..devices).filter_map(|o| xbarrier::Device::<B>::open(o).ok()).collect();
    for other in &others {
        for (owner, peer) in [(&ctx.device, other), (other, &ctx.device)] {
            if let Err(e @ Error::Unsupported { .. }) = owner.alloc_peer_in::<u8>(placement, 1, &[peer]) {
                return Some(format!(
                    "the devices cannot share {}: {e} (set {REQUIRE_MULTI_GPU_VAR}=1 to fail instead)",
                    placement.name()
                ));
            }
        }
    }
    None
}

struct TrialMaker(Suite, BundleSource);

impl BackendVisitor for TrialMaker {
    type Output = Vec<Trial>;
    fn visit<B: Backend>(&mut self) -> Vec<Trial> {
        let bundle = (self.1)();
        variants_of::<B>(&bundle)
            .into_iter()
            .flat_map(|variant| variant_trials::<B>(self.0, &bundle, variant))
            .collect()
    }
}

fn variant_trials<B: Backend>(suite: Suite, bundle: &xbarrier::Result<KernelBundle>, variant: Variant) -> Vec<Trial> {
    let label = target_label(B::KIND, variant);
    let cases: Vec<_> = all_cases::<B>().into_iter().filter(|c| c.suite == suite).collect();
    let setup = setup::<B>(bundle, variant);
    if let Setup::Unavailable(reason) = &setup {
        eprintln!("note: {label} trials ignored: {reason}");
    }
    cases
        .into_iter()
        .map(|case| {
            let name = format!("[{label}] {}", case.name);
            match &setup {
                Setup::Ready(ctx) => match skip_reason(&case, ctx) {
                    Some(reason) => {
                        Trial::test(format!("{name} (ignored: {reason})"), || Ok(())).with_ignored_flag(true)
                    }
                    None => {
                        let ctx = ctx.clone();
                        Trial::test(name, move || match (case.run)(&ctx) {
                            Ok(pass) => {
                                println!("    {}: {}", case.name, pass.0);
                                Ok(())
                            }
                            Err(failure) => Err(failure.into()),
                        })
                    }
                },
                Setup::Unavailable(reason) => {
                    Trial::test(format!("{name} (ignored: {reason})"), || Ok(())).with_ignored_flag(true)
                }
                Setup::Broken(message) => {
                    let message = message.clone();
                    Trial::test(name, move || Err(message.into()))
                }
            }
        })
        .collect()
}

/// libtest trials of `suite` for every enabled backend, with the conformance kernels.
pub fn trials(suite: Suite) -> Vec<Trial> {
    trials_with(suite, crate::bundle)
}

/// libtest trials of `suite` for every enabled backend, with the kernels of `bundle` (which
/// must hold the conformance kernels to pass; tests give it broken bundles).
pub fn trials_with(suite: Suite, bundle: BundleSource) -> Vec<Trial> {
    visit_backends(&mut TrialMaker(suite, bundle)).into_iter().flatten().collect()
}

/// How one case went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// It passed; what it exercised.
    Passed(String),
    /// It failed; why.
    Failed(String),
    /// It could not run here; why.
    Ignored(String),
}

/// One row of `xbar check`.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The backend it ran on.
    pub backend: BackendKind,
    /// The image variant it ran on.
    pub variant: Variant,
    /// The semantic it belongs to.
    pub feature: &'static str,
    /// The case.
    pub case: &'static str,
    /// The suite.
    pub suite: Suite,
    /// What happened.
    pub status: Status,
    /// Wall time.
    pub seconds: f64,
}

impl Outcome {
    /// `cuda`, `cuda-emulated`, `host`: the backend and, where it is not the default, the variant.
    pub fn target(&self) -> String {
        target_label(self.backend, self.variant)
    }
}

struct Checker<'a> {
    backends: &'a [BackendKind],
    bundle: BundleSource,
    filter: &'a dyn Fn(&str) -> bool,
    progress: &'a dyn Fn(&Outcome),
}

impl BackendVisitor for Checker<'_> {
    type Output = Vec<Outcome>;
    fn visit<B: Backend>(&mut self) -> Vec<Outcome> {
        if !self.backends.contains(&B::KIND) {
            return Vec::new();
        }
        let bundle = (self.bundle)();
        variants_of::<B>(&bundle).into_iter().flat_map(|variant| self.variant_outcomes::<B>(&bundle, variant)).collect()
    }
}

impl Checker<'_> {
    fn variant_outcomes<B: Backend>(&self, bundle: &xbarrier::Result<KernelBundle>, variant: Variant) -> Vec<Outcome> {
        let cases: Vec<_> = all_cases::<B>().into_iter().filter(|c| (self.filter)(c.name)).collect();
        let setup = setup::<B>(bundle, variant);
        cases
            .into_iter()
            .map(|case| {
                let started = std::time::Instant::now();
                let status = match &setup {
                    Setup::Unavailable(reason) => Status::Ignored(reason.clone()),
                    Setup::Broken(message) => Status::Failed(message.clone()),
                    Setup::Ready(ctx) => match skip_reason(&case, ctx) {
                        Some(reason) => Status::Ignored(reason),
                        None => match (case.run)(ctx) {
                            Ok(pass) => Status::Passed(pass.0),
                            Err(failure) => Status::Failed(failure),
                        },
                    },
                };
                let outcome = Outcome {
                    backend: B::KIND,
                    variant,
                    feature: case.feature,
                    case: case.name,
                    suite: case.suite,
                    status,
                    seconds: started.elapsed().as_secs_f64(),
                };
                (self.progress)(&outcome);
                outcome
            })
            .collect()
    }
}

/// Runs every case whose name passes `filter` on every enabled backend, one after another,
/// calling `progress` after each.
pub fn check(filter: &dyn Fn(&str) -> bool, progress: &dyn Fn(&Outcome)) -> Vec<Outcome> {
    check_on(&xbarrier::enabled_backends(), filter, progress)
}

/// [`check`] on the enabled backends among `backends` only.
pub fn check_on(backends: &[BackendKind], filter: &dyn Fn(&str) -> bool, progress: &dyn Fn(&Outcome)) -> Vec<Outcome> {
    check_with(backends, crate::bundle, filter, progress)
}

/// [`check_on`] with the kernels of `bundle` (see [`trials_with`]).
pub fn check_with(
    backends: &[BackendKind],
    bundle: BundleSource,
    filter: &dyn Fn(&str) -> bool,
    progress: &dyn Fn(&Outcome),
) -> Vec<Outcome> {
    visit_backends(&mut Checker { backends, bundle, filter, progress }).into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_device() -> Error {
        Error::NoDevice { backend: BackendKind::Cuda, ordinal: 0, found: 0, hint: "plug one in".into() }
    }

    fn no_library() -> Error {
        Error::LibraryNotFound {
            backend: BackendKind::Hip,
            tried: "libamdhip64.so".into(),
            hint: "install ROCm".into(),
        }
    }

    #[test]
    fn only_a_missing_runtime_or_device_is_a_reason_to_skip() {
        assert_eq!(classify("cuda", &no_device(), false), Ok(format!("no device: {}", no_device())));
        assert_eq!(classify("hip", &no_library(), false), Ok(format!("no runtime library: {}", no_library())));
        let broken = [
            Error::BadBundle("module `conformance`: missing XBK2 magic".into()),
            Error::ImageMissing {
                module: "conformance".into(),
                backend: BackendKind::Cuda,
                variant: Variant::Emulated,
                available: "cuda default".into(),
            },
            Error::Io { context: "loading host kernels".into(), source: std::io::Error::other("invalid ELF header") },
            Error::Driver { backend: BackendKind::Cuda, call: "cuInit", code: 999, name: "CUDA_ERROR_UNKNOWN".into() },
            Error::Unsupported {
                backend: BackendKind::Cuda,
                what: "the installed NVIDIA driver",
                reason: "old".into(),
            },
        ];
        for error in broken {
            let failure = classify("host", &error, false).expect_err("a broken setup fails");
            assert!(failure.starts_with("[host] setup failed: ") && failure.ends_with(&error.to_string()), "{failure}");
        }
    }

    #[test]
    fn require_gpu_turns_a_missing_runtime_or_device_into_a_failure() {
        let failure = classify("cuda-emulated", &no_device(), true).expect_err("required");
        assert!(failure.starts_with("XBAR_REQUIRE_GPU=1 but the cuda-emulated backend has no device: "), "{failure}");
        let failure = classify("hip", &no_library(), true).expect_err("required");
        assert!(failure.contains("has no runtime library: hip runtime library not found"), "{failure}");
    }
}
