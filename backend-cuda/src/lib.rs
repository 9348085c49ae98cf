//! xbarrier's CUDA backend: NVIDIA GPUs through the CUDA driver API.
//!
//! The driver is reached through [cudarc]'s `result`/`sys` layers with dynamic loading:
//! nothing of CUDA is needed to build, and `libcuda` is `dlopen`ed at run time. Without a
//! driver, [`Backend::device_count`] returns [`Error::LibraryNotFound`] (never a panic: the
//! library and every entry point this crate uses are checked before cudarc is called; see
//! `driver.rs`). With a driver that sees no GPU it returns `Ok(0)`.
//!
//! Each [`CudaDevice`] retains the device's primary context (the one the CUDA runtime also
//! uses) and makes it current on the calling thread before each driver call. Every handle
//! (memory, module, stream, event) holds the context, so it is released last.
//!
//! Kernel images are whatever `cuModuleLoadData` accepts: a fatbin, a cubin or PTX text.
//!
//! # Barrier faults
//! If a loaded module defines the global `xb_fault_record xb_fault_record_slot` (see
//! `xbarrier/abi.h`; the CUDA platform layer writes the first fault of a launch there),
//! [`Backend::take_fault`] reads and clears it; `Stream::synchronize` calls it once the
//! stream has drained and returns a nonzero `kind` as [`Error::Fault`], naming the kernel
//! last launched from that module on the stream. Modules without the global report none.
//!
//! # Time limits
//! The driver cannot abort a running kernel, so `Stream::launch` brackets a launch with a
//! [`LaunchConfig::timeout`] by two events ([`Backend::record`]) and the following
//! `Stream::synchronize` reports an overrun as [`Error::LaunchTimeout`] after the kernel ended.
//!
//! # Example
//! Probing for a GPU works on any machine, with or without a driver:
//!
//! ```
//! use xbarrier_api::{Device, Error};
//! use xbarrier_backend_cuda::Cuda;
//!
//! match Device::<Cuda>::count() {
//!     Ok(0) => println!("driver loaded, no NVIDIA GPU"),
//!     Ok(n) => println!("{n} NVIDIA GPU(s), e.g. {}", Device::<Cuda>::open(0)?.info().arch),
//!     Err(Error::LibraryNotFound { hint, .. }) => println!("no CUDA driver: {hint}"),
//!     Err(e) => return Err(e),
//! }
//! # Ok::<(), Error>(())
//! ```
//!
//! [cudarc]: https://docs.rs/cudarc
#![warn(missing_docs)]

mod driver;

use std::ffi::{c_char, c_uint, c_void, CStr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;
use xbarrier_api::backend::{aligned_copy, decode_fault_record, KernelParams};
use xbarrier_api::{Backend, BackendKind, DeviceInfo, Error, FaultRecord, KernelArg, LaunchConfig, Result};

use driver::{Check, Context};

const BACKEND: BackendKind = BackendKind::Cuda;
/// Where managed memory is shared concurrently, for errors that need it.
const MANAGED_HINT: &str =
    "managed memory is concurrent on Linux with sm_60 and later, not on Windows or under some virtualization";

/// Name of the module global that holds a launch's barrier fault (an `xb_fault_record`).
pub const FAULT_RECORD_SYMBOL: &str = "xb_fault_record_slot";
const FAULT_RECORD_CSYMBOL: &CStr = c"xb_fault_record_slot";

/// The CUDA backend.
pub struct Cuda;

/// An open NVIDIA GPU: its retained primary context and what it is.
pub struct CudaDevice {
    ctx: Arc<Context>,
    info: DeviceInfo,
}

impl CudaDevice {
    /// The CUDA device ordinal.
    pub fn ordinal(&self) -> usize {
        self.info.ordinal
    }
}

/// A device allocation (`cuMemAlloc`, 256-byte aligned, zero-filled), or memory shared with
/// host threads (`cuMemHostAlloc`, `cuMemAllocManaged`); freed on drop.
pub struct CudaMemory {
    ctx: Arc<Context>,
    ptr: sys::CUdeviceptr,
    bytes: usize,
    /// Pinned host memory (`cuMemHostAlloc`), freed with `cuMemFreeHost`.
    pinned_host: bool,
}

impl Drop for CudaMemory {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            if self.pinned_host {
                // SAFETY: allocated by cuMemHostAlloc in this context, whose device address is
                // its host address (unified addressing), and freed only here. Kernels still
                // using it are excluded by the launch contract (buffers outlive the sync).
                let _ = unsafe { result::free_host(self.ptr as *mut c_void) };
            } else {
                // SAFETY: allocated by cuMemAlloc or cuMemAllocManaged in this context and
                // freed only here; as above for kernels still using it.
                let _ = unsafe { result::memory_free(self.ptr) };
            }
        }
    }
}

