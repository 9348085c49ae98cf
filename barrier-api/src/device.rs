//! The generic wrappers user code works with: devices, typed buffers, modules, kernels,
//! streams and events. They check arguments; backends only translate.
#![allow(unsafe_code)] // DeviceCopy is an unsafe marker trait; launch forwards an unsafe contract

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

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

fn as_bytes<T: DeviceCopy>(data: &[T]) -> &[u8] {
    // SAFETY: T is DeviceCopy (no padding), so its memory is initialized bytes.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

fn as_bytes_mut<T: DeviceCopy>(data: &mut [T]) -> &mut [u8] {
    // SAFETY: T is DeviceCopy (every bit pattern valid), so any bytes written are a valid T.
    unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// An open device of backend `B`.
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
    /// How many devices backend `B` sees.
    pub fn count() -> Result<usize> {
        B::device_count()
    }

    /// Opens device `ordinal` (`0..count()`).
    ///
    /// Errors: [`Error::LibraryNotFound`] when the backend's runtime (libcuda, libamdhip64)
    /// cannot be loaded, [`Error::NoDevice`] when there is no such device, [`Error::Driver`]
    /// when the runtime fails. The host backend has exactly one device, 0.
    ///
    /// ```
    /// # fn open<B: xbarrier_api::Backend>() -> xbarrier_api::Result<()> {
    /// use xbarrier_api::{Device, Error};
    /// match Device::<B>::open(0) {
    ///     Ok(device) => println!("{} ({})", device.info().name, device.info().arch),
    ///     Err(Error::LibraryNotFound { hint, .. } | Error::NoDevice { hint, .. }) => println!("skipped: {hint}"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn open(ordinal: usize) -> Result<Device<B>> {
        let raw = B::open(ordinal)?;
        let info = B::info(&raw);
        Ok(Device { raw: Arc::new(raw), info })
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The backend's own handle.
    pub fn raw(&self) -> &B::Device {
        &self.raw
    }

    /// A zero-filled buffer of `len` elements.
    ///
    /// Errors: [`Error::InvalidArgument`] when `len` elements overflow `usize` bytes,
    /// [`Error::OutOfMemory`] when the device cannot allocate them.
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<Buffer<B, T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| Error::InvalidArgument {
            call: "alloc",
            reason: format!("{len} elements of {} bytes overflow usize", std::mem::size_of::<T>()),
        })?;
        let memory = B::alloc(&self.raw, bytes.max(1))?;
        Ok(Buffer { device: self.raw.clone(), memory, len, _t: PhantomData })
    }

    /// A buffer holding a copy of `data` (an [`alloc`](Self::alloc) and a
    /// [`Buffer::write`]); read it back with [`Buffer::download`] or [`Buffer::read_at`].
    ///
    /// ```
    /// # fn f<B: xbarrier_api::Backend>(device: &xbarrier_api::Device<B>) -> xbarrier_api::Result<()> {
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

    /// Loads this backend's native image of `bundle` (see [`Variant`]).
    ///
    /// Errors: [`Error::ImageMissing`] when the bundle was built without this backend (its
    /// crate did not enable the feature), else the runtime's error loading the image.
    pub fn load(&self, bundle: &KernelBundle) -> Result<Module<B>> {
        self.load_variant(bundle, Variant::Native)
    }

    /// Loads this backend's image of `bundle` in `variant`: on CUDA, [`Variant::Emulated`]
    /// runs the same kernels on the portable protocol instead of the `mbarrier` hardware.
    pub fn load_variant(&self, bundle: &KernelBundle, variant: Variant) -> Result<Module<B>> {
        let image = bundle.image_of(B::KIND, variant)?;
        let raw = B::load_module(&self.raw, bundle.name(), image)?;
        Ok(Module { device: self.raw.clone(), raw: Arc::new(raw), name: bundle.name().to_owned(), variant })
    }

    /// A new stream.
    pub fn stream(&self) -> Result<Stream<B>> {
        Ok(Stream { device: self.raw.clone(), info: self.info.clone(), raw: B::create_stream(&self.raw)? })
    }
}

