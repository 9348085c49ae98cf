//! Compiles a crate's kernels (C++ written against `<xbarrier/barrier.hpp>`) for every
//! backend xbarrier was built with, into one kernel bundle in `OUT_DIR`.
//!
//! In `build.rs` (the crate must depend on `xbarrier` directly, which is how cargo hands
//! this helper xbarrier's header path and backend list):
//!
//! ```no_run
//! xbarrier_build::Kernels::new("my_kernels").file("kernels/scale.cpp").build_or_exit();
//! ```
//!
//! and in the crate: `let bundle = xbarrier::kernel_bundle!("my_kernels")?;`.
//!
//! One bundle holds an image per backend xbarrier's features enable: a shared object for
//! the host (the `cc` crate's C++ compiler, `$CXX`), a CUDA fatbin (nvcc: sm_80, sm_90 and
//! compute_90 PTX, or `XBAR_CUDA_GENCODE`; unchecked builds add the emulated and grouped fatbins),
//! and a clang offload bundle for AMD GPUs (`$HIP_CLANG`, else clang-19). The bundle's AMD
//! targets are gfx90a, gfx942, gfx1100 and gfx1200 (plus gfx950 and gfx1250 with clang 22)
//! and the generic gfx10-3-generic, gfx11-generic and gfx12-generic, so that it loads on
//! every CDNA2, CDNA3, RDNA2, RDNA3 and RDNA4 GPU; `XBAR_AMDGPU_TARGETS` or
//! [`Kernels::amdgpu_targets`] choose others, any the compiler knows (see [`AmdgpuTarget`]).
//! A missing compiler is a [`BuildError`] that says which one and how to install it.
//!
//! Outside a build script of a direct dependent of `xbarrier`, [`Kernels::build`] fails
//! with an error saying so:
//!
//! ```
//! let err = xbarrier_build::Kernels::new("my_kernels").file("kernels/scale.cpp").build().unwrap_err();
//! assert!(err.to_string().contains("must list `xbarrier` under [dependencies]"), "{err}");
//! ```
#![warn(missing_docs)]

mod amdgpu;
mod launchers;
mod signature;

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use xbarrier_api::{BackendKind, KernelBundle, Variant};

pub use signature::{read_kernels, CScalar, KernelDecl, Param, ParamType, Scalar};

pub use amdgpu::{
    amdgpu_processors, check_amdgpu_targets, default_amdgpu_targets, parse_amdgpu_processors, AmdgpuTarget,
    DEFAULT_CLANG_22, DEFAULT_GENERIC, DEFAULT_SPECIFIC,
};

