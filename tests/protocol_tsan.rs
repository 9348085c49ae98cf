//! ThreadSanitizer stress tests of the portable barrier protocol, and of the split form of the
//! system-scope barrier, on host threads.
//!
//! Builds `hip-src/tests/protocol_stress.cpp` with `-fsanitize=thread` and runs it: 10^7
//! random barrier operations in all (arrive, arrive(update), arrive_and_drop,
//! arrive_and_wait, split arrive/wait, the try_wait family with try_wait_for timeouts that
//! expire and that succeed, barrier_arrive_tx, barrier_expect_tx, memcpy_async_tx,
//! complete_tx, completion functions) from several `std::thread`s, each checked for
//! exactly-once phase completion, for the happens-before edges the barrier promises, and
//! against a sequential model of the same schedule (completions per phase, the expected count
//! after drops, the tx balance, the final barrier state). A missing C++ compiler or
//! ThreadSanitizer runtime fails the test; it never passes silently.
//!
//! The operations are split over two tests that cargo runs side by side: checked device code
//! (`-O1`) and unchecked (`-O2`, where the block and system barriers without a completion
//! function take the direct layouts), each three runs of its own seed and thread count (`CHECKED_RUNS`, `UNCHECKED_RUNS`).
//! A failing run prints the command lines that replay it. `PROTOCOL_STRESS_SEED` (with
//! `PROTOCOL_STRESS_OPS`, `PROTOCOL_STRESS_THREADS` and `PROTOCOL_STRESS_ROUND`, all
//! optional) runs that one configuration instead.
//!
//! `hip-src/tests/split_stress.cpp` is built and run the same way, checked and unchecked
//! (`SPLIT_CHECKED_RUNS`, `SPLIT_UNCHECKED_RUNS`): rounds on fresh cross-linked pairs of
//! system-scope barriers in the split form (`engine_system.hpp`), one to four threads on each
//! side, every way to wait, threads and whole sides leaving, a late arrival that the other
//! threads probe for, each waiter checking that every arrival of the phase on both sides
//! happened before its wait returned. `SPLIT_STRESS_SEED` (with `SPLIT_STRESS_OPS` and
//! `SPLIT_STRESS_ROUND`) replays one run.

use std::env;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const INSTALL_HINT: &str = "install a C++17 compiler with the ThreadSanitizer runtime, e.g. \
     `apt-get install g++ libtsan2` (Debian 12 / Ubuntu 22.04 and later; `libtsan0` on older \
     releases) or `dnf install gcc-c++ libtsan`, or point CXX at a clang++ whose compiler-rt \
     ships the tsan runtime";

/// One of the stress programs under `hip-src/tests/`.
struct Program {
    /// The source's stem, the binary's name and the prefix of its `NAME: OK ...` line.
    name: &'static str,
    /// The prefix of the environment variables that replay one run (`{env}_SEED`, ...).
    env: &'static str,
    /// Whether it takes a thread count (split_stress picks its threads per round).
    takes_threads: bool,
    /// What each test must execute in all.
    min_ops_per_test: u64,
}

const PROTOCOL_STRESS: Program = Program {
    name: "protocol_stress",
    env: "PROTOCOL_STRESS",
    takes_threads: true,
    min_ops_per_test: MIN_OPS_PER_TEST,
};
const SPLIT_STRESS: Program = Program {
    name: "split_stress",
    env: "SPLIT_STRESS",
    takes_threads: false,
    min_ops_per_test: SPLIT_MIN_OPS_PER_TEST,
};

/// One run of a stress program: its seed, the operations it plans at least, its threads
/// (unused by split_stress).
#[derive(Clone, Copy, Debug)]
struct Plan {
    seed: u64,
    min_ops: u64,
    threads: u32,
}

const fn plan(seed: u64, min_ops: u64, threads: u32) -> Plan {
    Plan { seed, min_ops, threads }
}

