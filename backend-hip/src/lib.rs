//! xbarrier's HIP backend: AMD GPUs through the HIP runtime (`libamdhip64`).
//!
//! # Why not `hip-sys`
//! The `hip-sys` crate links `amdhip64` at build time. A binary built against Debian's ROCm
//! 5.2 then records `NEEDED libamdhip64.so.5` and does not even start where that soname is
//! missing: on ROCm 6 and 7 machines (`.so.6`, `.so.7`), and on NVIDIA-only or CPU-only
//! machines, although the other backends would run fine there. Its build script also
//! panics without ROCm headers. So this crate `dlopen`s the runtime instead (`sys.rs`:
//! `libamdhip64.so`, `.so.7`, `.so.6`, `.so.5` on the loader path, then `$ROCM_PATH/lib`,
//! `$HIP_PATH/lib` and `/opt/rocm/lib`) and binds only the entry points it calls (25, plus
//! 14 optional ones), with signatures that are the same from ROCm 5.x to 7.x. Nothing of
//! ROCm is needed to build; without it [`Backend::device_count`] returns
//! [`Error::LibraryNotFound`].
//!
//! The runtime keeps a current device per thread; every call first selects the device
//! (`hipSetDevice`).
//!
//! Kernel images are whatever `hipModuleLoadData` accepts: an
//! AMDGPU code object or a clang offload bundle.
//!
//! # Barrier faults
//! As in the CUDA backend: if a module defines the global `xb_fault_record
//! xb_fault_record_slot` (`xbarrier/abi.h`, found with `hipModuleGetGlobal`),
//! [`Backend::take_fault`] reads and clears it; `Stream::synchronize` calls it once the
//! stream has drained and returns a nonzero `kind` as [`Error::Fault`], naming the kernel
//! last launched from that module on the stream. Modules without the global report none.
//!
//! # The kernels' clock
//! Device code counts time (checked builds' deadlock bound, `try_wait_for` timeouts) with
//! the GPU's constant-rate counter, whose rate the runtime reports per device as
//! `hipDeviceAttributeWallClockRate`. [`Backend::open`] asks for it (see [`WallClock`]), and
//! [`Backend::load_module`] writes the matching multiplier ([`ns_per_tick_q32`]) into the
//! module global `uint64_t xb_clock_ns_per_tick_q32` (`xbarrier/platform/amdgcn_clock.hpp`)
//! if the module defines it, before any of its kernels can run.
//!
//! # Time limits
//! HIP cannot abort a running kernel, so `Stream::launch` brackets a launch with a
//! [`LaunchConfig::timeout`] by two events ([`Backend::record`]) and the next
//! `Stream::synchronize` reports an overrun as [`Error::LaunchTimeout`], after the kernel ended.
//!
//! # Limits of this backend
//! - Dynamic shared memory: AMD GPUs have no opt-in step; a block may use up to
//!   `hipDeviceAttributeMaxSharedMemoryPerBlock` (static and dynamic together).
//! - Cooperative launches need `hipModuleLaunchCooperativeKernel`, which ROCm 5.2 lacks;
//!   there `max_cooperative_blocks` is 0 and a cooperative launch is refused.
//! - Memory shared between devices ([`Backend::enable_peer_access`]) needs a peer path
//!   (`hipDeviceCanAccessPeer`) with native atomics (`hipDevP2PAttrNativeAtomicSupported`).
//!
//! # Example
//! Probing for a GPU works on any machine, with or without ROCm:
//!
//! ```
//! use xbarrier_api::{Device, Error};
//! use xbarrier_backend_hip::Hip;
//!
//! match Device::<Hip>::count() {
//!     Ok(0) => println!("HIP runtime loaded, no AMD GPU"),
//!     Ok(n) => println!("{n} AMD GPU(s), e.g. {}", Device::<Hip>::open(0)?.info().arch),
//!     Err(Error::LibraryNotFound { hint, .. }) => println!("no HIP runtime: {hint}"),
//!     Err(e) => return Err(e),
//! }
//! # Ok::<(), Error>(())
//! ```
#![warn(missing_docs)]

mod sys;

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use xbarrier_api::backend::{aligned_copy, decode_fault_record, KernelParams};
use xbarrier_api::{Backend, BackendKind, DeviceInfo, Error, FaultRecord, KernelArg, LaunchConfig, Result};

use sys::{attr, Api, Handle, HipError};

const BACKEND: BackendKind = BackendKind::Hip;

/// What to do when `libamdhip64` is absent.
pub const LIBRARY_HINT: &str = "install ROCm (libamdhip64) — e.g. Debian's libamdhip64-5 or AMD's ROCm packages";

/// Name of the module global that holds a launch's barrier fault (an `xb_fault_record`).
pub const FAULT_RECORD_SYMBOL: &str = "xb_fault_record_slot";
const FAULT_RECORD_CSYMBOL: &CStr = c"xb_fault_record_slot";

/// Name of the module global that holds the kernels' clock multiplier (nanoseconds per tick
/// of the constant-rate counter, 32.32 fixed point; a `uint64_t`).
pub const CLOCK_SYMBOL: &str = "xb_clock_ns_per_tick_q32";
const CLOCK_CSYMBOL: &CStr = c"xb_clock_ns_per_tick_q32";

/// The counter rate device code assumes when the runtime does not report one: 100 MHz, in
/// kHz (`XB_CLOCK_DEFAULT_KHZ` in `amdgcn_clock.hpp`).
pub const DEFAULT_WALL_CLOCK_KHZ: u32 = 100_000;

/// Nanoseconds per tick at `khz` ticks per millisecond, in 32.32 fixed point, rounded to
/// nearest: what [`Backend::load_module`] writes into [`CLOCK_SYMBOL`]. The same arithmetic
/// as `xb::detail::clock_ns_per_tick_q32` in `amdgcn_clock.hpp`, so 0 for a rate of 0.
///
/// ```
/// use xbarrier_backend_hip::ns_per_tick_q32;
/// assert_eq!(ns_per_tick_q32(100_000), 10 << 32); // 100 MHz: 10 ns a tick
/// assert_eq!(ns_per_tick_q32(1_000_000), 1 << 32); // 1 GHz
/// assert_eq!(ns_per_tick_q32(99_999), 42_950_102_461); // 10.0001000... ns, rounded
/// ```
pub fn ns_per_tick_q32(khz: u32) -> u64 {
    ((1_000_000u64 << 32) + u64::from(khz / 2)).checked_div(u64::from(khz)).unwrap_or(0)
}

/// The rate of a device's constant-rate counter, which kernels count nanoseconds with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallClock {
    /// Ticks per millisecond (kHz).
    pub khz: u32,
    /// Whether the runtime reported the rate. `false` when it does not know
    /// `hipDeviceAttributeWallClockRate` (ROCm 5.2) or answered 0 (it could not ask the
    /// driver): `khz` is then [`DEFAULT_WALL_CLOCK_KHZ`], what device code assumes too.
    pub reported: bool,
}

impl WallClock {
    /// The multiplier kernels get ([`ns_per_tick_q32`] of the rate).
    pub fn ns_per_tick_q32(&self) -> u64 {
        ns_per_tick_q32(self.khz)
    }
}