/// Why kernels could not be built.
#[derive(Debug)]
pub struct BuildError {
    message: String,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BuildError {}

fn fail<T>(message: impl Into<String>) -> Result<T, BuildError> {
    Err(BuildError { message: message.into() })
}

/// What xbarrier told dependents' build scripts (its `links` metadata).
#[derive(Clone, Debug)]
pub struct XbarrierMetadata {
    /// Directory holding `xbarrier/barrier.hpp`.
    pub include: PathBuf,
    /// `hip-src/host/runtime.cpp`, linked into host kernel objects.
    pub host_runtime: PathBuf,
    /// Backends to build for.
    pub backends: Vec<BackendKind>,
    /// Whether device code is checked.
    pub checked: bool,
}

impl XbarrierMetadata {
    /// Reads `DEP_XBARRIER_*` from the environment of a build script.
    pub fn from_env() -> Result<XbarrierMetadata, BuildError> {
        let var = |key: &str| -> Result<String, BuildError> {
            std::env::var(format!("DEP_XBARRIER_{key}")).or_else(|_| {
                fail(format!(
                    "DEP_XBARRIER_{key} is not set: the crate whose build script calls xbarrier-build must list `xbarrier` under [dependencies] (cargo passes xbarrier's metadata only to direct dependents)"
                ))
            })
        };
        let mut backends = Vec::new();
        for name in var("BACKENDS")?.split(',').filter(|s| !s.is_empty()) {
            match BackendKind::from_name(name) {
                Some(kind) => backends.push(kind),
                None => return fail(format!("unknown backend `{name}` in DEP_XBARRIER_BACKENDS")),
            }
        }
        Ok(XbarrierMetadata {
            include: PathBuf::from(var("INCLUDE")?),
            host_runtime: PathBuf::from(var("HOST_RUNTIME")?),
            backends,
            checked: var("CHECKED")? == "1",
        })
    }
}

/// A set of kernel sources that becomes one bundle.
#[derive(Clone, Debug)]
pub struct Kernels {
    name: String,
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
    includes: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    checked: Option<bool>,
    amdgpu_targets: Option<Vec<String>>,
    warn_untyped: bool,
}

impl Kernels {
    /// A bundle called `name` (load it with `xbarrier::kernel_bundle!("name")`).
    pub fn new(name: &str) -> Kernels {
        Kernels {
            name: name.to_owned(),
            files: Vec::new(),
            dirs: Vec::new(),
            includes: Vec::new(),
            defines: Vec::new(),
            checked: None,
            amdgpu_targets: None,
            warn_untyped: true,
        }
    }
    /// Adds a source file.
    pub fn file(mut self, path: impl AsRef<Path>) -> Kernels {
        self.files.push(path.as_ref().to_path_buf());
        self
    }
    /// Adds every `.cpp` file of a directory (read when building, in name order).
    pub fn dir(mut self, path: impl AsRef<Path>) -> Kernels {
        self.dirs.push(path.as_ref().to_path_buf());
        self
    }
    /// Adds an include directory.
    pub fn include(mut self, dir: impl AsRef<Path>) -> Kernels {
        self.includes.push(dir.as_ref().to_path_buf());
        self
    }
    /// Defines a preprocessor macro.
    pub fn define(mut self, name: &str, value: Option<&str>) -> Kernels {
        self.defines.push((name.to_owned(), value.map(str::to_owned)));
        self
    }
    /// Whether to warn about each kernel that gets no typed launcher (default: yes). A crate
    /// that launches a bundle through the unsafe `Stream::launch` anyway can turn it off; the
    /// typed kernels' signatures are still checked by the compiler.
    pub fn warn_untyped(mut self, warn: bool) -> Kernels {
        self.warn_untyped = warn;
        self
    }
    /// Overrides whether the device code is checked (default: as xbarrier was built).
    pub fn checked(mut self, checked: bool) -> Kernels {
        self.checked = Some(checked);
        self
    }
    /// The AMDGPU targets to compile for, instead of the default list: target IDs such as
    /// `gfx90a`, `gfx11-generic` or `gfx942:sramecc+:xnack-`, any the compiler knows
    /// (checked when building; an unknown one is an error listing those it knows).
    /// `XBAR_AMDGPU_TARGETS`, when set, overrides these too.
    pub fn amdgpu_targets<I, S>(mut self, targets: I) -> Kernels
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.amdgpu_targets = Some(targets.into_iter().map(|t| t.as_ref().trim().to_owned()).collect());
        self
    }

    /// Builds the bundle from the build-script environment; returns its path.
    pub fn build(self) -> Result<PathBuf, BuildError> {
        let meta = XbarrierMetadata::from_env()?;
        let out_dir = match std::env::var_os("OUT_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => return fail("OUT_DIR is not set: call xbarrier-build from a build script"),
        };
        for file in self.files.iter().chain(&self.dirs) {
            println!("cargo:rerun-if-changed={}", file.display());
        }
        for dir in &self.includes {
            println!("cargo:rerun-if-changed={}", dir.display());
        }
        println!("cargo:rerun-if-changed={}", meta.include.display());
        println!("cargo:rerun-if-env-changed=CXX");
        self.build_into(&meta, &out_dir)
    }

    /// Like [`build`](Self::build), but prints the error and exits the build script.
    pub fn build_or_exit(self) -> PathBuf {
        match self.build() {
            Ok(path) => path,
            Err(e) => {
                eprintln!("error: xbarrier-build: {e}");
                std::process::exit(1);
            }
        }
    }