/// `len` elements of `T` in device memory.
pub struct Buffer<B: Backend, T: DeviceCopy> {
    device: Arc<B::Device>,
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
    /// The device address, as a kernel argument.
    pub fn arg(&self) -> KernelArg {
        KernelArg::Ptr(B::address(&self.memory))
    }
    /// The device address of element `index` (which may be one past the end).
    pub fn arg_at(&self, index: usize) -> Result<KernelArg> {
        if index > self.len {
            return Err(Error::InvalidArgument {
                call: "Buffer::arg_at",
                reason: format!("index {index} > length {}", self.len),
            });
        }
        Ok(KernelArg::Ptr(B::address(&self.memory) + (index * std::mem::size_of::<T>()) as u64))
    }
    /// Overwrites the whole buffer with `data` (same length).
    pub fn write(&mut self, data: &[T]) -> Result<()> {
        self.write_at(0, data)
    }
    /// Overwrites elements `offset..offset + data.len()`.
    pub fn write_at(&mut self, offset: usize, data: &[T]) -> Result<()> {
        self.check_range("Buffer::write", offset, data.len())?;
        B::write(&self.device, &mut self.memory, offset * std::mem::size_of::<T>(), as_bytes(data))
    }
    /// Reads elements `offset..offset + out.len()` into `out`.
    pub fn read_at(&self, offset: usize, out: &mut [T]) -> Result<()> {
        self.check_range("Buffer::read", offset, out.len())?;
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

/// A loaded module.
pub struct Module<B: Backend> {
    device: Arc<B::Device>,
    raw: Arc<B::Module>,
    name: String,
    variant: Variant,
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
    /// Kernel `name` of this module; [`Error::KernelNotFound`] if it has none of that name
    /// (kernels must be `extern "C"`, which `XB_KERNEL` declares).
    pub fn kernel(&self, name: &str) -> Result<Kernel<B>> {
        let raw = B::function(&self.device, &self.raw, name)?;
        Ok(Kernel { raw, name: name.to_owned(), _module: self.raw.clone() })
    }
}

/// A kernel, ready to launch.
pub struct Kernel<B: Backend> {
    raw: B::Function,
    name: String,
    _module: Arc<B::Module>,
}

impl<B: Backend> Clone for Kernel<B> {
    fn clone(&self) -> Self {
        Kernel { raw: self.raw.clone(), name: self.name.clone(), _module: self._module.clone() }
    }
}

impl<B: Backend> Kernel<B> {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// An in-order queue of launches.
pub struct Stream<B: Backend> {
    device: Arc<B::Device>,
    info: DeviceInfo,
    raw: B::Stream,
}

impl<B: Backend> Stream<B> {
    /// Enqueues `kernel` with `args`.
    ///
    /// The configuration is checked first ([`LaunchConfig::validate`]:
    /// [`Error::InvalidArgument`]). A barrier fault of a checked build, an uncaught C++
    /// exception (host) or an overrun of [`LaunchConfig::timeout`] is returned here or by the
    /// next [`Stream::synchronize`]: the host backend runs a launch to completion before
    /// returning, the GPU backends report at `synchronize`.
    ///
    /// # Safety
    /// - `args` must match the kernel's C parameter list exactly (count, order, types).
    /// - Every buffer passed as an argument must outlive the next [`Stream::synchronize`].
    pub unsafe fn launch(&self, kernel: &Kernel<B>, config: &LaunchConfig, args: &[KernelArg]) -> Result<()> {
        config.validate(&self.info)?;
        // SAFETY: the caller guarantees the argument and lifetime bullets; validate() checked the config.
        unsafe { B::launch(&self.device, &self.raw, &kernel.raw, config, args) }
    }
    /// Waits for all enqueued work; a kernel's barrier fault is reported here (or at launch),
    /// as [`Error::Fault`], and an overrun of a launch's timeout as [`Error::LaunchTimeout`].
    pub fn synchronize(&self) -> Result<()> {
        B::synchronize(&self.device, &self.raw)
    }
    /// Enqueues a device-to-device copy of all of `src` into `dst` (same length), ordered
    /// after the work enqueued before it; [`Stream::synchronize`] waits for it. Dropping a
    /// buffer before then is sound: the GPU runtimes' frees wait for work still using the
    /// memory, and the host backend copies before returning.
    pub fn copy<T: DeviceCopy>(&self, dst: &mut Buffer<B, T>, src: &Buffer<B, T>) -> Result<()> {
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
        B::copy_device(&self.device, &self.raw, &mut dst.memory, 0, &src.memory, 0, bytes)
    }
    /// Records an event: two of them time the work between them
    /// ([`Event::elapsed_until`], after [`Stream::synchronize`]).
    pub fn record(&self) -> Result<Event<B>> {
        Ok(Event { raw: B::record(&self.device, &self.raw)? })
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
