//! Loading the driver without panicking, and turning its errors into [`Error`]s.
//!
//! cudarc resolves every driver symbol on first use and panics when the library or the
//! symbol is missing. So before anything else calls into cudarc, [`ready`] checks once that
//! `libcuda` loads ([`sys::is_culib_present`]) and exports every entry point this crate
//! uses, then runs `cuInit`. The whole probe also runs under `catch_unwind` as a second
//! guard. After a successful probe no cudarc call made by this crate can panic.

use std::ffi::{c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;
use xbarrier_api::{BackendKind, Error, Result};

const BACKEND: BackendKind = BackendKind::Cuda;

/// What to do when `libcuda` is absent.
pub(crate) const LIBRARY_HINT: &str = "install the NVIDIA driver (libcuda.so.1); xbarrier loads it at run time";

/// Every driver entry point this crate calls through cudarc (cudarc's names, which are the
/// exported symbol names). The elapsed-time call is looked up separately (see [`elapsed_ms`]).
const REQUIRED: &[&str] = &[
    "cuInit",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuCtxEnablePeerAccess",
    "cuDeviceCanAccessPeer",
    "cuDeviceGetP2PAttribute",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemAllocManaged",
    "cuMemHostAlloc",
    "cuMemHostGetDevicePointer_v2",
    "cuMemFreeHost",
    "cuMemsetD8_v2",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuModuleGetGlobal_v2",
    "cuFuncSetAttribute",
    "cuStreamCreate",
    "cuStreamSynchronize",
    "cuStreamQuery",
    "cuStreamDestroy_v2",
    "cuStreamWaitEvent",
    "cuLaunchKernel",
    "cuLaunchCooperativeKernel",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventDestroy_v2",
];

/// The outcome of loading and initializing the driver, computed once.
#[derive(Clone, Debug)]
enum Probe {
    /// `cuInit` succeeded.
    Ready,
    /// `cuInit` said there is no device: the backend works and sees none.
    NoDevice,
    /// `libcuda` could not be loaded.
    NoLibrary { tried: String, detail: Option<String> },
    /// `libcuda` loaded but lacks entry points this crate needs.
    MissingSymbols(Vec<&'static str>),
    /// `cuInit` failed.
    InitFailed { code: i64, name: String },
}

/// The library names cudarc tries for `libcuda`, in its order, without repeats.
pub(crate) fn tried_names() -> String {
    let mut names: Vec<String> = Vec::new();
    for name in cudarc::get_lib_name_candidates("cuda") {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.join(", ")
}

fn probe() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(|| {
        catch_unwind(AssertUnwindSafe(probe_once)).unwrap_or_else(|panic| {
            let detail = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "loading it panicked".to_owned());
            Probe::NoLibrary { tried: tried_names(), detail: Some(detail) }
        })
    })
}

fn probe_once() -> Probe {
    // SAFETY: dlopens libcuda (running its initializers) and closes it again; the NVIDIA
    // driver library is made to be loaded this way. Nothing else is called.
    if !unsafe { sys::is_culib_present() } {
        return Probe::NoLibrary { tried: tried_names(), detail: None };
    }
    // SAFETY: is_culib_present() just loaded the library by the same names, so culib()
    // finds it instead of panicking.
    let lib = unsafe { sys::culib() };
    let missing: Vec<&'static str> = REQUIRED
        .iter()
        .copied()
        // SAFETY: only looks the symbol up; the pointer type is irrelevant as it is never called.
        .filter(|name| unsafe { lib.get::<*const c_void>(name.as_bytes()) }.is_err())
        .collect();
    if !missing.is_empty() {
        return Probe::MissingSymbols(missing);
    }
    match result::init() {
        Ok(()) => Probe::Ready,
        Err(DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE)) => Probe::NoDevice,
        Err(e) => {
            let (code, name) = describe(e);
            Probe::InitFailed { code, name }
        }
    }
}

/// `Ok(true)` when the driver is initialized, `Ok(false)` when it works but sees no device.
pub(crate) fn ready() -> Result<bool> {
    match probe() {
        Probe::Ready => Ok(true),
        Probe::NoDevice => Ok(false),
        Probe::NoLibrary { tried, detail } => Err(Error::LibraryNotFound {
            backend: BACKEND,
            tried: tried.clone(),
            hint: match detail {
                Some(d) => format!("{LIBRARY_HINT} ({d})"),
                None => LIBRARY_HINT.to_owned(),
            },
        }),
        Probe::MissingSymbols(names) => Err(Error::Unsupported {
            backend: BACKEND,
            what: "the installed NVIDIA driver",
            reason: format!(
                "libcuda lacks {}; xbarrier uses the CUDA 13.0 driver API, update the NVIDIA driver",
                names.join(", ")
            ),
        }),
        Probe::InitFailed { code, name } => {
            Err(Error::Driver { backend: BACKEND, call: "cuInit", code: *code, name: name.clone() })
        }
    }
}

