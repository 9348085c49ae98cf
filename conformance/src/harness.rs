//! What a case body gets: the device, the conformance module, a stream, and helpers to
//! launch and read the kernels' reports.

use std::time::Duration;

use xbarrier::{Backend, Buffer, Device, Error, KernelArg, LaunchConfig, Module, Stream, Variant};

/// A passed case, with a line saying what was exercised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pass(pub String);

/// A case's result: `Err` holds the failure message.
pub type CaseResult = Result<Pass, String>;

/// No conformance launch may run longer than this: a hang fails the case instead.
pub const LAUNCH_LIMIT: Duration = Duration::from_secs(120);

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
        let device = Device::<B>::open(0)?;
        let bundle = crate::bundle()?;
        let module = device.load_variant(&bundle, variant)?;
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

/// The variants of the conformance module built for `B` (native first).
pub fn variants<B: Backend>() -> Vec<Variant> {
    match crate::bundle() {
        Ok(bundle) if !bundle.variants(B::KIND).is_empty() => bundle.variants(B::KIND),
        _ => vec![Variant::Native],
    }
}

/// How results name a backend and variant: `cuda`, `cuda-emulated`, `host`.
pub fn target_label(kind: xbarrier::BackendKind, variant: Variant) -> String {
    match variant {
        Variant::Native => kind.name().to_owned(),
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
