//! Running kernel threads: each thread of a block is a fiber (a stackful coroutine) and a few
//! OS threads per block run them. A barrier wait yields the fiber to its siblings, so a
//! 1024-thread block costs fiber switches, not OS context switches, while fibers on
//! different OS threads still race on the protocol's atomics for real. When a whole round
//! of fibers made no progress the OS thread parks until a phase is published (notify) or a
//! short timeout passes.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::abi::ThreadRecord;
use crate::args::ArgRegisters;
use crate::module::Slot;

/// Rounds without progress before an OS thread parks.
const SPIN_ROUNDS: u32 = 32;
/// The longest park of an OS thread whose kernel threads poll memory (relax): a plain store
/// that ends such a loop announces nothing, so the thread looks again this soon. At most
/// 100 000 wake-ups a second while a loop polls, instead of a spinning core.
const POLLING_PARK: Duration = Duration::from_micros(10);

/// Lets this OS thread's timed waits end when asked: Linux rounds them up by the thread's
/// timer slack (50 µs by default), which would make every POLLING_PARK a 50 µs one.
fn precise_timeouts() {
    extern "C" {
        fn prctl(option: std::ffi::c_int, ...) -> std::ffi::c_int;
    }
    const PR_SET_TIMERSLACK: std::ffi::c_int = 29;
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long (nanoseconds) and changes only the
    // calling thread's timer slack; a failure leaves the default, which is only slower.
    unsafe {
        prctl(PR_SET_TIMERSLACK, 1000 as std::ffi::c_ulong);
    }
}

/// Launch-wide wake-up: an epoch bumped by every publish and a condition variable for
/// parked OS threads.
pub struct LaunchSync {
    epoch: AtomicU64,
    parked: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

impl LaunchSync {
    pub fn new() -> LaunchSync {
        LaunchSync { epoch: AtomicU64::new(0), parked: AtomicUsize::new(0), lock: Mutex::new(()), wake: Condvar::new() }
    }

    pub fn notify(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if self.parked.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_all();
        }
    }