    /// Builds with explicit metadata into `out_dir` (for tools and tests): no build-script
    /// environment needed.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::path::Path;
    /// use xbarrier::{BackendKind, Device, Host, KernelBundle, LaunchConfig};
    /// use xbarrier_build::{Kernels, XbarrierMetadata};
    ///
    /// let dir = std::env::temp_dir().join(format!("xbarrier-build-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// std::fs::write(
    ///     dir.join("twice.cpp"),
    ///     "#include <xbarrier/barrier.hpp>\n\
    ///      XB_KERNEL void twice(unsigned* out) { out[threadIdx.x] = 2 * threadIdx.x; }\n",
    /// )?;
    /// let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join(".."); // xbarrier's sources
    /// let meta = XbarrierMetadata {
    ///     include: repo.join("hip-src/include"),
    ///     host_runtime: repo.join("hip-src/host/runtime.cpp"),
    ///     backends: vec![BackendKind::Host],
    ///     checked: true,
    /// };
    /// let path = Kernels::new("doc_kernels").file(dir.join("twice.cpp")).build_into(&meta, &dir)?;
    ///
    /// let bundle = KernelBundle::parse("doc_kernels", Box::leak(std::fs::read(&path)?.into_boxed_slice()))?;
    /// let device = Device::<Host>::open(0)?;
    /// let module = device.load(&bundle)?;
    /// let out = device.alloc::<u32>(8)?;
    /// let stream = device.stream()?;
    /// // SAFETY: twice(unsigned*) takes one pointer; `out` lives past synchronize().
    /// unsafe { stream.launch(&module.kernel("twice")?, &LaunchConfig::new(1, 8), &[out.arg()])? };
    /// stream.synchronize()?;
    /// assert_eq!(out.download()?, [0, 2, 4, 6, 8, 10, 12, 14]);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(()) }
    /// ```
    pub fn build_into(&self, meta: &XbarrierMetadata, out_dir: &Path) -> Result<PathBuf, BuildError> {
        let sources = self.sources()?;
        if sources.is_empty() {
            return fail(format!("bundle `{}` has no source files", self.name));
        }
        let checked = self.checked.unwrap_or(meta.checked);
        let kernels = self.typed_kernels(&sources)?;
        let mut images = Vec::new();
        for &backend in &meta.backends {
            match backend {
                BackendKind::Host => images.push((
                    backend,
                    Variant::Default,
                    self.build_host(meta, checked, &sources, &kernels, out_dir)?,
                )),
                BackendKind::Cuda => {
                    images.push((
                        backend,
                        Variant::Default,
                        self.build_cuda(meta, checked, Variant::Default, &sources, &kernels, out_dir)?,
                    ));
                    // Checked builds run the protocol, with lane groups, on every path: the
                    // images would be equal.
                    if !checked {
                        for variant in [Variant::Emulated, Variant::Grouped] {
                            images.push((
                                backend,
                                variant,
                                self.build_cuda(meta, checked, variant, &sources, &kernels, out_dir)?,
                            ));
                        }
                    }
                }
                BackendKind::Hip => images.push((
                    backend,
                    Variant::Default,
                    self.build_hip(meta, checked, &sources, &kernels, out_dir)?,
                )),
            }
        }
        let path = out_dir.join(format!("{}.xbk", self.name));
        std::fs::write(&path, KernelBundle::encode(checked, &images))
            .or_else(|e| fail(format!("writing {}: {e}", path.display())))?;
        let launchers = out_dir.join(format!("{}.rs", self.name));
        std::fs::write(&launchers, launchers::module_source(&self.name, &kernels))
            .or_else(|e| fail(format!("writing {}: {e}", launchers.display())))?;
        Ok(path)
    }

    /// The kernels declared in the sources, with their signatures as read; a warning names
    /// each kernel that gets no typed launcher, and why.
    fn typed_kernels(&self, sources: &[PathBuf]) -> Result<Vec<KernelDecl>, BuildError> {
        let mut kernels: Vec<KernelDecl> = Vec::new();
        for file in sources {
            let text = std::fs::read_to_string(file).or_else(|e| fail(format!("reading {}: {e}", file.display())))?;
            for kernel in read_kernels(file, &text) {
                if kernels.iter().any(|k| k.name == kernel.name) {
                    continue; // declared in two files: the compiler decides whether that is one kernel
                }
                if let (Err(why), true) = (&kernel.params, self.warn_untyped) {
                    warn(&format!(
                        "kernel `{}` ({}:{}) has no typed launcher: {why}; launch it with the unsafe Stream::launch",
                        kernel.name,
                        kernel.file.display(),
                        kernel.line
                    ));
                }
                kernels.push(kernel);
            }
        }
        Ok(kernels)
    }

