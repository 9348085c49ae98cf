//! Memory that kernels on several devices use at the same time ([`PeerBuffer`]): where a
//! barrier whose participants run on several GPUs lives, and the data they hand each other
//! through it.

use std::sync::Arc;

use crate::tracking::InFlight;
use crate::{Backend, Buffer, Device, DeviceCopy, Error, KernelArg, Result};

/// Where a [`PeerBuffer`] lies, which decides what its devices need between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerPlacement {
    /// In the first device's memory, which the others reach over a peer path with native
    /// atomics (NVLink; PCIe peer-to-peer or Infinity Fabric with atomics): every access from
    /// another device crosses the link once. The default.
    DeviceMemory,
    /// In the memory that [`Backend::alloc_system`] gives for all the devices, as for a
    /// [`SystemBuffer`](crate::SystemBuffer): pinned host memory mapped into every device,
    /// where every device's link to the CPU has native atomics; else managed memory, which
    /// migrates to whichever device touches it, where every device accesses managed memory
    /// concurrently with the CPU. No peer path is needed; an access from another device than
    /// the last one moves a page (or goes to host memory), so a barrier here is expected to
    /// cost far more per phase than in device memory (not yet measured on GPUs). Only on
    /// request.
    SystemMemory,
}

impl PeerPlacement {
    /// Its name in reports: `device memory` or `system memory`.
    pub fn name(self) -> &'static str {
        match self {
            PeerPlacement::DeviceMemory => "device memory",
            PeerPlacement::SystemMemory => "system memory",
        }
    }
}

/// `len` elements of `T` that kernels of one device and of its peers
/// ([`Device::alloc_peer`]) use at the same time, with atomics of system scope that all of
/// them agree on: in that device's memory, reached by the peers, or, on request, in memory
/// the system shares ([`PeerPlacement`]).
///
/// A launch on any of those devices takes it (typed launchers take `&PeerBuffer` wherever
/// they take a buffer); launches on different streams that use it are not ordered against
/// each other, because kernels on several devices that meet at a barrier in it run at the
/// same time. The host reads and writes it only between launches: [`read_at`](Self::read_at),
/// [`write_at`](Self::write_at) and the drop wait for every launch that used it.
///
/// ```
/// # fn main() -> xbarrier_api::Result<()> {
/// use xbarrier_api::{Device, PeerPlacement};
/// // The host backend's devices share the CPU's memory, so each reaches the others'.
/// let (first, second) = (Device::<xbarrier::Host>::open(0)?, Device::<xbarrier::Host>::open(1)?);
/// let mut words = first.alloc_peer::<u32>(4, &[&second])?;
/// assert_eq!((words.device_ordinal(), words.reaches(1), words.reaches(2)), (0, true, false));
/// assert_eq!(words.placement(), PeerPlacement::DeviceMemory);
/// words.write_at(1, &[7, 8])?;
/// assert_eq!(words.download()?, [0, 7, 8, 0]);
/// let shared = first.alloc_peer_in::<u32>(PeerPlacement::SystemMemory, 4, &[&second])?;
/// assert_eq!(shared.placement(), PeerPlacement::SystemMemory);
/// # Ok(()) }
/// ```
pub struct PeerBuffer<B: Backend, T: DeviceCopy> {
    /// The memory, allocated through its first device: its host access and drop wait for
    /// every launch that used it, on whichever device.
    buffer: Buffer<B, T>,
    placement: PeerPlacement,
    /// The devices whose kernels may use it: its own first, then its peers.
    reach: Vec<usize>,
    /// The peers' handles: their access to the memory lasts as long as their contexts,
    /// which a device closed and opened again would not have (CUDA resets a primary
    /// context once its last handle is gone).
    _peers: Vec<Arc<B::Device>>,
}

impl<B: Backend> Device<B> {
    /// A zero-filled [`PeerBuffer`] of `len` elements in this device's memory, which kernels
    /// on `peers` use too: the backend lets each peer reach it
    /// ([`Backend::enable_peer_access`]). A peer may be this device itself (the same ordinal
    /// opened twice), which needs no peer path. It is
    /// [`alloc_peer_in`](Self::alloc_peer_in)`(PeerPlacement::DeviceMemory, ..)`; devices
    /// without a peer path with atomics can share memory in
    /// [`PeerPlacement::SystemMemory`] instead, at a higher cost, which is never chosen for
    /// them.
    ///
    /// Errors: [`Error::Unsupported`] naming the missing path (two GPUs without peer access
    /// between them, or without native atomics over it), [`Error::InvalidArgument`] when
    /// `len` elements overflow `usize` bytes, [`Error::OutOfMemory`].
    pub fn alloc_peer<T: DeviceCopy>(&self, len: usize, peers: &[&Device<B>]) -> Result<PeerBuffer<B, T>> {
        self.alloc_peer_in(PeerPlacement::DeviceMemory, len, peers)
    }