/// A loaded module (shared with its kernels and with streams that launched them).
pub struct CudaModule(Arc<ModuleInner>);

struct ModuleInner {
    ctx: Arc<Context>,
    raw: sys::CUmodule,
    name: String,
    /// Device address of `xb_fault_record_slot`, if the module defines it.
    fault_slot: Option<sys::CUdeviceptr>,
    /// The dynamic shared memory limit of each driver function looked up so far, by handle:
    /// the driver gives every lookup of a name the same handle, and the limit is the
    /// handle's, so every [`CudaFunction`] of it must share one.
    shared_limits: Mutex<Vec<(usize, SharedLimit)>>,
}

/// The dynamic shared memory limit set on a driver function so far (0: the default 48 KiB).
type SharedLimit = Arc<Mutex<u32>>;

// SAFETY: module handles are context-bound, not thread-bound (see `Context`).
unsafe impl Send for ModuleInner {}
// SAFETY: as above.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: loaded in this context; the last user (function, stream record) is gone.
            let _ = unsafe { result::module::unload(self.raw) };
        }
    }
}

/// A kernel of a loaded module.
#[derive(Clone)]
pub struct CudaFunction {
    /// Keeps the module loaded: `raw` is invalid once it is unloaded.
    _module: Arc<ModuleInner>,
    raw: sys::CUfunction,
    /// The limit set on the driver function so far, shared with every `CudaFunction` of it.
    shared_limit: SharedLimit,
}

// SAFETY: function handles are context-bound, not thread-bound (see `Context`).
unsafe impl Send for CudaFunction {}
// SAFETY: as above; the only mutable state is behind a mutex.
unsafe impl Sync for CudaFunction {}

/// A stream (`cuStreamCreate`, synchronizing with the legacy default stream, so the
/// blocking copies of [`Backend::write`]/[`Backend::read`] are ordered with its launches).
pub struct CudaStream {
    ctx: Arc<Context>,
    raw: sys::CUstream,
}

// SAFETY: stream handles are context-bound, not thread-bound (see `Context`).
unsafe impl Send for CudaStream {}
// SAFETY: as above.
unsafe impl Sync for CudaStream {}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: created in this context and destroyed once; queued work still completes.
            let _ = unsafe { result::stream::destroy(self.raw) };
        }
    }
}

/// A recorded event (timing enabled); destroyed on drop.
pub struct CudaEvent {
    ctx: Arc<Context>,
    raw: sys::CUevent,
}

// SAFETY: event handles are context-bound, not thread-bound (see `Context`).
unsafe impl Send for CudaEvent {}
// SAFETY: as above.
unsafe impl Sync for CudaEvent {}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        if self.ctx.bind().is_ok() {
            // SAFETY: created in this context, destroyed once; the driver defers the release
            // until the event completes.
            let _ = unsafe { result::event::destroy(self.raw) };
        }
    }
}

impl CudaEvent {
    fn record(ctx: &Arc<Context>, stream: sys::CUstream) -> Result<CudaEvent> {
        let raw = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).call("cuEventCreate")?;
        let event = CudaEvent { ctx: ctx.clone(), raw };
        // SAFETY: both handles are live and belong to the current context.
        unsafe { result::event::record(event.raw, stream) }.call("cuEventRecord")?;
        Ok(event)
    }
}

