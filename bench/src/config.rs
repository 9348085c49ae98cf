//! Which benchmarks run, and their sizes.

use std::fmt;

use xbarrier::{DeviceInfo, Error, Result};

/// The benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Benchmark {
    /// Block barrier arrive + wait, one block per SM.
    RoundTrip,
    /// Streaming reduction through a pipeline of shared-memory stages.
    Reduction,
    /// Streaming copy: bulk loads into shared memory, bulk stores out.
    Copy,
    /// Device-scope barrier across a cooperative grid.
    GridBarrier,
    /// Messages through a flag in plain memory between two blocks, no barrier.
    MessagePassing,
    /// A host thread and a kernel thread meeting phase after phase.
    HostRoundTrip,
    /// Kernels on two devices meeting phase after phase.
    MultiGpu,
}

impl Benchmark {
    /// Every benchmark, in run order.
    pub const ALL: [Benchmark; 7] = [
        Benchmark::RoundTrip,
        Benchmark::Reduction,
        Benchmark::Copy,
        Benchmark::GridBarrier,
        Benchmark::MessagePassing,
        Benchmark::HostRoundTrip,
        Benchmark::MultiGpu,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::RoundTrip => "round-trip",
            Benchmark::Reduction => "reduction",
            Benchmark::Copy => "copy",
            Benchmark::GridBarrier => "grid-barrier",
            Benchmark::MessagePassing => "message-passing",
            Benchmark::HostRoundTrip => "host-round-trip",
            Benchmark::MultiGpu => "multi-gpu",
        }
    }

    /// The benchmark with that [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Benchmark> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }
}

impl fmt::Display for Benchmark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A pipeline's shape: a ring of `stages` shared-memory stages of `stage_bytes` each, in
/// `blocks_per_sm` persistent blocks per multiprocessor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pipeline {
    /// Stages in the ring (2..=16, the kernels' XBB_MAX_STAGES).
    pub stages: u32,
    /// Bytes per stage (a multiple of 16, at most 2^20 - 1: one bulk copy's tx-count).
    pub stage_bytes: u32,
    /// Blocks per multiprocessor.
    pub blocks_per_sm: u32,
}

/// Most stages a ring may have (`XBB_MAX_STAGES` in hip-src/kernels/bench/common.hpp).
pub const MAX_STAGES: u32 = 16;

impl Pipeline {
    /// Dynamic shared memory per block.
    pub fn shared_bytes(self) -> u64 {
        u64::from(self.stages) * u64::from(self.stage_bytes)
    }
    fn validate(self, what: &str, info: &DeviceInfo) -> Result<()> {
        let bad = |reason: String| Err(Error::InvalidArgument { call: "bench", reason: format!("{what}: {reason}") });
        if !(2..=MAX_STAGES).contains(&self.stages) {
            return bad(format!("{} stages; 2 to {MAX_STAGES} are supported", self.stages));
        }
        if self.stage_bytes == 0 || !self.stage_bytes.is_multiple_of(16) || self.stage_bytes >= 1 << 20 {
            return bad(format!("stages of {} bytes; a multiple of 16 below 1 MiB is needed", self.stage_bytes));
        }
        if self.blocks_per_sm == 0 {
            return bad("0 blocks per multiprocessor".into());
        }
        if self.shared_bytes() > u64::from(info.max_dynamic_shared_bytes) {
            return bad(format!(
                "{} stages x {} bytes = {} bytes of shared memory; {} allows {} per block",
                self.stages,
                self.stage_bytes,
                self.shared_bytes(),
                info.name,
                info.max_dynamic_shared_bytes
            ));
        }
        Ok(())
    }
}

/// Sizes and repetitions of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The benchmarks to run.
    pub benchmarks: Vec<Benchmark>,
    /// Block sizes of the round trip.
    pub round_trip_threads: Vec<u32>,
    /// Phases per timed round-trip launch.
    pub round_trip_iters: u32,
    /// Barriers per timed grid-barrier launch.
    pub grid_iters: u32,
    /// Messages per timed message-passing launch.
    pub messages: u32,
    /// Timed host <-> kernel round trips per rep.
    pub host_phases: u32,
    /// Timed phases per rep of the two devices' barrier and its baselines.
    pub multi_gpu_phases: u32,
    /// Blocks per device of the multi-GPU benchmark (one cooperative grid per device).
    pub multi_gpu_blocks: u32,
    /// Threads per block of the multi-GPU benchmark.
    pub multi_gpu_threads: u32,
    /// Phases (barriers) of the launch that checks correctness.
    pub check_iters: u32,
    /// Bytes the reduction reads and the copy copies (a multiple of 16).
    pub stream_bytes: u64,
    /// The reduction's pipeline.
    pub reduction: Pipeline,
    /// Consumer warps per reduction block (plus one producer warp).
    pub consumer_warps: u32,
    /// The copy's pipeline.
    pub copy: Pipeline,
    /// Threads per block of the grid barrier.
    pub grid_threads: u32,
    /// Untimed launches before the timed ones.
    pub warmup: u32,
    /// Timed launches; each gives one sample, the row's value is their median.
    pub reps: u32,
}

impl Config {
    /// The GPU run: 2 GiB streams, 128/256/1024-thread round trips, 10 timed reps each.
    pub fn gpu() -> Config {
        Config {
            benchmarks: Benchmark::ALL.to_vec(),
            round_trip_threads: vec![128, 256, 1024],
            round_trip_iters: 10_000,
            grid_iters: 5_000,
            messages: 10_000,
            host_phases: 2_000,
            multi_gpu_phases: 2_000,
            multi_gpu_blocks: 4,
            multi_gpu_threads: 32,
            check_iters: 1_000,
            stream_bytes: 2 << 30,
            reduction: Pipeline { stages: 6, stage_bytes: 16 << 10, blocks_per_sm: 2 },
            consumer_warps: 4,
            // The copy's shape: no shape tools/bench-sweep.sh tried on an H200 was clearly faster.
            copy: Pipeline { stages: 4, stage_bytes: 48 << 10, blocks_per_sm: 2 },
            grid_threads: 256,
            warmup: 2,
            reps: 10,
        }
    }

