//! Host threads on a barrier of system scope that kernels use too: [`SystemBarrier`].
//!
//! The barrier lives in memory both sides reach ([`SystemBuffer`]); kernels take it as an
//! `xb::barrier<xb::thread_scope_system>*`. Host threads run the same protocol source as the
//! kernels, compiled for the host platform layer (hip-src/host/system_barrier.cpp, linked
//! into this crate): one protocol, two sides. In the shared form both sides' atomics update
//! the same words; in the split form ([`SystemBarrier::split`]) each side counts on words of
//! its own and the sides hand over their phase counts (hip-src/include/xbarrier/
//! engine_system.hpp).
#![allow(unsafe_code)] // calls into the host side of the protocol

use std::ffi::c_void;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use xbarrier_api::{Backend, BarrierFault, Buffer, Device, Error, FaultRecord, LaunchArg, Result, SystemBuffer};

/// The bytes a token's copy takes here (the C++ side checks that a token fits).
const TOKEN_WORDS: usize = 4;

/// Where the C++ side writes a fault record: an `xb_fault_record`'s bytes, aligned as one.
#[repr(C, align(8))]
struct FaultBytes([u8; FaultRecord::SIZE]);

/// Numbers the barriers of this process, so that a token names the one that made it.
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A barrier of system scope that host threads and kernels share: `cuda::barrier<
/// cuda::thread_scope_system>`'s phases and tokens, with the host's side callable from any
/// Rust thread.
///
/// A kernel receives it as an `xb::barrier<xb::thread_scope_system>*` (the typed launchers
/// take `&SystemBarrier<B>` for that parameter type) and uses it as any barrier; host threads
/// [`arrive`](Self::arrive), [`wait`](Self::wait), [`arrive_and_wait`](Self::arrive_and_wait),
/// [`try_wait_for`](Self::try_wait_for) and [`arrive_and_drop`](Self::arrive_and_drop) on it
/// meanwhile. What a side writes before its arrival (in a [`SystemBuffer`], or any memory
/// the other side reads) is seen by the other side after a wait for that phase returns.
///
/// Two forms, the same to kernels and host threads:
/// - [`new`](Self::new), shared: one expected count, the host's participants plus the
///   kernels' threads, and any arrival counts toward it, as in CUDA. Both sides' atomics
///   update the same words, which on a GPU without native host atomics (PCIe) move between
///   host and device memory at every such atomic: hundreds of microseconds a phase.
/// - [`split`](Self::split): the host's and the kernels' participants counted apart, each
///   side with atomics on words of its own, handing over only its phase count: a few
///   microseconds a phase on the same GPU. A phase completes when both sides' shares of it
///   are in; an arrival counts on the side it is made from.
///
/// No completion function: the function would run on whichever side completes a phase,
/// host or device, so its code and its captures would need to be valid on both. The kernel's
/// parameter must be `xb::barrier<xb::thread_scope_system>*` with the default completion;
/// another type is a different object, and the typed launchers do not bind it.
///
/// Host waits poll with a back-off: a few polls, then yielding, then sleeps growing to
/// 100 µs, so a long wait does not hold a core. A wait ends with
/// [`Error::BarrierAbandoned`] when a kernel that uses the barrier fails (once its launch or
/// stream reported the failure, or the runtime reports the stream broken), and
/// [`try_wait_for`](Self::try_wait_for) with `false` at its timeout.
///
/// Dropping the barrier waits for the launches that used it: while a kernel still waits for
/// host arrivals on it, the drop waits too, so arrive (or `arrive_and_drop`) first.
///
/// ```
/// # fn main() -> xbarrier::Result<()> {
/// use std::time::Duration;
/// use xbarrier::{Device, Host, SystemBarrier};
/// let device = Device::<Host>::open(0)?;
/// let barrier = SystemBarrier::new(&device, 2)?; // two host threads
/// std::thread::scope(|s| -> xbarrier::Result<()> {
///     let other = s.spawn(|| barrier.arrive_and_wait());
///     let token = barrier.arrive(1)?;
///     barrier.wait(token)?;
///     other.join().expect("no panic")
/// })?;
/// // One arrival of two: the phase cannot complete, and the timed wait says so.
/// let token = barrier.arrive(1)?;
/// assert!(!barrier.try_wait_for(&token, Duration::from_millis(1))?);
/// # Ok(()) }
/// ```
pub struct SystemBarrier<B: Backend> {
    /// What launches are tracked by, in memory both sides reach: the shared form's barrier,
    /// or the split form's published phase counts (the host's at word 0, the kernels' at
    /// [`KERNEL_SLOT`], a cache line apart).
    memory: SystemBuffer<B, u64>,
    /// The split form's two objects.
    split: Option<Sides<B>>,
    checked: bool,
    max: u64,
    id: u64,
}

