//! A launch on the host: blocks run on block slots (concurrently, all at once when the
//! launch is cooperative), each block's threads as fibers on a few OS threads.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use xbarrier_api::{BackendKind, BarrierFault, Error, FaultRecord, KernelArg, LaunchConfig, Result};

use crate::abi::{BlockRecord, LaunchRecord, ThreadRecord};
use crate::args::{marshal, ArgRegisters};
use crate::module::{Slot, SlotPool};
use crate::scheduler::{notify, run_fibers, yield_fiber, BlockJob, LaunchSync, SendPtr};
use crate::settings::Settings;

/// What every block of a launch shares.
struct Grid<'a> {
    module: &'a SlotPool,
    kernel: &'a str,
    config: &'a LaunchConfig,
    args: ArgRegisters,
    record: *mut LaunchRecord,
    sync: &'a LaunchSync,
    deadline: Option<Instant>,
    settings: &'a Settings,
}

// SAFETY: the launch record is shared on purpose: C++ writes it only through atomics or
// after winning `fault_claimed`, and Rust reads the fault only after every thread joined.
unsafe impl Sync for Grid<'_> {}

/// Runs `kernel` of `module` over the whole grid; returns when every thread has ended.
pub fn launch(
    module: &SlotPool,
    kernel: &str,
    config: &LaunchConfig,
    args: &[KernelArg],
    settings: &Settings,
) -> Result<()> {
    let args = marshal(args)?;
    let sync = LaunchSync::new();
    let wait_bound = match config.timeout {
        // Checked waits give up a little before the watchdog, so a deadlock is reported
        // as a fault with the barrier's state rather than as a bare timeout.
        Some(limit) => settings.wait_timeout.min(limit.mul_f64(0.8)),
        None => settings.wait_timeout,
    };
    let record = UnsafeCell::new(LaunchRecord {
        grid: config.grid.to_array(),
        block: config.block.to_array(),
        wait_timeout_ns: u64::try_from(wait_bound.as_nanos()).unwrap_or(u64::MAX),
        abort: AtomicU32::new(0),
        fault_claimed: AtomicU32::new(0),
        fault: FaultRecord::default(),
        scheduler: &sync as *const LaunchSync as *mut std::ffi::c_void,
        yield_fn: Some(yield_fiber),
        notify_fn: Some(notify),
    });
    let started = Instant::now();
    let grid = Grid {
        module,
        kernel,
        config,
        args,
        record: record.get(),
        sync: &sync,
        deadline: config.timeout.map(|t| started + t),
        settings,
    };

    let blocks = config.grid.count();
    let per_block = config.block.count();
    let budget = settings.max_resident_threads as u64;
    if config.cooperative && blocks * per_block > budget {
        return Err(Error::InvalidArgument {
            call: "launch",
            reason: format!(
                "a cooperative launch of {blocks} x {per_block} threads keeps {} kernel threads resident; the host backend can keep {budget} (two memory mappings each, vm.max_map_count)",
                blocks * per_block
            ),
        });
    }
    // Fewer blocks at once rather than more fiber stacks than the process may map.
    let concurrent = (settings.concurrent_blocks as u64).min((budget / per_block).max(1));
    let runners = if config.cooperative { blocks } else { blocks.min(concurrent) } as usize;
    let slots = if config.cooperative { module.acquire(runners)? } else { Vec::new() };
    let next_block = AtomicU64::new(0);
    let results: Vec<Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..runners)
            .map(|runner| {
                let slot = slots.get(runner).cloned();
                let (grid, next_block) = (&grid, &next_block);
                std::thread::Builder::new()
                    .name(format!("xb-block-{runner}"))
                    .spawn_scoped(scope, move || run_blocks(grid, slot, next_block, blocks))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| Err(io_error("a block runner panicked"))),
                Err(source) => Err(Error::Io { context: "spawning a block runner thread".into(), source }),
            })
            .collect()
    });
    if !slots.is_empty() {
        module.release(slots);
    }

    // Every kernel thread has ended: the record is ours alone again.
    let record = record.into_inner();
    if record.fault_claimed.load(Ordering::SeqCst) != 0 {
        return Err(BarrierFault::new(kernel, record.fault).into());
    }
    results.into_iter().collect::<Result<Vec<()>>>()?;
    // An overrun that no block noticed (the last blocks ended after the deadline) is
    // reported after the launch, as the LaunchConfig::timeout contract says.
    let overran = grid.deadline.is_some_and(|deadline| Instant::now() > deadline);
    if record.abort.load(Ordering::SeqCst) != 0 || overran {
        return Err(Error::LaunchTimeout {
            kernel: kernel.to_owned(),
            seconds: config.timeout.unwrap_or(Duration::ZERO).as_secs_f64(),
        });
    }
    Ok(())
}

fn io_error(what: &str) -> Error {
    Error::Io { context: what.to_owned(), source: std::io::Error::other("host backend") }
}

