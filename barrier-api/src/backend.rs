//! For backend implementations: the [`Backend`] trait, what a backend says about its
//! devices, and the helpers the GPU backends share (argument slots for the launch call,
//! aligned image copies, fault-record decoding, the bundle magic).
//!
//! Programs need only [`Backend`], [`BackendKind`] and [`DeviceInfo`], which the crate root
//! re-exports. The generic wrappers ([`Device`](crate::Device), [`Stream`](crate::Stream),
//! ...) check arguments, time launches on backends that cannot abort them and collect
//! barrier faults, so a backend only translates calls to its runtime.
#![allow(unsafe_code)] // declares the unsafe launch contract; implementations live elsewhere

use std::fmt;
use std::time::Duration;

use crate::{FaultRecord, KernelArg, LaunchConfig, Result};

pub use crate::bundle::{aligned_copy, BUNDLE_MAGIC};
pub use crate::fault::decode_fault_record;
pub use crate::params::KernelParams;

/// Which implementation runs the kernels.
///
/// ```
/// use xbarrier_api::BackendKind;
/// assert_eq!(BackendKind::from_name("hip"), Some(BackendKind::Hip));
/// assert_eq!(BackendKind::from_code(BackendKind::Cuda.code()), Some(BackendKind::Cuda));
/// assert_eq!(BackendKind::ALL.map(BackendKind::name), ["host", "cuda", "hip"]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendKind {
    /// Kernels compiled by the host C++ compiler, run on CPU threads.
    Host,
    /// NVIDIA GPUs through the CUDA driver API.
    Cuda,
    /// AMD GPUs through the HIP runtime.
    Hip,
}

impl BackendKind {
    /// Every kind, in bundle order.
    pub const ALL: [BackendKind; 3] = [BackendKind::Host, BackendKind::Cuda, BackendKind::Hip];

    /// The lower-case name used in features, bundles and messages.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Host => "host",
            BackendKind::Cuda => "cuda",
            BackendKind::Hip => "hip",
        }
    }

    /// The kind with that [`name`](Self::name), if any.
    pub fn from_name(name: &str) -> Option<BackendKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The number that identifies this kind inside a [`KernelBundle`](crate::KernelBundle).
    pub fn code(self) -> u32 {
        match self {
            BackendKind::Host => 1,
            BackendKind::Cuda => 2,
            BackendKind::Hip => 3,
        }
    }

    /// The kind with that bundle code, if any.
    pub fn from_code(code: u32) -> Option<BackendKind> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a device is, as far as barrier code cares.
///
/// New fields may be added (`#[non_exhaustive]`): a backend builds one with
/// [`DeviceInfo::new`] and sets the limits it knows.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceInfo {
    /// Which backend drives it.
    pub backend: BackendKind,
    /// Ordinal within the backend.
    pub ordinal: usize,
    /// Marketing or host name.
    pub name: String,
    /// Target architecture: `sm_90`, `gfx942`, `host-x86_64`.
    pub arch: String,
    /// Threads that execute in lockstep (32 on NVIDIA, 32 or 64 on AMD, 1 on the host).
    pub wave_size: u32,
    /// Multiprocessors / compute units / CPU cores.
    pub multiprocessors: u32,
    /// The most blocks a cooperative launch may have (all of them must be resident).
    pub max_cooperative_blocks: u32,
    /// The most threads one block may have.
    pub max_threads_per_block: u32,
    /// The most dynamic shared memory one block may ask for, in bytes.
    pub max_dynamic_shared_bytes: u32,
}

impl DeviceInfo {
    /// Device `ordinal` of `backend`, called `name`, of architecture `arch`, with limits that
    /// admit no launch (no threads, no multiprocessors, no shared memory, no cooperative
    /// blocks) and a wave of 1 thread, until the backend sets the fields it knows.
    ///
    /// ```
    /// use xbarrier_api::{BackendKind, DeviceInfo, LaunchConfig};
    /// let mut info = DeviceInfo::new(BackendKind::Cuda, 0, "NVIDIA H200", "sm_90");
    /// assert!(LaunchConfig::new(1, 32).validate(&info).is_err(), "no limits set yet");
    /// info.max_threads_per_block = 1024;
    /// assert!(LaunchConfig::new(1, 32).validate(&info).is_ok());
    /// ```
    pub fn new(backend: BackendKind, ordinal: usize, name: impl Into<String>, arch: impl Into<String>) -> DeviceInfo {
        DeviceInfo {
            backend,
            ordinal,
            name: name.into(),
            arch: arch.into(),
            wave_size: 1,
            multiprocessors: 0,
            max_cooperative_blocks: 0,
            max_threads_per_block: 0,
            max_dynamic_shared_bytes: 0,
        }
    }
}

