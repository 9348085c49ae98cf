//! Finding the toolchains that compile kernels, for `xbar info`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The project's installer of the kernel toolchains.
pub const INSTALLER: &str = "tools/install-toolchains.sh";

/// Where the installer puts the GPU toolchains unless `$GPU_TOOLCHAINS_PREFIX` says otherwise.
const DEFAULT_PREFIX: &str = "/opt/gpu-toolchains";

/// Where to look for a tool.
enum Candidate {
    /// An environment variable naming the tool (a path, or a name looked up on PATH; words
    /// after the first are arguments, as in `CXX="ccache g++"`).
    Env(&'static str),
    /// An environment variable naming a directory, and the tool's path below it.
    EnvDir(&'static str, &'static str),
    /// A name looked up on PATH.
    OnPath(&'static str),
    /// A fixed path.
    Fixed(&'static str),
    /// A path below the installer's prefix (`$GPU_TOOLCHAINS_PREFIX`, else /opt/gpu-toolchains).
    Installed(&'static str),
    /// The `zig` binary inside the `ziglang` Python wheel: the installer's venv, else `python3`'s.
    ZigWheel,
}

/// Which line of the version output describes the tool.
#[derive(Clone, Copy)]
enum Line {
    First,
    Last,
}

/// One toolchain and how to find it.
struct Spec {
    /// What it is, for people.
    label: &'static str,
    /// Where to look, in order.
    candidates: Vec<Candidate>,
    /// Arguments that print the version (after the tool's own extra arguments).
    version_args: &'static [&'static str],
    /// Which line of that output to show.
    line: Line,
    /// Arguments put first when the tool found is a `zig` binary (`zig clang` is clang).
    zig_args: &'static [&'static str],
    /// A check run on a found tool: a note when it falls short.
    note: Option<fn(&Found) -> Option<String>>,
    /// More to say about a found tool, given its version line (e.g. the AMD targets it knows).
    detail: Option<fn(&Found, &str) -> Option<String>>,
    /// How to install it.
    hint: &'static str,
}

/// A tool that was found.
pub struct Found {
    /// Where.
    pub path: PathBuf,
    /// Arguments that always come first (e.g. `clang` for `zig clang`).
    pub args: Vec<OsString>,
    /// How it was found (e.g. `$CXX`).
    pub via: String,
}

/// What the search for one toolchain found.
pub struct Report {
    /// What it is.
    pub label: &'static str,
    /// Found: where, its version line, and a note; or not found: what was searched.
    pub result: Result<(Found, String, Option<String>), Vec<String>>,
    /// More about the tool found (e.g. the AMD targets a clang knows).
    pub detail: Option<String>,
    /// How to install it.
    pub hint: &'static str,
}

impl Report {
    /// The report as indented lines.
    pub fn render(&self) -> String {
        match &self.result {
            Ok((found, version, note)) => {
                let mut command = found.path.display().to_string();
                for arg in &found.args {
                    command.push(' ');
                    command.push_str(&arg.to_string_lossy());
                }
                let mut text = format!("  {}: found at {command} ({version}) [via {}]\n", self.label, found.via);
                if let Some(detail) = &self.detail {
                    text.push_str(&format!("      {detail}\n"));
                }
                if let Some(note) = note {
                    text.push_str(&format!("      note: {note}\n"));
                }
                text
            }
            Err(searched) => format!(
                "  {}: not found (searched: {})\n      install: {}\n",
                self.label,
                searched.join(", "),
                self.hint
            ),
        }
    }
}

fn specs() -> Vec<Spec> {
    vec![
        Spec {
            label: "host C++ compiler",
            candidates: vec![
                Candidate::Env("CXX"),
                Candidate::OnPath("c++"),
                Candidate::OnPath("g++"),
                Candidate::OnPath("clang++"),
            ],
            version_args: &["--version"],
            line: Line::First,
            zig_args: &[],
            note: None,
            detail: None,
            hint: "needed by every build (the host backend's kernels): `bash tools/install-toolchains.sh` \
                   (or apt-get install g++), or set $CXX",
        },
        Spec {
            label: "nvcc (CUDA)",
            candidates: vec![
                Candidate::Env("NVCC"),
                Candidate::EnvDir("CUDA_PATH", "bin/nvcc"),
                Candidate::EnvDir("CUDA_HOME", "bin/nvcc"),
                Candidate::OnPath("nvcc"),
                Candidate::Installed("cuda/bin/nvcc"),
                Candidate::Fixed("/usr/local/cuda/bin/nvcc"),
            ],
            version_args: &["--version"],
            line: Line::Last,
            zig_args: &[],
            note: None,
            detail: None,
            hint: "needed by the `cuda` feature's kernel images: `bash tools/install-toolchains.sh cuda` \
                   (CUDA 13 from PyPI), then `source /opt/gpu-toolchains/env.sh`; or set $NVCC / $CUDA_PATH",
        },
        Spec {
            label: "clang for AMDGPU (HIP)",
            candidates: vec![
                Candidate::Env("HIP_CLANG"),
                Candidate::OnPath("clang-19"),
                Candidate::OnPath("clang"),
                Candidate::EnvDir("ROCM_PATH", "llvm/bin/clang"),
                Candidate::Fixed("/opt/rocm/llvm/bin/clang"),
            ],
            version_args: &["--version"],
            line: Line::First,
            zig_args: &[],
            note: Some(amdgpu_note),
            detail: Some(amdgpu_targets),
            hint: "needed by the `hip` feature's kernel images: `bash tools/install-toolchains.sh amd` \
                   (Debian's clang-19 and HIP headers), or set $HIP_CLANG",
        },
        Spec {
            label: "hipcc (HIP)",
            candidates: vec![
                Candidate::Env("HIPCC"),
                Candidate::OnPath("hipcc"),
                Candidate::EnvDir("ROCM_PATH", "bin/hipcc"),
                Candidate::Fixed("/opt/rocm/bin/hipcc"),
            ],
            version_args: &["--version"],
            line: Line::First,
            zig_args: &[],
            note: None,
            detail: None,
            hint: "optional (xbarrier compiles HIP with clang, see above); comes with ROCm \
                   (apt-get install hipcc), or set $HIPCC / $ROCM_PATH",
        },
        Spec {
            label: "clang-22 (zig wheel)",
            candidates: vec![
                Candidate::OnPath("clang-22"),
                Candidate::Installed("bin/clang-22"),
                Candidate::Env("ZIG"),
                Candidate::OnPath("zig"),
                Candidate::ZigWheel,
            ],
            version_args: &["--version"],
            line: Line::First,
            zig_args: &["clang"],
            note: None,
            detail: Some(amdgpu_targets),
            hint: "optional (newest AMD targets, gfx950 / gfx1250): `bash tools/install-toolchains.sh zig` \
                   (the ziglang wheel; `zig clang` is clang 22), then `source /opt/gpu-toolchains/env.sh`; or set $ZIG",
        },
    ]
}

/// Searches for every toolchain.
pub fn probe_all() -> Vec<Report> {
    specs().iter().map(probe).collect()
}

fn probe(spec: &Spec) -> Report {
    let mut searched = Vec::new();
    for candidate in &spec.candidates {
        match locate(candidate, spec) {
            Ok(found) => {
                let version = version(&found, spec.version_args, spec.line);
                let detail = spec.detail.and_then(|describe| describe(&found, &version));
                let note = spec.note.and_then(|check| check(&found)).or_else(|| {
                    matches!(candidate, Candidate::Installed(_)).then(|| {
                        format!(
                            "not on PATH: `source {}` sets PATH and the variables the build looks at",
                            prefix().join("env.sh").display()
                        )
                    })
                });
                return Report { label: spec.label, result: Ok((found, version, note)), detail, hint: spec.hint };
            }
            Err(tried) => searched.push(tried),
        }
    }
    Report { label: spec.label, result: Err(searched), detail: None, hint: spec.hint }
}

/// Finds the tool `candidate` names, or says what was tried.
fn locate(candidate: &Candidate, spec: &Spec) -> Result<Found, String> {
    let is_zig = |path: &Path| path.file_stem().is_some_and(|s| s == "zig");
    let with_zig_args = |path: PathBuf, mut args: Vec<OsString>, via: String| {
        if is_zig(&path) {
            args.splice(0..0, spec.zig_args.iter().map(OsString::from));
        }
        Found { path, args, via }
    };
    match candidate {
        Candidate::Env(var) => {
            let value = match std::env::var(var) {
                Ok(value) if !value.trim().is_empty() => value,
                Ok(_) | Err(std::env::VarError::NotPresent) => return Err(format!("${var} (unset)")),
                Err(std::env::VarError::NotUnicode(_)) => return Err(format!("${var} (not valid UTF-8)")),
            };
            let mut words = value.split_whitespace();
            let program = words.next().unwrap_or_default();
            let args: Vec<OsString> = words.map(OsString::from).collect();
            let path = if program.contains('/') {
                Some(PathBuf::from(program)).filter(|p| is_executable(p))
            } else {
                find_on_path(program)
            };
            match path {
                Some(path) => Ok(with_zig_args(path, args, format!("${var}"))),
                None => Err(format!("${var}={value} (not an executable)")),
            }
        }
        Candidate::EnvDir(var, below) => match std::env::var_os(var) {
            Some(dir) if !dir.is_empty() => {
                let path = PathBuf::from(dir).join(below);
                if is_executable(&path) {
                    Ok(with_zig_args(path, Vec::new(), format!("${var}")))
                } else {
                    Err(format!("${var}/{below} = {}", path.display()))
                }
            }
            _ => Err(format!("${var}/{below} (${var} unset)")),
        },
        Candidate::OnPath(name) => match find_on_path(name) {
            Some(path) => Ok(with_zig_args(path, Vec::new(), "PATH".to_owned())),
            None => Err(format!("{name} on PATH")),
        },
        Candidate::Fixed(path) => {
            let path = PathBuf::from(path);
            if is_executable(&path) {
                Ok(with_zig_args(path, Vec::new(), "default location".to_owned()))
            } else {
                Err(path.display().to_string())
            }
        }
        Candidate::Installed(below) => {
            let path = prefix().join(below);
            if is_executable(&path) {
                Ok(with_zig_args(path, Vec::new(), "tools/install-toolchains.sh's prefix".to_owned()))
            } else {
                Err(path.display().to_string())
            }
        }
        Candidate::ZigWheel => match zig_wheel() {
            Ok((path, via)) => Ok(with_zig_args(path, Vec::new(), via)),
            Err(tried) => Err(tried),
        },
    }
}

/// The installer's prefix.
fn prefix() -> PathBuf {
    std::env::var_os("GPU_TOOLCHAINS_PREFIX")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_PREFIX), PathBuf::from)
}