    /// A zero-filled [`PeerBuffer`] of `len` elements in `placement`, for kernels on this
    /// device and on `peers`.
    ///
    /// Errors: as [`alloc_peer`](Self::alloc_peer); in [`PeerPlacement::SystemMemory`],
    /// [`Error::Unsupported`] names the device property each device lacks.
    pub fn alloc_peer_in<T: DeviceCopy>(
        &self,
        placement: PeerPlacement,
        len: usize,
        peers: &[&Device<B>],
    ) -> Result<PeerBuffer<B, T>> {
        // Before any peer access is enabled: a length that cannot be allocated changes nothing.
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| Error::InvalidArgument {
            call: "alloc_peer",
            reason: format!("{len} elements of {} bytes overflow usize", std::mem::size_of::<T>()),
        })?;
        let buffer = match placement {
            PeerPlacement::DeviceMemory => {
                for peer in peers {
                    B::enable_peer_access(self.raw(), peer.raw()).map_err(|e| match e {
                        Error::Unsupported { backend, what, reason } => Error::Unsupported {
                            backend,
                            what,
                            reason: format!("{reason} (PeerPlacement::SystemMemory needs no peer path, at a far higher cost per access: Device::alloc_peer_in, PeerBarrier::new_in)"),
                        },
                        e => e,
                    })?;
                }
                self.alloc::<T>(len)?
            }
            PeerPlacement::SystemMemory => {
                let raw: Vec<&B::Device> = peers.iter().map(|p| p.raw()).collect();
                let memory = B::alloc_system(self.raw(), &raw, bytes).map_err(|e| match e {
                    Error::Unsupported { backend, reason, .. } => {
                        Error::Unsupported { backend, what: "system memory shared between devices", reason }
                    }
                    e => e,
                })?;
                self.buffer_of(memory, len)
            }
        };
        let mut reach = vec![self.info().ordinal];
        reach.extend(peers.iter().map(|p| p.info().ordinal).filter(|o| *o != self.info().ordinal));
        Ok(PeerBuffer { buffer, placement, reach, _peers: peers.iter().map(|p| p.raw_arc().clone()).collect() })
    }
}

impl<B: Backend, T: DeviceCopy> PeerBuffer<B, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.buffer.len()
    }
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }
    /// The ordinal of the device it was allocated through (whose memory it is, in
    /// [`PeerPlacement::DeviceMemory`]).
    pub fn device_ordinal(&self) -> usize {
        self.reach[0]
    }
    /// Where it lies.
    pub fn placement(&self) -> PeerPlacement {
        self.placement
    }
    /// Whether kernels on device `ordinal` may use it: its own device or a peer.
    pub fn reaches(&self, ordinal: usize) -> bool {
        self.reach.contains(&ordinal)
    }
    /// The devices whose kernels may use it, its own first.
    pub fn devices(&self) -> &[usize] {
        &self.reach
    }
    /// Its address, the same on every device that reaches it, as a kernel argument.
    pub fn arg(&self) -> KernelArg {
        self.buffer.arg()
    }
    /// Overwrites elements `offset..offset + data.len()`, after every launch that used it.
    pub fn write_at(&mut self, offset: usize, data: &[T]) -> Result<()> {
        self.buffer.write_at(offset, data)
    }
    /// Reads elements `offset..offset + out.len()` into `out`, after every launch that used it.
    /// It takes the buffer mutably: a typed launch borrows it (shared, as kernels on several
    /// devices use it at once) until the launch is known done, so no read overlaps a launch
    /// starting on another thread, nor holds its tracking while that launch starts.
    pub fn read_at(&mut self, offset: usize, out: &mut [T]) -> Result<()> {
        self.buffer.read_at(offset, out)
    }
    /// Copies the whole buffer to the host, after every launch that used it (mutably, as
    /// [`read_at`](Self::read_at)).
    pub fn download(&mut self) -> Result<Vec<T>>
    where
        T: Default,
    {
        self.buffer.download()
    }

    /// The error of a launch that used this memory and failed, if any is known now (never
    /// waits).
    pub fn failed_use(&self) -> Option<String> {
        self.buffer.in_flight().failure()
    }

    pub(crate) fn in_flight(&self) -> &InFlight<B> {
        self.buffer.in_flight()
    }
}