/// The native code and `NAME: description` of a driver error.
fn describe(e: DriverError) -> (i64, String) {
    let code = e.0 as i64;
    let text = |s: std::result::Result<&CStr, DriverError>| s.ok().map(|c| c.to_string_lossy().into_owned());
    let name = match (text(e.error_name()), text(e.error_string())) {
        (Some(n), Some(s)) => format!("{n}: {s}"),
        (Some(n), None) => n,
        (None, _) => format!("CUresult {code}"),
    };
    (code, name)
}

/// The [`Error::Driver`] for a failed `call`.
pub(crate) fn driver_error(call: &'static str, e: DriverError) -> Error {
    let (code, name) = describe(e);
    Error::Driver { backend: BACKEND, call, code, name }
}

/// Attaches the driver call's name to a cudarc result.
pub(crate) trait Check<T> {
    /// `Err(Error::Driver { call, .. })` on failure.
    fn call(self, call: &'static str) -> Result<T>;
}

impl<T> Check<T> for std::result::Result<T, DriverError> {
    fn call(self, call: &'static str) -> Result<T> {
        self.map_err(|e| driver_error(call, e))
    }
}

/// Number of devices (driver initialized).
pub(crate) fn device_count() -> Result<usize> {
    if !ready()? {
        return Ok(0);
    }
    match result::device::get_count() {
        Ok(n) => Ok(usize::try_from(n).unwrap_or(0)),
        Err(DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE)) => Ok(0),
        Err(e) => Err(driver_error("cuDeviceGetCount", e)),
    }
}

type ElapsedFn = unsafe extern "C" fn(*mut f32, sys::CUevent, sys::CUevent) -> sys::CUresult;

/// Milliseconds between two completed events.
///
/// CUDA 13.0 headers map `cuEventElapsedTime` to `cuEventElapsedTime_v2`, which drivers
/// before 12.8 lack; there the original entry point (same signature) is used.
///
/// # Safety
/// Both events must be live events of the current context, recorded and completed.
pub(crate) unsafe fn elapsed_ms(start: sys::CUevent, end: sys::CUevent) -> Result<f32> {
    const CALL: &str = "cuEventElapsedTime";
    static V1: OnceLock<Option<ElapsedFn>> = OnceLock::new();
    let v1 = V1.get_or_init(|| {
        // SAFETY: only called on a live device, so the probe has loaded the library.
        let lib = unsafe { sys::culib() };
        // SAFETY: symbol lookups only.
        if unsafe { lib.get::<*const c_void>(b"cuEventElapsedTime_v2") }.is_ok() {
            return None;
        }
        // SAFETY: `cuEventElapsedTime` has had this signature since CUDA 2.0.
        unsafe { lib.get::<ElapsedFn>(b"cuEventElapsedTime") }.ok().map(|f| *f)
    });
    match v1 {
        // SAFETY: the caller guarantees the events; v2 exists (checked above).
        None => unsafe { result::event::elapsed(start, end) }.call(CALL),
        Some(f) => {
            let mut ms = 0f32;
            // SAFETY: as above; `ms` is a valid out-pointer.
            unsafe { f(&mut ms, start, end) }.result().call(CALL)?;
            Ok(ms)
        }
    }
}

type FunctionCountFn = unsafe extern "C" fn(*mut std::ffi::c_uint, sys::CUmodule) -> sys::CUresult;
type EnumerateFunctionsFn =
    unsafe extern "C" fn(*mut sys::CUfunction, std::ffi::c_uint, sys::CUmodule) -> sys::CUresult;
type FunctionLoadFn = unsafe extern "C" fn(sys::CUfunction) -> sys::CUresult;

/// Loads every kernel of `module` now, where the driver has the calls for it
/// (`cuModuleGetFunctionCount`, `cuModuleEnumerateFunctions`, `cuFuncLoad`); elsewhere the
/// module stays as the driver loaded it.
///
/// CUDA loads a module's kernels lazily by default, at their first lookup or launch, and
/// that loading may wait for the kernels running in the context. Kernels of one barrier on
/// two streams of a device (or of two devices) wait for each other, so a kernel loaded
/// while the other one runs would never start.
///
/// # Safety
/// `module` must be a live module of the current context.
pub(crate) unsafe fn load_every_kernel(module: sys::CUmodule) -> Result<()> {
    type Calls = (FunctionCountFn, EnumerateFunctionsFn, FunctionLoadFn);
    static CALLS: OnceLock<Option<Calls>> = OnceLock::new();
    let calls = CALLS.get_or_init(|| {
        // SAFETY: only called on a live device, so the probe has loaded the library.
        let lib = unsafe { sys::culib() };
        // SAFETY: symbol lookups only; the signatures are the CUDA 12.4 driver API's.
        unsafe {
            Some((
                *lib.get::<FunctionCountFn>(b"cuModuleGetFunctionCount").ok()?,
                *lib.get::<EnumerateFunctionsFn>(b"cuModuleEnumerateFunctions").ok()?,
                *lib.get::<FunctionLoadFn>(b"cuFuncLoad").ok()?,
            ))
        }
    });
    let Some((count_of, enumerate, load)) = *calls else { return Ok(()) };
    let mut count = 0;
    // SAFETY: the caller guarantees the module; `count` is a valid out-pointer.
    unsafe { count_of(&mut count, module) }.result().call("cuModuleGetFunctionCount")?;
    if count == 0 {
        return Ok(());
    }
    let mut functions: Vec<sys::CUfunction> = vec![std::ptr::null_mut(); count as usize];
    // SAFETY: `functions` holds `count` slots for the driver to fill.
    unsafe { enumerate(functions.as_mut_ptr(), count, module) }.result().call("cuModuleEnumerateFunctions")?;
    for function in functions {
        // SAFETY: a function the driver just listed for this module.
        unsafe { load(function) }.result().call("cuFuncLoad")?;
    }
    Ok(())
}