impl std::fmt::Display for WallClock {
    /// `100 MHz (hipDeviceAttributeWallClockRate)`, `99.999 MHz (...)`, or the default with
    /// why it was assumed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (mhz, khz) = (self.khz / 1000, self.khz % 1000);
        let fraction = format!("{khz:03}");
        let fraction = fraction.trim_end_matches('0');
        let rate = if fraction.is_empty() { format!("{mhz} MHz") } else { format!("{mhz}.{fraction} MHz") };
        if self.reported {
            write!(f, "{rate} (hipDeviceAttributeWallClockRate)")
        } else {
            write!(f, "{rate} (assumed: the runtime does not report hipDeviceAttributeWallClockRate)")
        }
    }
}

/// Reported as the architecture when the runtime's device properties do not name one.
pub const UNKNOWN_ARCH: &str = "amdgcn (unknown)";

/// The HIP backend.
pub struct Hip;

/// `Err(Error::Driver { call, .. })` unless `code` is `hipSuccess`.
fn check(api: &Api, call: &'static str, code: HipError) -> Result<()> {
    if code == sys::HIP_SUCCESS {
        Ok(())
    } else {
        Err(driver_error(api, call, code))
    }
}

fn driver_error(api: &Api, call: &'static str, code: HipError) -> Error {
    Error::Driver { backend: BACKEND, call, code: i64::from(code), name: api.error_name(code) }
}

/// The runtime, or `LibraryNotFound`.
fn runtime() -> Result<&'static Api> {
    sys::api().map_err(|failure| Error::LibraryNotFound {
        backend: BACKEND,
        tried: failure.describe(),
        hint: format!("{LIBRARY_HINT}; set ROCM_PATH if it is installed elsewhere"),
    })
}

/// `hipInit`'s result, called once.
fn init_code(api: &Api) -> HipError {
    static INIT: OnceLock<HipError> = OnceLock::new();
    // SAFETY: hipInit takes flags (which must be 0) and may be called more than once.
    *INIT.get_or_init(|| unsafe { (api.hipInit)(0) })
}

/// Whether `hipInit` failing with `code` just means that there is no usable AMD GPU.
/// ROCm 5.2 answers `hipErrorInvalidDevice` on a machine without one, others `hipErrorNoDevice`.
fn means_no_device(code: HipError) -> bool {
    matches!(code, sys::HIP_ERROR_NO_DEVICE | sys::HIP_ERROR_INVALID_DEVICE)
}

/// The runtime after `hipInit`; `Ok(None)` when it initialized to "no device".
fn initialized() -> Result<Option<&'static Api>> {
    let api = runtime()?;
    match init_code(api) {
        sys::HIP_SUCCESS => Ok(Some(api)),
        code if means_no_device(code) => Ok(None),
        code => Err(driver_error(api, "hipInit", code)),
    }
}

fn set_device(api: &Api, ordinal: c_int) -> Result<()> {
    // SAFETY: takes a plain ordinal; checked against the device count at open.
    check(api, "hipSetDevice", unsafe { (api.hipSetDevice)(ordinal) })
}

/// An open AMD GPU.
pub struct HipDevice {
    api: &'static Api,
    ordinal: c_int,
    info: DeviceInfo,
    runtime_version: Option<i32>,
    driver_version: Option<i32>,
    gcn_arch_name: Option<String>,
    wall_clock: WallClock,
}

impl HipDevice {
    /// The HIP device ordinal.
    pub fn ordinal(&self) -> usize {
        self.info.ordinal
    }
    /// `hipRuntimeGetVersion` (e.g. 50221153 for ROCm 5.2), when the runtime reports it;
    /// [`format_version`] writes it as `5.2.21153`.
    pub fn runtime_version(&self) -> Option<i32> {
        self.runtime_version
    }
    /// `hipDriverGetVersion` (the same encoding), when the runtime reports it.
    pub fn driver_version(&self) -> Option<i32> {
        self.driver_version
    }
    /// The device's full `gcnArchName` with its target features (`gfx90a:sramecc+:xnack-`),
    /// when the runtime's device properties hold one; [`DeviceInfo::arch`] is its processor.
    pub fn gcn_arch_name(&self) -> Option<&str> {
        self.gcn_arch_name.as_deref()
    }
    /// The rate of the counter kernels count time with, as the runtime reported it.
    pub fn wall_clock(&self) -> WallClock {
        self.wall_clock
    }
    /// The library that was loaded (a soname or a path).
    pub fn library(&self) -> &str {
        &self.api.path
    }
    fn select(&self) -> Result<()> {
        set_device(self.api, self.ordinal)
    }
}

/// A device allocation (`hipMalloc`, zero-filled), or memory shared with host threads
/// (`hipHostMalloc`, `hipMallocManaged`); freed on drop.
pub struct HipMemory {
    api: &'static Api,
    ordinal: c_int,
    ptr: *mut c_void,
    bytes: usize,
    pinned_host: bool,
}

// SAFETY: device pointers are process-wide values, usable from any thread.
unsafe impl Send for HipMemory {}
// SAFETY: as above; the struct has no interior mutability.
unsafe impl Sync for HipMemory {}

impl Drop for HipMemory {
    fn drop(&mut self) {
        if set_device(self.api, self.ordinal).is_ok() {
            match (self.pinned_host, self.api.hipHostFree) {
                (true, Some(host_free)) => {
                    // SAFETY: allocated by hipHostMalloc and freed only here; kernels still
                    // using it are excluded by the launch contract (buffers outlive the sync).
                    let _ = unsafe { host_free(self.ptr) };
                }
                _ => {
                    // SAFETY: allocated by hipMalloc or hipMallocManaged, which hipFree frees,
                    // and freed only here; as above for kernels still using it.
                    let _ = unsafe { (self.api.hipFree)(self.ptr) };
                }
            }
        }
    }
}

/// A loaded module (shared with its kernels and with streams that launched them).
pub struct HipModule(Arc<ModuleInner>);

struct ModuleInner {
    api: &'static Api,
    ordinal: c_int,
    raw: Handle,
    name: String,
    /// Device address of `xb_fault_record_slot`, if the module defines it.
    fault_slot: Option<*mut c_void>,
}

// SAFETY: HIP module handles are process-wide and the runtime is thread-safe.
unsafe impl Send for ModuleInner {}
// SAFETY: as above.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if set_device(self.api, self.ordinal).is_ok() {
            // SAFETY: loaded by hipModuleLoadData, unloaded once, after its last user.
            let _ = unsafe { (self.api.hipModuleUnload)(self.raw) };
        }
    }
}

/// A kernel of a loaded module.
#[derive(Clone)]
pub struct HipFunction {
    /// Keeps the module loaded: `raw` is invalid once it is unloaded.
    _module: Arc<ModuleInner>,
    raw: Handle,
}

// SAFETY: HIP function handles are process-wide and the runtime is thread-safe.
unsafe impl Send for HipFunction {}
// SAFETY: as above.
unsafe impl Sync for HipFunction {}

/// A stream (`hipStreamCreate`: blocking, so the synchronous copies of
/// [`Backend::write`]/[`Backend::read`] are ordered with its launches).
pub struct HipStream {
    api: &'static Api,
    ordinal: c_int,
    raw: Handle,
}

