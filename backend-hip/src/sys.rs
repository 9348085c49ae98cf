//! The few HIP runtime entry points this crate uses, `dlopen`ed from `libamdhip64`.
//!
//! Every signature here is the same in ROCm 5.x, 6.x and 7.x: only C scalars and opaque
//! handles cross the boundary, with two exceptions kept out of the ABI question:
//! - `hipDeviceAttribute_t` values: entries of the CUDA-compatible block, whose values are
//!   the same from ROCm 5 to 7 (checked against the 5.2 headers and the current ones: in
//!   that block ROCm 6 only renamed `Name` and `Uuid` to `Unused1`/`Unused2`, keeping their
//!   slots, and added `PciDomainId` as an alias), and one of the AMD-specific block,
//!   `WallClockRate` (see [`attr::WALL_CLOCK_RATE`]).
//! - `hipDeviceProp_t`, whose layout did change in ROCm 6: see `arch_from_properties` in
//!   `lib.rs` for how it is read without depending on the layout.
//!
//! The library is searched as `libamdhip64.so` and the sonames of ROCm 7, 6 and 5 on the
//! loader's path, then in `$ROCM_PATH/lib`, `$HIP_PATH/lib` and `/opt/rocm/lib`.
#![allow(non_snake_case)] // fields are named after the C functions

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, OsString};
use std::path::Path;
use std::sync::OnceLock;

use libloading::Library;

/// `hipError_t` (a C enum, passed as `int`).
pub(crate) type HipError = c_int;
/// `hipModule_t`, `hipFunction_t`, `hipStream_t`, `hipEvent_t`: opaque pointers.
pub(crate) type Handle = *mut c_void;

pub(crate) const HIP_SUCCESS: HipError = 0;
pub(crate) const HIP_ERROR_INVALID_VALUE: HipError = 1;
pub(crate) const HIP_ERROR_OUT_OF_MEMORY: HipError = 2;
pub(crate) const HIP_ERROR_INVALID_SYMBOL: HipError = 13;
pub(crate) const HIP_ERROR_INVALID_DEVICE_FUNCTION: HipError = 98;
pub(crate) const HIP_ERROR_NO_DEVICE: HipError = 100;
pub(crate) const HIP_ERROR_INVALID_DEVICE: HipError = 101;
pub(crate) const HIP_ERROR_NOT_FOUND: HipError = 500;
pub(crate) const HIP_ERROR_NOT_READY: HipError = 600;
pub(crate) const HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED: HipError = 704;

/// `hipMemcpyKind` values (unchanged since HIP 1.0).
pub(crate) const HIP_MEMCPY_HOST_TO_DEVICE: c_int = 1;
pub(crate) const HIP_MEMCPY_DEVICE_TO_HOST: c_int = 2;
pub(crate) const HIP_MEMCPY_DEVICE_TO_DEVICE: c_int = 3;
/// `hipHostMallocPortable | hipHostMallocMapped | hipHostMallocCoherent`: pinned host memory
/// every device maps, fine-grained (device atomics reach the CPU's copy).
pub(crate) const HIP_HOST_MALLOC_SHARED: std::ffi::c_uint = 0x1 | 0x2 | 0x4000_0000;
/// `hipMemAttachGlobal`: managed memory any stream may access.
pub(crate) const HIP_MEM_ATTACH_GLOBAL: std::ffi::c_uint = 0x1;
/// `hipDevP2PAttrNativeAtomicSupported`, the third entry of `hipDeviceP2PAttr`
/// (`PerformanceRank = 0`, `AccessSupported`, `NativeAtomicSupported`,
/// `HipArrayAccessSupported`), the same in ROCm 5.2's headers and the current ones. Not
/// CUDA's value (3): CUDA's enum starts at 1.
pub(crate) const HIP_DEV_P2P_ATTR_NATIVE_ATOMIC_SUPPORTED: c_int = 2;

