//! ThreadSanitizer stress test of the portable barrier protocol on host threads.
//!
//! Builds `hip-src/tests/protocol_stress.cpp` with `-fsanitize=thread` and runs it: at least
//! 10^6 random barrier operations (arrive, arrive_and_drop, arrive_and_wait, split
//! arrive/wait, the try_wait family, barrier_arrive_tx, barrier_expect_tx, complete_tx, a
//! completion function) from several `std::thread`s, each checked for exactly-once phase
//! completion and for the happens-before edges the barrier promises. A missing C++ compiler
//! or ThreadSanitizer runtime fails the test; it never passes silently.
//!
//! `PROTOCOL_STRESS_SEED` picks another seed (the program's default otherwise).

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

const MIN_OPS: u64 = 1_000_000;
const RUN_LIMIT: Duration = Duration::from_secs(600);

/// `$CXX` (program and any leading arguments, as in `CXX="ccache g++"`), else `g++`.
fn cxx() -> (String, Vec<String>) {
    let spec = env::var("CXX").ok().filter(|s| !s.trim().is_empty()).unwrap_or_else(|| "g++".to_string());
    let mut words = spec.split_whitespace().map(str::to_string);
    let program = words.next().unwrap_or_else(|| "g++".to_string());
    (program, words.collect())
}

fn out_dir(checked: bool) -> PathBuf {
    let base = option_env!("CARGO_TARGET_TMPDIR").map(PathBuf::from).unwrap_or_else(env::temp_dir);
    let dir = base.join(format!("xbarrier-protocol-stress-{}-checked{}", std::process::id(), u8::from(checked)));
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

fn build(root: &Path, dir: &Path, checked: bool) -> PathBuf {
    let (program, pre_args) = cxx();
    let source = root.join("hip-src/tests/protocol_stress.cpp");
    let include = root.join("hip-src/include");
    let exe = dir.join("protocol_stress");

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
        .args(["-std=c++17", "-O1", "-g", "-fsanitize=thread", "-pthread"])
        .arg(format!("-DXB_CHECKED={}", u8::from(checked)))
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
    exe
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
        .env("TSAN_OPTIONS", "halt_on_error=1 exitcode=66 second_deadlock_stack=1")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for protocol_stress") {
            break status;
        }
        if start.elapsed() > RUN_LIMIT {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait for killed protocol_stress");
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

fn parse_ops(stdout: &str) -> Option<u64> {
    let line = stdout.lines().rev().find(|l| l.starts_with("protocol_stress: OK "))?;
    let field = line.split_whitespace().find_map(|w| w.strip_prefix("ops="))?;
    field.parse().ok()
}

/// Checked device code: the claimed layouts everywhere, with the protocol's own checks.
#[test]
fn protocol_stress_under_thread_sanitizer() {
    stress(true);
}

/// Unchecked device code: the direct layout for the system-scope barrier without a
/// completion function (protocol.hpp), as release builds run it.
#[test]
fn protocol_stress_unchecked_under_thread_sanitizer() {
    stress(false);
}

fn stress(checked: bool) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = out_dir(checked);
    let exe = build(root, &dir, checked);
    let args: Vec<String> = env::var("PROTOCOL_STRESS_SEED").ok().into_iter().collect();

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
        "exit code {:?} after {:.1} s\n--- stdout ---\n{}\n--- stderr ---\n{}",
        result.code,
        elapsed.as_secs_f64(),
        result.stdout,
        result.stderr
    );

    assert!(!result.timed_out, "protocol_stress did not finish within {RUN_LIMIT:?} (a hang): {report}");
    assert!(
        !result.stderr.contains("ThreadSanitizer"),
        "ThreadSanitizer reported a problem (if it is 'unexpected memory mapping', lower \
         vm.mmap_rnd_bits or run under `setarch -R`): {report}"
    );
    assert_eq!(result.code, Some(0), "protocol_stress failed: {report}");
    let ops = parse_ops(&result.stdout)
        .unwrap_or_else(|| panic!("no `protocol_stress: OK ... ops=N` line in the output: {report}"));
    assert!(ops >= MIN_OPS, "protocol_stress ran only {ops} operations, want at least {MIN_OPS}: {report}");

    println!(
        "protocol_tsan (checked={checked}): {ops} barrier operations under ThreadSanitizer in {:.1} s",
        elapsed.as_secs_f64()
    );
    let _ = fs::remove_dir_all(&dir);
}