/// Checked and unchecked runs plan 5 * 10^6 operations each: 10^7 in all. On a 2-core
/// machine the two tests take about a minute side by side (README, Tests).
const CHECKED_RUNS: [Plan; 3] =
    [plan(0x5eed_ba77, 2_500_000, 4), plan(0xc0ff_ee01, 1_500_000, 3), plan(0xb10c_5eed, 1_000_000, 6)];
const UNCHECKED_RUNS: [Plan; 3] =
    [plan(0x0dd_ba11, 2_500_000, 4), plan(0x5ca1_ab1e, 2_000_000, 2), plan(0xfee1_900d, 500_000, 8)];
/// What each test must execute in all (the program counts executed operations; polls apart).
const MIN_OPS_PER_TEST: u64 = 5_000_000;
/// split_stress plans 7.5 * 10^5 arrivals and waits per test, over two seeds (about 1,400
/// rounds): the split form's hand-over is small beside the protocol under it, which the
/// tests above stress.
const SPLIT_CHECKED_RUNS: [Plan; 2] = [plan(0x5b11_7ed1, 500_000, 0), plan(0x0c0d_e5e5, 250_000, 0)];
const SPLIT_UNCHECKED_RUNS: [Plan; 2] = [plan(0xa11_5ed5, 500_000, 0), plan(0x7a1e_a77e, 250_000, 0)];
const SPLIT_MIN_OPS_PER_TEST: u64 = 750_000;
const RUN_LIMIT: Duration = Duration::from_secs(600);
const TSAN_OPTIONS: &str = "halt_on_error=1 exitcode=66 second_deadlock_stack=1";

/// `$CXX` (program and any leading arguments, as in `CXX="ccache g++"`), else `g++`.
fn cxx() -> (String, Vec<String>) {
    let spec = env::var("CXX").ok().filter(|s| !s.trim().is_empty()).unwrap_or_else(|| "g++".to_string());
    let mut words = spec.split_whitespace().map(str::to_string);
    let program = words.next().unwrap_or_else(|| "g++".to_string());
    (program, words.collect())
}

fn out_dir(program: &Program, checked: bool) -> PathBuf {
    let base = option_env!("CARGO_TARGET_TMPDIR").map(PathBuf::from).unwrap_or_else(env::temp_dir);
    let dir = base.join(format!(
        "xbarrier-{}-{}-checked{}",
        program.name.replace('_', "-"),
        std::process::id(),
        u8::from(checked)
    ));
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// The optimization level of each build: checked code at -O1, unchecked at -O2, so that the
/// two runs also see two code shapes.
fn opt_level(checked: bool) -> &'static str {
    if checked {
        "-O1"
    } else {
        "-O2"
    }
}

/// Builds the stress program; returns it and the shell command that built it.
fn build(root: &Path, dir: &Path, stress: &Program, checked: bool) -> (PathBuf, String) {
    let (program, pre_args) = cxx();
    let source = root.join(format!("hip-src/tests/{}.cpp", stress.name));
    let include = root.join("hip-src/include");
    let exe = dir.join(stress.name);
    let flags = ["-std=c++17", opt_level(checked), "-g", "-fsanitize=thread", "-pthread"];
    let checked_flag = format!("-DXB_CHECKED={}", u8::from(checked));
    let command = format!(
        "{} {} -I {} {} -o {}",
        std::iter::once(program.as_str()).chain(pre_args.iter().map(String::as_str)).collect::<Vec<_>>().join(" "),
        flags.iter().copied().chain([checked_flag.as_str()]).collect::<Vec<_>>().join(" "),
        include.display(),
        source.display(),
        exe.display()
    );

    let version = Command::new(&program).args(&pre_args).arg("--version").output();
    match version {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            panic!("C++ compiler `{program}` not found (set CXX to use another one): {INSTALL_HINT}")
        }
        Err(e) => panic!("cannot run the C++ compiler `{program}`: {e}; {INSTALL_HINT}"),
        Ok(_) => {}
    }

    let output = Command::new(&program)
        .args(&pre_args)
        .args(flags)
        .arg(&checked_flag)
        .arg("-I")
        .arg(&include)
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C++ compiler `{program}`: {e}"));
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lower = stderr.to_lowercase();
        if lower.contains("-ltsan")
            || lower.contains("libtsan")
            || lower.contains("tsan_")
            || lower.contains("clang_rt.tsan")
            || lower.contains("fsanitize=thread")
        {
            panic!(
                "the ThreadSanitizer runtime is missing for `{program}` (linking with \
                 -fsanitize=thread failed): {INSTALL_HINT}\n--- compiler output ---\n{stderr}"
            );
        }
        panic!(
            "`{program}` failed to compile {} with -fsanitize=thread ({}):\n{stderr}",
            source.display(),
            output.status
        );
    }
    (exe, command)
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    timed_out: bool,
}

