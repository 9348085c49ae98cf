//! The generic wrappers user code works with: devices, typed buffers, modules, kernels,
//! streams and events. They check arguments; backends only translate.
#![allow(unsafe_code)] // DeviceCopy is an unsafe marker trait; launch forwards an unsafe contract

use std::marker::PhantomData;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crate::pending::{note_launch, PendingLaunch};
use crate::tracking::{InFlight, StreamShared};
use crate::{Backend, DeviceInfo, Error, KernelArg, KernelBundle, LaunchConfig, Result, Variant};

/// Plain data that may be copied to and from a device bit for bit.
///
/// # Safety
/// The type must have no padding, no pointers to host memory and no invalid bit patterns.
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

// SAFETY: primitive numbers have no padding and every bit pattern is valid.
unsafe impl DeviceCopy for u8 {}
// SAFETY: as above.
unsafe impl DeviceCopy for i8 {}
// SAFETY: as above.
unsafe impl DeviceCopy for u16 {}
// SAFETY: as above.
unsafe impl DeviceCopy for i16 {}
// SAFETY: as above.
unsafe impl DeviceCopy for u32 {}
// SAFETY: as above.
unsafe impl DeviceCopy for i32 {}
// SAFETY: as above.
unsafe impl DeviceCopy for u64 {}
// SAFETY: as above.
unsafe impl DeviceCopy for i64 {}
// SAFETY: as above.
unsafe impl DeviceCopy for f32 {}
// SAFETY: as above.
unsafe impl DeviceCopy for f64 {}

