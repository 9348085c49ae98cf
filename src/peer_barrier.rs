//! A barrier of system scope whose participants are kernels on several devices:
//! [`PeerBarrier`].
//!
//! The barrier is `xb::barrier<xb::thread_scope_system>` in the shared form (one protocol
//! word that every participant's atomics update), placed in a [`PeerBuffer`]: the first
//! device's memory, which the other devices reach as peers, or, on request, memory the
//! system shares, for devices without a peer path with atomics. Kernels on every device run the same device
//! code as for a barrier of system scope shared with host threads, and their atomics of
//! system scope meet in one word.

use xbarrier_api::{Backend, Device, Error, LaunchArg, PeerBuffer, PeerPlacement, Result};

use crate::system_barrier::fresh_object;
use crate::SystemBarrierArg;

/// A barrier of system scope for kernels on several devices at once: `cuda::barrier<
/// cuda::thread_scope_system>`'s phases, tokens, `arrive_and_drop` and timed waits, with
/// participants in grids on each device. A kernel takes it as an
/// `xb::barrier<xb::thread_scope_system>*` (typed launchers take `&PeerBarrier<B>` for that
/// parameter, on any of its devices); what a kernel writes before its arrival, in memory any
/// of the devices reaches (a [`PeerBuffer`]), the others read after a wait for that phase.
///
/// [`new`](Self::new) places the barrier in the first device's memory, which every other
/// device must reach over a peer path with native atomics (NVLink on NVIDIA; peer-to-peer
/// PCIe or Infinity Fabric with atomics on AMD), or it fails with [`Error::Unsupported`]
/// naming what is missing. For devices without one, [`new_in`](Self::new_in) with
/// [`PeerPlacement::SystemMemory`] places it in memory the system shares (managed memory
/// that migrates between the devices, or host memory where every device's link to the CPU
/// has atomics): correct without a peer path, and much slower. Host
/// threads do not take part ([`crate::SystemBarrier`] is the one for host threads). Each
/// device's kernels that take part must all run at once: a cooperative launch per device,
/// on a stream of that device.
///
/// ```
/// # fn main() -> xbarrier::Result<()> {
/// use xbarrier::{Device, Host, Launch, LaunchArg, LaunchConfig, PeerBarrier, PeerPlacement};
/// // The host backend's two devices stand in for two GPUs.
/// let devices = [Device::<Host>::open(0)?, Device::<Host>::open(1)?];
/// let bundle = xbarrier_conformance::bundle()?;
/// // One thread on each device; the barrier lives in device 0's memory, and `flag` in
/// // device 1's, which device 0's kernel writes.
/// let barrier = PeerBarrier::new(&[&devices[0], &devices[1]], 2)?;
/// let flag = devices[1].alloc_peer::<u64>(1, &[&devices[0]])?;
/// std::thread::scope(|s| {
///     let sides: Vec<_> = (0..2u32)
///         .map(|side| {
///             let (device, barrier, flag, bundle) = (&devices[side as usize], &barrier, &flag, &bundle);
///             s.spawn(move || -> xbarrier::Result<()> {
///                 let kernel = device.load(bundle)?.kernel("xbc_multi_gpu_timeout")?;
///                 let stream = device.stream()?;
///                 let report = device.alloc::<u64>(8)?;
///                 let args = [barrier.arg(), LaunchArg::peer(flag), LaunchArg::buffer(&report), side.into(), 1_000_000u64.into()];
///                 // SAFETY: xbc_multi_gpu_timeout(system_barrier*, uint64_t* flag,
///                 // unsigned long long* report, unsigned side, unsigned long long timeout_ns).
///                 unsafe { Launch::start(&stream, &kernel, &LaunchConfig::new(1, 32), &args)? }.wait()?;
///                 assert_eq!(report.download()?[0], 0, "side 0's timed wait saw the phase complete early");
///                 Ok(())
///             })
///         })
///         .collect();
///     sides.into_iter().try_for_each(|side| side.join().expect("no panic"))
/// })?;
/// // GPUs without a peer path with atomics share a barrier in system memory instead.
/// assert_eq!(barrier.placement(), PeerPlacement::DeviceMemory);
/// let shared = PeerBarrier::new_in(PeerPlacement::SystemMemory, &[&devices[0], &devices[1]], 2)?;
/// assert_eq!((shared.placement(), shared.devices()), (PeerPlacement::SystemMemory, &[0, 1][..]));
/// assert!(PeerBarrier::new(&[&devices[0]], 0).is_err(), "at least one arrival per phase");
/// # Ok(()) }
/// ```
pub struct PeerBarrier<B: Backend> {
    memory: PeerBuffer<B, u64>,
    checked: bool,
    max: u64,
    expected: u64,
}

