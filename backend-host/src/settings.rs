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
    /// How many devices the backend offers (`XBAR_HOST_DEVICES`, default 2): stand-ins that
    /// share the CPU's cores and memory, so that code for several GPUs runs here (launching
    /// each device's grid from a thread of its own: a launch returns at its end).
    pub devices: usize,
    /// Most kernel threads resident at once: each fiber stack is two memory mappings, and the
    /// process may hold `vm.max_map_count` of them (half of the rest is left for everything else).
    pub max_resident_threads: usize,
}

/// `/proc/sys/vm/max_map_count`, or Linux's default.
fn max_map_count() -> usize {
    std::fs::read_to_string("/proc/sys/vm/max_map_count").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(65530)
}

/// The most devices `XBAR_HOST_DEVICES` may ask for.
pub const MAX_DEVICES: usize = 64;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).filter(|&v| v > 0).unwrap_or(default)
}

impl Settings {
    /// Reads the environment; unset, unparsable or zero values take the defaults.
    ///
    /// ```
    /// use xbarrier_backend_host::Settings;
    /// std::env::set_var("XBAR_HOST_STACK_KB", "512");
    /// std::env::set_var("XBAR_HOST_WORKERS_PER_BLOCK", "0"); // not a worker count: the default
    /// let settings = Settings::from_env();
    /// assert_eq!(settings.stack_bytes, 512 * 1024);
    /// assert!((2..=4).contains(&settings.workers_per_block));
    /// ```
    pub fn from_env() -> Settings {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        Settings {
            workers_per_block: env_usize("XBAR_HOST_WORKERS_PER_BLOCK", cores.clamp(2, 4)),
            concurrent_blocks: env_usize("XBAR_HOST_CONCURRENT_BLOCKS", cores.max(2)),
            max_resident_blocks: env_usize("XBAR_HOST_MAX_RESIDENT_BLOCKS", 64),
            stack_bytes: env_usize("XBAR_HOST_STACK_KB", 256) * 1024,
            wait_timeout: Duration::from_millis(env_usize("XBAR_WAIT_TIMEOUT_MS", 10_000) as u64),
            max_resident_threads: (max_map_count() / 4).max(1024),
            devices: env_usize("XBAR_HOST_DEVICES", 2).min(MAX_DEVICES),
        }
    }
}
