//! `xbar`, the command-line tool of xbarrier.
//!
//! - `xbar info` shows which backends this build has, their devices, whether device code is
//!   checked, and which kernel toolchains (host C++, nvcc, clang for AMDGPU, ...) are installed.
//! - `xbar check` runs the conformance and misuse suites on every enabled backend and prints
//!   a pass/fail table grouped by feature (or JSON).
//! - `xbar bench` runs the benchmarks against their baselines and prints a table with ratios
//!   and targets (or JSON / CSV / markdown), and draws them as SVG bars (`--plot`).
//! - `xbar lower` prints the instructions each barrier operation becomes on a GPU target.

mod bench;
mod check;
mod device;
mod info;
mod lower;
mod output;
mod toolchains;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// One barrier API for CUDA, HIP and the CPU: inspect this build and check its conformance.
#[derive(Debug, Parser)]
#[command(
    name = "xbar",
    version,
    about = "Inspect xbarrier's backends and toolchains, and run its conformance suites",
    long_about = "xbar inspects an xbarrier build and runs its test suites.\n\n\
        The backends it knows are the cargo features it was built with: `host` (CPU threads, \
        the default), `cuda` (NVIDIA GPUs) and `hip` (AMD GPUs); build it with e.g. \
        `cargo run -p xbar --features cuda -- check`. Device code is checked (barrier misuse \
        and deadlocks reported as faults) in debug builds and with the `checked` feature.",
    after_help = "Run `xbar help <COMMAND>` for the options of a command.",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the enabled backends, their devices, and the kernel toolchains found
    #[command(long_about = "Show what this build of xbarrier can run on.\n\n\
        Prints the backends enabled by the cargo features, whether device code is checked, \
        every device of every enabled backend (or why there is none), and the toolchains that \
        compile kernels: the host C++ compiler, nvcc (CUDA), clang for AMDGPU and hipcc (HIP), \
        and clang 22 from the zig wheel. A missing toolchain comes with where it was looked for \
        and how to install it (tools/install-toolchains.sh installs the project's set).")]
    Info,
    /// Run the conformance and misuse suites and print a pass/fail table
    #[command(
        long_about = "Run the conformance and misuse suites on every enabled backend, or on the one \
            --backend names.\n\n\
            Each case prints a progress line to stderr as it finishes; then stdout gets, for each GPU \
            device that runs (and the CPU with --backend host), what a bug report needs: its name and \
            target, the kernel image's code objects, the runtime's versions and the kernels' clock \
            rate (AMD), the image variants and whether device code is checked; then a table \
            grouped by feature (backend, feature, case, result, seconds, detail), the full \
            messages of failed cases, and a summary line `N passed, M failed, K ignored` \
            (with --format json the device lines go to stderr). \
            A case is IGNORED when its backend has no device, or when it belongs to the misuse \
            suite and device code is unchecked (release builds without the `checked` feature).",
        after_help = "Exit status: 0 when every case that ran passed; 1 when a case failed; \
            2 on a usage error, when no case matched, when every matching case was ignored, or \
            when the device of --backend does not open. \
            With XBAR_REQUIRE_GPU=1 a GPU backend without a device fails its cases instead of \
            ignoring them.\n\n\
            Examples:\n  xbar check\n  xbar check --backend hip\n  xbar check --filter tx --suite conformance\n  \
            xbar check --suite misuse --format json\n  xbar check --list"
    )]
    Check(check::CheckArgs),
    /// Run the benchmarks against their baselines and print ratios and targets
    #[command(
        long_about = "Run xbarrier's benchmarks on one device.\n\n\
            Each benchmark runs the xb implementation and its baselines, built into the same binary \
            and run in this process, checks every implementation's results, and reports the median \
            of the timed launches: block barrier round trip (cycles per phase; xb native and \
            emulated, with and without a completion function, and in release builds xb as checked \
            device code; vs raw mbarrier PTX, CCCL cuda::barrier with and without a completion \
            function, __syncthreads), streaming \
            reduction (GB/s; xb pipeline vs the same in raw PTX and a grid-stride kernel), streaming \
            copy (GB/s read + written; xb bulk copy vs cudaMemcpy) and grid-wide barrier (ns; xb \
            device-scope barrier vs cooperative groups grid.sync).\n\n\
            Targets (release builds; set from H200 measurements): native round trip <= raw PTX; \
            emulated round trip, and round trips with a completion function, <= CCCL \
            cuda::barrier with a completion function; checked round trip <= 10x the release one \
            (every backend); reduction >= the raw-PTX pipeline; copy >= \
            0.93x cudaMemcpy; grid barrier <= 0.95x grid.sync. \
            On the host backend the round trip is nanoseconds per phase of one block, against C++20 \
            std::barrier (target: no slower) and Rust's std::sync::Barrier on as many OS threads. \
            stdout gets the table, or --format json|csv|markdown; --plot draws grouped bars per \
            configuration (xb beside each baseline) as SVG.",
        after_help = "Exit status: 0 when every result was correct (targets missed or not); 1 when a result \
            was wrong or a measurement failed (with --strict also when a target was missed); 2 on a \
            usage error, without a device, or when nothing could run.\n\n\
            Examples:\n  xbar bench\n  xbar bench --out bench.md --json bench.json --plot bench.svg\n  \
            xbar bench --backend host --format csv\n  \
            xbar bench --only round-trip --threads 256\n  xbar bench --only reduction --stages 8 --stage-kib 32"
    )]
    Bench(bench::BenchArgs),
    /// Print the instructions each barrier operation becomes on a GPU target
    #[command(
        long_about = "Compile each barrier operation (one kernel per operation, \
            hip-src/kernels/lowering/ops.cpp) for a GPU target with the build helper's flags and \
            print its machine instructions (SASS from cuobjdump; AMDGPU assembly from clang-19) or, \
            with --ptx, its intermediate code. These are the listings the lowering tests assert on. \
            The header of a round trip (arrive_and_wait) gives its fast path: the instructions a \
            non-last arrival whose first poll succeeds issues, which --fast-path lists. \
            NVIDIA targets need nvcc and cuobjdump (tools/install-toolchains.sh cuda), AMD targets \
            clang-19 (tools/install-toolchains.sh amd); no GPU.",
        after_help = "Exit status: 0 on success; 1 when the toolchain is missing or the compile fails; 2 on \
            a usage error.\n\n\
            Examples:\n  xbar lower --op arrive_tx\n  xbar lower --target gfx942 --op arrive_tx\n  \
            xbar lower --target sm_80 --op arrive,wait\n  \
            xbar lower --variant emulated --op arrive_and_wait\n  xbar lower --op memcpy_async_tx --ptx\n  \
            xbar lower --target gfx90a --op arrive_and_wait --fast-path"
    )]
    Lower(lower::LowerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Info => info::run(),
        Command::Check(args) => check::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Lower(args) => lower::run(&args),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
