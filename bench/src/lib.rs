//! xbarrier's benchmarks: each runs the xb implementation and its baselines, built into the
//! same kernel bundle and run in the same process, checks every implementation's results,
//! and reports medians with ratios to the baseline and the targets (docs/performance.md
//! lists the targets and the latest figures).
//!
//! | benchmark | xb | baselines | value |
//! | --- | --- | --- | --- |
//! | [`round-trip`](Benchmark::RoundTrip) | `arrive_and_wait`, native, emulated and grouped images, with and without a completion function; checked device code | raw `mbarrier` PTX, CCCL `cuda::barrier` (with and without a completion function), `__syncthreads`, one-word counter barriers | cycles per phase |
//! | round-trip, host backend | `arrive_and_wait`, one block | C++20 `std::barrier`, Rust `std::sync::Barrier` (OS threads) | ns per phase |
//! | [`reduction`](Benchmark::Reduction) | bulk loads + full/empty barriers | the same pipeline in raw PTX, a grid-stride kernel | GB/s read |
//! | [`copy`](Benchmark::Copy) | bulk loads + bulk stores | `cudaMemcpy` device to device | GB/s read + written |
//! | [`grid-barrier`](Benchmark::GridBarrier) | `xb::barrier<thread_scope_device>` | cooperative groups `grid.sync()` | ns per barrier |
//! | [`message-passing`](Benchmark::MessagePassing) | a flag in plain memory between two blocks, polled with `__nanosleep` | – | ns per message |
//! | [`host-round-trip`](Benchmark::HostRoundTrip) | a host thread and a kernel thread on a `SystemBarrier`, shared and split forms (one launch) | a launch + stream synchronize per phase; two flags in memory both sides reach | µs per round trip |
//! | [`multi-gpu`](Benchmark::MultiGpu) | a grid on each of two devices at a `PeerBarrier` (one launch each), every thread or thread 0 of each block a participant | per phase a launch on each device, then a synchronize of both streams, or stream events (each stream waits for the other's) | µs per phase |
//!
//! Targets (release builds, CUDA): native round trip <= raw PTX; emulated round trip and
//! round trips with a completion function <= CCCL with a completion function; checked round
//! trip <= 10x the release one (every backend); reduction >=
//! the raw-PTX pipeline; copy >= 0.93x `cudaMemcpy`; grid barrier <= 0.95x `grid.sync`;
//! a phase across two devices <= a launch + synchronize per phase (every backend). On
//! the host backend: round trip <= C++20 `std::barrier`; message passing <= 100 µs per message
//! (10^4 messages per second).
//!
//! The kernels are hip-src/kernels/bench; the CUDA-only baselines exist in CUDA images only.
//! Times come from stream events or the kernels' own clock, never from the host clock
//! around asynchronous work. `xbar bench` runs this and prints the table.

mod config;
mod copy;
mod grid;
mod host_baselines;
mod host_round_trip;
mod kernels;
mod message;
mod multi_gpu;
pub mod pattern;
mod reduce;
mod report;
mod round_trip;
mod stats;
mod suite;
mod timing;

pub use config::{Benchmark, Config, Pipeline, MAX_STAGES};
pub use report::{Report, Row, Status, Target, Unit, Verdict};
pub use stats::median;
pub use suite::run;

/// The benchmark kernels (every backend this build enabled).
pub fn bundle() -> xbarrier::Result<xbarrier::KernelBundle> {
    xbarrier::kernel_bundle!("bench")
}

/// xb's round-trip kernels compiled as checked device code, in every build.
pub fn checked_bundle() -> xbarrier::Result<xbarrier::KernelBundle> {
    xbarrier::kernel_bundle!("bench_checked")
}