    /// The source files: those added one by one, then each directory's `.cpp` files in name order.
    fn sources(&self) -> Result<Vec<PathBuf>, BuildError> {
        let mut sources = self.files.clone();
        for dir in &self.dirs {
            let entries = std::fs::read_dir(dir).or_else(|e| fail(format!("reading {}: {e}", dir.display())))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "cpp"))
                .collect();
            found.sort();
            sources.extend(found);
        }
        Ok(sources)
    }

    /// The flags every compiler gets: checked mode, xbarrier's headers, the user's includes
    /// and defines.
    fn common_flags(&self, cmd: &mut Command, meta: &XbarrierMetadata, checked: bool) {
        cmd.arg(format!("-DXB_CHECKED={}", u8::from(checked))).arg("-I").arg(&meta.include);
        // Checked code meant for compute-sanitizer sleeps long in its wait loops (config.hpp).
        rerun_if_env_changed("XBAR_SANITIZER");
        if std::env::var("XBAR_SANITIZER").is_ok_and(|v| v == "1") {
            cmd.arg("-DXB_SANITIZER=1");
        }
        // Extra device-code defines for experiments, e.g. XBAR_DEVICE_DEFINES="XB_DEFAULT_WAIT_TIMEOUT_NS=2000000000".
        rerun_if_env_changed("XBAR_DEVICE_DEFINES");
        if let Ok(extra) = std::env::var("XBAR_DEVICE_DEFINES") {
            cmd.args(extra.split(';').map(str::trim).filter(|d| !d.is_empty()).map(|d| format!("-D{d}")));
        }
        for dir in &self.includes {
            cmd.arg("-I").arg(dir);
        }
        for (name, value) in &self.defines {
            cmd.arg(match value {
                Some(v) => format!("-D{name}={v}"),
                None => format!("-D{name}"),
            });
        }
    }

    /// A shared object of the kernels and the host runtime entry points.
    fn build_host(
        &self,
        meta: &XbarrierMetadata,
        checked: bool,
        sources: &[PathBuf],
        kernels: &[KernelDecl],
        out_dir: &Path,
    ) -> Result<Vec<u8>, BuildError> {
        let compiler = host_compiler()?;
        let unity = self.unity_source(sources, kernels, out_dir, "host", "cpp")?;
        let output = out_dir.join(format!("{}.host.so", self.name));
        let mut cmd = Command::new(compiler.path());
        cmd.args(compiler.args()).args([
            "-std=c++17",
            "-O2",
            "-g",
            "-fPIC",
            "-shared",
            "-fvisibility=hidden",
            "-pthread",
            "-Wall",
            "-Wextra",
            "-Wl,-z,defs",
        ]);
        self.compile(&mut cmd, meta, checked, [unity.as_path(), meta.host_runtime.as_path()], &output, "host")
    }

    /// Adds the flags every backend shares, the inputs and `-o output` to `cmd`, runs it and
    /// returns the image it wrote.
    fn compile<'a>(
        &self,
        cmd: &mut Command,
        meta: &XbarrierMetadata,
        checked: bool,
        inputs: impl IntoIterator<Item = &'a Path>,
        output: &Path,
        backend: &str,
    ) -> Result<Vec<u8>, BuildError> {
        self.common_flags(cmd, meta, checked);
        cmd.args(inputs).arg("-o").arg(output);
        run_compiler(cmd, &self.name, backend)?;
        std::fs::read(output).or_else(|e| fail(format!("reading {}: {e}", output.display())))
    }

    /// One clang offload bundle with a code object per AMDGPU target (what hipModuleLoadData
    /// takes), compiled device-only by clang with no ROCm headers or libraries. The sources
    /// become one translation unit, so that the module has a single fault-record global.
    fn build_hip(
        &self,
        meta: &XbarrierMetadata,
        checked: bool,
        sources: &[PathBuf],
        kernels: &[KernelDecl],
        out_dir: &Path,
    ) -> Result<Vec<u8>, BuildError> {
        let clang = find_hip_clang()?;
        let targets = self.amdgpu_target_list(&clang)?;
        let unity = self.unity_source(sources, kernels, out_dir, "hip", "hip")?;
        let output = out_dir.join(format!("{}.hipfb", self.name));
        let mut cmd = Command::new(&clang);
        cmd.args(["-x", "hip", "--cuda-device-only", "-nogpuinc", "-nogpulib", "-O3", "-std=c++17"])
            .args(targets.iter().flat_map(AmdgpuTarget::clang_args));
        self.compile(&mut cmd, meta, checked, [unity.as_path()], &output, "hip")
    }

    /// `<name>.<backend>.<ext>` in `out_dir`: the bundle's sources as one translation unit,
    /// then the check of every typed kernel's signature (kernel_signature.hpp).
    fn unity_source(
        &self,
        sources: &[PathBuf],
        kernels: &[KernelDecl],
        out_dir: &Path,
        backend: &str,
        ext: &str,
    ) -> Result<PathBuf, BuildError> {
        let unity = out_dir.join(format!("{}.{backend}.{ext}", self.name));
        let mut text = String::from("// generated by xbarrier-build: the bundle's sources as one translation unit\n");
        for file in sources {
            let path = std::fs::canonicalize(file).or_else(|e| fail(format!("{}: {e}", file.display())))?;
            text.push_str(&format!("#include \"{}\"\n", path.display()));
        }
        text.push_str("\n// The signatures the typed launchers were generated from, confirmed by the compiler.\n");
        text.push_str("#include <xbarrier/kernel_signature.hpp>\n");
        text.push_str(&signature::macro_guards(kernels));
        for check in kernels.iter().filter_map(KernelDecl::check) {
            text.push_str(&check);
        }
        std::fs::write(&unity, text).or_else(|e| fail(format!("writing {}: {e}", unity.display())))?;
        Ok(unity)
    }

    /// One fatbin with sm_80 and sm_90 machine code and compute_90 PTX (PTX ISA 9.0 from nvcc
    /// 13.0, which driver 580 loads). The sources become one translation unit, so that the
    /// module has a single fault-record global. Each variant adds its definitions
    /// ([`Variant::cuda_defines`]): `Emulated` the portable protocol instead of the mbarrier
    /// lowering, `Grouped` that protocol with lane groups.
    fn build_cuda(
        &self,
        meta: &XbarrierMetadata,
        checked: bool,
        variant: Variant,
        sources: &[PathBuf],
        kernels: &[KernelDecl],
        out_dir: &Path,
    ) -> Result<Vec<u8>, BuildError> {
        let nvcc = find_nvcc()?;
        let unity = self.unity_source(sources, kernels, out_dir, "cuda", "cu")?;
        let output = out_dir.join(format!("{}.{variant}.fatbin", self.name));
        let mut cmd = Command::new(&nvcc);
        cmd.args(["-std=c++17", "-O3", "-fatbin"]).args(cuda_architectures().iter().map(|a| format!("-gencode={a}")));
        cmd.args(variant.cuda_defines().iter().map(|(name, value)| format!("-D{name}={value}")));
        self.compile(&mut cmd, meta, checked, [unity.as_path()], &output, "cuda")
    }

    /// The AMDGPU targets: `XBAR_AMDGPU_TARGETS` (target IDs separated by semicolons), else
    /// those given to [`amdgpu_targets`](Self::amdgpu_targets), else the default list
    /// ([`default_amdgpu_targets`]); each checked against the processors `clang` lists.
    fn amdgpu_target_list(&self, clang: &Path) -> Result<Vec<AmdgpuTarget>, BuildError> {
        rerun_if_env_changed("XBAR_AMDGPU_TARGETS");
        let from_env = std::env::var("XBAR_AMDGPU_TARGETS").ok().map(|list| amdgpu::split_target_list(&list));
        let requested = match from_env.filter(|list| !list.is_empty()) {
            Some(list) => Some((list, "XBAR_AMDGPU_TARGETS")),
            None => self.amdgpu_targets.clone().map(|list| (list, "Kernels::amdgpu_targets")),
        };
        let processors = match amdgpu_processors(clang) {
            Ok(processors) => Some(processors),
            Err(e) => {
                // Not fatal: clang itself still rejects a target it does not know.
                warn(&format!("{e}\n  the AMDGPU targets are passed to clang unchecked"));
                None
            }
        };
        match (requested, processors) {
            (Some((list, from)), processors) => check_amdgpu_targets(&list, processors.as_deref(), clang, from),
            (None, processors) => {
                // Without the compiler's list, assume it knows the default targets.
                let assumed: Vec<String> = DEFAULT_SPECIFIC
                    .iter()
                    .chain(&DEFAULT_CLANG_22)
                    .chain(&DEFAULT_GENERIC)
                    .map(|s| (*s).to_owned())
                    .collect();
                let (targets, missing) =
                    default_amdgpu_targets(processors.as_deref().unwrap_or(&assumed), clang_major(clang));
                if !missing.is_empty() {
                    warn(&format!(
                        "{} does not know the default AMDGPU targets {}: the kernel bundle has no code object for the GPUs they cover (clang 19 knows the generic targets, clang 22 also gfx950 and gfx1250)",
                        clang.display(),
                        missing.join(", ")
                    ));
                }
                Ok(targets)
            }
        }
    }
}