pub(crate) fn as_bytes<T: DeviceCopy>(data: &[T]) -> &[u8] {
    // SAFETY: T is DeviceCopy (no padding), so its memory is initialized bytes.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

pub(crate) fn as_bytes_mut<T: DeviceCopy>(data: &mut [T]) -> &mut [u8] {
    // SAFETY: T is DeviceCopy (every bit pattern valid), so any bytes written are a valid T.
    unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// An open device of backend `B`. Cheap to clone (the handle is shared).
///
/// The doc examples here run on the host backend ([`xbarrier::Host`](https://docs.rs/xbarrier))
/// with the repository's conformance kernels; on a GPU only the backend type changes.
///
/// ```
/// # fn main() -> xbarrier_api::Result<()> {
/// use xbarrier::Host;
/// use xbarrier_api::{Device, LaunchConfig};
/// let device = Device::<Host>::open(0)?;
/// let module = device.load(&xbarrier_conformance::bundle()?)?;
/// let kernel = module.kernel("xbc_round_trip")?; // xbc_round_trip(unsigned phases)
/// let stream = device.stream()?;
/// // SAFETY: the kernel takes one unsigned; no buffers.
/// unsafe { stream.launch(&kernel, &LaunchConfig::new(2, 64), &[100u32.into()])? };
/// stream.synchronize()?;
/// # Ok(()) }
/// ```
pub struct Device<B: Backend> {
    raw: Arc<B::Device>,
    info: DeviceInfo,
}

impl<B: Backend> Clone for Device<B> {
    fn clone(&self) -> Self {
        Device { raw: self.raw.clone(), info: self.info.clone() }
    }
}

impl<B: Backend> Device<B> {
    /// How many devices backend `B` sees: 0 when its runtime has none (the host backend has
    /// `XBAR_HOST_DEVICES`, default 2).
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// assert_eq!(xbarrier_api::Device::<xbarrier::Host>::count()?, 2);
    /// # Ok(()) }
    /// ```
    pub fn count() -> Result<usize> {
        B::device_count()
    }

    /// Opens device `ordinal` (`0..count()`).
    ///
    /// Errors: [`Error::LibraryNotFound`] when the backend's runtime (libcuda, libamdhip64)
    /// cannot be loaded, [`Error::NoDevice`] when there is no such device, [`Error::Driver`]
    /// when the runtime fails. The host backend has devices `0..XBAR_HOST_DEVICES` (two unless
    /// set), stand-ins that share the CPU.
    ///
    /// Code generic over the backend can tell "no GPU here" from a failure:
    ///
    /// ```
    /// use xbarrier_api::{Backend, Device, Error};
    /// fn describe<B: Backend>() -> xbarrier_api::Result<String> {
    ///     match Device::<B>::open(0) {
    ///         Ok(device) => Ok(format!("{} ({})", device.info().name, device.info().arch)),
    ///         Err(Error::LibraryNotFound { hint, .. } | Error::NoDevice { hint, .. }) => Ok(format!("skipped: {hint}")),
    ///         Err(e) => Err(e),
    ///     }
    /// }
    /// # fn main() -> xbarrier_api::Result<()> {
    /// assert!(!describe::<xbarrier::Host>()?.starts_with("skipped"));
    /// assert!(matches!(Device::<xbarrier::Host>::open(2), Err(Error::NoDevice { .. })));
    /// # Ok(()) }
    /// ```
    pub fn open(ordinal: usize) -> Result<Device<B>> {
        let raw = B::open(ordinal)?;
        let info = B::info(&raw);
        Ok(Device { raw: Arc::new(raw), info })
    }

    /// What the device is: its backend, name, architecture and launch limits.
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
    /// let info = device.info();
    /// assert_eq!(info.backend, xbarrier_api::BackendKind::Host);
    /// assert!(info.max_threads_per_block >= 1024);
    /// # Ok(()) }
    /// ```
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The backend's own handle.
    pub fn raw(&self) -> &B::Device {
        &self.raw
    }
    pub(crate) fn raw_arc(&self) -> &Arc<B::Device> {
        &self.raw
    }

    /// A zero-filled buffer of `len` elements.
    ///
    /// Errors: [`Error::InvalidArgument`] when `len` elements overflow `usize` bytes,
    /// [`Error::OutOfMemory`] when the device cannot allocate them.
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// use xbarrier_api::Error;
    /// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
    /// let counters = device.alloc::<u64>(4)?;
    /// assert_eq!(counters.download()?, [0; 4]);
    /// assert!(matches!(device.alloc::<u64>(usize::MAX), Err(Error::InvalidArgument { .. })));
    /// # Ok(()) }
    /// ```
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<Buffer<B, T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| Error::InvalidArgument {
            call: "alloc",
            reason: format!("{len} elements of {} bytes overflow usize", std::mem::size_of::<T>()),
        })?;
        let memory = B::alloc(&self.raw, bytes.max(1))?;
        Ok(self.buffer_of(memory, len))
    }

    /// A [`Buffer`] of `len` elements over `memory`, which this device's backend allocated
    /// with room for them.
    pub(crate) fn buffer_of<T: DeviceCopy>(&self, memory: B::Memory, len: usize) -> Buffer<B, T> {
        Buffer {
            device: self.raw.clone(),
            ordinal: self.info.ordinal,
            in_flight: InFlight::new(),
            memory,
            len,
            _t: PhantomData,
        }
    }

    /// A buffer holding a copy of `data` (an [`alloc`](Self::alloc) and a
    /// [`Buffer::write`]); read it back with [`Buffer::download`] or [`Buffer::read_at`].
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// # let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
    /// let mut buffer = device.upload(&[1u32, 2, 3, 4])?;
    /// buffer.write_at(2, &[30, 40])?;
    /// assert_eq!(buffer.download()?, [1, 2, 30, 40]);
    /// let mut tail = [0u32; 2];
    /// buffer.read_at(2, &mut tail)?;
    /// assert!(buffer.write_at(3, &[0, 0]).is_err(), "past the end: Error::InvalidArgument");
    /// # Ok(()) }
    /// ```
    pub fn upload<T: DeviceCopy>(&self, data: &[T]) -> Result<Buffer<B, T>> {
        let mut buffer = self.alloc(data.len())?;
        buffer.write(data)?;
        Ok(buffer)
    }

    /// Loads this backend's [`Variant::Default`] image of `bundle`.
    ///
    /// Errors: [`Error::ImageMissing`] when the bundle was built without this backend (its
    /// crate did not enable the feature), else the runtime's error loading the image.
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// use xbarrier_api::{Error, KernelBundle};
    /// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
    /// let module = device.load(&xbarrier_conformance::bundle()?)?;
    /// assert_eq!(module.name(), "conformance");
    /// // A bundle with no image for this backend:
    /// let empty = KernelBundle::parse("empty", b"XBK2\0\0\0\0\0\0\0\0")?;
    /// assert!(matches!(device.load(&empty), Err(Error::ImageMissing { .. })));
    /// # Ok(()) }
    /// ```
    pub fn load(&self, bundle: &KernelBundle) -> Result<Module<B>> {
        self.load_variant(bundle, Variant::Default)
    }

    /// Loads this backend's image of `bundle` in `variant`: on CUDA, [`Variant::Emulated`]
    /// runs the same kernels on the portable protocol instead of the `mbarrier` hardware.
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// use xbarrier_api::{BackendKind, Variant};
    /// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
    /// let bundle = xbarrier_conformance::bundle()?;
    /// // Which variants the bundle carries for this device's backend (the host: the default only).
    /// for variant in bundle.variants(BackendKind::Host) {
    ///     assert_eq!(device.load_variant(&bundle, variant)?.variant(), variant);
    /// }
    /// assert!(device.load_variant(&bundle, Variant::Emulated).is_err());
    /// # Ok(()) }
    /// ```
    pub fn load_variant(&self, bundle: &KernelBundle, variant: Variant) -> Result<Module<B>> {
        let image = bundle.image_of(B::KIND, variant)?;
        let raw = B::load_module(&self.raw, bundle.name(), image)?;
        Ok(Module {
            device: self.raw.clone(),
            ordinal: self.info.ordinal,
            raw: Arc::new(raw),
            name: bundle.name().to_owned(),
            variant,
            checked: bundle.checked(),
        })
    }

    /// A new stream: launches and copies on one stream run in order (see [`Stream`]).
    pub fn stream(&self) -> Result<Stream<B>> {
        let raw = B::create_stream(&self.raw)?;
        Ok(Stream { info: self.info.clone(), shared: Arc::new(StreamShared::new(self.raw.clone(), raw)) })
    }
}