/// A backend: a family of devices and the runtime that drives them.
///
/// The associated types are the backend's native handles; user code reaches them through
/// the generic wrappers ([`Device`](crate::Device), [`Buffer`](crate::Buffer), ...). Those
/// check arguments and launch configurations, bracket timed launches with events (unless
/// [`ENFORCES_TIMEOUTS`](Self::ENFORCES_TIMEOUTS)) and read each launched module's fault
/// record ([`take_fault`](Self::take_fault)) at [`Stream::synchronize`](crate::Stream::synchronize),
/// so that a backend only translates. The methods here are safe to call directly, so each
/// still refuses a byte range outside an allocation ([`Error::InvalidArgument`](crate::Error::InvalidArgument))
/// rather than touching memory it does not own.
pub trait Backend: Sized + Send + Sync + 'static {
    /// Which backend this is.
    const KIND: BackendKind;
    /// Whether [`launch`](Self::launch) enforces [`LaunchConfig::timeout`] itself: it aborts
    /// an overrunning kernel and returns [`Error::LaunchTimeout`](crate::Error::LaunchTimeout)
    /// (the host backend, whose launches run to completion before returning). When `false`
    /// (the GPU backends: their kernels cannot be aborted), [`Stream`](crate::Stream) records
    /// an event before and after each timed launch and reports an overrun at the next
    /// synchronize, after the kernel ended.
    const ENFORCES_TIMEOUTS: bool = false;
    /// An open device (context).
    type Device: Send + Sync;
    /// One device allocation.
    type Memory: Send + Sync;
    /// A loaded kernel image.
    type Module: Send + Sync;
    /// A kernel of a loaded module.
    type Function: Send + Sync + Clone;
    /// An in-order queue of work.
    type Stream: Send + Sync;
    /// A point in a stream, for timing.
    type Event: Send + Sync;

    /// How many devices this backend sees. `Err(LibraryNotFound)` when its runtime is absent.
    fn device_count() -> Result<usize>;
    /// Opens device `ordinal`. `Err(NoDevice)` when there is none.
    fn open(ordinal: usize) -> Result<Self::Device>;
    /// Describes an open device.
    fn info(device: &Self::Device) -> DeviceInfo;

    /// Allocates `bytes` (at least 256-byte aligned, zero-filled).
    fn alloc(device: &Self::Device, bytes: usize) -> Result<Self::Memory>;
    /// Allocates `bytes` (at least 256-byte aligned, zero-filled) that the kernels of
    /// `device` and of every device of `peers`, and the host's threads, may use at the same
    /// time, with atomics of system scope that all of them agree on: the memory of a
    /// `barrier<thread_scope_system>` that host threads share with kernels, or that kernels
    /// of devices without a peer path between them share, and of the data handed over
    /// through it. Everyone reaches it at [`address`](Self::address).
    ///
    /// Errors: [`Error::Unsupported`](crate::Error::Unsupported) naming the device property
    /// that is missing, and where (the backends that have none keep this default).
    fn alloc_system(device: &Self::Device, peers: &[&Self::Device], bytes: usize) -> Result<Self::Memory> {
        let _ = (device, peers, bytes);
        Err(crate::Error::Unsupported {
            backend: Self::KIND,
            what: "memory shared with host threads",
            reason: "this backend cannot allocate it".into(),
        })
    }
    /// Lets kernels on `peer` use memory that [`alloc`](Self::alloc) made on `device`, at
    /// the address [`address`](Self::address) gives, with atomics of system scope that both
    /// devices' kernels agree on: the memory of a barrier whose participants run on several
    /// devices. Enabling it again, or for the device itself, succeeds and does nothing.
    ///
    /// Errors: [`Error::Unsupported`](crate::Error::Unsupported) naming what is missing (no
    /// path between the two devices, or one without native atomics; the backends that have
    /// none keep this default).
    fn enable_peer_access(device: &Self::Device, peer: &Self::Device) -> Result<()> {
        let _ = (device, peer);
        Err(crate::Error::Unsupported {
            backend: Self::KIND,
            what: "memory shared between devices",
            reason: "this backend cannot share memory between devices".into(),
        })
    }
    /// The address kernels see for `memory`.
    fn address(memory: &Self::Memory) -> u64;
    /// Copies `src` into `memory` at byte `offset` (bounds already checked).
    fn write(device: &Self::Device, memory: &mut Self::Memory, offset: usize, src: &[u8]) -> Result<()>;
    /// Copies from `memory` at byte `offset` into `dst` (bounds already checked).
    fn read(device: &Self::Device, memory: &Self::Memory, offset: usize, dst: &mut [u8]) -> Result<()>;
    /// Enqueues a copy of `bytes` bytes from `src` at `src_offset` to `dst` at `dst_offset`
    /// on `stream`, ordered after the work enqueued before it (it may still run when this
    /// returns). Implementations check both ranges and answer `InvalidArgument`.
    #[allow(clippy::too_many_arguments)] // the two (memory, offset) pairs read best spelled out
    fn copy_device(
        device: &Self::Device,
        stream: &Self::Stream,
        dst: &mut Self::Memory,
        dst_offset: usize,
        src: &Self::Memory,
        src_offset: usize,
        bytes: usize,
    ) -> Result<()>;

    /// Loads this backend's image of a module.
    fn load_module(device: &Self::Device, name: &str, image: &'static [u8]) -> Result<Self::Module>;
    /// Looks up kernel `name` in `module`.
    fn function(device: &Self::Device, module: &Self::Module, name: &str) -> Result<Self::Function>;

    /// Creates a stream.
    fn create_stream(device: &Self::Device) -> Result<Self::Stream>;
    /// Enqueues a launch of `function` on `stream`. A backend that reports faults or
    /// timeouts by itself ([`ENFORCES_TIMEOUTS`](Self::ENFORCES_TIMEOUTS)) returns them here.
    ///
    /// # Safety
    /// - `args` must match the kernel's C parameter list exactly (count, order, types).
    /// - Every pointer argument must address memory of this device that stays allocated
    ///   until the stream has been synchronized.
    /// - `config` has been validated against [`Backend::info`] by the caller.
    unsafe fn launch(
        device: &Self::Device,
        stream: &Self::Stream,
        function: &Self::Function,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<()>;
    /// Whether the work enqueued on `stream` has finished, without waiting: `Ok(false)` while
    /// it runs, the runtime's error where it failed (a GPU context ended by a trap or a memory
    /// fault). A host thread waiting on a barrier that kernels share polls it, so that a
    /// failed kernel ends the wait instead of leaving it forever.
    fn query(device: &Self::Device, stream: &Self::Stream) -> Result<bool>;
    /// Waits for everything enqueued on `stream`; errors are the runtime's own (a kernel's
    /// barrier fault is read afterwards with [`take_fault`](Self::take_fault)).
    fn synchronize(device: &Self::Device, stream: &Self::Stream) -> Result<()>;
    /// Reads and clears the fault record that a launch from `module` left in device memory,
    /// once the stream that ran it has drained: `Ok(Some(..))` when a kernel recorded a
    /// fault (a nonzero `kind`). Backends that return faults from [`launch`](Self::launch)
    /// keep the default, which reports none.
    fn take_fault(_device: &Self::Device, _module: &Self::Module) -> Result<Option<FaultRecord>> {
        Ok(None)
    }
    /// Records an event at the current end of `stream`.
    fn record(device: &Self::Device, stream: &Self::Stream) -> Result<Self::Event>;
    /// Time between two recorded (and completed) events.
    fn elapsed(start: &Self::Event, end: &Self::Event) -> Result<Duration>;
    /// Makes the work enqueued on `stream` (of `device`) after this call wait until `event`
    /// has completed, without blocking the host; the event may have been recorded on a
    /// stream of another device.
    ///
    /// Errors: [`Error::Unsupported`](crate::Error::Unsupported) where the runtime cannot
    /// (the backends that cannot keep this default).
    fn stream_wait_event(device: &Self::Device, stream: &Self::Stream, event: &Self::Event) -> Result<()> {
        let _ = (device, stream, event);
        Err(crate::Error::Unsupported {
            backend: Self::KIND,
            what: "a stream waiting for an event",
            reason: "this backend cannot order one stream's work after another's".into(),
        })
    }
}
