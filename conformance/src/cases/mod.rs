//! The case bodies, one per semantic, each generic over the backend.

mod compat;
mod grid;
mod host_threads;
mod limits;
mod litmus;
mod misuse;
mod multi_gpu;
mod phases;
mod ring;
mod tx;

use xbarrier::{Backend, PeerPlacement};

use crate::harness::{CaseResult, Ctx};

/// Which suite a case belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// Semantics that must hold.
    Conformance,
    /// Misuse that checked builds must report as a fault.
    Misuse,
}

/// One test body.
pub struct Case<B: Backend> {
    /// Unique name.
    pub name: &'static str,
    /// The semantic (a row group of `xbar check`).
    pub feature: &'static str,
    /// Its suite.
    pub suite: Suite,
    /// How many devices of the backend it needs (the `multi_gpu_*` cases two; the others
    /// one, the context's).
    pub devices: usize,
    /// Where the memory that its devices share lies, for a case of several devices: a
    /// machine whose devices cannot share memory so is reported ignored, as one with too
    /// few devices.
    pub placement: PeerPlacement,
    /// The body.
    pub run: fn(&Ctx<B>) -> CaseResult,
}

/// Every case, in table order.
pub fn all_cases<B: Backend>() -> Vec<Case<B>> {
    let mut cases = Vec::new();
    cases.extend(phases::cases::<B>());
    cases.extend(tx::cases::<B>());
    cases.extend(ring::cases::<B>());
    cases.extend(grid::cases::<B>());
    cases.extend(host_threads::cases::<B>());
    cases.extend(multi_gpu::cases::<B>());
    cases.extend(litmus::cases::<B>());
    cases.extend(limits::cases::<B>());
    cases.extend(compat::cases::<B>());
    cases.extend(misuse::cases::<B>());
    cases
}

/// Shorthand for the case lists.
pub(crate) fn case<B: Backend>(name: &'static str, feature: &'static str, run: fn(&Ctx<B>) -> CaseResult) -> Case<B> {
    Case { name, feature, suite: Suite::Conformance, devices: 1, placement: PeerPlacement::DeviceMemory, run }
}