/// `len` elements of `T` in device memory. Element ranges are checked: an access past the end
/// is [`Error::InvalidArgument`], not undefined behaviour.
///
/// ```
/// # fn main() -> xbarrier_api::Result<()> {
/// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
/// let mut words = device.alloc::<u32>(8)?;
/// assert_eq!((words.len(), words.is_empty()), (8, false));
/// words.write(&[7; 8])?;
/// let mut second_half = [0u32; 4];
/// words.read_at(4, &mut second_half)?;
/// assert_eq!(second_half, [7; 4]);
/// assert!(words.write(&[1, 2]).is_err(), "write() replaces the whole buffer: same length");
/// # Ok(()) }
/// ```
pub struct Buffer<B: Backend, T: DeviceCopy> {
    device: Arc<B::Device>,
    /// Its device's ordinal: typed launches check it against the stream's.
    ordinal: usize,
    /// The stream work that used it last: host access, freeing and other streams wait for it.
    in_flight: InFlight<B>,
    memory: B::Memory,
    len: usize,
    _t: PhantomData<T>,
}

impl<B: Backend, T: DeviceCopy> Buffer<B, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The ordinal of the device that holds it.
    pub fn device_ordinal(&self) -> usize {
        self.ordinal
    }
    /// The device address, as a kernel argument (a `T*` parameter of the kernel).
    pub fn arg(&self) -> KernelArg {
        KernelArg::Ptr(B::address(&self.memory))
    }
    /// The device address of element `index` (which may be one past the end).
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// use xbarrier_api::KernelArg;
    /// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
    /// let buffer = device.alloc::<u64>(4)?;
    /// let (KernelArg::Ptr(base), KernelArg::Ptr(third)) = (buffer.arg(), buffer.arg_at(2)?) else { unreachable!() };
    /// assert_eq!(third - base, 16);
    /// assert!(buffer.arg_at(4).is_ok() && buffer.arg_at(5).is_err());
    /// # Ok(()) }
    /// ```
    pub fn arg_at(&self, index: usize) -> Result<KernelArg> {
        if index > self.len {
            return Err(Error::InvalidArgument {
                call: "Buffer::arg_at",
                reason: format!("index {index} > length {}", self.len),
            });
        }
        Ok(KernelArg::Ptr(B::address(&self.memory) + (index * std::mem::size_of::<T>()) as u64))
    }
    /// Overwrites the whole buffer with `data`, which must have the buffer's length
    /// ([`write_at`](Self::write_at) writes part of it).
    pub fn write(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::InvalidArgument {
                call: "Buffer::write",
                reason: format!("{} elements for a buffer of {}", data.len(), self.len),
            });
        }
        self.write_at(0, data)
    }
    /// Overwrites elements `offset..offset + data.len()`.
    pub fn write_at(&mut self, offset: usize, data: &[T]) -> Result<()> {
        self.check_range("Buffer::write", offset, data.len())?;
        self.in_flight.before_host_access()?;
        B::write(&self.device, &mut self.memory, offset * std::mem::size_of::<T>(), as_bytes(data))
    }
    /// Reads elements `offset..offset + out.len()` into `out`.
    pub fn read_at(&self, offset: usize, out: &mut [T]) -> Result<()> {
        self.check_range("Buffer::read", offset, out.len())?;
        self.in_flight.before_host_access()?;
        B::read(&self.device, &self.memory, offset * std::mem::size_of::<T>(), as_bytes_mut(out))
    }
    /// Copies the whole buffer to the host.
    pub fn download(&self) -> Result<Vec<T>>
    where
        T: Default,
    {
        let mut out = vec![T::default(); self.len];
        self.read_at(0, &mut out)?;
        Ok(out)
    }
    fn check_range(&self, call: &'static str, offset: usize, count: usize) -> Result<()> {
        match offset.checked_add(count) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::InvalidArgument {
                call,
                reason: format!("elements {offset}..{offset}+{count} of a buffer of {}", self.len),
            }),
        }
    }
}