// SAFETY: HIP stream handles are process-wide and the runtime is thread-safe.
unsafe impl Send for HipStream {}
// SAFETY: as above.
unsafe impl Sync for HipStream {}

impl Drop for HipStream {
    fn drop(&mut self) {
        if set_device(self.api, self.ordinal).is_ok() {
            // SAFETY: created by hipStreamCreate and destroyed once; queued work completes.
            let _ = unsafe { (self.api.hipStreamDestroy)(self.raw) };
        }
    }
}

/// A recorded event; destroyed on drop.
pub struct HipEvent {
    api: &'static Api,
    ordinal: c_int,
    raw: Handle,
}

// SAFETY: HIP event handles are process-wide and the runtime is thread-safe.
unsafe impl Send for HipEvent {}
// SAFETY: as above.
unsafe impl Sync for HipEvent {}

impl Drop for HipEvent {
    fn drop(&mut self) {
        if set_device(self.api, self.ordinal).is_ok() {
            // SAFETY: created by hipEventCreate, destroyed once.
            let _ = unsafe { (self.api.hipEventDestroy)(self.raw) };
        }
    }
}

impl HipEvent {
    /// Creates an event and records it on `stream` (its device selected).
    fn record(api: &'static Api, ordinal: c_int, stream: Handle) -> Result<HipEvent> {
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer.
        check(api, "hipEventCreate", unsafe { (api.hipEventCreate)(&mut raw) })?;
        let event = HipEvent { api, ordinal, raw };
        // SAFETY: both handles are live.
        check(api, "hipEventRecord", unsafe { (api.hipEventRecord)(event.raw, stream) })?;
        Ok(event)
    }

    /// Milliseconds from `self` to `end` (both recorded and completed).
    fn ms_until(&self, end: &HipEvent) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: both events are live; `ms` is a valid out-pointer.
        check(self.api, "hipEventElapsedTime", unsafe { (self.api.hipEventElapsedTime)(&mut ms, self.raw, end.raw) })?;
        Ok(ms)
    }
}

fn attribute(api: &Api, ordinal: c_int, attribute: c_int) -> Result<u32> {
    let mut value: c_int = 0;
    // SAFETY: `value` is a valid out-pointer; the attribute is one of the stable values.
    check(api, "hipDeviceGetAttribute", unsafe { (api.hipDeviceGetAttribute)(&mut value, attribute, ordinal) })?;
    Ok(u32::try_from(value).unwrap_or(0))
}

fn device_name(api: &Api, ordinal: c_int) -> Result<String> {
    let mut buf = [0 as c_char; 256];
    // SAFETY: the runtime writes at most `len` bytes, NUL included, into `buf`.
    check(api, "hipDeviceGetName", unsafe { (api.hipDeviceGetName)(buf.as_mut_ptr(), buf.len() as c_int, ordinal) })?;
    // SAFETY: `buf` is plain bytes; reinterpreting c_char as u8 is sound.
    let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), buf.len()) };
    Ok(match CStr::from_bytes_until_nul(bytes) {
        Ok(name) if !name.is_empty() => name.to_string_lossy().into_owned(),
        _ => format!("AMD GPU {ordinal}"),
    })
}

/// Bytes reserved for `hipDeviceProp_t`: many times every layout so far (792 bytes in
/// ROCm 5.2's), so whichever layout the runtime writes stays inside the buffer.
const PROPERTIES_BYTES: usize = 16 * 1024;

/// The device's `gcnArchName` with its target features (`gfx90a:sramecc+:xnack-`), or
/// `None` when the runtime's device properties do not name a target.
///
/// `hipDeviceGetAttribute` cannot return the architecture name (a string), and the
/// struct that holds it, `hipDeviceProp_t`, changed layout in ROCm 6 (`hipGetDeviceProperties`
/// became a macro for `hipGetDevicePropertiesR0600`; the plain symbol still fills the old
/// layout). So the struct is filled into an oversized, zeroed buffer by whichever entry
/// point exists, and `gcnArchName` is found by its contents instead of its offset.
fn device_gcn_arch_name(api: &Api, ordinal: c_int) -> Option<String> {
    let get = api.hipGetDevicePropertiesR0600.or(api.hipGetDeviceProperties)?;
    let mut buf = vec![0u8; PROPERTIES_BYTES];
    // SAFETY: `buf` is larger than any hipDeviceProp_t layout the entry point may write.
    let code = unsafe { get(buf.as_mut_ptr().cast(), ordinal) };
    if code != sys::HIP_SUCCESS {
        return None;
    }
    gcn_arch_name_from_properties(&buf)
}

/// Finds `gcnArchName` ("gfx90a:sramecc+:xnack-") in a filled `hipDeviceProp_t` of any
/// layout: past `name[256]` (which leads every layout), the first NUL- or `:`-terminated
/// run of `gfx` followed by at least three lower-case letters or digits; with the target
/// features that follow it up to the NUL when they are plain (`:`, `+`, `-`, letters, digits).
fn gcn_arch_name_from_properties(props: &[u8]) -> Option<String> {
    const NAME_BYTES: usize = 256;
    let body = props.get(NAME_BYTES..)?;
    (0..body.len()).find_map(|i| {
        let name = &body[i..];
        let rest = name.strip_prefix(b"gfx")?;
        let len = rest.iter().take_while(|b| b.is_ascii_digit() || b.is_ascii_lowercase()).count();
        if len < 3 || !matches!(rest.get(len), Some(0 | b':')) {
            return None;
        }
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        let plain = name[..end].iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'+' | b'-'));
        let keep = if plain { &name[..end] } else { &name[..3 + len] };
        Some(String::from_utf8_lossy(keep).into_owned())
    })
}

/// The processor of a target name: `gfx90a` of `gfx90a:sramecc+:xnack-`.
fn processor(target: &str) -> &str {
    target.split_once(':').map_or(target, |(processor, _)| processor)
}

/// The processor (`gfx942`) of [`gcn_arch_name_from_properties`].
#[cfg(test)]
fn arch_from_properties(props: &[u8]) -> Option<String> {
    gcn_arch_name_from_properties(props).map(|name| processor(&name).to_owned())
}

/// The device's counter rate: the runtime's `hipDeviceAttributeWallClockRate`, else the
/// default that device code assumes.
///
/// A runtime that does not know the attribute (ROCm 5.2) answers `hipErrorInvalidValue`,
/// and one that could not get the rate from the driver answers 0: both mean "not reported".
/// Any other failure is an error, naming the attribute.
fn wall_clock(api: &Api, ordinal: c_int) -> Result<WallClock> {
    let mut khz: c_int = 0;
    // SAFETY: `khz` is a valid out-pointer; an attribute value the runtime does not know is
    // refused with hipErrorInvalidValue, not read past.
    let code = unsafe { (api.hipDeviceGetAttribute)(&mut khz, attr::WALL_CLOCK_RATE, ordinal) };
    let reported = match code {
        sys::HIP_SUCCESS => u32::try_from(khz).ok().filter(|&khz| khz > 0),
        sys::HIP_ERROR_INVALID_VALUE => None,
        code => return Err(driver_error(api, "hipDeviceGetAttribute(hipDeviceAttributeWallClockRate)", code)),
    };
    Ok(match reported {
        Some(khz) => WallClock { khz, reported: true },
        None => WallClock { khz: DEFAULT_WALL_CLOCK_KHZ, reported: false },
    })
}