/// The split form's objects: each side's atomics stay in memory of its own. Managed memory
/// would not do for the kernels' object: small managed allocations share pages, and a page
/// that host threads touch moves back to the device at every kernel atomic.
struct Sides<B: Backend> {
    /// The host threads' object, in memory only the host uses (atomics, because the C++
    /// side writes it through shared references).
    host: Box<[AtomicU64]>,
    /// The kernels' object, in device memory, which only kernels use once it is set up.
    kernels: Buffer<B, u64>,
}

/// Where the kernels' published count lies among the split form's slots (in words).
const KERNEL_SLOT: usize = 16;

/// An arrival's token, for [`SystemBarrier::wait`] and [`SystemBarrier::try_wait_for`] on
/// the barrier that returned it.
#[derive(Clone, Debug)]
#[must_use = "a token is waited on with wait() or try_wait_for()"]
pub struct SystemToken {
    bytes: [u64; TOKEN_WORDS],
    barrier: u64,
}

impl<B: Backend> SystemBarrier<B> {
    /// A barrier of system scope on `device`, expecting `expected` arrivals per phase (host
    /// threads and kernel threads together), in memory both sides reach
    /// ([`Device::alloc_system`]).
    ///
    /// Errors: [`Error::Unsupported`] where the device cannot share such memory with host
    /// threads (the message names the device property) or this build has no host side
    /// (it needs Linux on x86-64 or AArch64 and a C++17 compiler at build time);
    /// [`Error::InvalidArgument`] for `expected` outside `1..=max()`.
    pub fn new(device: &Device<B>, expected: u64) -> Result<SystemBarrier<B>> {
        const CALL: &str = "SystemBarrier::new";
        let layout = shim::layout(B::KIND)?;
        check_count(CALL, "expected count", expected, layout.max)?;
        if layout.align > 256 || layout.bytes % 8 != 0 {
            return Err(unfit(&layout));
        }
        let barrier = SystemBarrier::with_memory(device, &layout, (layout.bytes / 8) as usize, None)?;
        barrier.call(CALL, |bar, fault, _, _| {
            // SAFETY: `bar` addresses a zero-filled allocation of the barrier's size and
            // alignment that no kernel uses yet.
            unsafe { shim::xb_system_init(bar, expected as i64, fault) }
        })?;
        Ok(barrier)
    }