impl<B: Backend, T: DeviceCopy> Buffer<B, T> {
    /// What typed launches and copies track the buffer's use with.
    pub(crate) fn in_flight(&self) -> &InFlight<B> {
        &self.in_flight
    }
}

impl<B: Backend, T: DeviceCopy> Drop for Buffer<B, T> {
    /// Waits for the typed launches and copies that may still use the buffer before it is
    /// freed (however long they run: a hung kernel holds the drop as it holds a
    /// synchronize). A failed wait (a broken context) frees it anyway: the runtime reports
    /// that context's error on.
    fn drop(&mut self) {
        let _ = self.in_flight.before_host_access();
    }
}

/// A loaded module.
pub struct Module<B: Backend> {
    device: Arc<B::Device>,
    ordinal: usize,
    raw: Arc<B::Module>,
    name: String,
    variant: Variant,
    checked: bool,
}

impl<B: Backend> Module<B> {
    /// The module's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The variant of the image that was loaded.
    pub fn variant(&self) -> Variant {
        self.variant
    }
    /// Whether its device code is checked ([`KernelBundle::checked`] of the bundle it came
    /// from): a barrier misused by its kernels is reported as [`Error::Fault`] instead of being
    /// undefined behaviour.
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
    /// let module = device.load(&xbarrier_conformance::bundle()?)?;
    /// // The conformance kernels are compiled as this build compiles kernels (checked in
    /// // debug builds and with the `checked` feature).
    /// assert_eq!(module.checked(), xbarrier::CHECKED);
    /// # Ok(()) }
    /// ```
    pub fn checked(&self) -> bool {
        self.checked
    }
    /// Kernel `name` of this module; [`Error::KernelNotFound`] if it has none of that name
    /// (kernels must be `extern "C"`, which `XB_KERNEL` declares).
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// use xbarrier_api::Error;
    /// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
    /// let module = device.load(&xbarrier_conformance::bundle()?)?;
    /// assert_eq!(module.kernel("xbc_round_trip")?.name(), "xbc_round_trip");
    /// assert!(matches!(module.kernel("no_such_kernel"), Err(Error::KernelNotFound { .. })));
    /// # Ok(()) }
    /// ```
    pub fn kernel(&self, name: &str) -> Result<Kernel<B>> {
        let raw = B::function(&self.device, &self.raw, name)?;
        Ok(Kernel { raw, name: name.into(), ordinal: self.ordinal, module: self.raw.clone(), checked: self.checked })
    }
}

