//! The device headers as a compiler sees them; needs compilers, no GPU.
//!
//! **Every header compiles on its own.** Each header under `hip-src/include/xbarrier/` is
//! compiled alone (a translation unit that includes it twice, which also checks its include
//! guard), in release (`XB_CHECKED=0`) and checked (`XB_CHECKED=1`) builds, for each target
//! it is written for:
//!
//! | target | compiler and flags |
//! | --- | --- |
//! | host | `$CXX` or `g++ -std=c++17 -fsyntax-only` (checked: with `XB_SHADOW_MODEL=1`, the checked engine on the mbarrier model) |
//! | cuda | `nvcc -std=c++17 -x cu -arch=sm_90 -c -o /dev/null` (host and device pass; checked: with `XB_SANITIZER=1`, the checked engine with its shadow mbarriers) |
//! | amdgpu | `$HIP_CLANG` or `clang-19 -std=c++17 -x hip --cuda-device-only -nogpuinc -nogpulib --offload-arch=gfx90a -fsyntax-only` |
//!
//! The rule for which header is for which target: `platform/host*.hpp` is the host's,
//! `platform/cuda*.hpp` CUDA's, `platform/amdgcn*.hpp` AMDGPU's; every other header is
//! compiled for all three (the engines of one target compile to nothing on the others).
//! New headers are picked up from the directory.
//!
//! **Misuse the type system can see is a compile error.** `barrier_arrive_tx`,
//! `barrier_expect_tx` and `memcpy_async_tx` on a barrier whose scope is not
//! `thread_scope_block` (device, system, thread) must not compile, each with its
//! static_assert message (one trial per function and scope), while the same calls on block
//! scope do; and a platform layer that lacks a primitive, or returns the wrong type from
//! one, fails platform/interface.hpp's check with a message naming it. These compile with
//! the host compiler.
//!
//! A missing compiler makes its trials one ignored trial with the reason, or a failing one
//! when `XBAR_REQUIRE_TOOLCHAINS=1` (as `tools/test.sh` sets).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use libtest_mimic::{Arguments, Failed, Trial};

/// XBAR_REQUIRE_TOOLCHAINS=1 turns a missing compiler into a failure.
fn toolchains_required() -> bool {
    env::var("XBAR_REQUIRE_TOOLCHAINS").is_ok_and(|v| v == "1")
}

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn include_dir() -> PathBuf {
    repository().join("hip-src").join("include")
}

/// A directory of this run for the translation units.
fn work_dir() -> PathBuf {
    let base = option_env!("CARGO_TARGET_TMPDIR").map(PathBuf::from).unwrap_or_else(env::temp_dir);
    let dir = base.join(format!("xbarrier-headers-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// A fresh source file in `dir` holding `text`, with the extension `ext`.
fn source_file(dir: &Path, ext: &str, text: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = dir.join(format!("tu{}.{ext}", NEXT.fetch_add(1, Ordering::Relaxed)));
    fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Host,
    Cuda,
    Amdgpu,
}

impl Target {
    const ALL: [Target; 3] = [Target::Host, Target::Cuda, Target::Amdgpu];

    fn name(self) -> &'static str {
        match self {
            Target::Host => "host",
            Target::Cuda => "cuda",
            Target::Amdgpu => "amdgpu",
        }
    }

    /// The prefix under `platform/` of the headers written for this target alone.
    fn platform_prefix(self) -> &'static str {
        match self {
            Target::Host => "platform/host",
            Target::Cuda => "platform/cuda",
            Target::Amdgpu => "platform/amdgcn",
        }
    }

    /// Whether `header` (relative to `xbarrier/`) is compiled for this target.
    fn compiles(self, header: &str) -> bool {
        let own = Target::ALL.iter().find(|t| header.starts_with(t.platform_prefix()));
        own.is_none_or(|&t| t == self)
    }

    fn extension(self) -> &'static str {
        match self {
            Target::Cuda => "cu",
            Target::Host | Target::Amdgpu => "cpp",
        }
    }
}

/// A compiler that answered `--version`, and the arguments every compile for its target takes.
#[derive(Clone)]
struct Compiler {
    program: PathBuf,
    args: Vec<String>,
}