/// A HIP version number (`hipRuntimeGetVersion`, `hipDriverGetVersion`: major * 10^7 +
/// minor * 10^5 + patch) as `major.minor.patch`: `60342134` is `6.3.42134`.
///
/// ```
/// assert_eq!(xbarrier_backend_hip::format_version(50221153), "5.2.21153");
/// assert_eq!(xbarrier_backend_hip::format_version(70100000), "7.1.0");
/// ```
pub fn format_version(version: i32) -> String {
    format!("{}.{}.{}", version / 10_000_000, version / 100_000 % 100, version % 100_000)
}

/// The code objects of a HIP kernel image, as the targets of a clang offload bundle
/// (`gfx90a`, `gfx942:xnack-`): what `hipModuleLoadData` picks from for the device.
///
/// `None` when `image` is not an uncompressed offload bundle (a single code object, or a
/// compressed bundle, whose entries cannot be listed without decompressing it).
///
/// ```
/// let mut image = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
/// image.extend(1u64.to_le_bytes()); // one entry: offset, size, triple
/// image.extend([0u64, 0].iter().flat_map(|v| v.to_le_bytes()));
/// let triple = b"hipv4-amdgcn-amd-amdhsa--gfx942";
/// image.extend((triple.len() as u64).to_le_bytes());
/// image.extend(triple);
/// assert_eq!(xbarrier_backend_hip::code_object_targets(&image), Some(vec!["gfx942".to_owned()]));
/// assert_eq!(xbarrier_backend_hip::code_object_targets(b"\x7fELF"), None);
/// ```
pub fn code_object_targets(image: &[u8]) -> Option<Vec<String>> {
    const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
    fn take<'a>(rest: &mut &'a [u8], len: usize) -> Option<&'a [u8]> {
        let (head, tail) = (rest.get(..len)?, rest.get(len..)?);
        *rest = tail;
        Some(head)
    }
    fn word(rest: &mut &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(take(rest, 8)?.try_into().ok()?))
    }
    let mut rest = image.strip_prefix(MAGIC)?;
    let entries = word(&mut rest)?;
    let mut targets = Vec::new();
    for _ in 0..entries {
        let (_offset, _size) = (word(&mut rest)?, word(&mut rest)?);
        let len = usize::try_from(word(&mut rest)?).ok()?;
        let triple = take(&mut rest, len)?;
        // `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`; the host entry has no target.
        let triple = std::str::from_utf8(triple).ok()?;
        if let Some((kind, target)) = triple.split_once("--") {
            if kind.contains("amdgcn") && !target.is_empty() {
                targets.push(target.to_owned());
            }
        }
    }
    Some(targets)
}

fn describe(api: &'static Api, ordinal: usize, raw: c_int, arch: String) -> Result<DeviceInfo> {
    let multiprocessors = attribute(api, raw, attr::MULTIPROCESSOR_COUNT)?;
    let cooperative =
        attribute(api, raw, attr::COOPERATIVE_LAUNCH)? != 0 && api.hipModuleLaunchCooperativeKernel.is_some();
    let mut info = DeviceInfo::new(BACKEND, ordinal, device_name(api, raw)?, arch);
    info.wave_size = attribute(api, raw, attr::WARP_SIZE)?;
    info.multiprocessors = multiprocessors;
    // Conservative: one block per multiprocessor (CU, or WGP in WGP mode) is always resident
    // for a kernel that fits at all. A larger cooperative grid that cannot be co-resident is
    // refused by the runtime (hipErrorCooperativeLaunchTooLarge).
    info.max_cooperative_blocks = if cooperative { multiprocessors } else { 0 };
    info.max_threads_per_block = attribute(api, raw, attr::MAX_THREADS_PER_BLOCK)?;
    info.max_dynamic_shared_bytes = attribute(api, raw, attr::MAX_SHARED_MEMORY_PER_BLOCK)?;
    Ok(info)
}

fn check_range(memory: &HipMemory, offset: usize, len: usize) -> Result<*mut c_void> {
    match offset.checked_add(len) {
        // offset + len <= bytes: the address stays inside the allocation.
        Some(end) if end <= memory.bytes => Ok(memory.ptr.cast::<u8>().wrapping_add(offset).cast()),
        _ => Err(Error::InvalidArgument {
            call: "copy",
            reason: format!("bytes {offset}..+{len} of a {}-byte allocation", memory.bytes),
        }),
    }
}

/// Writes the device's clock multiplier into `module`'s [`CLOCK_SYMBOL`], if it has one
/// (modules built without xbarrier's AMDGPU platform layer do not).
fn set_clock(device: &HipDevice, module: &ModuleInner) -> Result<()> {
    let api = device.api;
    let mut slot: *mut c_void = std::ptr::null_mut();
    let mut bytes = 0usize;
    // SAFETY: the module is loaded; out-pointers are valid; the name is a C string.
    match unsafe { (api.hipModuleGetGlobal)(&mut slot, &mut bytes, module.raw, CLOCK_CSYMBOL.as_ptr()) } {
        sys::HIP_SUCCESS if bytes == std::mem::size_of::<u64>() => {}
        sys::HIP_SUCCESS => {
            return Err(Error::BadBundle(format!(
            "module `{}`: {CLOCK_SYMBOL} is {bytes} bytes, not a uint64_t (amdgcn_clock.hpp and backend-hip disagree)",
            module.name
        )))
        }
        sys::HIP_ERROR_NOT_FOUND | sys::HIP_ERROR_INVALID_SYMBOL => return Ok(()),
        code => return Err(driver_error(api, "hipModuleGetGlobal", code)),
    }
    let multiplier = device.wall_clock.ns_per_tick_q32().to_ne_bytes();
    // SAFETY: `slot` addresses the module's 8-byte global (checked above) and the module is
    // alive; `multiplier` is 8 readable bytes; the copy is synchronous, so it is done before
    // any kernel of the module can be launched.
    check(api, "hipMemcpy", unsafe {
        (api.hipMemcpy)(slot, multiplier.as_ptr().cast(), multiplier.len(), sys::HIP_MEMCPY_HOST_TO_DEVICE)
    })
}

impl Backend for Hip {
    const KIND: BackendKind = BACKEND;
    type Device = HipDevice;
    type Memory = HipMemory;
    type Module = HipModule;
    type Function = HipFunction;
    type Stream = HipStream;
    type Event = HipEvent;

    fn device_count() -> Result<usize> {
        let Some(api) = initialized()? else { return Ok(0) };
        let mut count: c_int = 0;
        // SAFETY: `count` is a valid out-pointer.
        match unsafe { (api.hipGetDeviceCount)(&mut count) } {
            sys::HIP_SUCCESS => Ok(usize::try_from(count).unwrap_or(0)),
            sys::HIP_ERROR_NO_DEVICE => Ok(0),
            code => Err(driver_error(api, "hipGetDeviceCount", code)),
        }
    }