fn run(program: &Path, wrapper: &[&str], args: &[String], dir: &Path) -> Run {
    // Output goes to files: a TSAN report can outgrow a pipe while we wait.
    let out_path = dir.join("stdout.txt");
    let err_path = dir.join("stderr.txt");
    let out = fs::File::create(&out_path).expect("create stdout file");
    let err = fs::File::create(&err_path).expect("create stderr file");
    let mut cmd = if let Some((first, rest)) = wrapper.split_first() {
        let mut c = Command::new(first);
        c.args(rest).arg(program);
        c
    } else {
        Command::new(program)
    };
    let mut child = cmd
        .args(args)
        .env("TSAN_OPTIONS", TSAN_OPTIONS)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the stress program") {
            break status;
        }
        if start.elapsed() > RUN_LIMIT {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait for the killed stress program");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Run {
        code: status.code(),
        stdout: fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: fs::read_to_string(&err_path).unwrap_or_default(),
        timed_out,
    }
}

fn parse_ops(stdout: &str, name: &str) -> Option<u64> {
    let ok = format!("{name}: OK ");
    let line = stdout.lines().rev().find(|l| l.starts_with(&ok))?;
    let field = line.split_whitespace().find_map(|w| w.strip_prefix("ops="))?;
    field.parse().ok()
}

/// Checked device code: the claimed layouts everywhere, with the protocol's own checks.
#[test]
fn protocol_stress_under_thread_sanitizer() {
    stress(&PROTOCOL_STRESS, true, "protocol_stress_under_thread_sanitizer");
}

/// Unchecked device code: the direct layout for the system-scope barrier without a
/// completion function (protocol.hpp), as release builds run it.
#[test]
fn protocol_stress_unchecked_under_thread_sanitizer() {
    stress(&PROTOCOL_STRESS, false, "protocol_stress_unchecked_under_thread_sanitizer");
}

/// The split form of barrier<thread_scope_system> (engine_system.hpp), checked device code:
/// the claimed layout in each side's share, with the protocol's own checks.
#[test]
fn split_stress_under_thread_sanitizer() {
    stress(&SPLIT_STRESS, true, "split_stress_under_thread_sanitizer");
}

/// The split form, unchecked device code, as release builds run it.
#[test]
fn split_stress_unchecked_under_thread_sanitizer() {
    stress(&SPLIT_STRESS, false, "split_stress_unchecked_under_thread_sanitizer");
}

fn env_u64(name: &str) -> Option<u64> {
    let value = env::var(name).ok()?;
    let value = value.trim();
    let parsed = match value.strip_prefix("0x").or_else(|| value.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse(),
    };
    Some(parsed.unwrap_or_else(|e| panic!("{name}={value:?} is not a number: {e}")))
}

/// The runs of one test, or the one run the environment asks for (a replay), with the round
/// to run alone if any.
fn plans(program: &Program, checked: bool) -> (Vec<Plan>, Option<u64>) {
    let var = |what: &str| format!("{}_{what}", program.env);
    let round = env_u64(&var("ROUND"));
    match env_u64(&var("SEED")) {
        Some(seed) => {
            let min_ops = env_u64(&var("OPS")).unwrap_or(program.min_ops_per_test);
            let threads = if program.takes_threads { env_u64(&var("THREADS")).map_or(4, |t| t as u32) } else { 0 };
            (vec![plan(seed, min_ops, threads)], round)
        }
        None => {
            let runs: &[Plan] = match (program.takes_threads, checked) {
                (true, true) => &CHECKED_RUNS,
                (true, false) => &UNCHECKED_RUNS,
                (false, true) => &SPLIT_CHECKED_RUNS,
                (false, false) => &SPLIT_UNCHECKED_RUNS,
            };
            (runs.to_vec(), None)
        }
    }
}