    /// A barrier of system scope on `device` in its split form: `host` arrivals of host
    /// threads and `kernel` arrivals of kernel threads per phase, each side counting its
    /// own on words of its own (the host's in host memory, the kernels' in device memory),
    /// and each side publishes its phase count in memory both reach
    /// ([`Device::alloc_system`]), so that no atomic crosses the link. A
    /// phase completes when both sides' shares of it are in. Kernels and host threads use it
    /// as the shared form, with one difference: an arrival counts on the side it is made
    /// from. Once a side's share of a phase is in, that side's next arrivals count toward
    /// the next phase, even while the other side still owes arrivals of this one (with one
    /// count, as in CUDA, they would count in this phase); one call with more arrivals than
    /// its side's share still expects is an over-arrival (a fault in checked builds). A side
    /// whose participants all leave with `arrive_and_drop` completes its share of every
    /// later phase at once.
    ///
    /// ```
    /// # fn main() -> xbarrier::Result<()> {
    /// use xbarrier::{Device, Host, SystemBarrier};
    /// let device = Device::<Host>::open(0)?;
    /// // One host thread; a kernel of 64 threads takes `&barrier` and arrives 64 times.
    /// let barrier = SystemBarrier::split(&device, 1, 64)?;
    /// assert!(barrier.is_split());
    /// let token = barrier.arrive(1)?;
    /// assert!(!barrier.try_wait(&token)?, "the kernels' share is not in");
    /// // Each side has at least one participant: Error::InvalidArgument.
    /// assert!(matches!(SystemBarrier::split(&device, 0, 64), Err(xbarrier::Error::InvalidArgument { .. })));
    /// # Ok(()) }
    /// ```
    ///
    /// Errors: as [`new`](Self::new), with `host` and `kernel` each in `1..=max()`.
    pub fn split(device: &Device<B>, host: u64, kernel: u64) -> Result<SystemBarrier<B>> {
        const CALL: &str = "SystemBarrier::split";
        let layout = shim::layout(B::KIND)?;
        check_count(CALL, "host count", host, layout.max)?;
        check_count(CALL, "kernel count", kernel, layout.max)?;
        if layout.align > 8 || layout.bytes % 8 != 0 {
            return Err(unfit(&layout));
        }
        let words = (layout.bytes / 8) as usize;
        let sides = Sides { host: (0..words).map(|_| AtomicU64::new(0)).collect(), kernels: device.alloc(words)? };
        let mut barrier = SystemBarrier::with_memory(device, &layout, 2 * KERNEL_SLOT, Some(sides))?;
        // The kernels' object is set up here, then copied to the device.
        let mut image = vec![0u64; words];
        let slots = barrier.memory.host_address() as *mut u64;
        barrier.call(CALL, |bar, fault, _, _| {
            // SAFETY: `bar` is the host's zero-filled object and `image` a zero-filled one,
            // both of the barrier's size, aligned for it (align <= 8); `slots` holds
            // 2 * KERNEL_SLOT zero-filled words of memory both sides reach.
            unsafe {
                shim::xb_system_split_init(
                    bar,
                    image.as_mut_ptr().cast(),
                    host as i64,
                    kernel as i64,
                    slots,
                    slots.add(KERNEL_SLOT),
                    fault,
                )
            }
        })?;
        if let Some(sides) = barrier.split.as_mut() {
            sides.kernels.write(&image)?;
        }
        Ok(barrier)
    }

    /// A barrier whose launches `memory` (`words` of memory both sides reach) tracks.
    fn with_memory(
        device: &Device<B>,
        layout: &shim::Layout,
        words: usize,
        split: Option<Sides<B>>,
    ) -> Result<SystemBarrier<B>> {
        let memory = device.alloc_system::<u64>(words)?;
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(SystemBarrier { memory, split, checked: layout.checked, max: layout.max, id })
    }

    /// Whether it is the split form ([`split`](Self::split)).
    pub fn is_split(&self) -> bool {
        self.split.is_some()
    }

    /// The largest expected count a barrier of system scope can hold (`barrier::max()`; in
    /// the split form, each side's).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Whether its host side is checked code ([`crate::CHECKED`]); kernels that take it must
    /// be built the same way, which a launch checks.
    pub fn checked(&self) -> bool {
        self.checked
    }