impl<B: Backend> PeerBarrier<B> {
    /// A barrier expecting `expected` arrivals per phase from kernels on `devices`, in the
    /// memory of `devices[0]`, which the others reach as peers
    /// ([`new_in`](Self::new_in)`(PeerPlacement::DeviceMemory, ..)`). The same device may be
    /// named more than once (several streams of one GPU need no peer path).
    ///
    /// Errors: [`Error::InvalidArgument`] for no device or `expected` outside `1..=max()`;
    /// [`Error::Unsupported`] where a device cannot reach the first one's memory with native
    /// atomics (the message says which property is missing), or this build has no host
    /// side to lay the barrier out with (as [`crate::SystemBarrier::new`]).
    pub fn new(devices: &[&Device<B>], expected: u64) -> Result<PeerBarrier<B>> {
        Self::place("PeerBarrier::new", PeerPlacement::DeviceMemory, devices, expected)
    }

    /// A barrier as [`new`](Self::new) makes, in `placement` ([`Device::alloc_peer_in`]).
    ///
    /// Errors: as [`new`](Self::new); in [`PeerPlacement::SystemMemory`],
    /// [`Error::Unsupported`] names the device property each device lacks.
    pub fn new_in(placement: PeerPlacement, devices: &[&Device<B>], expected: u64) -> Result<PeerBarrier<B>> {
        Self::place("PeerBarrier::new_in", placement, devices, expected)
    }

    fn place(
        call: &'static str,
        placement: PeerPlacement,
        devices: &[&Device<B>],
        expected: u64,
    ) -> Result<PeerBarrier<B>> {
        let Some((first, peers)) = devices.split_first() else {
            return Err(Error::InvalidArgument { call, reason: "no device to place the barrier on".into() });
        };
        let object = fresh_object::<B>(call, expected).map_err(|e| match e {
            Error::Unsupported { backend, reason, .. } => Error::Unsupported { backend, what: "PeerBarrier", reason },
            e => e,
        })?;
        let mut memory = first.alloc_peer_in::<u64>(placement, object.words.len(), peers)?;
        memory.write_at(0, &object.words)?;
        Ok(PeerBarrier { memory, checked: object.checked, max: object.max, expected })
    }

    /// Where it lies.
    pub fn placement(&self) -> PeerPlacement {
        self.memory.placement()
    }

    /// The ordinals of the devices whose kernels may take part, the one whose memory holds
    /// the barrier first.
    pub fn devices(&self) -> &[usize] {
        self.memory.devices()
    }

    /// The arrivals each phase expects, as made (before any `arrive_and_drop`).
    pub fn expected(&self) -> u64 {
        self.expected
    }

    /// The largest expected count a barrier of system scope can hold (`barrier::max()`).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Whether its layout is checked code's ([`crate::CHECKED`]); kernels that take it must
    /// be built the same way, which a launch checks.
    pub fn checked(&self) -> bool {
        self.checked
    }

    /// The argument for a kernel's `xb::barrier<xb::thread_scope_system>*` parameter, on a
    /// stream of any of its devices: the launch refuses another device
    /// ([`Error::DeviceMismatch`]) and a kernel built checked where the barrier is not, or
    /// the reverse ([`Error::InvalidArgument`]).
    pub fn arg(&self) -> LaunchArg<'_, B> {
        LaunchArg::peer(&self.memory).for_checked(self.checked)
    }
}

impl<'b, B: Backend> SystemBarrierArg<'b, B> for &'b PeerBarrier<B> {
    fn launch_arg(self) -> LaunchArg<'b, B> {
        self.arg()
    }
}
