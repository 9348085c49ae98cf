//! Typed launches: what the launchers `xbarrier-build` generates return and take.
//!
//! A generated launcher takes `&Buffer<B, T>` for a `const T*` parameter, `&mut Buffer<B, T>`
//! for a `T*` and the Rust scalar for a scalar, so the compiler rejects a wrong type or
//! count. It returns a [`Launch`], which keeps those borrows until the work is known to be
//! done: a buffer cannot be dropped, written or read from the host while a kernel that uses
//! it may still run.
#![allow(unsafe_code)] // Launch::start forwards Stream::launch's contract to generated code

use std::marker::PhantomData;

use crate::tracking::InFlight;
use crate::{
    Backend, Buffer, DeviceCopy, Error, Kernel, KernelArg, LaunchConfig, PeerBuffer, Result, Stream, SystemBuffer,
};

/// One argument of a typed launch: a scalar, or a buffer (its address, its device, and what
/// tracks its use).
pub struct LaunchArg<'b, B: Backend> {
    value: KernelArg,
    buffer: Option<(usize, &'b InFlight<B>)>,
    /// A second tracker of the same launch and its memory's device (an object in device
    /// memory that kernels use beside memory shared with host threads:
    /// [`LaunchArg::system_object`]).
    also: Option<(usize, &'b InFlight<B>)>,
    /// The devices whose kernels may use the memory, where that is not only its own
    /// ([`PeerBuffer`]; empty for every other argument).
    peers: &'b [usize],
    /// Memory shared with host threads and other kernels while the launch runs: other
    /// streams' work on it is not waited for.
    concurrent: bool,
    /// Whether the kernel's code must be checked (or must not be), where the argument's
    /// host side was built one way.
    checked: Option<bool>,
}

impl<'b, B: Backend> LaunchArg<'b, B> {
    /// The address of `buffer` (a `T*` or `const T*` parameter).
    pub fn buffer<T: DeviceCopy>(buffer: &'b Buffer<B, T>) -> LaunchArg<'b, B> {
        LaunchArg {
            value: buffer.arg(),
            buffer: Some((buffer.device_ordinal(), buffer.in_flight())),
            also: None,
            peers: &[],
            concurrent: false,
            checked: None,
        }
    }
    /// The address of memory shared with host threads (a `T*` or `const T*` parameter, or
    /// a `barrier<thread_scope_system>*` in it). The launch does not wait for other streams'
    /// work on it, which may run at the same time.
    pub fn system<T: DeviceCopy>(memory: &'b SystemBuffer<B, T>) -> LaunchArg<'b, B> {
        LaunchArg {
            value: memory.arg(),
            buffer: Some((memory.device_ordinal(), memory.in_flight())),
            also: None,
            peers: &[],
            concurrent: true,
            checked: None,
        }
    }
    /// The address of `object`, device memory that only kernels use, for an object whose
    /// other part lies in `shared`, memory host threads use meanwhile (a split barrier of
    /// system scope): the launch is tracked by both (their drops wait for it, and host
    /// waits on `shared` give up when it fails), and, as for [`system`](Self::system), does
    /// not wait for other streams' work on them, which may run at the same time.
    pub fn system_object<T: DeviceCopy, U: DeviceCopy>(
        object: &'b Buffer<B, T>,
        shared: &'b SystemBuffer<B, U>,
    ) -> LaunchArg<'b, B> {
        LaunchArg {
            value: object.arg(),
            buffer: Some((shared.device_ordinal(), shared.in_flight())),
            also: Some((object.device_ordinal(), object.in_flight())),
            peers: &[],
            concurrent: true,
            checked: None,
        }
    }
    /// The address of memory that kernels on several devices use at once (a `T*` or
    /// `const T*` parameter, or a `barrier<thread_scope_system>*` in it): the launch may run
    /// on any device that `memory` [reaches](PeerBuffer::reaches), and does not wait for
    /// other streams' work on it, which may run at the same time (on the other devices).
    pub fn peer<T: DeviceCopy>(memory: &'b PeerBuffer<B, T>) -> LaunchArg<'b, B> {
        LaunchArg {
            value: memory.arg(),
            buffer: Some((memory.device_ordinal(), memory.in_flight())),
            also: None,
            peers: memory.devices(),
            concurrent: true,
            checked: None,
        }
    }
    /// The same argument, for kernels whose code is checked (`true`) or not (`false`) only:
    /// [`Launch::start`] refuses another kernel ([`Error::InvalidArgument`]). For objects
    /// whose layout differs between checked and release code.
    pub fn for_checked(self, checked: bool) -> LaunchArg<'b, B> {
        LaunchArg { checked: Some(checked), ..self }
    }
}

/// What a typed launcher takes for a kernel's `const T*` parameter: `&Buffer<B, T>` (or
/// `&mut`), `&SystemBuffer<B, T>`, memory host threads use meanwhile, or `&PeerBuffer<B, T>`,
/// memory kernels on other devices use meanwhile.
#[diagnostic::on_unimplemented(
    message = "a `const {T}*` kernel parameter takes `&Buffer<B, {T}>`, `&SystemBuffer<B, {T}>` or `&PeerBuffer<B, {T}>`, not `{Self}`",
    label = "not a buffer of `{T}` on this backend"
)]
pub trait PtrArg<'b, B: Backend, T: DeviceCopy> {
    /// The launch argument: the memory's address, and what tracks its use.
    fn launch_arg(self) -> LaunchArg<'b, B>;
}