fn attribute(device: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<u32> {
    // SAFETY: `device` comes from cuDeviceGet.
    let value = unsafe { result::device::get_attribute(device, attr) }.call("cuDeviceGetAttribute")?;
    Ok(u32::try_from(value).unwrap_or(0))
}

fn device_name(device: sys::CUdevice, ordinal: usize) -> Result<String> {
    let mut buf = [0 as c_char; 256];
    // SAFETY: the driver writes at most `len` bytes, NUL included, into `buf`.
    unsafe { sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, device) }.result().call("cuDeviceGetName")?;
    // SAFETY: `buf` is plain bytes; reinterpreting c_char as u8 is sound.
    let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), buf.len()) };
    Ok(match CStr::from_bytes_until_nul(bytes) {
        Ok(name) if !name.is_empty() => name.to_string_lossy().into_owned(),
        _ => format!("NVIDIA GPU {ordinal}"),
    })
}

fn describe(ordinal: usize, device: sys::CUdevice) -> Result<DeviceInfo> {
    use sys::CUdevice_attribute as A;
    let major = attribute(device, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(device, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let multiprocessors = attribute(device, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let cooperative = attribute(device, A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? != 0;
    let mut info = DeviceInfo::new(BACKEND, ordinal, device_name(device, ordinal)?, format!("sm_{major}{minor}"));
    info.wave_size = attribute(device, A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?;
    info.multiprocessors = multiprocessors;
    // Conservative: any kernel that can run at all keeps one block per SM resident, so this
    // many blocks always fit. The real bound depends on the kernel's occupancy; a larger
    // cooperative grid that cannot be co-resident is refused by the driver
    // (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) rather than deadlocking.
    info.max_cooperative_blocks = if cooperative { multiprocessors } else { 0 };
    info.max_threads_per_block = attribute(device, A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
    info.max_dynamic_shared_bytes = attribute(device, A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
    Ok(info)
}

fn check_range(memory: &CudaMemory, offset: usize, len: usize) -> Result<sys::CUdeviceptr> {
    match offset.checked_add(len) {
        Some(end) if end <= memory.bytes => Ok(memory.ptr + offset as u64),
        _ => Err(Error::InvalidArgument {
            call: "copy",
            reason: format!("bytes {offset}..+{len} of a {}-byte allocation", memory.bytes),
        }),
    }
}

impl Backend for Cuda {
    const KIND: BackendKind = BACKEND;
    type Device = CudaDevice;
    type Memory = CudaMemory;
    type Module = CudaModule;
    type Function = CudaFunction;
    type Stream = CudaStream;
    type Event = CudaEvent;

    fn device_count() -> Result<usize> {
        driver::device_count()
    }

    fn open(ordinal: usize) -> Result<CudaDevice> {
        let found = driver::device_count()?;
        if ordinal >= found {
            let hint = if found == 0 {
                "the NVIDIA driver sees no GPU (check `nvidia-smi` and CUDA_VISIBLE_DEVICES)".to_owned()
            } else {
                format!("valid ordinals are 0..{found} (CUDA_VISIBLE_DEVICES may hide devices)")
            };
            return Err(Error::NoDevice { backend: BACKEND, ordinal, found, hint });
        }
        let (ctx, device) = Context::retain(ordinal)?;
        let ctx = Arc::new(ctx);
        let info = describe(ordinal, device)?;
        Ok(CudaDevice { ctx, info })
    }

    fn info(device: &CudaDevice) -> DeviceInfo {
        device.info.clone()
    }

    fn alloc(device: &CudaDevice, bytes: usize) -> Result<CudaMemory> {
        device.ctx.bind()?;
        let size = bytes.max(1);
        // SAFETY: plain allocation in the current context; zero-filled below before any use.
        let ptr = match unsafe { result::malloc_sync(size) } {
            Ok(ptr) => ptr,
            Err(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => {
                return Err(Error::OutOfMemory { backend: BACKEND, requested: bytes })
            }
            Err(e) => return Err(driver::driver_error("cuMemAlloc", e)),
        };
        let memory = CudaMemory { ctx: device.ctx.clone(), ptr, bytes: size, pinned_host: false };
        // SAFETY: `ptr` addresses `size` bytes just allocated in this context.
        unsafe { result::memset_d8_sync(ptr, 0, size) }.call("cuMemsetD8")?;
        Ok(memory)
    }

    /// Pinned host memory where the link has native atomics
    /// (`CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED`: NVLink-C2C), else managed memory
    /// where the device and the CPU may access it at once
    /// (`CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS`: Linux, sm_60 and later, where atomics
    /// of either side stay atomic for the other by migrating the page). Both have one
    /// address for host and every device. With peers, every device must have the property:
    /// pinned memory is mapped into every context (`CU_MEMHOSTALLOC_PORTABLE`), and managed
    /// memory attached globally is migrated to whichever device touches it.
    fn alloc_system(device: &CudaDevice, peers: &[&CudaDevice], bytes: usize) -> Result<CudaMemory> {
        use sys::CUdevice_attribute as A;
        device.ctx.bind()?;
        let size = bytes.max(1);
        // The devices (ordinal, name) that lack `property`.
        let lacking = |property| -> Result<Vec<String>> {
            let mut lacking = Vec::new();
            for d in std::iter::once(device).chain(peers.iter().copied()) {
                if attribute(d.ctx.device(), property)? == 0 {
                    lacking.push(format!("device {} ({}, {})", d.info.ordinal, d.info.name, d.info.arch));
                }
            }
            Ok(lacking)
        };
        let without_atomics = lacking(A::CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED)?;
        let without_managed = lacking(A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)?;
        let (native_atomics, concurrent_managed) = (without_atomics.is_empty(), without_managed.is_empty());
        let out_of_memory = |e: DriverError, call: &'static str| match e {
            DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY) => {
                Error::OutOfMemory { backend: BACKEND, requested: bytes }
            }
            e => driver::driver_error(call, e),
        };
        let (ptr, pinned_host) = if native_atomics {
            let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
            // SAFETY: plain allocation in the current context.
            let host = unsafe { result::malloc_host(size, flags) }.map_err(|e| out_of_memory(e, "cuMemHostAlloc"))?;
            let mut ptr: sys::CUdeviceptr = 0;
            // SAFETY: `host` was just allocated mapped (DEVICEMAP) in this context.
            match unsafe { sys::cuMemHostGetDevicePointer_v2(&mut ptr, host, 0) }.result() {
                Ok(()) if ptr == host as sys::CUdeviceptr => (ptr, true),
                outcome => {
                    // SAFETY: allocated just above, used by nothing else.
                    let _ = unsafe { result::free_host(host) };
                    return Err(match outcome {
                        Err(e) => driver::driver_error("cuMemHostGetDevicePointer", e),
                        Ok(()) => Error::Unsupported {
                            backend: BACKEND,
                            what: "memory shared with host threads",
                            reason: "the device maps pinned host memory at another address than the host's \
                                     (no unified addressing)"
                                .into(),
                        },
                    });
                }
            }
        } else if concurrent_managed {
            // SAFETY: plain allocation in the current context.
            let ptr = unsafe { result::malloc_managed(size, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL) }
                .map_err(|e| out_of_memory(e, "cuMemAllocManaged"))?;
            (ptr, false)
        } else {
            return Err(Error::Unsupported {
                backend: BACKEND,
                what: "memory shared with host threads",
                reason: if peers.is_empty() {
                    format!(
                        "{} ({}) reports neither CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED nor \
                         CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS ({MANAGED_HINT})",
                        device.info.name, device.info.arch
                    )
                } else {
                    format!(
                        "CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is missing on {}, \
                         CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS on {}; every device needs the same one of \
                         the two ({MANAGED_HINT})",
                        without_atomics.join(", "),
                        without_managed.join(", ")
                    )
                },
            });
        };
        let memory = CudaMemory { ctx: device.ctx.clone(), ptr, bytes: size, pinned_host };
        // SAFETY: `ptr` addresses `size` bytes just allocated, which the host can write.
        unsafe { std::ptr::write_bytes(ptr as *mut u8, 0, size) };
        Ok(memory)
    }

    fn enable_peer_access(device: &CudaDevice, peer: &CudaDevice) -> Result<()> {
        peer.ctx.reach(&device.ctx)
    }

    fn address(memory: &CudaMemory) -> u64 {
        memory.ptr
    }

    fn write(device: &CudaDevice, memory: &mut CudaMemory, offset: usize, src: &[u8]) -> Result<()> {
        let dst = check_range(memory, offset, src.len())?;
        device.ctx.bind()?;
        // SAFETY: the range lies inside the allocation (checked); the copy is synchronous.
        unsafe { result::memcpy_htod_sync(dst, src) }.call("cuMemcpyHtoD")
    }

    fn read(device: &CudaDevice, memory: &CudaMemory, offset: usize, dst: &mut [u8]) -> Result<()> {
        let src = check_range(memory, offset, dst.len())?;
        device.ctx.bind()?;
        // SAFETY: the range lies inside the allocation (checked); the copy is synchronous.
        unsafe { result::memcpy_dtoh_sync(dst, src) }.call("cuMemcpyDtoH")
    }

    fn copy_device(
        device: &CudaDevice,
        stream: &CudaStream,
        dst: &mut CudaMemory,
        dst_offset: usize,
        src: &CudaMemory,
        src_offset: usize,
        bytes: usize,
    ) -> Result<()> {
        let to = check_range(dst, dst_offset, bytes)?;
        let from = check_range(src, src_offset, bytes)?;
        device.ctx.bind()?;
        // SAFETY: both ranges lie inside live allocations (checked) and the stream is a live
        // handle of the current context. The allocations outlive the copy: cuMemFree waits
        // for work still using the memory.
        unsafe { result::memcpy_dtod_async(to, from, bytes, stream.raw) }.call("cuMemcpyDtoDAsync")
    }

    fn load_module(device: &CudaDevice, name: &str, image: &'static [u8]) -> Result<CudaModule> {
        device.ctx.bind()?;
        let copy = aligned_copy(image);
        // SAFETY: `copy` is a NUL-terminated, 8-aligned copy of the image; the driver
        // validates the contents and copies what it keeps.
        let raw = unsafe { result::module::load_data(copy.as_ptr().cast::<c_void>()) }.call("cuModuleLoadData")?;
        // SAFETY: `raw` was just loaded in the current context.
        if let Err(e) = unsafe { driver::load_every_kernel(raw) } {
            // SAFETY: loaded above, used by nothing else yet.
            let _ = unsafe { result::module::unload(raw) };
            return Err(e);
        }
        let mut module = ModuleInner {
            ctx: device.ctx.clone(),
            raw,
            name: name.to_owned(),
            fault_slot: None,
            shared_limits: Mutex::new(Vec::new()),
        };
        // SAFETY: `raw` was just loaded; the name is a valid C string.
        match unsafe { result::module::get_global(raw, FAULT_RECORD_CSYMBOL.to_owned()) } {
            Ok((ptr, bytes)) if bytes >= std::mem::size_of::<FaultRecord>() => module.fault_slot = Some(ptr),
            Ok((_, bytes)) => {
                return Err(Error::BadBundle(format!(
                    "module `{name}`: {FAULT_RECORD_SYMBOL} is {bytes} bytes, xb_fault_record is {} (abi.h and barrier-api disagree)",
                    std::mem::size_of::<FaultRecord>()
                )))
            }
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND)) => {}
            Err(e) => return Err(driver::driver_error("cuModuleGetGlobal", e)),
        }
        Ok(CudaModule(Arc::new(module)))
    }

    fn function(device: &CudaDevice, module: &CudaModule, name: &str) -> Result<CudaFunction> {
        let not_found = || Error::KernelNotFound { module: module.0.name.clone(), kernel: name.to_owned() };
        let c_name = std::ffi::CString::new(name).map_err(|_| not_found())?;
        device.ctx.bind()?;
        // SAFETY: the module is loaded (we hold it); the name is a valid C string.
        let raw = match unsafe { result::module::get_function(module.0.raw, c_name) } {
            Ok(raw) => raw,
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND)) => return Err(not_found()),
            Err(e) => return Err(driver::driver_error("cuModuleGetFunction", e)),
        };
        let shared_limit = {
            let mut limits = module.0.shared_limits.lock().unwrap_or_else(PoisonError::into_inner);
            match limits.iter().find(|(handle, _)| *handle == raw as usize) {
                Some((_, limit)) => limit.clone(),
                None => {
                    let limit = SharedLimit::default();
                    limits.push((raw as usize, limit.clone()));
                    limit
                }
            }
        };
        Ok(CudaFunction { _module: module.0.clone(), raw, shared_limit })
    }

    fn create_stream(device: &CudaDevice) -> Result<CudaStream> {
        device.ctx.bind()?;
        let raw = result::stream::create(result::stream::StreamKind::Default).call("cuStreamCreate")?;
        Ok(CudaStream { ctx: device.ctx.clone(), raw })
    }

    unsafe fn launch(
        device: &CudaDevice,
        stream: &CudaStream,
        function: &CudaFunction,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<()> {
        device.ctx.bind()?;
        let shared = config.shared_bytes;
        // The 48 KiB that needs no opt-in counts static shared memory too, so any dynamic
        // size is opted in (once per function and size): 48 KiB of dynamic shared memory on
        // top of a kernel's own __shared__ variables fails to launch otherwise. The limit
        // only grows, under the lock: a launch asking for less must not lower it below what
        // another launch of the same driver function (another `Kernel` of the name, or
        // another thread) opted into and is about to use.
        if shared > 0 {
            let mut limit = function.shared_limit.lock().unwrap_or_else(PoisonError::into_inner);
            if *limit < shared {
                // SAFETY: the function belongs to a loaded module of the current context.
                unsafe {
                    result::function::set_function_attribute(
                        function.raw,
                        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        i32::try_from(shared).unwrap_or(i32::MAX),
                    )
                }
                .call("cuFuncSetAttribute")?;
                *limit = shared;
            }
        }
        let mut slots = KernelParams::new(args);
        let mut params = slots.pointers();
        let grid = (config.grid.x, config.grid.y, config.grid.z);
        let block = (config.block.x, config.block.y, config.block.z);
        // SAFETY: `params` points at one live slot per argument, each holding the argument's
        // C representation; the driver copies them before returning. The caller guarantees
        // that they match the kernel's parameters and that pointed-to memory stays
        // allocated until the stream is synchronized. The function and stream are live
        // handles of the current context.
        unsafe {
            if config.cooperative {
                result::launch_cooperative_kernel(function.raw, grid, block, shared as c_uint, stream.raw, &mut params)
                    .call("cuLaunchCooperativeKernel")
            } else {
                result::launch_kernel(function.raw, grid, block, shared as c_uint, stream.raw, &mut params)
                    .call("cuLaunchKernel")
            }
        }
    }

    fn query(device: &CudaDevice, stream: &CudaStream) -> Result<bool> {
        device.ctx.bind()?;
        // SAFETY: a live stream of the current context.
        match unsafe { sys::cuStreamQuery(stream.raw) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(driver::driver_error("cuStreamQuery", DriverError(code))),
        }
    }

    fn synchronize(device: &CudaDevice, stream: &CudaStream) -> Result<()> {
        device.ctx.bind()?;
        // SAFETY: a live stream of the current context.
        unsafe { result::stream::synchronize(stream.raw) }.call("cuStreamSynchronize")
    }

    /// Reads the module's `xb_fault_record_slot` and clears it.
    ///
    /// The device side claims the record by setting `op` and publishes `kind` last; `kind` is
    /// also the flag that makes checked waits of a faulted launch give up. So any nonzero
    /// record is cleared, or the next launch of the module would start out aborted.
    fn take_fault(device: &CudaDevice, module: &CudaModule) -> Result<Option<FaultRecord>> {
        let Some(slot) = module.0.fault_slot else { return Ok(None) };
        device.ctx.bind()?;
        let mut raw = [0u8; FaultRecord::SIZE];
        // SAFETY: `slot` addresses the module's global of at least FaultRecord::SIZE bytes
        // (checked at load); the module is alive (we hold it) and its context current.
        unsafe { result::memcpy_dtoh_sync(&mut raw, slot) }.call("cuMemcpyDtoH")?;
        let record = decode_fault_record(&raw);
        if record == FaultRecord::default() {
            return Ok(None);
        }
        let zero = [0u8; FaultRecord::SIZE];
        // SAFETY: as above, writing the same range.
        unsafe { result::memcpy_htod_sync(slot, &zero) }.call("cuMemcpyHtoD")?;
        Ok((record.kind != 0).then_some(record))
    }

    fn record(device: &CudaDevice, stream: &CudaStream) -> Result<CudaEvent> {
        device.ctx.bind()?;
        CudaEvent::record(&device.ctx, stream.raw)
    }

    fn elapsed(start: &CudaEvent, end: &CudaEvent) -> Result<Duration> {
        start.ctx.bind()?;
        // SAFETY: a live event of the current context.
        unsafe { result::event::synchronize(end.raw) }.call("cuEventSynchronize")?;
        // SAFETY: both events are live, recorded, and `end` has completed.
        let ms = unsafe { driver::elapsed_ms(start.raw, end.raw) }?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }

    /// `cuStreamWaitEvent`: the driver orders the stream's later work after the event, which
    /// may belong to another device's context.
    fn stream_wait_event(device: &CudaDevice, stream: &CudaStream, event: &CudaEvent) -> Result<()> {
        device.ctx.bind()?;
        // SAFETY: both handles are live (their owners hold their contexts); the driver takes
        // an event of any context.
        unsafe { result::stream::wait_event(stream.raw, event.raw, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
            .call("cuStreamWaitEvent")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xbarrier_api::Device;

    /// What `device_count` says on this machine is one of the documented outcomes, each
    /// with its documented shape: a count, a missing library with the names tried and the
    /// fix, a driver too old for the entry points used, or `cuInit`'s own error.
    #[test]
    fn device_count_is_a_count_or_says_why_not() {
        match Cuda::device_count() {
            Ok(n) => eprintln!("note: the CUDA driver sees {n} device(s)"),
            Err(Error::LibraryNotFound { backend, tried, hint }) => {
                assert_eq!(backend, BackendKind::Cuda);
                assert!(tried.contains("libcuda.so.1"), "{tried}");
                assert!(hint.starts_with(driver::LIBRARY_HINT), "{hint}");
            }
            Err(Error::Unsupported { backend: BackendKind::Cuda, what, reason }) => {
                assert_eq!(what, "the installed NVIDIA driver");
                assert!(reason.contains("libcuda lacks") && reason.contains("update the NVIDIA driver"), "{reason}");
            }
            Err(Error::Driver { backend: BackendKind::Cuda, call, name, .. }) => {
                assert_eq!(call, "cuInit", "only cuInit may fail before devices are counted: {name}");
            }
            Err(e) => panic!("undocumented error from device_count: {e}"),
        }
    }

    /// Opening a device fails exactly as counting them did when the driver is unusable, and
    /// with `NoDevice` (saying how to fix it) past the last device.
    #[test]
    fn open_fails_like_device_count_or_with_no_device() {
        match Cuda::device_count() {
            Ok(found) => {
                match Device::<Cuda>::open(0) {
                    Ok(device) => {
                        assert!(found > 0);
                        assert_eq!(device.info().backend, BackendKind::Cuda);
                        assert!(device.info().arch.starts_with("sm_"), "{:?}", device.info());
                    }
                    Err(e @ Error::NoDevice { .. }) => {
                        assert_eq!(found, 0);
                        assert!(e.to_string().contains("nvidia-smi"), "{e}");
                    }
                    Err(e) => panic!("the driver counted {found} device(s), yet open(0) failed: {e}"),
                }
                match Cuda::open(usize::MAX) {
                    Err(Error::NoDevice { ordinal, found: reported, .. }) => {
                        assert_eq!((ordinal, reported), (usize::MAX, found))
                    }
                    Err(e) => panic!("expected NoDevice past the last device, got {e}"),
                    Ok(_) => panic!("opened device usize::MAX"),
                }
            }
            Err(counting) => {
                for ordinal in [0, usize::MAX] {
                    match Cuda::open(ordinal) {
                        Err(opening) => assert_eq!(opening.to_string(), counting.to_string()),
                        Ok(_) => panic!("device_count failed ({counting}), yet open({ordinal}) succeeded"),
                    }
                }
                if let Err(e @ Error::LibraryNotFound { .. }) = Device::<Cuda>::open(0) {
                    assert!(e.to_string().contains("install the NVIDIA driver (libcuda.so.1)"), "{e}");
                }
            }
        }
    }

    #[test]
    fn fault_record_is_the_abi_size() {
        assert_eq!(std::mem::size_of::<FaultRecord>(), 88);
        assert_eq!(FAULT_RECORD_CSYMBOL.to_str(), Ok(FAULT_RECORD_SYMBOL));
    }
}