/// `hipDeviceAttribute_t` values of the CUDA-compatible block (`hipDeviceAttributeCudaCompatibleBegin
/// = 0`), identical in ROCm 5.x, 6.x and 7.x.
pub(crate) mod attr {
    use std::ffi::c_int;
    /// `hipDeviceAttributeConcurrentManagedAccess`: the device and the CPU may access
    /// managed memory at the same time, coherently.
    pub(crate) const CONCURRENT_MANAGED_ACCESS: c_int = 9;
    /// `hipDeviceAttributeCooperativeLaunch`.
    pub(crate) const COOPERATIVE_LAUNCH: c_int = 10;
    /// `hipDeviceAttributeHostNativeAtomicSupported`: the link between host and device
    /// supports atomics natively (device atomics on host memory are atomic for the CPU too).
    pub(crate) const HOST_NATIVE_ATOMIC_SUPPORTED: c_int = 15;
    /// `hipDeviceAttributeMaxThreadsPerBlock`.
    pub(crate) const MAX_THREADS_PER_BLOCK: c_int = 56;
    /// `hipDeviceAttributeMultiprocessorCount` (compute units; half of them in WGP mode).
    pub(crate) const MULTIPROCESSOR_COUNT: c_int = 63;
    /// `hipDeviceAttributeMaxSharedMemoryPerBlock` (LDS a block may use; AMD has no opt-in).
    pub(crate) const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 74;
    /// `hipDeviceAttributeWarpSize` (the wavefront size, 32 or 64).
    pub(crate) const WARP_SIZE: c_int = 87;
    /// `hipDeviceAttributeWallClockRate`: the rate of the constant-rate counter kernels read
    /// (`s_memrealtime`), in kHz. The 18th entry of the AMD-specific block
    /// (`hipDeviceAttributeAmdSpecificBegin = 10000`): ROCm 6 renamed three earlier entries
    /// of that block (`Arch`, `GcnArch`, `GcnArchName` became `Unused3`..`Unused5`) without
    /// moving them, and ROCm 7 appends after it (`NumberOfXccs` = 10018). ROCm 5.2's block
    /// ends one entry earlier (`FineGrainSupport` = 10016): its runtime answers
    /// `hipErrorInvalidValue`, as for any attribute it does not know.
    pub(crate) const WALL_CLOCK_RATE: c_int = 10017;
}

macro_rules! api {
    (
        required { $( $name:ident ( $($arg:ty),* ) -> $ret:ty; )* }
        optional { $( $oname:ident ( $($oarg:ty),* ) -> $oret:ty; )* }
    ) => {
        /// The loaded runtime: function pointers into a library that is never unloaded.
        pub(crate) struct Api {
            /// What was loaded (a soname or a path).
            pub(crate) path: String,
            $( pub(crate) $name: unsafe extern "C" fn($($arg),*) -> $ret, )*
            $( pub(crate) $oname: Option<unsafe extern "C" fn($($oarg),*) -> $oret>, )*
            _lib: Library,
        }

        /// Names of the entry points that must be present.
        #[cfg(test)]
        pub(crate) const REQUIRED: &[&str] = &[$( stringify!($name) ),*];

        impl Api {
            /// Resolves every entry point of `lib`; `Err` lists the missing required ones.
            ///
            /// # Safety
            /// `lib` must be a HIP runtime (libamdhip64), so that each symbol has the
            /// signature declared for it here.
            unsafe fn resolve(lib: Library, path: String) -> Result<Api, Vec<&'static str>> {
                let mut missing = Vec::new();
                $(
                    // SAFETY: the caller guarantees `lib` is libamdhip64, whose `$name` has this signature.
                    let $name = unsafe { lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(stringify!($name).as_bytes()) }
                        .map(|s| *s)
                        .map_err(|_| missing.push(stringify!($name)))
                        .ok();
                )*
                $(
                    // SAFETY: as above.
                    let $oname = unsafe { lib.get::<unsafe extern "C" fn($($oarg),*) -> $oret>(stringify!($oname).as_bytes()) }
                        .map(|s| *s)
                        .ok();
                )*
                match ( $( $name, )* ) {
                    ( $( Some($name), )* ) => Ok(Api { path, $( $name, )* $( $oname, )* _lib: lib }),
                    _ => Err(missing),
                }
            }
        }
    };
}