    /// The CPU backend's run: the round trip at 2/8/64 threads and message passing (kernel
    /// threads are fibers; the GPU benchmarks' sizes mean nothing there).
    pub fn host() -> Config {
        Config {
            benchmarks: vec![Benchmark::RoundTrip, Benchmark::MessagePassing],
            round_trip_threads: vec![2, 8, 64],
            round_trip_iters: 1_000,
            grid_iters: 200,
            messages: 2_000,
            host_phases: 2_000,
            multi_gpu_phases: 200,
            multi_gpu_blocks: 2,
            multi_gpu_threads: 4,
            check_iters: 200,
            stream_bytes: 4 << 20,
            reduction: Pipeline { stages: 4, stage_bytes: 4 << 10, blocks_per_sm: 1 },
            consumer_warps: 3,
            copy: Pipeline { stages: 4, stage_bytes: 4 << 10, blocks_per_sm: 1 },
            grid_threads: 4,
            warmup: 1,
            reps: 5,
        }
    }

    /// Checks the configuration of the selected benchmarks against the device.
    pub fn validate(&self, info: &DeviceInfo) -> Result<()> {
        let bad = |reason: String| Err(Error::InvalidArgument { call: "bench", reason });
        if self.reps == 0 {
            return bad("0 timed repetitions".into());
        }
        if self.round_trip_iters == 0
            || self.grid_iters == 0
            || self.check_iters == 0
            || self.messages == 0
            || self.host_phases == 0
            || self.multi_gpu_phases == 0
        {
            return bad("every benchmark needs at least one iteration".into());
        }
        if self.stream_bytes == 0 || !self.stream_bytes.is_multiple_of(16) {
            return bad(format!("{} bytes to stream; a nonzero multiple of 16 is needed", self.stream_bytes));
        }
        if let Some(&t) = self.round_trip_threads.iter().find(|&&t| t == 0 || t > info.max_threads_per_block) {
            return bad(format!("round trip of {t} threads; {} allows 1 to {}", info.name, info.max_threads_per_block));
        }
        let reduction_threads = u64::from(info.wave_size) * (1 + u64::from(self.consumer_warps));
        if self.consumer_warps == 0 || reduction_threads > u64::from(info.max_threads_per_block) {
            return bad(format!(
                "{} consumer warps; at least 1 and a block of at most {} threads",
                self.consumer_warps, info.max_threads_per_block
            ));
        }
        if self.grid_threads == 0 || self.grid_threads > info.max_threads_per_block {
            return bad(format!("grid barrier blocks of {} threads", self.grid_threads));
        }
        if self.multi_gpu_blocks == 0
            || self.multi_gpu_threads == 0
            || self.multi_gpu_threads > info.max_threads_per_block
        {
            return bad(format!(
                "multi-GPU grids of {} blocks x {} threads; {} allows 1 to {} threads a block",
                self.multi_gpu_blocks, self.multi_gpu_threads, info.name, info.max_threads_per_block
            ));
        }
        if self.benchmarks.contains(&Benchmark::Reduction) {
            self.reduction.validate("reduction", info)?;
        }
        if self.benchmarks.contains(&Benchmark::Copy) {
            self.copy.validate("copy", info)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xbarrier::BackendKind;

    fn h200() -> DeviceInfo {
        let mut info = DeviceInfo::new(BackendKind::Cuda, 0, "NVIDIA H200", "sm_90");
        info.wave_size = 32;
        info.multiprocessors = 132;
        info.max_cooperative_blocks = 132;
        info.max_threads_per_block = 1024;
        info.max_dynamic_shared_bytes = 232_448;
        info
    }

    #[test]
    fn defaults_fit_an_h200() {
        Config::gpu().validate(&h200()).expect("the GPU defaults fit");
        let mut host = h200();
        host.wave_size = 1;
        Config::host().validate(&host).expect("the host defaults fit");
    }

    #[test]
    fn bad_shapes_are_refused() {
        let d = h200();
        let mut c = Config::gpu();
        c.reduction.stages = 17;
        assert!(c.validate(&d).is_err());
        let mut c = Config::gpu();
        c.copy.stage_bytes = 100;
        assert!(c.validate(&d).is_err());
        let mut c = Config::gpu();
        c.copy = Pipeline { stages: 16, stage_bytes: 64 << 10, blocks_per_sm: 1 };
        let err = c.validate(&d).expect_err("too much shared memory").to_string();
        assert!(err.contains("copy") && err.contains("232448"), "{err}");
        let mut c = Config::gpu();
        c.stream_bytes = 100;
        assert!(c.validate(&d).is_err());
        let mut c = Config::gpu();
        c.consumer_warps = 40;
        assert!(c.validate(&d).is_err());
        let mut c = Config::gpu();
        c.multi_gpu_threads = 2048;
        assert!(c.validate(&d).is_err_and(|e| e.to_string().contains("multi-GPU grids of 4 blocks x 2048 threads")));
        let mut c = Config::gpu();
        c.multi_gpu_phases = 0;
        assert!(c.validate(&d).is_err());
    }

    #[test]
    fn names_round_trip() {
        for b in Benchmark::ALL {
            assert_eq!(Benchmark::from_name(b.name()), Some(b));
        }
        assert_eq!(Benchmark::from_name("nope"), None);
    }
}