    fn open(ordinal: usize) -> Result<HipDevice> {
        let found = Self::device_count()?;
        let raw = match c_int::try_from(ordinal) {
            Ok(raw) if ordinal < found => raw,
            _ => {
                let hint = if found == 0 {
                    let init = runtime().map(|api| (api, init_code(api)));
                    let said = match init {
                        Ok((api, code)) if code != sys::HIP_SUCCESS => format!("hipInit: {}; ", api.error_name(code)),
                        _ => String::new(),
                    };
                    format!("the HIP runtime sees no AMD GPU ({said}check `rocminfo`, /dev/kfd access and HIP_VISIBLE_DEVICES)")
                } else {
                    format!("valid ordinals are 0..{found} (HIP_VISIBLE_DEVICES may hide devices)")
                };
                return Err(Error::NoDevice { backend: BACKEND, ordinal, found, hint });
            }
        };
        // device_count() succeeded with a device, so the runtime is loaded and initialized.
        let api = runtime()?;
        set_device(api, raw)?;
        let version = |get: Option<unsafe extern "C" fn(*mut c_int) -> HipError>| {
            get.and_then(|get| {
                let mut version: c_int = 0;
                // SAFETY: `version` is a valid out-pointer.
                (unsafe { get(&mut version) } == sys::HIP_SUCCESS).then_some(version)
            })
        };
        let gcn_arch_name = device_gcn_arch_name(api, raw);
        let arch = gcn_arch_name.as_deref().map_or(UNKNOWN_ARCH, processor).to_owned();
        let info = describe(api, ordinal, raw, arch)?;
        Ok(HipDevice {
            api,
            ordinal: raw,
            info,
            runtime_version: version(api.hipRuntimeGetVersion),
            driver_version: version(api.hipDriverGetVersion),
            gcn_arch_name,
            wall_clock: wall_clock(api, raw)?,
        })
    }

    fn info(device: &HipDevice) -> DeviceInfo {
        device.info.clone()
    }

    fn alloc(device: &HipDevice, bytes: usize) -> Result<HipMemory> {
        let api = device.api;
        device.select()?;
        let size = bytes.max(1);
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: `ptr` is a valid out-pointer; the memory is zero-filled below before use.
        match unsafe { (api.hipMalloc)(&mut ptr, size) } {
            sys::HIP_SUCCESS => {}
            sys::HIP_ERROR_OUT_OF_MEMORY => return Err(Error::OutOfMemory { backend: BACKEND, requested: bytes }),
            code => return Err(driver_error(api, "hipMalloc", code)),
        }
        let memory = HipMemory { api, ordinal: device.ordinal, ptr, bytes: size, pinned_host: false };
        // SAFETY: `ptr` addresses `size` bytes just allocated; hipMemset is synchronous.
        check(api, "hipMemset", unsafe { (api.hipMemset)(ptr, 0, size) })?;
        Ok(memory)
    }