/// A kernel, ready to launch.
pub struct Kernel<B: Backend> {
    raw: B::Function,
    name: Arc<str>,
    /// The ordinal of the device its module was loaded on.
    ordinal: usize,
    /// Its module: kept loaded while the kernel exists, and read for faults after launches.
    module: Arc<B::Module>,
    /// Whether its module's code is checked ([`Module::checked`]).
    checked: bool,
}

impl<B: Backend> Clone for Kernel<B> {
    fn clone(&self) -> Self {
        Kernel {
            raw: self.raw.clone(),
            name: self.name.clone(),
            ordinal: self.ordinal,
            module: self.module.clone(),
            checked: self.checked,
        }
    }
}

impl<B: Backend> Kernel<B> {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Whether its code is checked ([`Module::checked`]).
    pub fn checked(&self) -> bool {
        self.checked
    }
    /// The ordinal of the device its module was loaded on: it launches only on streams of
    /// that device.
    pub fn device_ordinal(&self) -> usize {
        self.ordinal
    }
}

/// An in-order queue of launches.
pub struct Stream<B: Backend> {
    info: DeviceInfo,
    /// The runtime's stream, its unreported launches and its progress, shared with the
    /// buffers its work uses (tracking.rs).
    shared: Arc<StreamShared<B>>,
}