/// The major version `clang --version` reports ("... clang version 22.1.8 ...").
pub fn clang_major(clang: &Path) -> Option<u32> {
    let out = Command::new(clang).arg("--version").output().ok()?;
    parse_clang_major(&String::from_utf8_lossy(&out.stdout))
}

/// The major version in clang's version text (`Debian clang version 19.1.7 (3~deb12u1)` is 19).
pub fn parse_clang_major(text: &str) -> Option<u32> {
    let version = text.split("clang version ").nth(1)?;
    version.split('.').next()?.trim().parse().ok()
}

/// clang 22 for gfx950 and gfx1250: `$HIP_CLANG22`, else `clang-22` on PATH (the ziglang
/// wheel's, from `tools/install-toolchains.sh zig`).
pub fn find_hip_clang_22() -> Result<PathBuf, BuildError> {
    rerun_if_env_changed("HIP_CLANG22");
    let candidate = std::env::var_os("HIP_CLANG22").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("clang-22"));
    match clang_major(&candidate) {
        Some(major) if major >= 22 => Ok(candidate),
        Some(major) => fail(format!(
            "{} is clang {major}; gfx950 and gfx1250 need clang 22 or later. fix: `bash tools/install-toolchains.sh zig` (clang 22 from the ziglang wheel), or set HIP_CLANG22",
            candidate.display()
        )),
        None => fail(format!(
            "gfx950 and gfx1250 need clang 22, and {} ($HIP_CLANG22, else clang-22 on PATH) is not runnable. fix: `bash tools/install-toolchains.sh zig && source /opt/gpu-toolchains/env.sh`, or set HIP_CLANG22",
            candidate.display()
        )),
    }
}