    /// Fine-grained pinned host memory where the link has native atomics
    /// (`hipDeviceAttributeHostNativeAtomicSupported`), else managed memory where the device
    /// and the CPU may access it at once (`hipDeviceAttributeConcurrentManagedAccess`); both
    /// have one address for host and every device. With peers, every device must have the
    /// property (fine-grained host memory is mapped into every device; managed memory
    /// migrates to whichever device touches it).
    fn alloc_system(device: &HipDevice, peers: &[&HipDevice], bytes: usize) -> Result<HipMemory> {
        let api = device.api;
        device.select()?;
        let size = bytes.max(1);
        // The devices (ordinal, name) that lack `property`.
        let lacking = |property| -> Result<Vec<String>> {
            let mut lacking = Vec::new();
            for d in std::iter::once(device).chain(peers.iter().copied()) {
                if attribute(api, d.ordinal, property)? == 0 {
                    lacking.push(format!("device {} ({}, {})", d.ordinal, d.info.name, d.info.arch));
                }
            }
            Ok(lacking)
        };
        let without_atomics = lacking(sys::attr::HOST_NATIVE_ATOMIC_SUPPORTED)?;
        let without_managed = lacking(sys::attr::CONCURRENT_MANAGED_ACCESS)?;
        let (native_atomics, concurrent_managed) = (without_atomics.is_empty(), without_managed.is_empty());
        let mut ptr: *mut c_void = std::ptr::null_mut();
        let (call, pinned_host, code) =
            match (native_atomics, concurrent_managed, api.hipHostMalloc, api.hipMallocManaged) {
                // hipHostFree must exist to free it again, hipHostGetDevicePointer to check
                // that kernels see it at the host's address.
                (true, _, Some(host_malloc), _)
                    if api.hipHostFree.is_some() && api.hipHostGetDevicePointer.is_some() =>
                {
                    // SAFETY: `ptr` is a valid out-pointer.
                    let code = unsafe { host_malloc(&mut ptr, size, sys::HIP_HOST_MALLOC_SHARED) };
                    ("hipHostMalloc", true, code)
                }
                (_, true, _, Some(managed)) => {
                    // SAFETY: `ptr` is a valid out-pointer.
                    let code = unsafe { managed(&mut ptr, size, sys::HIP_MEM_ATTACH_GLOBAL) };
                    ("hipMallocManaged", false, code)
                }
                _ => {
                    return Err(Error::Unsupported {
                        backend: BACKEND,
                        what: "memory shared with host threads",
                        reason: format!(
                            "{} (managed memory needs XNACK: HSA_XNACK=1 on a GPU that supports it){}",
                            if peers.is_empty() {
                                format!(
                                    "device {} reports neither hipDeviceAttributeHostNativeAtomicSupported nor \
                                     hipDeviceAttributeConcurrentManagedAccess",
                                    device.ordinal
                                )
                            } else {
                                format!(
                                    "hipDeviceAttributeHostNativeAtomicSupported is missing on {}, \
                                     hipDeviceAttributeConcurrentManagedAccess on {}; every device needs the same \
                                     one of the two",
                                    without_atomics.join(", "),
                                    without_managed.join(", ")
                                )
                            },
                            if api.hipHostMalloc.is_none()
                                || api.hipHostFree.is_none()
                                || api.hipHostGetDevicePointer.is_none()
                                || api.hipMallocManaged.is_none()
                            {
                                ", or this HIP runtime lacks hipHostMalloc, hipHostFree, \
                                 hipHostGetDevicePointer or hipMallocManaged"
                            } else {
                                ""
                            }
                        ),
                    })
                }
            };
        match code {
            sys::HIP_SUCCESS => {}
            sys::HIP_ERROR_OUT_OF_MEMORY => return Err(Error::OutOfMemory { backend: BACKEND, requested: bytes }),
            code => return Err(driver_error(api, call, code)),
        }
        let memory = HipMemory { api, ordinal: device.ordinal, ptr, bytes: size, pinned_host };
        if pinned_host {
            // Kernels get the host's pointer (SystemBuffer hands one address to both sides):
            // the device must map the memory at the same address (unified addressing).
            let mut device_ptr: *mut c_void = std::ptr::null_mut();
            if let Some(get) = api.hipHostGetDevicePointer {
                // SAFETY: `ptr` was just allocated by hipHostMalloc, mapped; `device_ptr` is a
                // valid out-pointer.
                check(api, "hipHostGetDevicePointer", unsafe { get(&mut device_ptr, ptr, 0) })?;
            }
            if device_ptr != ptr {
                // `memory` frees the allocation with hipHostFree as it drops.
                return Err(Error::Unsupported {
                    backend: BACKEND,
                    what: "memory shared with host threads",
                    reason: format!(
                        "device {} maps pinned host memory at another address than the host's \
                         (no unified addressing)",
                        device.ordinal
                    ),
                });
            }
        }
        // SAFETY: `ptr` addresses `size` bytes just allocated, which the host can write.
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, size) };
        Ok(memory)
    }

    /// Selects `peer` and calls `hipDeviceEnablePeerAccess(device)`, once the runtime reports
    /// a peer path from `peer` to `device`'s memory with native atomics. The same ordinal is
    /// the same device: nothing to enable, no entry point needed.
    fn enable_peer_access(device: &HipDevice, peer: &HipDevice) -> Result<()> {
        if device.ordinal == peer.ordinal {
            return Ok(());
        }
        let api = device.api;
        let unsupported =
            |reason: String| Error::Unsupported { backend: BACKEND, what: "memory shared between devices", reason };
        let (Some(can_access), Some(p2p_attribute), Some(enable)) =
            (api.hipDeviceCanAccessPeer, api.hipDeviceGetP2PAttribute, api.hipDeviceEnablePeerAccess)
        else {
            let missing: Vec<&str> = [
                ("hipDeviceCanAccessPeer", api.hipDeviceCanAccessPeer.is_none()),
                ("hipDeviceGetP2PAttribute", api.hipDeviceGetP2PAttribute.is_none()),
                ("hipDeviceEnablePeerAccess", api.hipDeviceEnablePeerAccess.is_none()),
            ]
            .into_iter()
            .filter_map(|(name, absent)| absent.then_some(name))
            .collect();
            return Err(unsupported(format!("{} lacks {}", api.path, missing.join(", "))));
        };
        let (from, to) = (peer.ordinal, device.ordinal);
        let mut can = 0;
        // SAFETY: `can` is a valid out-pointer; both ordinals were checked at open.
        check(api, "hipDeviceCanAccessPeer", unsafe { can_access(&mut can, from, to) })?;
        if can == 0 {
            return Err(unsupported(format!(
                "hipDeviceCanAccessPeer reports no peer path from device {from} to device {to}'s memory (they need \
                 an Infinity Fabric (xGMI) link, or PCIe peer-to-peer with large BAR, and no IOMMU or \
                 virtualization that blocks it)"
            )));
        }
        // Current runtimes (ROCm/clr) answer the link's atomic support. Older ones (the
        // rocclr/hip_peer.cpp of ROCm/HIP) answered the link's HSA type instead, nonzero for
        // PCIe and xGMI, so there a nonzero answer does not prove native atomics.
        let mut atomics = 0;
        // SAFETY: as above; the attribute is a hipDeviceP2PAttr value.
        check(api, "hipDeviceGetP2PAttribute", unsafe {
            p2p_attribute(&mut atomics, sys::HIP_DEV_P2P_ATTR_NATIVE_ATOMIC_SUPPORTED, from, to)
        })?;
        if atomics == 0 {
            return Err(unsupported(format!(
                "device {from} reaches device {to}'s memory, but hipDeviceGetP2PAttribute reports no native \
                 atomics over the link (hipDevP2PAttrNativeAtomicSupported is 0), which a barrier across \
                 them needs"
            )));
        }
        peer.select()?;
        // SAFETY: takes an ordinal checked at open and flags, which must be 0.
        match unsafe { enable(to, 0) } {
            sys::HIP_SUCCESS | sys::HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
            code => Err(driver_error(api, "hipDeviceEnablePeerAccess", code)),
        }
    }

    fn address(memory: &HipMemory) -> u64 {
        memory.ptr as u64
    }

    fn write(device: &HipDevice, memory: &mut HipMemory, offset: usize, src: &[u8]) -> Result<()> {
        let dst = check_range(memory, offset, src.len())?;
        device.select()?;
        let api = device.api;
        // SAFETY: the range lies inside the allocation (checked); `src` is readable; the
        // copy is synchronous.
        check(api, "hipMemcpy", unsafe {
            (api.hipMemcpy)(dst, src.as_ptr().cast(), src.len(), sys::HIP_MEMCPY_HOST_TO_DEVICE)
        })
    }

    fn read(device: &HipDevice, memory: &HipMemory, offset: usize, dst: &mut [u8]) -> Result<()> {
        let src = check_range(memory, offset, dst.len())?;
        device.select()?;
        let api = device.api;
        // SAFETY: the range lies inside the allocation (checked); `dst` is writable; the
        // copy is synchronous.
        check(api, "hipMemcpy", unsafe {
            (api.hipMemcpy)(dst.as_mut_ptr().cast(), src, dst.len(), sys::HIP_MEMCPY_DEVICE_TO_HOST)
        })
    }

    fn copy_device(
        device: &HipDevice,
        stream: &HipStream,
        dst: &mut HipMemory,
        dst_offset: usize,
        src: &HipMemory,
        src_offset: usize,
        bytes: usize,
    ) -> Result<()> {
        let to = check_range(dst, dst_offset, bytes)?;
        let from = check_range(src, src_offset, bytes)?;
        device.select()?;
        let api = device.api;
        // SAFETY: both ranges lie inside live allocations (checked) and the stream is live.
        // The allocations outlive the copy: hipFree synchronizes the device first.
        check(api, "hipMemcpyAsync", unsafe {
            (api.hipMemcpyAsync)(to, from, bytes, sys::HIP_MEMCPY_DEVICE_TO_DEVICE, stream.raw)
        })
    }

    fn load_module(device: &HipDevice, name: &str, image: &'static [u8]) -> Result<HipModule> {
        let api = device.api;
        device.select()?;
        let copy = aligned_copy(image);
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; `copy` is an aligned copy of the image that
        // outlives the call; the runtime validates the contents.
        check(api, "hipModuleLoadData", unsafe { (api.hipModuleLoadData)(&mut raw, copy.as_ptr().cast()) })?;
        let mut module = ModuleInner { api, ordinal: device.ordinal, raw, name: name.to_owned(), fault_slot: None };
        let mut slot: *mut c_void = std::ptr::null_mut();
        let mut bytes = 0usize;
        // SAFETY: the module was just loaded; out-pointers are valid; the name is a C string.
        let code = unsafe { (api.hipModuleGetGlobal)(&mut slot, &mut bytes, raw, FAULT_RECORD_CSYMBOL.as_ptr()) };
        match code {
            sys::HIP_SUCCESS if bytes >= std::mem::size_of::<FaultRecord>() => module.fault_slot = Some(slot),
            sys::HIP_SUCCESS => {
                return Err(Error::BadBundle(format!(
                    "module `{name}`: {FAULT_RECORD_SYMBOL} is {bytes} bytes, xb_fault_record is {} (abi.h and barrier-api disagree)",
                    std::mem::size_of::<FaultRecord>()
                )))
            }
            sys::HIP_ERROR_NOT_FOUND | sys::HIP_ERROR_INVALID_SYMBOL => {}
            code => return Err(driver_error(api, "hipModuleGetGlobal", code)),
        }
        set_clock(device, &module)?;
        Ok(HipModule(Arc::new(module)))
    }

    fn function(device: &HipDevice, module: &HipModule, name: &str) -> Result<HipFunction> {
        let api = device.api;
        let not_found = || Error::KernelNotFound { module: module.0.name.clone(), kernel: name.to_owned() };
        let c_name = CString::new(name).map_err(|_| not_found())?;
        device.select()?;
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: the module is loaded (we hold it); `raw` is a valid out-pointer.
        match unsafe { (api.hipModuleGetFunction)(&mut raw, module.0.raw, c_name.as_ptr()) } {
            sys::HIP_SUCCESS => Ok(HipFunction { _module: module.0.clone(), raw }),
            sys::HIP_ERROR_NOT_FOUND | sys::HIP_ERROR_INVALID_DEVICE_FUNCTION => Err(not_found()),
            code => Err(driver_error(api, "hipModuleGetFunction", code)),
        }
    }

    fn create_stream(device: &HipDevice) -> Result<HipStream> {
        let api = device.api;
        device.select()?;
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer.
        check(api, "hipStreamCreate", unsafe { (api.hipStreamCreate)(&mut raw) })?;
        Ok(HipStream { api, ordinal: device.ordinal, raw })
    }

    unsafe fn launch(
        device: &HipDevice,
        stream: &HipStream,
        function: &HipFunction,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<()> {
        let api = device.api;
        device.select()?;
        let cooperative = match (config.cooperative, api.hipModuleLaunchCooperativeKernel) {
            (false, _) => None,
            (true, Some(f)) => Some(f),
            (true, None) => {
                return Err(Error::Unsupported {
                    backend: BACKEND,
                    what: "cooperative launch",
                    reason: format!("{} has no hipModuleLaunchCooperativeKernel; use ROCm 6 or newer", api.path),
                })
            }
        };
        let mut slots = KernelParams::new(args);
        let mut params = slots.pointers();
        let (g, b) = (config.grid, config.block);
        // SAFETY: `params` points at one live slot per argument, each holding the argument's
        // C representation; the runtime copies them before returning. The caller guarantees
        // that they match the kernel's parameters and that pointed-to memory stays
        // allocated until the stream is synchronized. Function and stream are live handles.
        let code = unsafe {
            match cooperative {
                Some(launch) => launch(
                    function.raw,
                    g.x,
                    g.y,
                    g.z,
                    b.x,
                    b.y,
                    b.z,
                    config.shared_bytes,
                    stream.raw,
                    params.as_mut_ptr(),
                ),
                None => (api.hipModuleLaunchKernel)(
                    function.raw,
                    g.x,
                    g.y,
                    g.z,
                    b.x,
                    b.y,
                    b.z,
                    config.shared_bytes,
                    stream.raw,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
            }
        };
        let call = if cooperative.is_some() { "hipModuleLaunchCooperativeKernel" } else { "hipModuleLaunchKernel" };
        check(api, call, code)
    }

    fn query(device: &HipDevice, stream: &HipStream) -> Result<bool> {
        let api = device.api;
        device.select()?;
        // SAFETY: a live stream.
        match unsafe { (api.hipStreamQuery)(stream.raw) } {
            sys::HIP_SUCCESS => Ok(true),
            sys::HIP_ERROR_NOT_READY => Ok(false),
            code => Err(driver_error(api, "hipStreamQuery", code)),
        }
    }

    fn synchronize(device: &HipDevice, stream: &HipStream) -> Result<()> {
        let api = device.api;
        device.select()?;
        // SAFETY: a live stream.
        check(api, "hipStreamSynchronize", unsafe { (api.hipStreamSynchronize)(stream.raw) })
    }

    /// Reads the module's `xb_fault_record_slot` and clears it.
    ///
    /// The device side claims the record by setting `op` and publishes `kind` last; `kind` is
    /// also the flag that makes checked waits of a faulted launch give up. So any nonzero
    /// record is cleared, or the next launch of the module would start out aborted.
    fn take_fault(device: &HipDevice, module: &HipModule) -> Result<Option<FaultRecord>> {
        let Some(slot) = module.0.fault_slot else { return Ok(None) };
        let api = device.api;
        device.select()?;
        let size = FaultRecord::SIZE;
        let mut raw = [0u8; FaultRecord::SIZE];
        let dst = raw.as_mut_ptr().cast::<c_void>();
        // SAFETY: `slot` addresses the module's global of at least `size` bytes (checked at
        // load), the module is alive (we hold it), and `dst` is `size` writable bytes.
        check(api, "hipMemcpy", unsafe { (api.hipMemcpy)(dst, slot, size, sys::HIP_MEMCPY_DEVICE_TO_HOST) })?;
        let record = decode_fault_record(&raw);
        if record == FaultRecord::default() {
            return Ok(None);
        }
        let zero = [0u8; FaultRecord::SIZE];
        // SAFETY: as above, writing the same range from `size` readable bytes.
        check(api, "hipMemcpy", unsafe {
            (api.hipMemcpy)(slot, zero.as_ptr().cast(), size, sys::HIP_MEMCPY_HOST_TO_DEVICE)
        })?;
        Ok((record.kind != 0).then_some(record))
    }

    fn record(device: &HipDevice, stream: &HipStream) -> Result<HipEvent> {
        device.select()?;
        HipEvent::record(device.api, device.ordinal, stream.raw)
    }

    fn elapsed(start: &HipEvent, end: &HipEvent) -> Result<Duration> {
        set_device(start.api, start.ordinal)?;
        // SAFETY: a live event.
        check(end.api, "hipEventSynchronize", unsafe { (end.api.hipEventSynchronize)(end.raw) })?;
        let ms = start.ms_until(end)?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }

    /// `hipStreamWaitEvent`: the runtime orders the stream's later work after the event,
    /// which may belong to another device.
    fn stream_wait_event(device: &HipDevice, stream: &HipStream, event: &HipEvent) -> Result<()> {
        let api = device.api;
        let Some(wait) = api.hipStreamWaitEvent else {
            return Err(Error::Unsupported {
                backend: BACKEND,
                what: "a stream waiting for an event",
                reason: format!("{} has no hipStreamWaitEvent", api.path),
            });
        };
        device.select()?;
        // SAFETY: both handles are live (their owners destroy them on drop); flags must be 0.
        check(api, "hipStreamWaitEvent", unsafe { wait(stream.raw, event.raw, 0) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xbarrier_api::Device;

    /// What `device_count` says on this machine is one of the documented outcomes, each with
    /// its documented shape: a count, a missing runtime with the names tried and the fix, or
    /// `hipInit`'s or `hipGetDeviceCount`'s own error.
    #[test]
    fn device_count_is_a_count_or_says_why_not() {
        match Hip::device_count() {
            Ok(n) => eprintln!("note: the HIP runtime sees {n} device(s)"),
            Err(e @ Error::LibraryNotFound { .. }) => {
                let text = e.to_string();
                assert!(text.contains(LIBRARY_HINT), "{text}");
                assert!(text.contains("libamdhip64.so.6") && text.contains("/opt/rocm/lib/libamdhip64.so"), "{text}");
            }
            Err(Error::Driver { backend: BackendKind::Hip, call, name, .. }) => {
                assert!(matches!(call, "hipInit" | "hipGetDeviceCount"), "{call}: {name}");
            }
            Err(e) => panic!("undocumented error from device_count: {e}"),
        }
    }

    /// Opening a device fails exactly as counting them did when the runtime is unusable, and
    /// with `NoDevice` (saying how to fix it) past the last device.
    #[test]
    fn open_fails_like_device_count_or_with_no_device() {
        match Hip::device_count() {
            Ok(found) => {
                match Device::<Hip>::open(0) {
                    Ok(device) => {
                        assert!(found > 0);
                        assert_eq!(device.info().backend, BackendKind::Hip);
                    }
                    Err(e @ Error::NoDevice { .. }) => {
                        assert_eq!(found, 0);
                        assert!(e.to_string().contains("rocminfo"), "{e}");
                    }
                    Err(e) => panic!("the runtime counted {found} device(s), yet open(0) failed: {e}"),
                }
                match Hip::open(usize::MAX) {
                    Err(Error::NoDevice { ordinal, found: reported, .. }) => {
                        assert_eq!((ordinal, reported), (usize::MAX, found))
                    }
                    Err(e) => panic!("expected NoDevice past the last device, got {e}"),
                    Ok(_) => panic!("opened device usize::MAX"),
                }
            }
            Err(counting) => {
                for ordinal in [0, usize::MAX] {
                    match Hip::open(ordinal) {
                        Err(opening) => assert_eq!(opening.to_string(), counting.to_string()),
                        Ok(_) => panic!("device_count failed ({counting}), yet open({ordinal}) succeeded"),
                    }
                }
            }
        }
    }

    fn props_with(at: usize, text: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; 1024];
        buf[at..at + text.len()].copy_from_slice(text);
        buf
    }

    #[test]
    fn arch_is_found_in_any_properties_layout() {
        // ROCm 5.2's layout puts gcnArchName at byte 396; other layouts elsewhere.
        assert_eq!(arch_from_properties(&props_with(396, b"gfx90a:sramecc+:xnack-\0")).as_deref(), Some("gfx90a"));
        assert_eq!(arch_from_properties(&props_with(700, b"gfx1100\0")).as_deref(), Some("gfx1100"));
        assert_eq!(arch_from_properties(&props_with(300, b"gfx942:xnack-")).as_deref(), Some("gfx942"));
        let mut both = props_with(0, b"gfx906 in the name field\0");
        both[512..519].copy_from_slice(b"gfx906\0");
        assert_eq!(arch_from_properties(&both).as_deref(), Some("gfx906"));
    }

    #[test]
    fn arch_needs_a_real_target_name() {
        assert_eq!(arch_from_properties(&props_with(0, b"gfx90a\0")), None, "the name field is skipped");
        assert_eq!(arch_from_properties(&props_with(400, b"gfx\0")), None);
        assert_eq!(arch_from_properties(&props_with(400, b"gfx9\0")), None);
        assert_eq!(arch_from_properties(&props_with(400, b"gfx90a-xyz")), None, "unterminated");
        assert_eq!(arch_from_properties(&props_with(1020, b"gfx9")), None, "runs off the end");
        assert_eq!(arch_from_properties(&[0u8; 100]), None);
    }

    #[test]
    fn gcn_arch_name_keeps_its_target_features() {
        let name = |props: &[u8]| gcn_arch_name_from_properties(props);
        assert_eq!(name(&props_with(396, b"gfx90a:sramecc+:xnack-\0")).as_deref(), Some("gfx90a:sramecc+:xnack-"));
        assert_eq!(name(&props_with(700, b"gfx1100\0")).as_deref(), Some("gfx1100"));
        // Bytes that are no target feature: the processor alone.
        assert_eq!(name(&props_with(500, b"gfx942:\x01\x02\0")).as_deref(), Some("gfx942"));
        assert_eq!(processor("gfx942:sramecc+:xnack-"), "gfx942");
        assert_eq!(processor("gfx1200"), "gfx1200");
    }

    #[test]
    fn wall_clock_rates_print_in_mhz() {
        let reported = |khz| WallClock { khz, reported: true }.to_string();
        assert_eq!(reported(100_000), "100 MHz (hipDeviceAttributeWallClockRate)");
        assert_eq!(reported(99_999), "99.999 MHz (hipDeviceAttributeWallClockRate)");
        assert_eq!(reported(25_500), "25.5 MHz (hipDeviceAttributeWallClockRate)");
        let assumed = WallClock { khz: DEFAULT_WALL_CLOCK_KHZ, reported: false }.to_string();
        assert!(assumed.starts_with("100 MHz (assumed: "), "{assumed}");
        assert_eq!(WallClock { khz: 25_000, reported: true }.ns_per_tick_q32(), 40 << 32);
        assert_eq!(ns_per_tick_q32(0), 0);
        assert_eq!(ns_per_tick_q32(1), 1_000_000 << 32);
    }

    /// An offload bundle as clang writes it: magic, entry count, then offset, size, triple
    /// length and triple per entry (code objects omitted: only the header is read).
    fn bundle(triples: &[&str]) -> Vec<u8> {
        let mut image = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
        image.extend((triples.len() as u64).to_le_bytes());
        for (k, triple) in triples.iter().enumerate() {
            for word in [4096 * (k as u64 + 1), 100, triple.len() as u64] {
                image.extend(word.to_le_bytes());
            }
            image.extend(triple.as_bytes());
        }
        image
    }

    #[test]
    fn code_object_targets_are_read_from_the_bundle_header() {
        let image = bundle(&[
            "host-x86_64-unknown-linux--",
            "hipv4-amdgcn-amd-amdhsa--gfx1100",
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
            "hipv4-amdgcn-amd-amdhsa--gfx942",
        ]);
        assert_eq!(code_object_targets(&image), Some(vec!["gfx1100".into(), "gfx90a:xnack-".into(), "gfx942".into()]));
        // Cut inside the last triple, or inside an entry's words: not a bundle.
        assert_eq!(code_object_targets(&image[..image.len() - 1]), None);
        assert_eq!(code_object_targets(&image[..24 + 8 + 12]), None);
        assert_eq!(code_object_targets(b"CCOB compressed bundle"), None);
        assert_eq!(code_object_targets(&bundle(&[])), Some(vec![]));
    }

    #[test]
    fn versions_split_into_major_minor_patch() {
        assert_eq!(format_version(60342134), "6.3.42134");
        assert_eq!(format_version(50221153), "5.2.21153");
    }

    #[test]
    fn fault_record_symbol_matches() {
        assert_eq!(FAULT_RECORD_CSYMBOL.to_str(), Ok(FAULT_RECORD_SYMBOL));
        assert_eq!(CLOCK_CSYMBOL.to_str(), Ok(CLOCK_SYMBOL));
        assert_eq!(std::mem::size_of::<FaultRecord>(), 88);
    }
}
