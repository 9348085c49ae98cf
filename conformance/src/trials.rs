//! Runs the cases: as libtest trials (`tests/`) or as a table (`xbar check`).

use std::sync::Arc;

use libtest_mimic::Trial;
use xbarrier::{visit_backends, Backend, BackendKind, BackendVisitor, Variant};

use crate::cases::{all_cases, Suite};
use crate::harness::{target_label, variants, Ctx};

/// Whether a missing GPU must fail the run (`XBAR_REQUIRE_GPU=1`, set on GPU machines).
fn gpu_required() -> bool {
    std::env::var("XBAR_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Why a case cannot run here, if it cannot.
fn skip_reason(suite: Suite) -> Option<String> {
    (suite == Suite::Misuse && !xbarrier::CHECKED).then(|| {
        "unchecked build: misuse is undefined behaviour there, not reported (build in debug or with the `checked` feature)".to_owned()
    })
}

struct TrialMaker(Suite);

impl BackendVisitor for TrialMaker {
    type Output = Vec<Trial>;
    fn visit<B: Backend>(&mut self) -> Vec<Trial> {
        variants::<B>().into_iter().flat_map(|variant| variant_trials::<B>(self.0, variant)).collect()
    }
}

fn variant_trials<B: Backend>(suite: Suite, variant: Variant) -> Vec<Trial> {
    let label = target_label(B::KIND, variant);
    let cases: Vec<_> = all_cases::<B>().into_iter().filter(|c| c.suite == suite).collect();
    match Ctx::<B>::open(variant) {
        Ok(ctx) => {
            let ctx = Arc::new(ctx);
            cases
                .into_iter()
                .map(|case| {
                    let name = format!("[{label}] {}", case.name);
                    match skip_reason(suite) {
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
                    }
                })
                .collect()
        }
        Err(error) => {
            let mut trials: Vec<Trial> = cases
                .into_iter()
                .map(|case| {
                    Trial::test(format!("[{label}] {} (ignored: no device: {error})", case.name), || Ok(()))
                        .with_ignored_flag(true)
                })
                .collect();
            eprintln!("note: {label} trials ignored: {error}");
            if gpu_required() && B::KIND != BackendKind::Host {
                let message = format!("XBAR_REQUIRE_GPU=1 but the {label} backend has no device: {error}");
                trials.push(Trial::test(format!("[{label}] device probe"), move || Err(message.into())));
            }
            trials
        }
    }
}

/// libtest trials of `suite` for every enabled backend.
pub fn trials(suite: Suite) -> Vec<Trial> {
    visit_backends(&mut TrialMaker(suite)).into_iter().flatten().collect()
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
    /// `cuda`, `cuda-emulated`, `host`: the backend and, where it is not native, the variant.
    pub fn target(&self) -> String {
        target_label(self.backend, self.variant)
    }
}

struct Checker<'a> {
    backends: &'a [BackendKind],
    filter: &'a dyn Fn(&str) -> bool,
    progress: &'a dyn Fn(&Outcome),
}

impl BackendVisitor for Checker<'_> {
    type Output = Vec<Outcome>;
    fn visit<B: Backend>(&mut self) -> Vec<Outcome> {
        if !self.backends.contains(&B::KIND) {
            return Vec::new();
        }
        variants::<B>().into_iter().flat_map(|variant| self.variant_outcomes::<B>(variant)).collect()
    }
}

impl Checker<'_> {
    fn variant_outcomes<B: Backend>(&self, variant: Variant) -> Vec<Outcome> {
        let cases: Vec<_> = all_cases::<B>().into_iter().filter(|c| (self.filter)(c.name)).collect();
        let ctx = Ctx::<B>::open(variant);
        cases
            .into_iter()
            .map(|case| {
                let started = std::time::Instant::now();
                let status = match (&ctx, skip_reason(case.suite)) {
                    (Err(error), _) => Status::Ignored(format!("no device: {error}")),
                    (Ok(_), Some(reason)) => Status::Ignored(reason),
                    (Ok(ctx), None) => match (case.run)(ctx) {
                        Ok(pass) => Status::Passed(pass.0),
                        Err(failure) => Status::Failed(failure),
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
    visit_backends(&mut Checker { backends, filter, progress }).into_iter().flatten().collect()
}