impl<B: Backend> Stream<B> {
    /// Enqueues `kernel` with `args`.
    ///
    /// The configuration is checked first ([`LaunchConfig::validate`]:
    /// [`Error::InvalidArgument`]). A barrier fault of a checked build, an uncaught C++
    /// exception (host) or an overrun of [`LaunchConfig::timeout`] is returned here or by the
    /// next [`Stream::synchronize`]: the host backend runs a launch to completion before
    /// returning, the GPU backends report at `synchronize` (a GPU kernel cannot be aborted, so
    /// an overrun is reported after it ended).
    ///
    /// A kernel loaded on another device than the stream's is [`Error::DeviceMismatch`].
    /// Kernels of a bundle built with `xbarrier-build` also have typed launchers, which need
    /// no `unsafe` ([`Launch`](crate::Launch)); this is the escape hatch for the others.
    ///
    /// # Safety
    /// - `args` must match the kernel's C parameter list exactly (count, order, types).
    /// - Every buffer passed as an argument must outlive the next [`Stream::synchronize`].
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// use xbarrier_api::{Error, LaunchConfig};
    /// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
    /// let module = device.load(&xbarrier_conformance::bundle()?)?;
    /// let kernel = module.kernel("xbc_round_trip")?;
    /// let stream = device.stream()?;
    /// // SAFETY (both launches): xbc_round_trip(unsigned phases) takes exactly this argument.
    /// unsafe { stream.launch(&kernel, &LaunchConfig::new(1, 256), &[10u32.into()])? };
    /// // A block larger than the device allows is refused before anything runs.
    /// let too_big = LaunchConfig::new(1, device.info().max_threads_per_block + 1);
    /// let refused = unsafe { stream.launch(&kernel, &too_big, &[10u32.into()]) };
    /// assert!(matches!(refused, Err(Error::InvalidArgument { .. })));
    /// stream.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub unsafe fn launch(&self, kernel: &Kernel<B>, config: &LaunchConfig, args: &[KernelArg]) -> Result<()> {
        // SAFETY: the caller's contract is this function's.
        let (_, result) = unsafe { self.enqueue(kernel, config, args) };
        result
    }
    /// [`launch`](Self::launch), with the launch's ticket (tracking.rs) where the runtime
    /// accepted it. Once accepted, it is counted and noted for the next synchronize even where
    /// a later step (its closing timing event) fails: then the ticket comes with the error.
    ///
    /// # Safety
    /// As [`launch`](Self::launch).
    pub(crate) unsafe fn enqueue(
        &self,
        kernel: &Kernel<B>,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> (Option<u64>, Result<()>) {
        // SAFETY: the caller's contract is this function's.
        match unsafe { self.submit(kernel, config, args) } {
            Ok((ticket, Some(late))) => {
                self.shared.note_failure(ticket - 1, ticket, &late);
                (Some(ticket), Err(late))
            }
            Ok((ticket, None)) => (Some(ticket), Ok(())),
            Err(e) => (None, Err(e)),
        }
    }
    /// Validates and submits a launch: its ticket, and an error of a step after the runtime
    /// accepted it.
    ///
    /// # Safety
    /// As [`launch`](Self::launch).
    unsafe fn submit(
        &self,
        kernel: &Kernel<B>,
        config: &LaunchConfig,
        args: &[KernelArg],
    ) -> Result<(u64, Option<Error>)> {
        config.validate(&self.info)?;
        if kernel.ordinal != self.info.ordinal {
            return Err(Error::DeviceMismatch {
                kernel: kernel.name.to_string(),
                what: "the kernel".into(),
                found: kernel.ordinal,
                stream: self.info.ordinal,
            });
        }
        // A backend that cannot abort kernels gets the launch bracketed by events instead.
        let shared = &self.shared;
        let limit = config.timeout.filter(|_| !B::ENFORCES_TIMEOUTS);
        let start = limit.map(|_| B::record(&shared.device, &shared.raw)).transpose()?;
        // SAFETY: the caller guarantees the argument and lifetime bullets; validate() checked the config.
        unsafe { B::launch(&shared.device, &shared.raw, &kernel.raw, config, args)? };
        let ticket = shared.issue();
        let (timing, late) = match (start, limit) {
            (Some(start), Some(limit)) => match B::record(&shared.device, &shared.raw) {
                Ok(end) => (Some((start, end, limit)), None),
                Err(e) => (None, Some(e)),
            },
            _ => (None, None),
        };
        let tickets = (ticket, ticket);
        let launch = PendingLaunch { kernel: kernel.name.clone(), module: kernel.module.clone(), timing, tickets };
        note_launch(&mut shared.pending.lock().unwrap_or_else(PoisonError::into_inner), launch);
        Ok((ticket, late))
    }
    /// The shared part that buffers record their use with.
    pub(crate) fn shared(&self) -> &Arc<StreamShared<B>> {
        &self.shared
    }
    /// The ordinal of the stream's device.
    pub fn device_ordinal(&self) -> usize {
        self.info.ordinal
    }
    /// Waits for the enqueued work without reporting what it left for [`Stream::synchronize`]
    /// (faults, timeouts): a dropped [`Launch`](crate::Launch) waits this way, and the next
    /// `synchronize` still reports them. A runtime error is left to that call too: the GPU
    /// runtimes keep reporting a failed context.
    pub(crate) fn wait_quietly(&self) {
        let _ = self.shared.wait();
    }
    /// Waits for all enqueued work; a kernel's barrier fault is reported here (or at launch),
    /// as [`Error::Fault`] naming the last kernel launched from the faulting module, and an
    /// overrun of a launch's timeout as [`Error::LaunchTimeout`]. Either is reported once:
    /// the next synchronize starts afresh.
    pub fn synchronize(&self) -> Result<()> {
        self.shared.synchronize()
    }
    /// Enqueues a device-to-device copy of all of `src` into `dst` (same length, the stream's
    /// device), ordered after the work enqueued before it; [`Stream::synchronize`] waits for
    /// it. The buffers remember the copy: their drop, host access and other streams' work on
    /// them wait for it.
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
    /// let stream = device.stream()?;
    /// let src = device.upload(&[1.5f32, 2.5, 3.5])?;
    /// let mut dst = device.alloc::<f32>(3)?;
    /// stream.copy(&mut dst, &src)?;
    /// stream.synchronize()?;
    /// assert_eq!(dst.download()?, [1.5, 2.5, 3.5]);
    /// assert!(stream.copy(&mut device.alloc::<f32>(2)?, &src).is_err(), "lengths differ");
    /// # Ok(()) }
    /// ```
    pub fn copy<T: DeviceCopy>(&self, dst: &mut Buffer<B, T>, src: &Buffer<B, T>) -> Result<()> {
        for (what, ordinal) in [("the destination", dst.ordinal), ("the source", src.ordinal)] {
            if ordinal != self.info.ordinal {
                return Err(Error::DeviceMismatch {
                    kernel: "Stream::copy".into(),
                    what: what.into(),
                    found: ordinal,
                    stream: self.info.ordinal,
                });
            }
        }
        if dst.len != src.len {
            return Err(Error::InvalidArgument {
                call: "Stream::copy",
                reason: format!("source has {} elements, destination {}", src.len, dst.len),
            });
        }
        let bytes = src.len * std::mem::size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        dst.in_flight.before_use(&self.shared)?;
        src.in_flight.before_use(&self.shared)?;
        B::copy_device(&self.shared.device, &self.shared.raw, &mut dst.memory, 0, &src.memory, 0, bytes)?;
        let ticket = self.shared.issue();
        dst.in_flight.used_by(&self.shared, ticket);
        src.in_flight.used_by(&self.shared, ticket);
        Ok(())
    }
    /// Records an event: two of them time the work between them
    /// ([`Event::elapsed_until`], after [`Stream::synchronize`]).
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// use xbarrier_api::LaunchConfig;
    /// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
    /// let module = device.load(&xbarrier_conformance::bundle()?)?;
    /// let kernel = module.kernel("xbc_round_trip")?;
    /// let stream = device.stream()?;
    /// let start = stream.record()?;
    /// // SAFETY: xbc_round_trip(unsigned phases) takes exactly this argument.
    /// unsafe { stream.launch(&kernel, &LaunchConfig::new(1, 32), &[1000u32.into()])? };
    /// let end = stream.record()?;
    /// stream.synchronize()?;
    /// println!("1000 phases of 32 threads: {:?}", start.elapsed_until(&end)?);
    /// # Ok(()) }
    /// ```
    pub fn record(&self) -> Result<Event<B>> {
        Ok(Event { raw: B::record(&self.shared.device, &self.shared.raw)? })
    }
    /// Makes the work enqueued on this stream after the call wait until the work before
    /// `event` in its own stream has completed; that stream may belong to another device.
    /// The host does not wait: two streams that wait for each other's events advance in
    /// step without a synchronize.
    ///
    /// Errors: [`Error::Unsupported`] where the backend cannot order streams this way.
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// use xbarrier_api::{Device, LaunchConfig};
    /// // The host backend's two devices; its launches end before they return, so the wait
    /// // is already satisfied there. On GPUs only the backend type changes.
    /// let (first, second) = (Device::<xbarrier::Host>::open(0)?, Device::<xbarrier::Host>::open(1)?);
    /// let bundle = xbarrier_conformance::bundle()?;
    /// let (module, other) = (first.load(&bundle)?, second.load(&bundle)?);
    /// let (a, b) = (first.stream()?, second.stream()?);
    /// let config = LaunchConfig::new(1, 32);
    /// // SAFETY (both launches): xbc_round_trip(unsigned phases) takes exactly this argument.
    /// unsafe { a.launch(&module.kernel("xbc_round_trip")?, &config, &[100u32.into()])? };
    /// let done = a.record()?;
    /// b.wait_event(&done)?; // what `b` runs next starts after the launch on `a` ended
    /// unsafe { b.launch(&other.kernel("xbc_round_trip")?, &config, &[100u32.into()])? };
    /// b.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub fn wait_event(&self, event: &Event<B>) -> Result<()> {
        B::stream_wait_event(&self.shared.device, &self.shared.raw, &event.raw)
    }
}

/// A recorded point in a stream.
pub struct Event<B: Backend> {
    raw: B::Event,
}

impl<B: Backend> Event<B> {
    /// Time from `self` to `later` (both recorded, their streams synchronized).
    pub fn elapsed_until(&self, later: &Event<B>) -> Result<Duration> {
        B::elapsed(&self.raw, &later.raw)
    }
}
