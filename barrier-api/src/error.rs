//! The one error type of every backend.

use crate::{BackendKind, BarrierFault};

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong between the host and a device.
///
/// Match on the variant to react, or print it: the `Display` text says what failed and,
/// where it can, how to fix it. The enum is `#[non_exhaustive]`, so keep a catch-all arm.
///
/// ```
/// use xbarrier_api::{Error, KernelBundle, LaunchConfig, Result};
///
/// fn describe(result: Result<()>) -> String {
///     match result {
///         Ok(()) => "ok".into(),
///         // No runtime or no GPU: skip, as the test suites do (any other error fails them).
///         Err(Error::LibraryNotFound { .. } | Error::NoDevice { .. }) => "skipped".into(),
///         // A barrier misused in a kernel (checked builds): op, block, thread, barrier state.
///         Err(Error::Fault(fault)) => format!("{:?} in {}", fault.kind, fault.kernel),
///         Err(Error::InvalidArgument { call, reason }) => format!("{call}: {reason}"),
///         Err(other) => other.to_string(),
///     }
/// }
///
/// assert_eq!(describe(KernelBundle::parse("m", b"nope").map(drop)), "malformed kernel bundle: module `m`: missing XBK2 magic");
/// let empty_block = LaunchConfig::new(1, 0);
/// # let mut device = xbarrier_api::DeviceInfo::new(xbarrier_api::BackendKind::Host, 0, "d", "host");
/// # device.max_threads_per_block = 1024;
/// assert!(describe(empty_block.validate(&device)).starts_with("launch: empty grid"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The backend's runtime library could not be loaded.
    #[error("{backend} runtime library not found (tried: {tried}); {hint}")]
    LibraryNotFound {
        /// Which backend.
        backend: BackendKind,
        /// The names or paths that were tried.
        tried: String,
        /// How to fix it.
        hint: String,
    },
    /// The runtime loaded but there is no usable device with that ordinal.
    #[error("no {backend} device {ordinal} ({found} found); {hint}")]
    NoDevice {
        /// Which backend.
        backend: BackendKind,
        /// The ordinal that was asked for.
        ordinal: usize,
        /// How many devices the runtime reports.
        found: usize,
        /// How to fix it.
        hint: String,
    },
    /// A driver or runtime call failed; keeps the native code.
    #[error("{backend} call `{call}` failed: {name} (code {code})")]
    Driver {
        /// Which backend.
        backend: BackendKind,
        /// The native function that failed.
        call: &'static str,
        /// The native error code.
        code: i64,
        /// The native error name or description.
        name: String,
    },
    /// An argument was out of range before anything reached the device.
    #[error("invalid argument to {call}: {reason}")]
    InvalidArgument {
        /// The API that refused it.
        call: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// A device allocation failed.
    #[error("out of {backend} memory: {requested} bytes requested")]
    OutOfMemory {
        /// Which backend.
        backend: BackendKind,
        /// Bytes asked for.
        requested: usize,
    },
    /// The module has no kernel of that name (kernels must be `extern "C"`, see `XB_KERNEL`).
    #[error("kernel `{kernel}` not found in module `{module}` (declare it with XB_KERNEL / extern \"C\")")]
    KernelNotFound {
        /// Module name.
        module: String,
        /// Kernel name.
        kernel: String,
    },
    /// The module was not compiled for this backend, or not in this variant.
    #[error("module `{module}` has no {backend} {variant} image (built for: {available}); enable the `{backend}` feature of xbarrier and rebuild (checked builds carry only the default image, which runs the protocol)")]
    ImageMissing {
        /// Module name.
        module: String,
        /// The backend that wanted it.
        backend: BackendKind,
        /// The variant that was asked for.
        variant: crate::Variant,
        /// The backends it was built for.
        available: String,
    },
    /// A launch mixes devices: its kernel or a buffer belongs to another device than its stream.
    #[error("launch of `{kernel}`: {what} is on device {found}, the stream on device {stream} (a launch runs on its stream's device)")]
    DeviceMismatch {
        /// Kernel name.
        kernel: String,
        /// What is on the other device: "the kernel" or "argument N".
        what: String,
        /// Its device's ordinal.
        found: usize,
        /// The stream's device's ordinal.
        stream: usize,
    },
    /// A kernel bundle could not be parsed.
    #[error("malformed kernel bundle: {0}")]
    BadBundle(String),
    /// A kernel misused a barrier (checked builds) or deadlocked in a bounded wait.
    #[error(transparent)]
    Fault(Box<BarrierFault>),
    /// A kernel thread ended with an uncaught C++ exception (host backend).
    #[error("kernel `{kernel}` on the {backend} backend ended with an uncaught C++ exception")]
    KernelException {
        /// Which backend.
        backend: BackendKind,
        /// Kernel name.
        kernel: String,
    },
    /// A launch ran past its configured time limit and was aborted.
    #[error("launch of `{kernel}` was aborted after {seconds:.3} s (its LaunchConfig timeout)")]
    LaunchTimeout {
        /// Kernel name.
        kernel: String,
        /// The limit, in seconds.
        seconds: f64,
    },
    /// A host thread's wait on a barrier it shares with kernels ended because a kernel that
    /// uses the barrier failed (a barrier fault, a trap, a broken context): the phase it
    /// waited for may never complete. The launch's own report (its `wait`, the stream's
    /// `synchronize`) says the same.
    #[error("{call}: a kernel that uses the barrier failed, so the wait ended: {cause}")]
    BarrierAbandoned {
        /// The host-side call that waited.
        call: &'static str,
        /// The kernel's failure, as its launch or stream reported it.
        cause: String,
    },
    /// The backend cannot do this (yet, or on this device).
    #[error("{backend}: {what} is not supported: {reason}")]
    Unsupported {
        /// Which backend.
        backend: BackendKind,
        /// The operation.
        what: &'static str,
        /// Why, and what to do instead.
        reason: String,
    },
    /// An I/O step of a backend failed (e.g. staging a host kernel image).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl From<BarrierFault> for Error {
    fn from(fault: BarrierFault) -> Error {
        Error::Fault(Box::new(fault))
    }
}