api! {
    required {
        hipInit(c_uint) -> HipError;
        hipGetDeviceCount(*mut c_int) -> HipError;
        hipDeviceGetAttribute(*mut c_int, c_int, c_int) -> HipError;
        hipDeviceGetName(*mut c_char, c_int, c_int) -> HipError;
        hipSetDevice(c_int) -> HipError;
        hipMalloc(*mut *mut c_void, usize) -> HipError;
        hipFree(*mut c_void) -> HipError;
        hipMemset(*mut c_void, c_int, usize) -> HipError;
        hipMemcpy(*mut c_void, *const c_void, usize, c_int) -> HipError;
        hipMemcpyAsync(*mut c_void, *const c_void, usize, c_int, Handle) -> HipError;
        hipModuleLoadData(*mut Handle, *const c_void) -> HipError;
        hipModuleUnload(Handle) -> HipError;
        hipModuleGetFunction(*mut Handle, Handle, *const c_char) -> HipError;
        hipModuleGetGlobal(*mut *mut c_void, *mut usize, Handle, *const c_char) -> HipError;
        hipModuleLaunchKernel(Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle, *mut *mut c_void, *mut *mut c_void) -> HipError;
        hipStreamCreate(*mut Handle) -> HipError;
        hipStreamSynchronize(Handle) -> HipError;
        hipStreamQuery(Handle) -> HipError;
        hipStreamDestroy(Handle) -> HipError;
        hipEventCreate(*mut Handle) -> HipError;
        hipEventRecord(Handle, Handle) -> HipError;
        hipEventSynchronize(Handle) -> HipError;
        hipEventElapsedTime(*mut f32, Handle, Handle) -> HipError;
        hipEventDestroy(Handle) -> HipError;
        hipGetErrorName(HipError) -> *const c_char;
    }
    optional {
        hipGetErrorString(HipError) -> *const c_char;
        // Memory shared with host threads (Backend::alloc_system); without them it is unsupported.
        hipHostMalloc(*mut *mut c_void, usize, c_uint) -> HipError;
        hipHostFree(*mut c_void) -> HipError;
        hipHostGetDevicePointer(*mut *mut c_void, *mut c_void, c_uint) -> HipError;
        hipMallocManaged(*mut *mut c_void, usize, c_uint) -> HipError;
        hipRuntimeGetVersion(*mut c_int) -> HipError;
        hipDriverGetVersion(*mut c_int) -> HipError;
        // Not in ROCm 5.2; without it cooperative launches are unsupported.
        hipModuleLaunchCooperativeKernel(Handle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Handle, *mut *mut c_void) -> HipError;
        // ROCm >= 6: the current hipDeviceProp_t (`hipGetDeviceProperties` is a macro for it).
        hipGetDevicePropertiesR0600(*mut c_void, c_int) -> HipError;
        // ROCm 5: the only one; ROCm >= 6: the old layout, kept for old binaries.
        hipGetDeviceProperties(*mut c_void, c_int) -> HipError;
        // Memory shared between devices (Backend::enable_peer_access); without them it is
        // unsupported. hipDeviceGetP2PAttribute's attribute is a C enum, passed as int.
        hipDeviceCanAccessPeer(*mut c_int, c_int, c_int) -> HipError;
        hipDeviceGetP2PAttribute(*mut c_int, c_int, c_int, c_int) -> HipError;
        hipDeviceEnablePeerAccess(c_int, c_uint) -> HipError;
        // One stream's work after another's event (Backend::stream_wait_event); without it
        // that is unsupported.
        hipStreamWaitEvent(Handle, Handle, c_uint) -> HipError;
    }
}

/// Why no HIP runtime could be loaded.
#[derive(Debug)]
pub(crate) struct LoadFailure {
    /// Every name and path tried, in order.
    pub(crate) tried: Vec<String>,
    /// What went wrong with candidates that exist (unloadable, too old).
    pub(crate) notes: Vec<String>,
}

impl LoadFailure {
    /// `tried` for [`xbarrier_api::Error::LibraryNotFound`].
    pub(crate) fn describe(&self) -> String {
        let mut text = self.tried.join(", ");
        for note in &self.notes {
            text.push_str("; ");
            text.push_str(note);
        }
        text
    }
}

const SONAMES: [&str; 4] = ["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"];

