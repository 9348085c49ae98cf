//! Host backend knobs, from the environment (read once per device).

use std::time::Duration;

/// How the host backend runs blocks.
#[derive(Clone, Debug)]
pub struct Settings {
    /// OS threads per running block (`XBAR_HOST_WORKERS_PER_BLOCK`, default 2..=4).
    pub workers_per_block: usize,
    /// Blocks of a non-cooperative launch that run at once (`XBAR_HOST_CONCURRENT_BLOCKS`).
    pub concurrent_blocks: usize,
    /// Most blocks resident at once: the cooperative-launch limit (`XBAR_HOST_MAX_RESIDENT_BLOCKS`).
    pub max_resident_blocks: usize,
    /// Stack of each kernel thread (`XBAR_HOST_STACK_KB`, default 256).
    pub stack_bytes: usize,
    /// Checked builds: bound on every barrier wait (`XBAR_WAIT_TIMEOUT_MS`, default 10 s).
    pub wait_timeout: Duration,
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).filter(|&v| v > 0).unwrap_or(default)
}

impl Settings {
    /// Reads the environment.
    pub fn from_env() -> Settings {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        Settings {
            workers_per_block: env_usize("XBAR_HOST_WORKERS_PER_BLOCK", cores.clamp(2, 4)),
            concurrent_blocks: env_usize("XBAR_HOST_CONCURRENT_BLOCKS", cores.max(2)),
            max_resident_blocks: env_usize("XBAR_HOST_MAX_RESIDENT_BLOCKS", 64),
            stack_bytes: env_usize("XBAR_HOST_STACK_KB", 256) * 1024,
            wait_timeout: Duration::from_millis(env_usize("XBAR_WAIT_TIMEOUT_MS", 10_000) as u64),
        }
    }
}