    fn park(&self, seen: u64, timeout: Duration) {
        self.parked.fetch_add(1, Ordering::SeqCst);
        let guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.epoch.load(Ordering::SeqCst) == seen {
            let _ = self.wake.wait_timeout(guard, timeout);
        }
        self.parked.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `notify_fn` of the launch record.
pub unsafe extern "C" fn notify(scheduler: *mut c_void) {
    // SAFETY: the launch record's scheduler field points at the launch's LaunchSync, which
    // outlives every kernel thread of the launch.
    let sync = unsafe { &*(scheduler as *const LaunchSync) };
    sync.notify();
}

/// `yield_fn` of the launch record: suspends the calling fiber.
pub unsafe extern "C" fn yield_fiber(fiber: *mut c_void) {
    // SAFETY: `fiber` is the Yielder stored by the fiber's entry closure in its own thread
    // record, and only that fiber (running on its own stack) calls this.
    let yielder = unsafe { &*(fiber as *const Yielder<(), ()>) };
    yielder.suspend(());
}

/// Fiber stacks are reused across blocks and launches (mapping one costs system calls).
/// Each stack is two memory mappings (stack and guard page), so the pool keeps at most
/// `POOLED_STACKS` of them and unmaps the rest.
static STACKS: Mutex<Vec<(usize, DefaultStack)>> = Mutex::new(Vec::new());
const POOLED_STACKS: usize = 4096;

fn take_stack(size: usize) -> std::io::Result<DefaultStack> {
    let mut pool = STACKS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(at) = pool.iter().rposition(|(s, _)| *s == size) {
        return Ok(pool.swap_remove(at).1);
    }
    drop(pool);
    DefaultStack::new(size)
}

fn give_stack(size: usize, stack: DefaultStack) {
    let mut pool = STACKS.lock().unwrap_or_else(|e| e.into_inner());
    if pool.len() < POOLED_STACKS {
        pool.push((size, stack));
    }
}

/// A raw pointer that may cross to the OS threads of one block (they use disjoint records).
pub struct SendPtr<T>(pub *mut T);
impl<T> Clone for SendPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SendPtr<T> {}
// SAFETY: each pointer is used by exactly one OS thread at a time (see run_block).
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SendPtr<T> {}

/// What the OS thread observed.
pub struct WorkerOutcome {
    pub aborted_threads: usize,
    /// Kernel threads that ended with an uncaught C++ exception.
    pub exceptions: usize,
    pub error: Option<std::io::Error>,
}

/// What every OS thread of a block needs to run its kernel threads.
pub struct BlockJob<'a> {
    /// The block's copy of the kernel object.
    pub slot: &'a Slot,
    /// The kernel's address in that copy.
    pub kernel: *const c_void,
    /// The launch's arguments.
    pub args: &'a ArgRegisters,
    /// Launch-wide wake-ups.
    pub sync: &'a LaunchSync,
    /// The launch's abort flag.
    pub abort: &'a std::sync::atomic::AtomicU32,
    /// When the launch's time is up.
    pub deadline: Option<Instant>,
    /// Stack size of each fiber.
    pub stack_size: usize,
}

/// Runs the kernel threads `threads` (records owned by the caller) to completion.
///
/// # Safety
/// - Every record in `threads` is valid, used by no other OS thread, and outlives this call.
/// - `job.kernel` is a kernel of `job.slot` and `job.args` matches its parameters (the launch contract).
pub unsafe fn run_fibers(job: &BlockJob<'_>, threads: &[SendPtr<ThreadRecord>]) -> WorkerOutcome {
    let BlockJob { slot, kernel, args, sync, abort, deadline, stack_size } = *job;
    precise_timeouts();
    let mut outcome = WorkerOutcome { aborted_threads: 0, exceptions: 0, error: None };
    type Fiber = Coroutine<(), (), i32, DefaultStack>;
    let mut fibers: Vec<(Fiber, *mut ThreadRecord)> = Vec::with_capacity(threads.len());
    for &SendPtr(record) in threads {
        let stack = match take_stack(stack_size) {
            Ok(stack) => stack,
            Err(e) => {
                outcome.error = Some(e);
                break;
            }
        };
        let (invoke, ints, floats, stack_args) =
            (slot.invoke, args.ints.as_ptr(), args.floats.as_ptr(), args.stack.as_ptr());
        let kernel_addr = kernel as usize;
        let record_addr = record as usize;
        let body = move |yielder: &Yielder<(), ()>, ()| -> i32 {
            // SAFETY: the record outlives the fiber (caller contract); the yielder lives on
            // this fiber's stack for as long as the kernel thread runs.
            unsafe {
                (*(record_addr as *mut ThreadRecord)).fiber = yielder as *const Yielder<(), ()> as *mut c_void;
                invoke(kernel_addr as *const c_void, ints, floats, stack_args)
            }
        };
        // SAFETY: `args` (borrowed through raw pointers) outlives every fiber: this function
        // drives all of them to completion before it returns.
        fibers.push((unsafe { Coroutine::with_stack_unchecked(stack, body) }, record));
    }
    if outcome.error.is_some() {
        // Could not start every thread: abort the launch so that the started ones unwind.
        abort.store(1, Ordering::SeqCst);
        sync.notify();
    }

    let mut idle = 0u32;
    let mut rounds = 0u64;
    while !fibers.is_empty() {
        let seen = sync.epoch.load(Ordering::SeqCst);
        let mut polled = false;
        let mut finished = false;
        let mut index = 0;
        while index < fibers.len() {
            let record = fibers[index].1;
            // SAFETY: set_current only stores the pointer in the slot's thread-local.
            unsafe { (slot.set_current)(record) };
            match fibers[index].0.resume(()) {
                CoroutineResult::Yield(()) => {
                    // SAFETY: the record is this OS thread's (caller contract), and its fiber,
                    // which set the flag, is suspended.
                    unsafe { polled |= std::mem::take(&mut (*record).polled) != 0 };
                    index += 1;
                }
                CoroutineResult::Return(code) => {
                    if code == 2 && abort.swap(1, Ordering::SeqCst) == 0 {
                        sync.notify(); // the other threads must not wait for this one
                    }
                    match code {
                        0 => {}
                        2 => outcome.exceptions += 1,
                        _ => outcome.aborted_threads += 1,
                    }
                    let (fiber, _) = fibers.swap_remove(index);
                    give_stack(stack_size, fiber.into_stack());
                    finished = true;
                }
            }
        }
        rounds += 1;
        if let Some(deadline) = deadline {
            if rounds.is_multiple_of(64) && Instant::now() > deadline && abort.swap(1, Ordering::SeqCst) == 0 {
                sync.notify();
            }
        }
        if finished || sync.epoch.load(Ordering::SeqCst) != seen {
            idle = 0;
            continue;
        }
        idle += 1;
        if idle > SPIN_ROUNDS {
            // Back off from 20 µs to 1 ms while nothing is published, never unboundedly; and
            // no longer than POLLING_PARK while some kernel thread polls plain memory.
            let mut park = Duration::from_micros(20u64 << (idle - SPIN_ROUNDS).min(6));
            if polled {
                park = park.min(POLLING_PARK);
            }
            sync.park(seen, park);
        } else {
            std::thread::yield_now();
        }
    }
    // SAFETY: the slot's thread-local must not keep pointing at records about to be freed.
    unsafe { (slot.set_current)(std::ptr::null_mut()) };
    outcome
}
