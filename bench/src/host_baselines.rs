//! The host backend's round-trip baselines: C++20 `std::barrier` (libstdc++, compiled by
//! bench/build.rs from bench/cpp/std_barrier.cpp) and Rust's `std::sync::Barrier`, each on
//! `threads` OS threads, run in this process like the xb kernel they are compared with.
//!
//! Both run the loop of hip-src/kernels/bench/round_trip.cpp: `iters` x (every thread
//! arrives and waits), with the same neighbour-slot exchange when checking. Thread 0 times
//! its loop after a start barrier, as thread 0 of the xb block times its own, so the value
//! is nanoseconds per phase of wall time; warm-up runs, then one sample per timed run, and
//! the median of those.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Barrier, Condvar, Mutex};
use std::time::Instant;

use crate::report::Status;
use crate::{stats, Config};

/// C++20 `std::barrier<>` from libstdc++: the host round trip's target baseline.
pub(crate) const CPP_BARRIER: &str = "C++20 std::barrier";
/// Rust's `std::sync::Barrier` (a mutex and a condition variable).
pub(crate) const RUST_BARRIER: &str = "Rust std::sync::Barrier";

/// What one run reports: thread 0's loop time and the stale reads of the exchange.
struct Run {
    ns: u64,
    stale: u64,
}

/// A baseline: its row name and how to run it (`Err` is the row's status).
pub(crate) struct Baseline {
    pub name: &'static str,
    run: fn(threads: u32, iters: u32, check: bool) -> Result<Run, Status>,
}

/// Both baselines, in row order.
pub(crate) const ALL: [Baseline; 2] =
    [Baseline { name: CPP_BARRIER, run: cpp_barrier }, Baseline { name: RUST_BARRIER, run: rust_barrier }];

impl Baseline {
    /// A checking run of `config.check_iters` phases, the warm-up runs, then `config.reps`
    /// timed runs of `config.round_trip_iters` phases on `threads` threads.
    pub(crate) fn measure(&self, threads: u32, config: &Config) -> Status {
        match (self.run)(threads, config.check_iters, true) {
            Err(status) => return status,
            Ok(Run { stale: 0, .. }) => {}
            Ok(Run { stale, .. }) => {
                return Status::Incorrect(format!(
                    "{stale} reads of a stale neighbour slot after the barrier ({} phases)",
                    config.check_iters
                ))
            }
        }
        for _ in 0..config.warmup {
            if let Err(status) = (self.run)(threads, config.round_trip_iters, false) {
                return status;
            }
        }
        let mut samples = Vec::with_capacity(config.reps as usize);
        for _ in 0..config.reps {
            match (self.run)(threads, config.round_trip_iters, false) {
                Ok(run) => samples.push(run.ns as f64 / f64::from(config.round_trip_iters)),
                Err(status) => return status,
            }
        }
        match stats::median(&samples) {
            Some(value) => Status::Measured { value, samples },
            None => Status::Failed("no samples".into()),
        }
    }
}

#[cfg(xbb_std_barrier)]
fn cpp_barrier(threads: u32, iters: u32, check: bool) -> Result<Run, Status> {
    extern "C" {
        fn xbb_std_barrier_round_trip(threads: u32, iters: u32, check: u32, ns: *mut u64, stale: *mut u64) -> i32;
    }
    let (mut ns, mut stale) = (0u64, 0u64);
    // SAFETY: bench/cpp/std_barrier.cpp defines it with this signature; it is noexcept and
    // only writes the two words, which live through the call; every thread it creates is
    // joined before it returns.
    let rc = unsafe { xbb_std_barrier_round_trip(threads, iters, u32::from(check), &mut ns, &mut stale) };
    match rc {
        0 => Ok(Run { ns, stale }),
        _ => Err(Status::Failed(format!("std::barrier run of {threads} threads failed (thread creation)"))),
    }
}

#[cfg(not(xbb_std_barrier))]
fn cpp_barrier(_threads: u32, _iters: u32, _check: bool) -> Result<Run, Status> {
    Err(Status::Skipped(
        "not built: the C++ compiler has no C++20 <barrier> (see the build warning of xbarrier-bench)".into(),
    ))
}

/// Holds the threads until all of them exist, or sends them home when one could not be
/// created (the others would otherwise wait in a barrier that never completes).
#[derive(Default)]
struct Gate {
    state: Mutex<Option<bool>>,
    opened: Condvar,
}

impl Gate {
    fn wait(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match *state {
                Some(go) => return go,
                None => state = self.opened.wait(state).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
    fn open(&self, go: bool) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(go);
        self.opened.notify_all();
    }
}

fn rust_barrier(threads: u32, iters: u32, check: bool) -> Result<Run, Status> {
    let n = threads as usize;
    // Relaxed is enough: the barrier orders each phase's writes before the next one's reads.
    let slots: Vec<AtomicU32> = (0..2 * n).map(|_| AtomicU32::new(0)).collect();
    let (start, bar, gate) = (Barrier::new(n), Barrier::new(n), Gate::default());
    let (elapsed, stale) = (AtomicU64::new(0), AtomicU64::new(0));
    let body = |t: usize| {
        if !gate.wait() {
            return;
        }
        let next = (t + 1) % n;
        let mut wrong = 0;
        start.wait();
        let begin = Instant::now();
        for i in 0..iters as usize {
            let slot = &slots[(i & 1) * n..][..n];
            if check {
                slot[t].store((i * n + t) as u32, Ordering::Relaxed);
            }
            bar.wait();
            if check && slot[next].load(Ordering::Relaxed) != (i * n + next) as u32 {
                wrong += 1;
            }
        }
        if t == 0 {
            elapsed.store(u64::try_from(begin.elapsed().as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        }
        stale.fetch_add(wrong, Ordering::Relaxed);
    };
    let created = std::thread::scope(|scope| {
        let body = &body;
        let created = (0..n).all(|t| std::thread::Builder::new().spawn_scoped(scope, move || body(t)).is_ok());
        gate.open(created);
        created
    });
    if created {
        Ok(Run { ns: elapsed.into_inner(), stale: stale.into_inner() })
    } else {
        Err(Status::Failed(format!("could not create {threads} threads")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_baselines_run_and_check() {
        for baseline in &ALL {
            let run = (baseline.run)(3, 200, true).unwrap_or_else(|s| panic!("{}: {s:?}", baseline.name));
            assert_eq!(run.stale, 0, "{}", baseline.name);
            assert!(run.ns > 0, "{}", baseline.name);
        }
    }
}