/// What a typed launcher takes for a kernel's `T*` parameter, which the kernel may write:
/// `&mut Buffer<B, T>`, `&SystemBuffer<B, T>`, memory host threads use meanwhile, or
/// `&PeerBuffer<B, T>`, memory kernels on other devices use meanwhile.
#[diagnostic::on_unimplemented(
    message = "a `{T}*` kernel parameter, which the kernel may write, takes `&mut Buffer<B, {T}>`, `&SystemBuffer<B, {T}>` or `&PeerBuffer<B, {T}>`, not `{Self}`",
    label = "not a writable buffer of `{T}` on this backend"
)]
pub trait MutPtrArg<'b, B: Backend, T: DeviceCopy> {
    /// The launch argument: the memory's address, and what tracks its use.
    fn launch_arg(self) -> LaunchArg<'b, B>;
}

impl<'b, B: Backend, T: DeviceCopy> PtrArg<'b, B, T> for &'b Buffer<B, T> {
    fn launch_arg(self) -> LaunchArg<'b, B> {
        LaunchArg::buffer(self)
    }
}
impl<'b, B: Backend, T: DeviceCopy> PtrArg<'b, B, T> for &'b mut Buffer<B, T> {
    fn launch_arg(self) -> LaunchArg<'b, B> {
        LaunchArg::buffer(self)
    }
}
impl<'b, B: Backend, T: DeviceCopy> PtrArg<'b, B, T> for &'b SystemBuffer<B, T> {
    fn launch_arg(self) -> LaunchArg<'b, B> {
        LaunchArg::system(self)
    }
}
impl<'b, B: Backend, T: DeviceCopy> PtrArg<'b, B, T> for &'b PeerBuffer<B, T> {
    fn launch_arg(self) -> LaunchArg<'b, B> {
        LaunchArg::peer(self)
    }
}
impl<'b, B: Backend, T: DeviceCopy> MutPtrArg<'b, B, T> for &'b mut Buffer<B, T> {
    fn launch_arg(self) -> LaunchArg<'b, B> {
        LaunchArg::buffer(self)
    }
}
impl<'b, B: Backend, T: DeviceCopy> MutPtrArg<'b, B, T> for &'b SystemBuffer<B, T> {
    fn launch_arg(self) -> LaunchArg<'b, B> {
        LaunchArg::system(self)
    }
}
impl<'b, B: Backend, T: DeviceCopy> MutPtrArg<'b, B, T> for &'b PeerBuffer<B, T> {
    fn launch_arg(self) -> LaunchArg<'b, B> {
        LaunchArg::peer(self)
    }
}

impl<B: Backend, T> From<T> for LaunchArg<'_, B>
where
    KernelArg: From<T>,
{
    fn from(value: T) -> Self {
        LaunchArg {
            value: KernelArg::from(value),
            buffer: None,
            also: None,
            peers: &[],
            concurrent: false,
            checked: None,
        }
    }
}

/// A launched kernel whose buffers stay borrowed until its stream has run it.
///
/// [`wait`](Self::wait) synchronizes the stream and reports what
/// [`Stream::synchronize`] reports (a barrier fault, a timeout). Dropping it also waits for
/// the stream, but leaves those reports to the stream's next `synchronize`, so nothing is
/// lost. Either way the borrow ends only once the device is done with the buffers: the borrow
/// checker refuses to drop or touch them before. Beyond the borrows, each buffer remembers
/// the last work of each stream that used it, so that the host's reads, writes and frees,
/// and other streams' work, wait for it even where the borrow ended early
/// ([`detach`](Self::detach), or `std::mem::forget` of the `Launch`).
///
/// ```
/// # fn main() -> xbarrier_api::Result<()> {
/// use xbarrier_api::{Device, Launch, LaunchArg, LaunchConfig};
/// let device = Device::<xbarrier::Host>::open(0)?;
/// let module = device.load(&xbarrier_conformance::bundle()?)?;
/// let kernel = module.kernel("xbc_round_trip")?; // xbc_round_trip(unsigned phases)
/// let stream = device.stream()?;
/// // What a generated launcher does inside, so that its callers write no unsafe.
/// // SAFETY: xbc_round_trip takes one unsigned.
/// let launch = unsafe { Launch::start(&stream, &kernel, &LaunchConfig::new(1, 64), &[LaunchArg::from(10u32)])? };
/// launch.wait()?;
/// # Ok(()) }
/// ```
#[must_use = "a Launch keeps its buffers borrowed until the work is done: wait() reports its errors"]
pub struct Launch<'a, B: Backend> {
    stream: &'a Stream<B>,
    waited: bool,
    /// The buffers the launch uses, borrowed (some mutably) for `'a`.
    _buffers: PhantomData<&'a mut ()>,
}