/// The names and paths to try: the sonames on the loader path, then each install prefix.
pub(crate) fn candidates(rocm_path: Option<OsString>, hip_path: Option<OsString>) -> Vec<String> {
    let mut out: Vec<String> = SONAMES.iter().map(|s| (*s).to_owned()).collect();
    let prefixes = [rocm_path, hip_path, Some(OsString::from("/opt/rocm"))];
    for prefix in prefixes.into_iter().flatten().filter(|p| !p.is_empty()) {
        let lib = Path::new(&prefix).join("lib");
        for soname in SONAMES {
            let path = lib.join(soname).to_string_lossy().into_owned();
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

fn load() -> Result<Api, LoadFailure> {
    let tried = candidates(std::env::var_os("ROCM_PATH"), std::env::var_os("HIP_PATH"));
    let mut notes = Vec::new();
    for candidate in &tried {
        // SAFETY: loading libamdhip64 runs its initializers, which only set up the runtime
        // (devices are opened by hipInit); it is made to be loaded this way.
        match unsafe { Library::new(candidate) } {
            Ok(lib) => {
                // SAFETY: a library named libamdhip64 is the HIP runtime.
                match unsafe { Api::resolve(lib, candidate.clone()) } {
                    Ok(api) => return Ok(api),
                    Err(missing) => notes.push(format!("{candidate} lacks {}", missing.join(", "))),
                }
            }
            Err(e) => {
                // libloading's Display is only "dlopen failed"; dlerror's text is the source.
                let text = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string());
                // Absent candidates are already listed in `tried`; explain those that exist
                // but failed (a missing dependency, a wrong architecture).
                let absent = if candidate.contains('/') {
                    !Path::new(candidate).exists()
                } else {
                    text.starts_with(&format!("{candidate}: cannot open shared object file"))
                };
                if !absent {
                    notes.push(format!("{candidate}: {text}"));
                }
            }
        }
    }
    Err(LoadFailure { tried, notes })
}

/// The runtime, loaded on first use.
pub(crate) fn api() -> Result<&'static Api, &'static LoadFailure> {
    static API: OnceLock<Result<Api, LoadFailure>> = OnceLock::new();
    API.get_or_init(load).as_ref()
}

impl Api {
    /// `NAME: description` of a HIP error code.
    pub(crate) fn error_name(&self, code: HipError) -> String {
        let text = |p: *const c_char| {
            // SAFETY: HIP returns pointers to static NUL-terminated strings (or null).
            (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        };
        // SAFETY: hipGetErrorName accepts any value and returns a static string.
        let name = text(unsafe { (self.hipGetErrorName)(code) });
        // SAFETY: as above.
        let description = self.hipGetErrorString.and_then(|f| text(unsafe { f(code) }));
        match (name, description) {
            (Some(n), Some(d)) if n != d => format!("{n}: {d}"),
            (Some(n), _) => n,
            (None, Some(d)) => d,
            (None, None) => format!("hipError_t {code}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_cover_every_rocm_soname_and_prefix() {
        let c = candidates(Some("/custom/rocm".into()), None);
        for name in SONAMES {
            assert!(c.contains(&name.to_owned()), "{name}");
            assert!(c.contains(&format!("/custom/rocm/lib/{name}")), "{name}");
            assert!(c.contains(&format!("/opt/rocm/lib/{name}")), "{name}");
        }
        assert_eq!(c[0], "libamdhip64.so");
        // No duplicates when a prefix is /opt/rocm itself; empty values are ignored.
        let c = candidates(Some("/opt/rocm".into()), Some("".into()));
        assert_eq!(c.len(), 8);
    }

    #[test]
    fn required_entry_points_are_the_minimal_set() {
        assert!(REQUIRED.contains(&"hipModuleLaunchKernel"));
        assert!(REQUIRED.contains(&"hipModuleGetGlobal"));
        assert!(!REQUIRED.contains(&"hipModuleLaunchCooperativeKernel"));
        assert!(REQUIRED.contains(&"hipStreamQuery"), "host waits on a shared barrier poll launches with it");
        assert!(!REQUIRED.contains(&"hipMallocManaged"), "without it only SystemBuffer is unsupported");
        assert!(!REQUIRED.contains(&"hipDeviceEnablePeerAccess"), "without it only PeerBuffer is unsupported");
        assert!(!REQUIRED.contains(&"hipStreamWaitEvent"), "without it only Stream::wait_event is unsupported");
        assert_eq!(REQUIRED.len(), 25);
    }

    #[test]
    fn failure_lists_tries_and_notes() {
        let f = LoadFailure { tried: vec!["a".into(), "b".into()], notes: vec!["b: broken".into()] };
        assert_eq!(f.describe(), "a, b; b: broken");
    }
}