/// The clang that compiles HIP device code: `$HIP_CLANG`, else `clang-19` on PATH, confirmed
/// by running it. No ROCm headers or device libraries are needed (`-nogpuinc -nogpulib`).
pub fn find_hip_clang() -> Result<PathBuf, BuildError> {
    rerun_if_env_changed("HIP_CLANG");
    rerun_if_env_changed("PATH");
    let (candidate, from) = match std::env::var_os("HIP_CLANG") {
        Some(path) => (PathBuf::from(path), "$HIP_CLANG"),
        None => (PathBuf::from("clang-19"), "clang-19 on PATH ($HIP_CLANG unset)"),
    };
    match Command::new(&candidate).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(candidate),
        Ok(out) => fail(format!(
            "the `hip` backend needs clang to compile kernels for AMDGPU; {} ({from}) exited with {}.\n  fix: `bash tools/install-toolchains.sh amd` (Debian clang-19, lld-19, clang-tools-19), or set HIP_CLANG; or build without the `hip` feature",
            candidate.display(),
            out.status
        )),
        Err(e) => fail(format!(
            "the `hip` backend needs clang to compile kernels for AMDGPU, and none was found.\n  tried: {} ({from}): {e}\n  fix: `bash tools/install-toolchains.sh amd` (Debian clang-19, lld-19, clang-tools-19), or set HIP_CLANG; or build without the `hip` feature",
            candidate.display()
        )),
    }
}

/// `arch=...,code=...` pairs; `XBAR_CUDA_GENCODE` (semicolon-separated) overrides them.
fn cuda_architectures() -> Vec<String> {
    rerun_if_env_changed("XBAR_CUDA_GENCODE");
    match std::env::var("XBAR_CUDA_GENCODE") {
        Ok(list) if !list.trim().is_empty() => list.split(';').map(|s| s.trim().to_owned()).collect(),
        _ => ["arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90", "arch=compute_90,code=compute_90"]
            .map(str::to_owned)
            .to_vec(),
    }
}

/// Whether this runs in a build script (cargo sets OUT_DIR and TARGET for those).
fn in_build_script() -> bool {
    std::env::var_os("OUT_DIR").is_some() && std::env::var_os("TARGET").is_some()
}

/// Tells cargo to rerun the build script when `var` changes; silent outside build scripts
/// (tools such as `xbar lower` call the compiler lookups too).
fn rerun_if_env_changed(var: &str) {
    if in_build_script() {
        println!("cargo:rerun-if-env-changed={var}");
    }
}