/// One block runner: holds a slot and runs blocks until none are left. A cooperative
/// launch hands each runner its slot and returns them all itself; otherwise the runner
/// takes one from the pool and gives it back. Returning a slot twice would put it in the
/// pool twice, and two later blocks would share its `__shared__` variables.
fn run_blocks(grid: &Grid<'_>, given: Option<Arc<Slot>>, next_block: &AtomicU64, blocks: u64) -> Result<()> {
    let owned = given.is_none();
    let slot = match given {
        Some(slot) => slot,
        None => grid.module.acquire(1)?.remove(0),
    };
    let kernel = slot.kernel(&grid.module.name, grid.kernel);
    // SAFETY: the abort flag lives in the launch record, which outlives every runner.
    let abort = unsafe { &(*grid.record).abort };
    let result = kernel.and_then(|kernel| loop {
        // A timed-out or aborted launch starts no more blocks: blocks check the deadline only
        // every so many scheduling rounds, which a grid of short blocks never reaches.
        if abort.load(Ordering::SeqCst) != 0 {
            return Ok(());
        }
        if grid.deadline.is_some_and(|deadline| Instant::now() > deadline) {
            abort.store(1, Ordering::SeqCst);
            grid.sync.notify();
            return Ok(());
        }
        let linear = next_block.fetch_add(1, Ordering::Relaxed);
        if linear >= blocks {
            return Ok(());
        }
        run_block(grid, &slot, kernel, linear)?;
    });
    if owned {
        grid.module.release(vec![slot]);
    }
    result
}

fn unflatten(linear: u64, dim: [u32; 3]) -> [u32; 3] {
    let (x, y) = (u64::from(dim[0]), u64::from(dim[1]));
    [(linear % x) as u32, ((linear / x) % y) as u32, (linear / (x * y)) as u32]
}

/// Dynamic shared memory, 128-byte aligned like a GPU's.
struct SharedArena {
    memory: Vec<u128>,
}

impl SharedArena {
    fn new(bytes: usize) -> SharedArena {
        // 0xCD poison instead of zeros, so that kernels reading before writing misbehave here too.
        SharedArena { memory: vec![0xCDCD_CDCD_CDCD_CDCD_CDCD_CDCD_CDCD_CDCDu128; bytes.div_ceil(16) + 8] }
    }
    fn base(&mut self) -> *mut u8 {
        let p = self.memory.as_mut_ptr() as *mut u8;
        let offset = p.align_offset(128);
        p.wrapping_add(offset)
    }
}

fn run_block(grid: &Grid<'_>, slot: &Slot, kernel: *const std::ffi::c_void, linear: u64) -> Result<()> {
    let config = grid.config;
    let threads = config.block.count() as usize;
    let mut arena = SharedArena::new(config.shared_bytes as usize);
    let mut block = BlockRecord {
        index: unflatten(linear, config.grid.to_array()),
        threads: threads as u32,
        dynamic_shared: if config.shared_bytes > 0 { arena.base() } else { std::ptr::null_mut() },
        dynamic_shared_bytes: u64::from(config.shared_bytes),
        syncthreads_word: 0,
    };
    // SAFETY: block_init only writes the syncthreads word of the record.
    unsafe { (slot.block_init)(&mut block) };
    let block_ptr: *mut BlockRecord = &mut block;
    let mut records: Vec<ThreadRecord> = (0..threads)
        .map(|t| ThreadRecord {
            launch: grid.record,
            block: block_ptr,
            fiber: std::ptr::null_mut(),
            index: unflatten(t as u64, config.block.to_array()),
            linear: t as u32,
            polled: 0,
        })
        .collect();
    let base = records.as_mut_ptr();
    let workers = threads.min(grid.settings.workers_per_block).max(1);
    // Thread t runs on OS thread t % workers, so neighbouring threads race across cores.
    let assignment: Vec<Vec<SendPtr<ThreadRecord>>> =
        (0..workers).map(|w| (w..threads).step_by(workers).map(|t| SendPtr(base.wrapping_add(t))).collect()).collect();
    // SAFETY: the abort flag lives in the launch record, which outlives the block.
    let abort = unsafe { &(*grid.record).abort };
    let kernel = SendPtr(kernel as *mut std::ffi::c_void);
    let run = move |mine: &[SendPtr<ThreadRecord>]| {
        let kernel = kernel; // the whole SendPtr, not its raw field
        let job = BlockJob {
            slot,
            kernel: kernel.0,
            args: &grid.args,
            sync: grid.sync,
            abort,
            deadline: grid.deadline,
            stack_size: grid.settings.stack_bytes,
        };
        // SAFETY: each OS thread gets a disjoint set of records, which outlive the scope
        // below; the kernel and arguments come from the launch (caller's contract).
        unsafe { run_fibers(&job, mine) }
    };
    let outcomes = std::thread::scope(|scope| {
        let helpers: Vec<_> = assignment[1..]
            .iter()
            .map(|mine| std::thread::Builder::new().name("xb-worker".into()).spawn_scoped(scope, move || run(mine)))
            .collect();
        if helpers.iter().any(|h| h.is_err()) {
            // Some threads of the block will never start: the rest must not wait for them.
            abort.store(1, Ordering::SeqCst);
            grid.sync.notify();
        }
        let mut outcomes = vec![run(&assignment[0])];
        for h in helpers {
            match h {
                Ok(h) => match h.join() {
                    Ok(o) => outcomes.push(o),
                    Err(_) => return Err(io_error("a worker thread panicked")),
                },
                Err(source) => {
                    // The threads of this worker never started; the others must not wait for them.
                    abort.store(1, Ordering::SeqCst);
                    grid.sync.notify();
                    return Err(Error::Io { context: "spawning a worker thread".into(), source });
                }
            }
        }
        Ok(outcomes)
    })?;
    drop(records);
    for o in outcomes {
        if let Some(source) = o.error {
            return Err(Error::Io { context: "allocating a fiber stack".into(), source });
        }
        if o.exceptions > 0 {
            return Err(Error::KernelException { backend: BackendKind::Host, kernel: grid.kernel.to_owned() });
        }
    }
    Ok(())
}