impl Compiler {
    /// Compiles `source` with the target's flags, `defines` and the xbarrier include
    /// directory; Ok(stderr) when it compiled, Err(stderr) when it did not.
    fn compile(&self, source: &Path, defines: &[&str]) -> Result<String, String> {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).arg("-I").arg(include_dir());
        cmd.args(defines.iter().map(|d| format!("-D{d}")));
        cmd.arg(source);
        let out = cmd.output().map_err(|e| format!("cannot run {}: {e}", self.program.display()))?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.success() {
            Ok(stderr)
        } else {
            Err(stderr)
        }
    }

    fn command_line(&self, source: &Path, defines: &[&str]) -> String {
        let mut words = vec![self.program.display().to_string()];
        words.extend(self.args.iter().cloned());
        words.push(format!("-I {}", include_dir().display()));
        words.extend(defines.iter().map(|d| format!("-D{d}")));
        words.push(source.display().to_string());
        words.join(" ")
    }
}

/// The first of `candidates` that runs `--version`, or what was tried.
fn first_runnable(candidates: Vec<(PathBuf, String)>) -> Result<PathBuf, String> {
    let mut tried = Vec::new();
    for (candidate, from) in candidates {
        match Command::new(&candidate).arg("--version").output() {
            Ok(out) if out.status.success() => return Ok(candidate),
            Ok(out) => tried.push(format!("{} ({from}): exit {}", candidate.display(), out.status)),
            Err(e) => tried.push(format!("{} ({from}): {e}", candidate.display())),
        }
    }
    Err(format!("no compiler found; tried {}", tried.join("; ")))
}

fn find_compiler(target: Target) -> Result<Compiler, String> {
    let words = |s: &[&str]| s.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    match target {
        Target::Host => {
            // `$CXX` may carry leading arguments (`CXX="ccache g++"`).
            let spec = env::var("CXX").ok().filter(|s| !s.trim().is_empty());
            let (program, mut args) = match &spec {
                Some(spec) => {
                    let mut w = spec.split_whitespace().map(str::to_owned);
                    (w.next().unwrap_or_default(), w.collect())
                }
                None => ("g++".to_owned(), Vec::new()),
            };
            let from = if spec.is_some() { "$CXX" } else { "g++ on PATH ($CXX unset)" };
            let program = first_runnable(vec![(PathBuf::from(program), from.to_owned())])?;
            args.extend(words(&["-std=c++17", "-fsyntax-only", "-x", "c++"]));
            Ok(Compiler { program, args })
        }
        Target::Cuda => {
            let mut candidates = Vec::new();
            if let Some(p) = env::var_os("NVCC") {
                candidates.push((PathBuf::from(p), "$NVCC".to_owned()));
            }
            for var in ["CUDA_PATH", "CUDA_HOME"] {
                if let Some(root) = env::var_os(var) {
                    candidates.push((PathBuf::from(root).join("bin").join("nvcc"), format!("${var}/bin/nvcc")));
                }
            }
            if let Some(path) = env::var_os("PATH") {
                candidates.extend(env::split_paths(&path).map(|d| (d.join("nvcc"), "PATH".to_owned())));
            }
            let program = first_runnable(candidates)?;
            let args = words(&["-std=c++17", "-x", "cu", "-arch=sm_90", "-c", "-o", "/dev/null"]);
            Ok(Compiler { program, args })
        }
        Target::Amdgpu => {
            let (program, from) = match env::var_os("HIP_CLANG") {
                Some(p) => (PathBuf::from(p), "$HIP_CLANG"),
                None => (PathBuf::from("clang-19"), "clang-19 on PATH ($HIP_CLANG unset)"),
            };
            let program = first_runnable(vec![(program, from.to_owned())])?;
            let args = words(&[
                "-std=c++17",
                "-x",
                "hip",
                "--cuda-device-only",
                "-nogpuinc",
                "-nogpulib",
                "--offload-arch=gfx90a",
                "-fsyntax-only",
            ]);
            Ok(Compiler { program, args })
        }
    }
}

/// The trial `name` when its compiler is missing: ignored with the reason, or failing when
/// toolchains are required.
fn no_toolchain(name: &str, error: &str) -> Trial {
    if toolchains_required() {
        let message = format!("XBAR_REQUIRE_TOOLCHAINS=1 but {name} cannot run: {error}");
        return Trial::test(name, move || Err(message.into()));
    }
    Trial::test(format!("{name} (ignored: no toolchain: {error})"), || Ok(())).with_ignored_flag(true)
}

/// Every header under `hip-src/include/xbarrier`, as `xbarrier/`-relative paths, sorted.
fn headers() -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if path.extension().is_some_and(|e| e == "h" || e == "hpp") {
                let relative = path.strip_prefix(base).expect("under the include directory");
                out.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let base = include_dir().join("xbarrier");
    let mut out = Vec::new();
    walk(&base, &base, &mut out);
    out.sort();
    assert!(out.iter().any(|h| h == "barrier.hpp"), "no headers found under {}", base.display());
    out
}