    /// Arrives with `update` arrivals (`1..=max()`), without waiting.
    ///
    /// Errors: [`Error::InvalidArgument`] for an update outside `1..=max()`, in every build;
    /// [`Error::Fault`] in checked builds for more arrivals than the phase still expects
    /// (undefined in CUDA; in the split form, than the host's share of it still expects),
    /// attributed to the host thread ([`BarrierFault::by_host_thread`]).
    ///
    /// [`BarrierFault::by_host_thread`]: xbarrier_api::BarrierFault::by_host_thread
    pub fn arrive(&self, update: u64) -> Result<SystemToken> {
        if update == 0 || update > self.max {
            return Err(Error::InvalidArgument {
                call: "SystemBarrier::arrive",
                reason: format!("update {update} outside 1..={}", self.max),
            });
        }
        let mut bytes = [0u64; TOKEN_WORDS];
        self.call("SystemBarrier::arrive", |bar, fault, give_up, context| {
            // SAFETY: `bar` is this initialized barrier; `bytes` holds TOKEN_WORDS words,
            // the capacity the C++ side writes; `context` is what `give_up` expects.
            unsafe { shim::xb_system_arrive(bar, update as i64, bytes.as_mut_ptr(), fault, give_up, context) }
        })?;
        Ok(SystemToken { bytes, barrier: self.id })
    }

    /// Arrives once and waits for the phase to complete.
    pub fn arrive_and_wait(&self) -> Result<()> {
        let token = self.arrive(1)?;
        self.wait(token)
    }

    /// Arrives once and leaves: the next phases expect one arrival fewer.
    pub fn arrive_and_drop(&self) -> Result<()> {
        self.call("SystemBarrier::arrive_and_drop", |bar, fault, give_up, context| {
            // SAFETY: `bar` is this initialized barrier; `context` is what `give_up` expects.
            unsafe { shim::xb_system_arrive_and_drop(bar, fault, give_up, context) }
        })
    }

    /// Waits for the phase of `token` to complete.
    ///
    /// Errors: [`Error::BarrierAbandoned`] when a kernel that uses the barrier failed;
    /// [`Error::InvalidArgument`] for a token of another barrier.
    pub fn wait(&self, token: SystemToken) -> Result<()> {
        self.poll("SystemBarrier::wait", &token, None).map(drop)
    }

    /// Whether the phase of `token` has completed, now.
    pub fn try_wait(&self, token: &SystemToken) -> Result<bool> {
        self.test("SystemBarrier::try_wait", token)
    }

    /// Waits at most `timeout` for the phase of `token`: `Ok(false)` when it did not
    /// complete in time (the token stays valid for another wait).
    pub fn try_wait_for(&self, token: &SystemToken, timeout: Duration) -> Result<bool> {
        self.poll("SystemBarrier::try_wait_for", token, Some(Instant::now() + timeout))
    }

