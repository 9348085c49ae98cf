//! Builds a tiny kernel bundle for AMD generic targets with the HIP compiler the helper finds
//! (`$HIP_CLANG`, else clang-19) and reads the clang offload bundle back: each target has a
//! code object, generic ones are code object v6 while specific ones keep the compiler's
//! default, and the compile prints no warning. An unknown target must fail with the list of
//! targets the compiler knows.
//!
//! Without the compiler the trials are reported ignored with the reason, unless
//! XBAR_REQUIRE_TOOLCHAINS=1 (tools/test.sh sets it), which makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Arguments, Failed, Trial};
use xbarrier::{BackendKind, KernelBundle};
use xbarrier_build::{AmdgpuTarget, Kernels, XbarrierMetadata};

/// The ELF header's EI_ABIVERSION of an AMDHSA code object: 3 is code object v5, 4 is v6.
const ABI_VERSION_V5: u8 = 3;
const ABI_VERSION_V6: u8 = 4;

const KERNEL: &str = "#include <xbarrier/barrier.hpp>\n\
XB_KERNEL void twice(unsigned* out) { out[threadIdx.x] = 2 * threadIdx.x; }\n";

fn main() {
    // The trials pass their targets through Kernels::amdgpu_targets, which this variable
    // would override; it is removed before any trial thread starts.
    std::env::remove_var("XBAR_AMDGPU_TARGETS");
    let args = Arguments::from_args();
    let trials = match xbarrier_build::find_hip_clang() {
        Ok(clang) => {
            let label = match xbarrier_build::clang_major(&clang) {
                Some(major) => format!("[{} (clang {major})]", clang.display()),
                None => format!("[{}]", clang.display()),
            };
            let (a, b, c) = (clang.clone(), clang.clone(), clang);
            vec![
                Trial::test(
                    format!("{label} a bundle mixes v6 generic and default-version specific code objects"),
                    move || mixed_bundle(&a).map_err(Failed::from),
                ),
                Trial::test(format!("{label} generic targets compile without warnings"), move || {
                    no_warnings(&b).map_err(Failed::from)
                }),
                Trial::test(format!("{label} an unknown target names the known ones"), move || {
                    unknown_target(&c).map_err(Failed::from)
                }),
            ]
        }
        Err(error) => vec![no_toolchain("amdgpu bundle", &error)],
    };
    libtest_mimic::run(&args, trials).exit();
}

/// The trial `name` when the compiler is missing: ignored with the reason, or failing when
/// toolchains are required.
fn no_toolchain(name: &str, error: &dyn std::fmt::Display) -> Trial {
    if std::env::var("XBAR_REQUIRE_TOOLCHAINS").is_ok_and(|v| v == "1") {
        let message = format!("XBAR_REQUIRE_TOOLCHAINS=1 but the HIP compiler is missing: {error}");
        return Trial::test(name, move || Err(message.into()));
    }
    let reason = error.to_string().lines().next().unwrap_or("").to_owned();
    Trial::test(format!("{name} (ignored: no toolchain: {reason})"), || Ok(())).with_ignored_flag(true)
}