impl<'a, B: Backend> Launch<'a, B> {
    /// Launches `kernel` on `stream` with `args`, after checking that the kernel and every
    /// buffer belong to the stream's device, or, for a [`PeerBuffer`], that it reaches that
    /// device ([`Error::DeviceMismatch`]); the configuration is
    /// checked as [`Stream::launch`] checks it.
    ///
    /// A buffer that another stream's unfinished work uses makes the launch wait for that
    /// stream first.
    ///
    /// # Safety
    /// `args` must be the kernel's C++ parameters exactly (count, order, types), and the
    /// kernel must stay within the buffers it is given for these arguments and this
    /// configuration. Launchers generated by `xbarrier-build` take the types from the
    /// kernel's declaration, checked by the compiler; what the kernel does with its pointers
    /// is the kernel's own contract (docs/typed-launches.md).
    pub unsafe fn start(
        stream: &'a Stream<B>,
        kernel: &Kernel<B>,
        config: &LaunchConfig,
        args: &[LaunchArg<'_, B>],
    ) -> Result<Launch<'a, B>> {
        for (index, arg) in args.iter().enumerate() {
            let mut memories = arg.buffer.into_iter().chain(arg.also);
            let here = stream.device_ordinal();
            if let Some((found, _)) = memories.find(|&(d, _)| d != here && !arg.peers.contains(&here)) {
                return Err(Error::DeviceMismatch {
                    kernel: kernel.name().to_owned(),
                    what: format!("argument {} (a buffer)", index + 1),
                    found,
                    stream: stream.device_ordinal(),
                });
            }
        }
        for (index, arg) in args.iter().enumerate() {
            if let Some(checked) = arg.checked.filter(|&c| c != kernel.checked()) {
                let build = |c: bool| if c { "checked" } else { "release (unchecked)" };
                return Err(Error::InvalidArgument {
                    call: "launch",
                    reason: format!(
                        "argument {} of `{}` was built for {} kernel code, the kernel's module is {}: build both \
                         with the same XBAR_CHECKED setting (xbarrier's `checked` feature or the build profile)",
                        index + 1,
                        kernel.name(),
                        build(checked),
                        build(kernel.checked())
                    ),
                });
            }
        }
        let buffers = || args.iter().flat_map(|a| a.buffer.into_iter().chain(a.also).map(|(_, in_flight)| in_flight));
        for arg in args.iter().filter(|a| !a.concurrent) {
            if let Some((_, in_flight)) = arg.buffer {
                in_flight.before_use(stream.shared())?;
            }
        }
        let values: Vec<KernelArg> = args.iter().map(|a| a.value).collect();
        // SAFETY: the caller guarantees that the arguments match the kernel; the buffers are
        // borrowed for the call, and their tracking makes everything that touches them later
        // wait for the launch.
        let (ticket, result) = unsafe { stream.enqueue(kernel, config, &values) };
        if let Some(ticket) = ticket {
            // Accepted by the runtime, even where a later step failed: the buffers are in use.
            for in_flight in buffers() {
                in_flight.used_by(stream.shared(), ticket);
            }
        }
        // A kernel that ran and failed (a backend whose launches return at their end reports
        // it here): host threads waiting on a barrier in memory shared with it give up. An
        // error before the kernel ran (a configuration the runtime refused) touched nothing.
        let ran_and_failed =
            matches!(&result, Err(Error::Fault(_) | Error::KernelException { .. } | Error::LaunchTimeout { .. }));
        if let (true, Err(e)) = (ran_and_failed, &result) {
            for arg in args.iter().filter(|a| a.concurrent) {
                for (_, in_flight) in arg.buffer.into_iter().chain(arg.also) {
                    in_flight.launch_failed(e);
                }
            }
        }
        result.map(|()| Launch { stream, waited: false, _buffers: PhantomData })
    }

    /// Ends the borrows without waiting, for a pipeline of launches on one stream: the next
    /// launch may take a buffer this one writes. The buffers stay tracked: the host's reads,
    /// writes and frees of them, and other streams' work on them, still wait for this launch,
    /// and [`Stream::synchronize`] reports its errors.
    pub fn detach(mut self) {
        self.waited = true;
    }

    /// Waits for the stream ([`Stream::synchronize`]): a barrier fault or a timeout of this
    /// launch, or of an earlier one on the stream, is reported here.
    pub fn wait(mut self) -> Result<()> {
        self.waited = true;
        self.stream.synchronize()
    }
}

impl<B: Backend> Drop for Launch<'_, B> {
    fn drop(&mut self) {
        if !self.waited {
            self.stream.wait_quietly();
        }
    }
}
