//! What a case body gets: the device, the conformance module, a stream, and helpers to
//! launch and read the kernels' reports.

use std::time::Duration;

use xbarrier::{
    Backend, BackendKind, Buffer, Device, Error, KernelArg, KernelBundle, LaunchConfig, Module, Stream, Variant,
};

/// A passed case, with a line saying what was exercised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pass(pub String);

/// A case's result: `Err` holds the failure message.
pub type CaseResult = Result<Pass, String>;

/// No conformance launch may run longer than this: a hang fails the case instead.
pub const LAUNCH_LIMIT: Duration = Duration::from_secs(120);

/// Divides the cases' repetition counts (rounds, phases, ring stages; not the litmus tests'
/// message counts, which their statistics need) for slow runs such as compute-sanitizer's:
/// every case still runs, with fewer repetitions. Case names keep the full counts.
pub const REPS_DIVISOR_VAR: &str = "XBAR_REPS_DIVISOR";

/// `full` repetitions divided by `XBAR_REPS_DIVISOR` (default 1), but never fewer than
/// `floor` (or `full`, if that is smaller): what the case needs to exercise its pattern.
pub fn reps(full: u32, floor: u32) -> Result<u32, String> {
    divided(full, floor, std::env::var(REPS_DIVISOR_VAR))
}

fn divided(full: u32, floor: u32, divisor: Result<String, std::env::VarError>) -> Result<u32, String> {
    let divisor = match divisor {
        Err(std::env::VarError::NotPresent) => 1,
        Ok(value) => value
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|&d| d >= 1)
            .ok_or_else(|| format!("{REPS_DIVISOR_VAR}={value:?}: expected a whole number >= 1"))?,
        Err(e) => return Err(format!("{REPS_DIVISOR_VAR}: {e}")),
    };
    Ok((full / divisor).max(floor.min(full)))
}

/// Everything a case body needs on one backend.
pub struct Ctx<B: Backend> {
    /// The device (ordinal 0).
    pub device: Device<B>,
    /// The conformance kernels.
    pub module: Module<B>,
    /// Where cases launch.
    pub stream: Stream<B>,
}

impl<B: Backend> Ctx<B> {
    /// Opens device 0 and loads the conformance module in `variant`.
    pub fn open(variant: Variant) -> xbarrier::Result<Ctx<B>> {
        Self::open_bundle(&crate::bundle()?, variant)
    }

    /// Opens device 0 and loads `bundle`'s image in `variant`. A bundle without that image
    /// fails with [`Error::ImageMissing`] before the device is opened, so also where there
    /// is no device.
    pub fn open_bundle(bundle: &KernelBundle, variant: Variant) -> xbarrier::Result<Ctx<B>> {
        bundle.image_of(B::KIND, variant)?;
        let device = Device::<B>::open(0)?;
        let module = device.load_variant(bundle, variant)?;
        let stream = device.stream()?;
        Ok(Ctx { device, module, stream })
    }

    /// Launches `kernel` and waits for it (with the 120 s `LAUNCH_LIMIT` unless `config` has a limit).
    ///
    /// # Safety
    /// `args` must match the kernel's C parameters, and every buffer they name must be alive.
    pub unsafe fn launch(&self, kernel: &str, config: LaunchConfig, args: &[KernelArg]) -> Result<(), Error> {
        let kernel = self.module.kernel(kernel)?;
        let config = if config.timeout.is_none() { config.timeout(LAUNCH_LIMIT) } else { config };
        // SAFETY: forwarded from this function's contract.
        unsafe { self.stream.launch(&kernel, &config, args)? };
        self.stream.synchronize()
    }

    /// A zeroed report buffer for the kernels' `xbc::expect_eq`.
    pub fn report(&self) -> Result<Buffer<B, u64>, String> {
        self.device.alloc::<u64>(8).map_err(|e| e.to_string())
    }
}

/// The variants of a bundle that the suites run on `B`: [`Variant::Default`], and on CUDA
/// with unchecked device code also [`Variant::Emulated`] and [`Variant::Grouped`], which the
/// build helper always builds there. So a bundle that lacks one fails its cases instead of shrinking the suite.
pub fn variants<B: Backend>(bundle: &KernelBundle) -> Vec<Variant> {
    if B::KIND == BackendKind::Cuda && !bundle.checked() {
        Variant::ALL.to_vec()
    } else {
        vec![Variant::Default]
    }
}

/// How results name a backend and variant: `cuda`, `cuda-emulated`, `host`.
pub fn target_label(kind: BackendKind, variant: Variant) -> String {
    match variant {
        Variant::Default => kind.name().to_owned(),
        other => format!("{kind}-{other}"),
    }
}

/// Fails with the first mismatch a kernel recorded, if any.
pub fn check_report<B: Backend>(report: &Buffer<B, u64>, what: &str) -> Result<Vec<u64>, String> {
    let r = report.download().map_err(|e| e.to_string())?;
    if r[0] != 0 {
        return Err(format!(
            "{what}: {} failed expectation(s); first at {}: got {}, wanted {}",
            r[0], r[1], r[2], r[3]
        ));
    }
    Ok(r)
}

/// Turns a launch error into a failure message.
pub fn launched(result: Result<(), Error>, what: &str) -> Result<(), String> {
    result.map_err(|e| format!("{what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::divided;
    use std::env::VarError;

    #[test]
    fn repetitions_divide_down_to_the_floor() {
        assert_eq!(divided(1000, 4, Err(VarError::NotPresent)), Ok(1000));
        assert_eq!(divided(1000, 4, Ok("100".into())), Ok(10));
        assert_eq!(divided(1000, 4, Ok(" 1000000 ".into())), Ok(4));
        assert_eq!(divided(3, 4, Ok("2".into())), Ok(3), "never above the full count");
    }

    #[test]
    fn a_bad_divisor_is_an_error_naming_the_variable() {
        for bad in ["0", "-2", "abc", ""] {
            let err = divided(1000, 4, Ok(bad.into())).unwrap_err();
            assert!(err.contains("XBAR_REPS_DIVISOR") && err.contains("whole number"), "{err}");
        }
    }
}