    /// The argument for a kernel's `xb::barrier<xb::thread_scope_system>*` parameter: the
    /// launch refuses a kernel built checked where this barrier's host side is not, or the
    /// reverse (their layouts differ).
    pub fn arg(&self) -> LaunchArg<'_, B> {
        match &self.split {
            Some(sides) => LaunchArg::system_object(&sides.kernels, &self.memory),
            None => LaunchArg::system(&self.memory),
        }
        .for_checked(self.checked)
    }

    fn test(&self, call: &'static str, token: &SystemToken) -> Result<bool> {
        if token.barrier != self.id {
            return Err(Error::InvalidArgument { call, reason: "the token is another barrier's".into() });
        }
        let mut done = 0u32;
        self.call(call, |bar, fault, _, _| {
            // SAFETY: `bar` is this initialized barrier; the token's bytes are what
            // xb_system_arrive wrote for it.
            unsafe { shim::xb_system_test(bar, token.bytes.as_ptr(), &mut done, fault) }
        })?;
        Ok(done != 0)
    }

    /// Polls until the phase completes, `deadline` passes, or a kernel using the barrier
    /// fails ([`Backoff`]).
    fn poll(&self, call: &'static str, token: &SystemToken, deadline: Option<Instant>) -> Result<bool> {
        let mut backoff = Backoff::new();
        loop {
            if self.test(call, token)? {
                return Ok(true);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            if let Some(cause) = backoff.step(deadline, || self.memory.failed_use()) {
                return Err(Error::BarrierAbandoned { call, cause });
            }
        }
    }

    /// Runs one host-side operation on the barrier, turning a fault into the error. The
    /// operation gets the give-up check for waits inside it (the C++ side's `give_up`).
    fn call(
        &self,
        call: &'static str,
        op: impl FnOnce(*mut c_void, *mut FaultBytes, GiveUp, *mut c_void) -> i32,
    ) -> Result<()> {
        let mut fault = FaultBytes([0u8; FaultRecord::SIZE]);
        let mut inner = InnerWait { memory: &self.memory, backoff: Backoff::new(), cause: None };
        let context = (&mut inner as *mut InnerWait<'_, B>).cast::<c_void>();
        let object = match &self.split {
            Some(sides) => sides.host.as_ptr() as *mut c_void,
            None => self.memory.host_address() as *mut c_void,
        };
        match op(object, &mut fault, give_up::<B>, context) {
            0 => Ok(()),
            1 => Err(BarrierFault::new(call, xbarrier_api::backend::decode_fault_record(&fault.0)).into()),
            _ => Err(Error::BarrierAbandoned {
                call,
                cause: inner.cause.unwrap_or_else(|| "a kernel that uses the barrier failed".into()),
            }),
        }
    }
}

/// A fresh barrier of system scope in the shared form, laid out on the host for memory that
/// only kernels use (a [`crate::PeerBarrier`]): its words, and what the C++ side says of it.
pub(crate) struct FreshObject {
    pub(crate) words: Vec<u64>,
    pub(crate) checked: bool,
    pub(crate) max: u64,
}

/// The words of a barrier of system scope expecting `expected` arrivals per phase, as
/// [`SystemBarrier::new`] initializes them in place.
pub(crate) fn fresh_object<B: Backend>(call: &'static str, expected: u64) -> Result<FreshObject> {
    let layout = shim::layout(B::KIND)?;
    check_count(call, "expected count", expected, layout.max)?;
    // The words are laid out in a Vec<u64>, so the object may ask for no more than that.
    if layout.align > 8 || layout.bytes % 8 != 0 {
        return Err(unfit(&layout));
    }
    let mut words = vec![0u64; (layout.bytes / 8) as usize];
    let mut fault = FaultBytes([0u8; FaultRecord::SIZE]);
    // SAFETY: `words` is a zero-filled object of the barrier's size, aligned for it (align
    // <= 8); `fault` has an xb_fault_record's size and alignment.
    match unsafe { shim::xb_system_init(words.as_mut_ptr().cast(), expected as i64, &mut fault) } {
        0 => Ok(FreshObject { words, checked: layout.checked, max: layout.max }),
        _ => Err(BarrierFault::new(call, xbarrier_api::backend::decode_fault_record(&fault.0)).into()),
    }
}

fn check_count(call: &'static str, what: &str, count: u64, max: u64) -> Result<()> {
    if count == 0 || count > max {
        return Err(Error::InvalidArgument { call, reason: format!("{what} {count} outside 1..={max}") });
    }
    Ok(())
}

fn unfit(layout: &shim::Layout) -> Error {
    Error::Unsupported {
        backend: layout.backend,
        what: "SystemBarrier",
        reason: format!("a barrier of {} bytes aligned to {} does not fit its allocation", layout.bytes, layout.align),
    }
}

/// How a host wait backs off: 64 polls, then yields for about 50 µs, then sleeps doubling
/// from 1 µs to 100 µs; whether a kernel using the barrier failed is looked at about once
/// per millisecond.
struct Backoff {
    start: Instant,
    checked_at: Instant,
    sleep: Duration,
    polls: u64,
}

impl Backoff {
    fn new() -> Backoff {
        let now = Instant::now();
        Backoff { start: now, checked_at: now, sleep: Duration::from_micros(1), polls: 0 }
    }

    /// One step after a failed poll (never past `deadline`); the failure `failed` reports,
    /// when it is asked and has one.
    fn step(&mut self, deadline: Option<Instant>, failed: impl FnOnce() -> Option<String>) -> Option<String> {
        let now = Instant::now();
        if now.duration_since(self.checked_at) >= Duration::from_millis(1) {
            self.checked_at = now;
            if let Some(cause) = failed() {
                return Some(cause);
            }
        }
        self.polls += 1;
        if self.polls < 64 {
            std::hint::spin_loop();
        } else if now.duration_since(self.start) < Duration::from_micros(50) {
            std::thread::yield_now();
        } else {
            let left = deadline.map_or(self.sleep, |d| d.saturating_duration_since(now));
            std::thread::sleep(self.sleep.min(left));
            self.sleep = (self.sleep * 2).min(Duration::from_micros(100));
        }
        None
    }
}

/// The C++ side's give-up check for waits inside a call: backs off, and says whether to give up.
type GiveUp = unsafe extern "C" fn(*mut c_void) -> i32;

/// What a wait inside a host call keeps between its back-off steps.
struct InnerWait<'a, B: Backend> {
    memory: &'a SystemBuffer<B, u64>,
    backoff: Backoff,
    /// The failure that ended the wait.
    cause: Option<String>,
}

