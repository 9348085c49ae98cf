//! Memory that host threads and kernels use at the same time ([`SystemBuffer`]): where a
//! `barrier<thread_scope_system>` shared by both lives, and the data handed over through it.
#![allow(unsafe_code)] // element accesses of memory a kernel may use at the same time

use std::marker::PhantomData;
use std::sync::Arc;

use crate::tracking::InFlight;
use crate::{Backend, Device, DeviceCopy, Error, KernelArg, Result};

/// Memory of `len` elements of `T` that this device's kernels and the host's threads use at
/// the same time ([`Device::alloc_system`]): host memory on the host backend; on a GPU,
/// memory whose atomics of system scope are atomic for the CPU too (see
/// [`Backend::alloc_system`]).
///
/// Unlike a [`Buffer`](crate::Buffer), nothing here waits for the kernels that use it: the
/// host reads and writes elements while they run ([`load`](Self::load),
/// [`store`](Self::store)), each element in one access, and orders those accesses against
/// the kernels' with a barrier of system scope (`SystemBarrier` in the `xbarrier` crate).
/// A launch takes it by shared reference, so host threads keep using it meanwhile; several
/// kernels may use it at once. Dropping it waits for every launch that used it.
///
/// ```
/// # fn main() -> xbarrier_api::Result<()> {
/// let device = xbarrier_api::Device::<xbarrier::Host>::open(0)?;
/// let flags = device.alloc_system::<u32>(4)?;
/// flags.store(2, 7)?;
/// assert_eq!((flags.load(2)?, flags.load(0)?), (7, 0));
/// assert!(flags.load(4).is_err(), "past the end: Error::InvalidArgument");
/// # Ok(()) }
/// ```
pub struct SystemBuffer<B: Backend, T: DeviceCopy> {
    ordinal: usize,
    /// The launches that used it: its drop waits for them, and a host wait gives up when
    /// one failed.
    in_flight: InFlight<B>,
    memory: B::Memory,
    /// Keeps the device (context) alive until the memory is freed (fields drop in order).
    _device: Arc<B::Device>,
    len: usize,
    _t: PhantomData<T>,
}

impl<B: Backend> Device<B> {
    /// A zero-filled [`SystemBuffer`] of `len` elements, for host threads and kernels at once.
    ///
    /// Errors: [`Error::Unsupported`] naming the device property that is missing (a GPU whose
    /// link has no atomics with the CPU and that cannot share managed memory concurrently),
    /// [`Error::InvalidArgument`] when `len` elements overflow `usize` bytes,
    /// [`Error::OutOfMemory`].
    pub fn alloc_system<T: DeviceCopy>(&self, len: usize) -> Result<SystemBuffer<B, T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| Error::InvalidArgument {
            call: "alloc_system",
            reason: format!("{len} elements of {} bytes overflow usize", std::mem::size_of::<T>()),
        })?;
        let memory = B::alloc_system(self.raw(), &[], bytes.max(1))?;
        Ok(SystemBuffer {
            _device: self.raw_arc().clone(),
            ordinal: self.info().ordinal,
            in_flight: InFlight::new(),
            memory,
            len,
            _t: PhantomData,
        })
    }
}

impl<B: Backend, T: DeviceCopy> SystemBuffer<B, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Its address as a kernel argument (the kernels' and the host's address are the same).
    pub fn arg(&self) -> KernelArg {
        KernelArg::Ptr(B::address(&self.memory))
    }
    /// The ordinal of its device.
    pub fn device_ordinal(&self) -> usize {
        self.ordinal
    }

    fn element(&self, call: &'static str, index: usize) -> Result<*mut T> {
        if index >= self.len {
            return Err(Error::InvalidArgument { call, reason: format!("index {index} of {} elements", self.len) });
        }
        // SAFETY: `index` is in bounds of the allocation, which the host addresses at
        // `address` (Backend::alloc_system) and which is aligned for T (256 bytes at least).
        Ok(unsafe { (B::address(&self.memory) as *mut T).add(index) })
    }

    /// Element `index`, read now, in one access. What a kernel wrote is seen here once a
    /// barrier orders it before (a completed phase the write was made before).
    ///
    /// Errors: [`Error::InvalidArgument`] for an index past the end.
    pub fn load(&self, index: usize) -> Result<T> {
        let p = self.element("SystemBuffer::load", index)?;
        // SAFETY: `p` addresses element `index` of live memory; volatile, because kernels
        // write it behind the compiler's back. T is DeviceCopy: every bit pattern is valid,
        // so even a load that a missing barrier lets race with a write yields a T.
        Ok(unsafe { p.read_volatile() })
    }

    /// Writes element `index` now, in one access; kernels see it once a barrier orders it
    /// before their read (an arrival made after it).
    ///
    /// Errors: [`Error::InvalidArgument`] for an index past the end.
    pub fn store(&self, index: usize, value: T) -> Result<()> {
        let p = self.element("SystemBuffer::store", index)?;
        // SAFETY: as in `load`; the memory is not Rust's (no reference to it exists), so a
        // store through a shared handle aliases nothing.
        unsafe { p.write_volatile(value) };
        Ok(())
    }

    /// The host address of the memory, for the `xbarrier` crate's barrier operations.
    pub fn host_address(&self) -> u64 {
        B::address(&self.memory)
    }

    /// The error of a launch that used this memory and failed, if any is known now (never
    /// waits): a launch or synchronize that reported one, or a stream the runtime reports
    /// broken. A host thread waiting on a barrier here gives up with it.
    pub fn failed_use(&self) -> Option<String> {
        self.in_flight.failure()
    }

    pub(crate) fn in_flight(&self) -> &InFlight<B> {
        &self.in_flight
    }
}

impl<B: Backend, T: DeviceCopy> Drop for SystemBuffer<B, T> {
    /// Waits for every launch that used the memory before freeing it (a failed wait, a
    /// broken context, frees it anyway).
    fn drop(&mut self) {
        let _ = self.in_flight.before_host_access();
    }
}