fn stress(program: &Program, checked: bool, test_name: &str) {
    let name = program.name;
    let env = program.env;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = out_dir(program, checked);
    let (exe, build_command) = build(root, &dir, program, checked);
    let (plans, round) = plans(program, checked);
    let replaying = plans.len() == 1;

    let all = Instant::now();
    let mut total_ops = 0u64;
    for p in &plans {
        let mut args = vec![p.seed.to_string(), p.min_ops.to_string()];
        if program.takes_threads {
            args.push(p.threads.to_string());
        }
        if let Some(round) = round {
            args.push(round.to_string());
        }
        let (threads, threads_env) = if program.takes_threads {
            (format!(", threads={}", p.threads), format!(" {env}_THREADS={}", p.threads))
        } else {
            (String::new(), String::new())
        };
        let replay = format!(
            "replay this run:\n  {build_command}\n  TSAN_OPTIONS='{TSAN_OPTIONS}' {} {}\nor:\n  \
             {env}_SEED={} {env}_OPS={}{threads_env}{} cargo test --test protocol_tsan {test_name} -- --nocapture",
            exe.display(),
            args.join(" "),
            p.seed,
            p.min_ops,
            round.map(|r| format!(" {env}_ROUND={r}")).unwrap_or_default()
        );

        let start = Instant::now();
        let mut result = run(&exe, &[], &args, &dir);
        // Older TSAN runtimes cannot map their shadow memory under high-entropy ASLR; rerun
        // with randomization off for this process only.
        if result.stderr.contains("unexpected memory mapping") {
            eprintln!("ThreadSanitizer could not map its shadow memory; rerunning under `setarch -R`");
            let arch = env::consts::ARCH;
            result = run(&exe, &["setarch", arch, "-R"], &args, &dir);
        }
        let elapsed = start.elapsed();

        print!("{}", result.stdout);
        eprint!("{}", result.stderr);
        let report = format!(
            "exit code {:?} after {:.1} s\n--- stdout ---\n{}\n--- stderr ---\n{}\n{replay}",
            result.code,
            elapsed.as_secs_f64(),
            result.stdout,
            result.stderr
        );

        assert!(!result.timed_out, "{name} did not finish within {RUN_LIMIT:?} (a hang): {report}");
        assert!(
            !result.stderr.contains("ThreadSanitizer"),
            "ThreadSanitizer reported a problem (if it is 'unexpected memory mapping', lower \
             vm.mmap_rnd_bits or run under `setarch -R`): {report}"
        );
        assert_eq!(result.code, Some(0), "{name} failed: {report}");
        let ops = parse_ops(&result.stdout, name)
            .unwrap_or_else(|| panic!("no `{name}: OK ... ops=N` line in the output: {report}"));
        if round.is_none() {
            assert!(ops >= p.min_ops, "{name} ran only {ops} operations, want at least {}: {report}", p.min_ops);
        }
        total_ops += ops;
        println!(
            "protocol_tsan ({name}, checked={checked}, seed={}{threads}): {ops} barrier operations under \
             ThreadSanitizer in {:.1} s",
            p.seed,
            elapsed.as_secs_f64()
        );
    }
    if !replaying {
        assert!(
            total_ops >= program.min_ops_per_test,
            "the runs executed {total_ops} operations in all, want at least {}",
            program.min_ops_per_test
        );
    }
    println!(
        "protocol_tsan ({name}, checked={checked}): {total_ops} barrier operations in {} run(s) in {:.1} s",
        plans.len(),
        all.elapsed().as_secs_f64()
    );
    let _ = fs::remove_dir_all(&dir);
}