/// One back-off step of a wait inside a host call (an arrival that finds a completion step
/// claimed and waits for its publish): 1 when a kernel that uses the barrier has failed,
/// so the call gives up; it may never publish.
///
/// # Safety
/// `context` must be the `InnerWait<B>` that [`SystemBarrier::call`] passed, alive and not
/// otherwise borrowed for the call.
unsafe extern "C" fn give_up<B: Backend>(context: *mut c_void) -> i32 {
    // SAFETY: the caller's contract; the C++ side hands back the context it was given, on
    // the thread that made the call, while the call runs.
    let inner = unsafe { &mut *context.cast::<InnerWait<'_, B>>() };
    let memory = inner.memory;
    match inner.backoff.step(None, || memory.failed_use()) {
        Some(cause) => {
            inner.cause = Some(cause);
            1
        }
        None => 0,
    }
}

impl<'b, B: Backend> From<&'b SystemBarrier<B>> for LaunchArg<'b, B> {
    fn from(barrier: &'b SystemBarrier<B>) -> LaunchArg<'b, B> {
        barrier.arg()
    }
}

/// What a typed launcher takes for a kernel's `xb::barrier<xb::thread_scope_system>*`
/// parameter: `&SystemBarrier<B>`, a barrier host threads take part in, or
/// `&PeerBarrier<B>`, one kernels on several devices meet at.
#[diagnostic::on_unimplemented(
    message = "an `xb::barrier<xb::thread_scope_system>*` kernel parameter takes `&SystemBarrier<B>` or `&PeerBarrier<B>`, not `{Self}`",
    label = "not a barrier of system scope on this backend"
)]
pub trait SystemBarrierArg<'b, B: Backend> {
    /// The launch argument: the barrier's address, and what tracks its use.
    fn launch_arg(self) -> LaunchArg<'b, B>;
}

impl<'b, B: Backend> SystemBarrierArg<'b, B> for &'b SystemBarrier<B> {
    fn launch_arg(self) -> LaunchArg<'b, B> {
        self.arg()
    }
}

/// The C++ side (hip-src/host/system_barrier.cpp), where this build has it.
mod shim {
    use std::ffi::c_void;

    use xbarrier_api::{BackendKind, Error, Result};

    use super::{FaultBytes, GiveUp};

    /// What the C++ side says of the barrier.
    pub(super) struct Layout {
        pub(super) backend: BackendKind,
        pub(super) bytes: u64,
        pub(super) align: u64,
        pub(super) max: u64,
        pub(super) checked: bool,
    }