/// A retained primary context of one device; released on drop.
#[derive(Debug)]
pub(crate) struct Context {
    device: sys::CUdevice,
    raw: sys::CUcontext,
}

// SAFETY: CUDA contexts and the handles made in them may be used from any thread once the
// context is made current there, which every use does through `bind`.
unsafe impl Send for Context {}
// SAFETY: as above; the driver API is thread-safe.
unsafe impl Sync for Context {}

impl Context {
    /// Retains the primary context of device `ordinal` (driver initialized, ordinal checked).
    pub(crate) fn retain(ordinal: usize) -> Result<(Context, sys::CUdevice)> {
        let ordinal = c_int::try_from(ordinal).map_err(|_| Error::InvalidArgument {
            call: "open",
            reason: format!("device ordinal {ordinal} does not fit a C int"),
        })?;
        let device = result::device::get(ordinal).call("cuDeviceGet")?;
        // SAFETY: `device` comes from cuDeviceGet.
        let raw = unsafe { result::primary_ctx::retain(device) }.call("cuDevicePrimaryCtxRetain")?;
        Ok((Context { device, raw }, device))
    }

    /// The device it belongs to.
    pub(crate) fn device(&self) -> sys::CUdevice {
        self.device
    }

    /// Lets kernels of this context use memory allocated in `owner`'s context, with atomics
    /// of system scope: the driver must report a peer path between the two devices and
    /// native atomics over it. Peer access already enabled is success; a context is its own
    /// peer.
    pub(crate) fn reach(&self, owner: &Context) -> Result<()> {
        if self.raw == owner.raw {
            return Ok(());
        }
        let mut can = 0;
        // SAFETY: both devices come from cuDeviceGet; `can` is a valid out-pointer.
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, self.device, owner.device) }
            .result()
            .call("cuDeviceCanAccessPeer")?;
        let mut atomics = 0;
        if can != 0 {
            // SAFETY: as above.
            unsafe {
                sys::cuDeviceGetP2PAttribute(
                    &mut atomics,
                    sys::CUdevice_P2PAttribute::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                    self.device,
                    owner.device,
                )
            }
            .result()
            .call("cuDeviceGetP2PAttribute")?;
        }
        if can == 0 || atomics == 0 {
            return Err(Error::Unsupported {
                backend: BACKEND,
                what: "memory shared between devices",
                reason: if can == 0 {
                    "cuDeviceCanAccessPeer reports no peer path between the two devices (they need NVLink or \
                     PCIe peer-to-peer under one root complex, and no IOMMU or virtualization that blocks it)"
                        .to_owned()
                } else {
                    "the two devices reach each other's memory, but cuDeviceGetP2PAttribute reports no native \
                     atomics over the link (CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED is 0), which a barrier \
                     across them needs"
                        .to_owned()
                },
            });
        }
        self.bind()?;
        // SAFETY: `owner.raw` is a retained primary context, alive as long as `owner`.
        match unsafe { sys::cuCtxEnablePeerAccess(owner.raw, 0) }.result() {
            Ok(()) | Err(DriverError(sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)) => Ok(()),
            Err(e) => Err(driver_error("cuCtxEnablePeerAccess", e)),
        }
    }

    /// Makes this context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        // SAFETY: `raw` is a retained primary context, alive as long as `self`.
        unsafe { result::ctx::set_current(self.raw) }.call("cuCtxSetCurrent")
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `Context::retain`; nothing made in this context
        // outlives it, since every handle holds an `Arc<Context>`.
        let _ = unsafe { result::primary_ctx::release(self.device) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tried_names_are_the_linux_sonames() {
        let tried = tried_names();
        for name in ["libcuda.so", "libcuda.so.1"] {
            assert!(tried.split(", ").any(|t| t == name), "{name} missing from {tried}");
        }
    }

    #[test]
    fn required_symbols_are_unique() {
        let mut names = REQUIRED.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), REQUIRED.len());
    }
}