/// The `zig` binary of the `ziglang` wheel, in the installer's venv or `python3`'s packages,
/// with how it was found; or what was tried.
fn zig_wheel() -> Result<(PathBuf, String), String> {
    let venv = prefix().join("zig-venv/bin/python");
    let pythons = [Some(venv.clone()).filter(|p| is_executable(p)), find_on_path("python3")];
    for python in pythons.into_iter().flatten() {
        let output = Command::new(&python)
            .args(["-c", "import os, ziglang; print(os.path.dirname(ziglang.__file__))"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        let Ok(output) = output else { continue };
        if !output.status.success() {
            continue;
        }
        let dir = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let path = Path::new(&dir).join("zig");
        if is_executable(&path) {
            return Ok((path, format!("the ziglang wheel of {}", python.display())));
        }
    }
    Err(format!("the ziglang wheel ({} or python3)", venv.display()))
}

/// Runs the tool with `args` and returns the chosen line of what it printed.
fn version(found: &Found, args: &[&str], line: Line) -> String {
    let output = match Command::new(&found.path).args(&found.args).args(args).stdin(Stdio::null()).output() {
        Ok(output) => output,
        Err(e) => return format!("version unknown: could not run it: {e}"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let text = if stdout.trim().is_empty() { stderr } else { stdout };
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let chosen = match line {
        Line::First => lines.next(),
        Line::Last => lines.next_back(),
    };
    match (chosen, output.status.success()) {
        (Some(l), true) => l.to_owned(),
        (Some(l), false) => format!("version query failed ({}): {l}", output.status),
        (None, _) => format!("version unknown: it printed nothing ({})", output.status),
    }
}

/// Whether a clang found for HIP can target AMDGPU; a note when it cannot.
fn amdgpu_note(found: &Found) -> Option<String> {
    let output =
        Command::new(&found.path).args(&found.args).arg("-print-targets").stdin(Stdio::null()).output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    if output.status.success() && !text.contains("amdgcn") {
        Some("this clang has no AMDGPU (amdgcn) target; the `hip` feature needs one built with it".to_owned())
    } else {
        None
    }
}

/// The AMD targets a clang knows (one `-print-supported-cpus` run), and the default target
/// list xbarrier's build helper picks with it; nothing when it lists none.
fn amdgpu_targets(found: &Found, version: &str) -> Option<String> {
    let output = Command::new(&found.path)
        .args(&found.args)
        .args(["--target=amdgcn-amd-amdhsa", "-nogpulib", "-print-supported-cpus"])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let processors = xbarrier_build::parse_amdgpu_processors(&text);
    if processors.is_empty() {
        return None;
    }
    let generic: Vec<&str> = processors.iter().map(String::as_str).filter(|p| p.ends_with("-generic")).collect();
    let (defaults, missing) =
        xbarrier_build::default_amdgpu_targets(&processors, xbarrier_build::parse_clang_major(version));
    let defaults: Vec<String> = defaults.iter().map(ToString::to_string).collect();
    let mut text = format!(
        "AMD targets: {} processors, generic ones {}; as $HIP_CLANG it builds {}",
        processors.len(),
        if generic.is_empty() { "none".to_owned() } else { generic.join(", ") },
        defaults.join(", ")
    );
    if !missing.is_empty() {
        text.push_str(&format!(" (not {}: it does not know them)", missing.join(", ")));
    }
    Some(text)
}

/// The first executable called `name` in a directory of PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}