/// A fresh directory with the kernel source in it.
fn scratch(tag: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("xbarrier-build-amdgpu-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    std::fs::write(dir.join("twice.cpp"), KERNEL).map_err(|e| format!("writing twice.cpp: {e}"))?;
    Ok(dir)
}

fn metadata() -> XbarrierMetadata {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    XbarrierMetadata {
        include: repo.join("hip-src/include"),
        host_runtime: repo.join("hip-src/host/runtime.cpp"),
        backends: vec![BackendKind::Hip],
        checked: true,
    }
}

fn mixed_bundle(clang: &Path) -> Result<(), String> {
    let dir = scratch("mixed")?;
    let path = Kernels::new("generic")
        .file(dir.join("twice.cpp"))
        .amdgpu_targets(["gfx90a", "gfx11-generic", "gfx12-generic"])
        .build_into(&metadata(), &dir)
        .map_err(|e| e.to_string())?;
    let bytes = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let bundle = KernelBundle::parse("generic", Box::leak(bytes.into_boxed_slice())).map_err(|e| e.to_string())?;
    let image = bundle.image(BackendKind::Hip).map_err(|e| e.to_string())?;
    let entries = offload_bundle_entries(image)?;
    let abi = |target: &str| -> Result<u8, String> {
        let id = format!("hipv4-amdgcn-amd-amdhsa--{target}");
        let object = entries.iter().find(|(name, _)| *name == id).map(|(_, object)| *object);
        let object = object.ok_or_else(|| format!("no {id} entry; the bundle has {:?}", names(&entries)))?;
        if object.len() < 9 || !object.starts_with(b"\x7fELF") {
            return Err(format!("the {target} entry is not an ELF code object"));
        }
        Ok(object[8])
    };
    for generic in ["gfx11-generic", "gfx12-generic"] {
        let found = abi(generic)?;
        if found != ABI_VERSION_V6 {
            return Err(format!("{generic}: ELF ABI version {found}, want {ABI_VERSION_V6} (code object v6)"));
        }
    }
    // The specific target keeps the compiler's default: v5 for clang 19, v6 from clang 22 on.
    let specific = abi("gfx90a")?;
    let want = match xbarrier_build::clang_major(clang) {
        Some(major) if major < 22 => ABI_VERSION_V5,
        _ => ABI_VERSION_V6,
    };
    if specific != want {
        return Err(format!("gfx90a: ELF ABI version {specific}, want the compiler's default {want}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn no_warnings(clang: &Path) -> Result<(), String> {
    let dir = scratch("warnings")?;
    let targets = ["gfx90a", "gfx10-3-generic", "gfx11-generic"];
    let mut cmd = Command::new(clang);
    cmd.args(["-x", "hip", "--cuda-device-only", "-nogpuinc", "-nogpulib", "-O3", "-std=c++17"]);
    for id in targets {
        cmd.args(AmdgpuTarget::parse(id).map_err(|e| e.to_string())?.clang_args());
    }
    cmd.arg("-I").arg(metadata().include).arg(dir.join("twice.cpp")).arg("-o").arg(dir.join("twice.hipfb"));
    let out = cmd.output().map_err(|e| format!("could not run {}: {e}", clang.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || !stderr.trim().is_empty() {
        return Err(format!("{cmd:?} ({}) printed:\n{stderr}", out.status));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn unknown_target(clang: &Path) -> Result<(), String> {
    let dir = scratch("unknown")?;
    let result = Kernels::new("unknown")
        .file(dir.join("twice.cpp"))
        .amdgpu_targets(["gfx90a", "gfx9999"])
        .build_into(&metadata(), &dir);
    let _ = std::fs::remove_dir_all(&dir);
    let message = match result {
        Ok(path) => return Err(format!("gfx9999 built: {}", path.display())),
        Err(e) => e.to_string(),
    };
    let want = format!("`gfx9999` is not an AMDGPU processor {} knows", clang.display());
    for part in [want.as_str(), "it knows: ", "gfx90a", "gfx11-generic", "fix: "] {
        if !message.contains(part) {
            return Err(format!("the error lacks `{part}`:\n{message}"));
        }
    }
    Ok(())
}

/// The entries of a clang offload bundle: each entry ID with its bytes.
fn offload_bundle_entries(bundle: &[u8]) -> Result<Vec<(&str, &[u8])>, String> {
    const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
    let u64_at = |at: usize| -> Result<usize, String> {
        let bytes = bundle.get(at..at + 8).ok_or("the bundle is truncated")?;
        let mut word = [0u8; 8];
        word.copy_from_slice(bytes);
        usize::try_from(u64::from_le_bytes(word)).map_err(|e| e.to_string())
    };
    if !bundle.starts_with(MAGIC) {
        return Err("the hip image is not a clang offload bundle".to_owned());
    }
    let count = u64_at(MAGIC.len())?;
    let mut at = MAGIC.len() + 8;
    let mut entries = Vec::new();
    for _ in 0..count {
        let (offset, size, id_len) = (u64_at(at)?, u64_at(at + 8)?, u64_at(at + 16)?);
        at += 24;
        let id = bundle.get(at..at + id_len).ok_or("the bundle is truncated")?;
        let id = std::str::from_utf8(id).map_err(|e| format!("entry ID: {e}"))?;
        at += id_len;
        let object = bundle.get(offset..offset + size).ok_or_else(|| format!("entry {id} lies outside the bundle"))?;
        entries.push((id, object));
    }
    Ok(entries)
}

fn names<'a>(entries: &[(&'a str, &[u8])]) -> Vec<&'a str> {
    entries.iter().map(|(name, _)| *name).collect()
}