    #[cfg(xbarrier_system_shim)]
    extern "C" {
        fn xb_system_layout(sizes: *mut u64);
        pub(super) fn xb_system_init(bar: *mut c_void, expected: i64, fault: *mut FaultBytes) -> i32;
        pub(super) fn xb_system_split_init(
            host: *mut c_void,
            kernel: *mut c_void,
            host_expected: i64,
            kernel_expected: i64,
            host_slot: *mut u64,
            kernel_slot: *mut u64,
            fault: *mut FaultBytes,
        ) -> i32;
        pub(super) fn xb_system_arrive(
            bar: *mut c_void,
            update: i64,
            token: *mut u64,
            fault: *mut FaultBytes,
            give_up: GiveUp,
            context: *mut c_void,
        ) -> i32;
        pub(super) fn xb_system_arrive_and_drop(
            bar: *mut c_void,
            fault: *mut FaultBytes,
            give_up: GiveUp,
            context: *mut c_void,
        ) -> i32;
        pub(super) fn xb_system_test(
            bar: *mut c_void,
            token: *const u64,
            done: *mut u32,
            fault: *mut FaultBytes,
        ) -> i32;
    }

    #[cfg(xbarrier_system_shim)]
    pub(super) fn layout(backend: BackendKind) -> Result<Layout> {
        let mut sizes = [0u64; 5];
        // SAFETY: writes five words into `sizes`.
        unsafe { xb_system_layout(sizes.as_mut_ptr()) };
        if sizes[2] > 8 * super::TOKEN_WORDS as u64 {
            return Err(Error::BadBundle(format!(
                "a system barrier's token takes {} bytes, more than this crate keeps",
                sizes[2]
            )));
        }
        Ok(Layout { backend, bytes: sizes[0], align: sizes[1], max: sizes[3], checked: sizes[4] != 0 })
    }

    #[cfg(not(xbarrier_system_shim))]
    pub(super) fn layout(backend: BackendKind) -> Result<Layout> {
        Err(Error::Unsupported { backend, what: "SystemBarrier", reason: env!("XBAR_SYSTEM_SHIM_MISSING").into() })
    }

    // Without the C++ side `layout` fails first, so these are never called. Each has the
    // contract of the C++ function it stands for (hip-src/host/system_barrier.cpp).
    /// # Safety
    /// Never called (see above).
    #[cfg(not(xbarrier_system_shim))]
    pub(super) unsafe fn xb_system_init(_: *mut c_void, _: i64, _: *mut FaultBytes) -> i32 {
        unreachable!("SystemBarrier::new fails without the C++ side")
    }
    /// # Safety
    /// Never called (see above).
    #[cfg(not(xbarrier_system_shim))]
    pub(super) unsafe fn xb_system_split_init(
        _: *mut c_void,
        _: *mut c_void,
        _: i64,
        _: i64,
        _: *mut u64,
        _: *mut u64,
        _: *mut FaultBytes,
    ) -> i32 {
        unreachable!("SystemBarrier::split fails without the C++ side")
    }
    /// # Safety
    /// Never called (see above).
    #[cfg(not(xbarrier_system_shim))]
    pub(super) unsafe fn xb_system_arrive(
        _: *mut c_void,
        _: i64,
        _: *mut u64,
        _: *mut FaultBytes,
        _: GiveUp,
        _: *mut c_void,
    ) -> i32 {
        unreachable!("SystemBarrier::new fails without the C++ side")
    }
    /// # Safety
    /// Never called (see above).
    #[cfg(not(xbarrier_system_shim))]
    pub(super) unsafe fn xb_system_arrive_and_drop(
        _: *mut c_void,
        _: *mut FaultBytes,
        _: GiveUp,
        _: *mut c_void,
    ) -> i32 {
        unreachable!("SystemBarrier::new fails without the C++ side")
    }
    /// # Safety
    /// Never called (see above).
    #[cfg(not(xbarrier_system_shim))]
    pub(super) unsafe fn xb_system_test(_: *const c_void, _: *const u64, _: *mut u32, _: *mut FaultBytes) -> i32 {
        unreachable!("SystemBarrier::new fails without the C++ side")
    }
}