/// The build flavours each header compiles in: its trial label and defines. Checked builds
/// compile the checked sm_90 engine: on the host over its software mbarrier, on CUDA as the
/// sanitizer build (`XB_SANITIZER=1`).
fn builds(target: Target) -> [(&'static str, &'static [&'static str]); 2] {
    let checked: &'static [&'static str] = match target {
        Target::Host => &["XB_CHECKED=1", "XB_SHADOW_MODEL=1"],
        Target::Cuda => &["XB_CHECKED=1", "XB_SANITIZER=1"],
        Target::Amdgpu => &["XB_CHECKED=1"],
    };
    [("release", &["XB_CHECKED=0"]), ("checked", checked)]
}

fn header_trials(dir: &Path) -> Vec<Trial> {
    let headers = headers();
    let mut trials = Vec::new();
    for target in Target::ALL {
        let compiler = match find_compiler(target) {
            Ok(compiler) => compiler,
            Err(error) => {
                trials.push(no_toolchain(&format!("[{}] every header on its own", target.name()), &error));
                continue;
            }
        };
        for (build, defines) in builds(target) {
            for header in headers.iter().filter(|h| target.compiles(h)) {
                let text = format!("#include <xbarrier/{header}>\n#include <xbarrier/{header}>\n");
                let source = source_file(dir, target.extension(), &text);
                let compiler = compiler.clone();
                let name = format!("[{} {build}] {header}", target.name());
                trials.push(Trial::test(name, move || {
                    compiler.compile(&source, defines).map(|_| ()).map_err(|stderr| {
                        Failed::from(format!(
                            "does not compile on its own:\n  {}\n{stderr}",
                            compiler.command_line(&source, defines)
                        ))
                    })
                }));
            }
        }
    }
    trials
}

/// A snippet that must not compile, and the text its compiler's errors must contain.
struct MustFail {
    name: String,
    source: String,
    message: String,
}

const TX_RULE: &str = "needs a barrier<thread_scope_block>: CUDA offers the tx-count only on block-scope barriers in \
                       shared memory";

/// One per tx function and scope other than the block's, then the platform interface checks.
fn must_fail() -> Vec<MustFail> {
    let calls = [
        ("barrier_arrive_tx", "(void)xb::device::barrier_arrive_tx(bar, 1, 16);"),
        ("barrier_expect_tx", "xb::device::barrier_expect_tx(bar, 16);"),
        ("memcpy_async_tx", "xb::device::memcpy_async_tx(dst, src, xb::aligned_size_t<16>(16), bar);"),
    ];
    let mut out = Vec::new();
    for (function, call) in calls {
        let message = format!("xb::device::{function} {TX_RULE}");
        for scope in ["thread_scope_device", "thread_scope_system", "thread_scope_thread"] {
            out.push(MustFail {
                name: format!("{function} on barrier<{scope}> does not compile"),
                source: format!(
                    "#include <xbarrier/barrier.hpp>\n\
                     void use(xb::barrier<xb::{scope}>& bar, void* dst, const void* src) {{\n  \
                       (void)dst; (void)src;\n  {call}\n}}\n"
                ),
                message: message.clone(),
            });
        }
    }
    // The copies' compile-time rules, as CUDA's.
    let copy_cases = [
        (
            "memcpy_async_tx with aligned_size_t<8> does not compile",
            "xb::device::memcpy_async_tx(dst, src, xb::aligned_size_t<8>(64), bar);",
            "xb::device::memcpy_async_tx needs aligned_size_t<16> or wider",
        ),
        (
            "memcpy_async_tx of a type aligned wider than the promise does not compile",
            "xb::device::memcpy_async_tx(wide_dst, wide_src, xb::aligned_size_t<16>(64), bar);",
            "the promised alignment must be at least alignof(T)",
        ),
        (
            "memcpy_async_tx of a type that is not trivially copyable does not compile",
            "xb::device::memcpy_async_tx(odd_dst, odd_src, xb::aligned_size_t<16>(64), bar);",
            "xb::device::memcpy_async_tx needs a trivially copyable type",
        ),
        (
            "memcpy_async of a type that is not trivially copyable does not compile",
            "xb::memcpy_async(odd_dst, odd_src, 64, bar);",
            "xb::memcpy_async needs a trivially copyable type",
        ),
        (
            "the group memcpy_async of a type that is not trivially copyable does not compile",
            "xb::memcpy_async(group{}, odd_dst, odd_src, 64, bar);",
            "xb::memcpy_async needs a trivially copyable type",
        ),
        (
            "aligned_size_t of an alignment that is not a power of two does not compile",
            "xb::device::memcpy_async_tx(dst, src, xb::aligned_size_t<24>(48), bar);",
            "xb::aligned_size_t<Align>: Align must be a power of two",
        ),
    ];
    for (name, call, message) in copy_cases {
        out.push(MustFail { name: name.into(), source: copy_snippet(call), message: message.into() });
    }
    // A platform layer without poll(): the name hides host_platform's template.
    out.push(MustFail {
        name: "a platform layer without poll does not compile".into(),
        source: "#include <xbarrier/barrier.hpp>\n\
                 struct no_poll : xb::detail::host_platform { static constexpr int poll = 0; };\n\
                 static_assert(xb::detail::check_platform_interface<no_poll>(), \"\");\n"
            .into(),
        message: "xbarrier platform layer: missing or mistyped primitive `template <mem_scope> static uint64_t \
                  poll(const uint64_t*)`"
            .into(),
    });
    // A platform layer whose completer-acquire choice is not a constant expression.
    out.push(MustFail {
        name: "a platform layer whose acquiring_rmw_is_cheap is not constexpr does not compile".into(),
        source: "#include <xbarrier/barrier.hpp>\n\
                 struct runtime_choice : xb::detail::host_platform {\n\
                   template <xb::detail::mem_scope S> static bool acquiring_rmw_is_cheap() { return true; }\n\
                 };\n\
                 static_assert(xb::detail::check_platform_interface<runtime_choice>(), \"\");\n"
            .into(),
        message: "xbarrier platform layer: missing or mistyped primitive `template <mem_scope> static constexpr bool \
                  acquiring_rmw_is_cheap()`"
            .into(),
    });
    // A platform layer whose clock returns the wrong type.
    out.push(MustFail {
        name: "a platform layer with a mistyped now_ns does not compile".into(),
        source: "#include <xbarrier/barrier.hpp>\n\
                 struct int_clock : xb::detail::host_platform { static int now_ns() { return 0; } };\n\
                 static_assert(xb::detail::check_platform_interface<int_clock>(), \"\");\n"
            .into(),
        message: "xbarrier platform layer: missing or mistyped primitive `static uint64_t now_ns()`".into(),
    });
    out
}

/// A function making `call` on a block-scope barrier, with pointers of every kind the copy
/// rules tell apart in scope: bytes (dst, src), a type aligned to 32 (wide_*), one that is
/// not trivially copyable (odd_*), and a one-thread group.
fn copy_snippet(call: &str) -> String {
    format!(
        "#include <xbarrier/barrier.hpp>\n\
         struct alignas(32) wide {{ float v[8]; }};\n\
         struct odd {{ odd(const odd&) {{}} int v; }};\n\
         struct group {{ unsigned thread_rank() const {{ return 0; }} unsigned size() const {{ return 1; }} }};\n\
         void use(xb::barrier<xb::thread_scope_block>& bar, void* dst, const void* src, wide* wide_dst,\n\
                  const wide* wide_src, odd* odd_dst, const odd* odd_src) {{\n  \
           (void)dst; (void)src; (void)wide_dst; (void)wide_src; (void)odd_dst; (void)odd_src;\n  {call}\n}}\n"
    )
}

/// What must compile next to the failing snippets: the same calls on block scope, with and
/// without a completion function.
const MUST_COMPILE: &str = "#include <xbarrier/barrier.hpp>\n\
    struct step { void operator()() {} };\n\
    template <class B>\n\
    void use(B& bar, void* dst, const void* src) {\n  \
      xb::arrival_token t = xb::device::barrier_arrive_tx(bar, 1, 16);\n  \
      (void)t;\n  \
      xb::device::barrier_expect_tx(bar, 16);\n  \
      xb::device::memcpy_async_tx(dst, src, xb::aligned_size_t<16>(16), bar);\n\
    }\n\
    template void use(xb::barrier<xb::thread_scope_block>&, void*, const void*);\n\
    template void use(xb::barrier<xb::thread_scope_block, step>&, void*, const void*);\n";

/// Properties of the API that hold at compile time, each a snippet that must compile (its
/// static_asserts hold), in release and checked builds.
fn must_hold() -> Vec<(&'static str, &'static str)> {
    vec![
        ("the tx functions on barrier<thread_scope_block> compile", MUST_COMPILE),
        (
            "try_wait_until and try_wait_parity_until take std::chrono time points",
            "#include <chrono>\n\
             #include <utility>\n\
             #include <xbarrier/barrier.hpp>\n\
             bool use(xb::barrier<xb::thread_scope_block>& bar) {\n  \
               using clock = std::chrono::steady_clock;\n  \
               xb::arrival_token t = bar.arrive();\n  \
               const bool a = bar.try_wait_until(std::move(t), clock::now() + std::chrono::milliseconds(1));\n  \
               const bool b = bar.try_wait_parity_until(true, clock::now() - std::chrono::seconds(1));\n  \
               const bool c = bar.try_wait_parity_until(false, xb::time_point(xb::clock_ns()));\n  \
               return a && b && c;\n\
             }\n",
        ),
        (
            "the copies take every power-of-two promise CUDA takes, typed or not",
            "#include <xbarrier/barrier.hpp>\n\
             struct alignas(32) wide { float v[8]; };\n\
             struct group { unsigned thread_rank() const { return 0; } unsigned size() const { return 1; } };\n\
             void use(xb::barrier<xb::thread_scope_block>& bar, float* f, const float* cf, wide* w, const wide* cw,\n\
                      double* d, const double* cd, void* v, const void* cv) {\n  \
               xb::device::memcpy_async_tx(f, cf, xb::aligned_size_t<16>(64), bar);\n  \
               xb::device::memcpy_async_tx(f, cf, xb::aligned_size_t<32>(64), bar);\n  \
               xb::device::memcpy_async_tx(w, cw, xb::aligned_size_t<128>(256), bar);\n  \
               xb::device::memcpy_async_tx(v, cf, xb::aligned_size_t<64>(64), bar);\n  \
               xb::device::bulk_store(v, cv, xb::aligned_size_t<32>(64));\n  \
               xb::memcpy_async(d, cd, xb::aligned_size_t<4>(64), bar);\n  \
               xb::memcpy_async(v, cd, 64, bar);\n  \
               xb::memcpy_async(group{}, w, cw, xb::aligned_size_t<32>(64), bar);\n  \
               xb::memcpy_async(group{}, v, cv, 64, bar);\n\
             }\n",
        ),
        (
            "barrier's constructor is explicit, for every scope",
            "#include <type_traits>\n\
             #include <xbarrier/barrier.hpp>\n\
             struct step { void operator()() {} };\n\
             template <xb::thread_scope S>\n\
             constexpr bool explicit_only() {\n  \
               using B = xb::barrier<S>;\n  \
               using C = xb::barrier<S, step>;\n  \
               return std::is_constructible<B, ptrdiff_t>::value && !std::is_convertible<ptrdiff_t, B>::value &&\n         \
                      std::is_constructible<C, ptrdiff_t, step>::value && !std::is_convertible<ptrdiff_t, C>::value;\n\
             }\n\
             static_assert(explicit_only<xb::thread_scope_thread>(), \"thread\");\n\
             static_assert(explicit_only<xb::thread_scope_block>(), \"block\");\n\
             static_assert(explicit_only<xb::thread_scope_device>(), \"device\");\n\
             static_assert(explicit_only<xb::thread_scope_system>(), \"system\");\n",
        ),
    ]
}

fn compile_fail_trials(dir: &Path) -> Vec<Trial> {
    let compiler = match find_compiler(Target::Host) {
        Ok(compiler) => compiler,
        Err(error) => return vec![no_toolchain("[compile-fail] misuse that does not compile", &error)],
    };
    let mut trials = Vec::new();
    for case in must_fail() {
        let source = source_file(dir, "cpp", &case.source);
        let compiler = compiler.clone();
        trials.push(Trial::test(format!("[compile-fail] {}", case.name), move || {
            match compiler.compile(&source, &["XB_CHECKED=1"]) {
                Ok(_) => {
                    Err(format!("compiled, but must not:\n  {}", compiler.command_line(&source, &["XB_CHECKED=1"]))
                        .into())
                }
                Err(stderr) if stderr.contains(&case.message) => Ok(()),
                Err(stderr) => Err(format!("failed without the message `{}`:\n{stderr}", case.message).into()),
            }
        }));
    }
    for (name, text) in must_hold() {
        let source = source_file(dir, "cpp", text);
        let compiler = compiler.clone();
        trials.push(Trial::test(format!("[compile-fail] {name}"), move || {
            for checked in ["XB_CHECKED=0", "XB_CHECKED=1"] {
                compiler.compile(&source, &[checked]).map_err(|stderr| {
                    Failed::from(format!(
                        "does not compile:\n  {}\n{stderr}",
                        compiler.command_line(&source, &[checked])
                    ))
                })?;
            }
            Ok(())
        }));
    }
    trials
}

fn main() {
    let args = Arguments::from_args();
    let dir = work_dir();
    let mut trials = compile_fail_trials(&dir);
    trials.extend(header_trials(&dir));
    let conclusion = libtest_mimic::run(&args, trials);
    let _ = fs::remove_dir_all(&dir);
    conclusion.exit();
}
