//! The conformance and misuse suites of xbarrier: one test body per semantic, run on every
//! enabled backend. `tests/` turns them into libtest trials; `xbar check` prints them as a
//! table. Kernels live in `hip-src/kernels/conformance/`.

mod cases;
mod harness;
mod trials;

pub use cases::{all_cases, Case, Suite};
pub use harness::{Ctx, Pass};
pub use trials::{check, check_on, check_with, trials, trials_with, BundleSource, Outcome, Status, REQUIRE_GPU_VAR};

/// The conformance kernels (every backend this build enabled).
pub fn bundle() -> xbarrier::Result<xbarrier::KernelBundle> {
    xbarrier::kernel_bundle!("conformance")
}

xbarrier::kernels!(
    /// The conformance and misuse kernels with their typed launchers (the suites launch them
    /// by name; the API's documentation examples launch them typed).
    pub mod kernels = "conformance"
);