/// A warning that does not stop the build: cargo shows it for a build script; other callers
/// get it on stderr.
fn warn(message: &str) {
    for line in message.lines() {
        if in_build_script() {
            println!("cargo:warning=xbarrier-build: {line}");
        } else {
            eprintln!("warning: xbarrier-build: {line}");
        }
    }
}

/// nvcc from `$NVCC`, `$CUDA_PATH/bin`, `$CUDA_HOME/bin` or `PATH`, confirmed by running it.
pub fn find_nvcc() -> Result<PathBuf, BuildError> {
    for var in ["NVCC", "CUDA_PATH", "CUDA_HOME", "PATH"] {
        rerun_if_env_changed(var);
    }
    let mut tried = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    match std::env::var_os("NVCC") {
        Some(p) => candidates.push(PathBuf::from(p)),
        None => tried.push("$NVCC (unset)".to_owned()),
    }
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        match std::env::var_os(var) {
            Some(root) => candidates.push(PathBuf::from(root).join("bin").join("nvcc")),
            None => tried.push(format!("${var}/bin/nvcc ({var} unset)")),
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|dir| dir.join("nvcc")));
    }
    for candidate in candidates {
        match Command::new(&candidate).arg("--version").output() {
            Ok(out) if out.status.success() => return Ok(candidate),
            Ok(out) => tried.push(format!("{} (exit {})", candidate.display(), out.status)),
            Err(_) if candidate.is_file() => tried.push(format!("{} (not runnable)", candidate.display())),
            Err(_) => {}
        }
    }
    tried.push("nvcc on PATH (absent)".to_owned());
    fail(format!(
        "the `cuda` backend needs nvcc to compile kernels, and none was found.\n  tried: {}\n  fix: `bash tools/install-toolchains.sh cuda && source /opt/gpu-toolchains/env.sh` (nvcc 13.0 from PyPI), install the CUDA toolkit, or set NVCC or CUDA_PATH; or build without the `cuda` feature",
        tried.join(", ")
    ))
}

fn run_compiler(cmd: &mut Command, bundle: &str, backend: &str) -> Result<(), BuildError> {
    let result = cmd.output().or_else(|e| fail(format!("could not run {:?}: {e}", cmd.get_program())))?;
    let stderr = String::from_utf8_lossy(&result.stderr);
    for line in stderr.lines().filter(|l| l.contains("warning")) {
        println!("cargo:warning={line}");
    }
    if !result.status.success() {
        return fail(format!(
            "compiling bundle `{bundle}` for the {backend} backend failed ({}):\n{cmd:?}\n{stderr}",
            result.status
        ));
    }
    Ok(())
}

fn host_compiler() -> Result<cc::Tool, BuildError> {
    let mut build = cc::Build::new();
    build.cpp(true).cargo_metadata(false).warnings(false);
    if std::env::var_os("OPT_LEVEL").is_none() {
        build.opt_level(2);
    }
    if std::env::var_os("TARGET").is_none() {
        build.target(&host_triple()).host(&host_triple());
    }
    build.try_get_compiler().or_else(|e| {
        fail(format!(
            "no C++ compiler for the host backend ({e}); install one (Debian/Ubuntu: apt-get install g++) or set CXX"
        ))
    })
}

fn host_triple() -> String {
    format!("{}-unknown-linux-gnu", std::env::consts::ARCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_adds_its_cpp_files_in_name_order_after_single_files() {
        let dir = std::env::temp_dir().join(format!("xbarrier-build-sources-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        for name in ["b.cpp", "a.cpp", "notes.txt", "c.hpp"] {
            std::fs::write(dir.join(name), "").expect("write");
        }
        let sources = Kernels::new("k").file("first.cpp").dir(&dir).sources().expect("sources");
        assert_eq!(sources, vec![PathBuf::from("first.cpp"), dir.join("a.cpp"), dir.join("b.cpp")]);
        let missing = Kernels::new("k").dir(dir.join("absent")).sources().expect_err("no such directory");
        assert!(missing.to_string().contains("absent"), "{missing}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_clang_major_version_is_read_from_its_version_text() {
        assert_eq!(parse_clang_major("Debian clang version 19.1.7 (3~deb12u1)\nTarget: x86_64-pc-linux-gnu"), Some(19));
        assert_eq!(parse_clang_major("clang version 22.1.8\nTarget: x86_64-unknown-linux-musl"), Some(22));
        assert_eq!(parse_clang_major("gcc (Debian 12.2.0-14) 12.2.0"), None);
    }
}
