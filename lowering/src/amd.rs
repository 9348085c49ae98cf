//! AMDGPU targets: clang (`$HIP_CLANG`, else clang-19; clang 22 for gfx950 and gfx1250)
//! compiles the operation kernels
//! device-only with no ROCm headers or libraries, as the build helper will, to assembly; each
//! kernel's instructions and its private-segment (scratch) size are read back from it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{LowerError, Op, OpCode, Target, OPS_SOURCE};

/// Compiles every operation for `target`; AMD targets have one variant (the protocol).
pub(crate) fn compile(target: Target, checked: bool) -> Result<Vec<(Op, OpCode)>, LowerError> {
    let clang = compiler_for(target)?;
    let dir = std::env::temp_dir().join(format!("xbarrier-lower-{}-{target}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&dir).map_err(|e| LowerError::new(format!("creating {}: {e}", dir.display())))?;
    let result = compile_in(&dir, &clang, target, checked);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The compiler for `target`: see [`crate::Lowering::compile`].
fn compiler_for(target: Target) -> Result<PathBuf, LowerError> {
    let error = |e: xbarrier_build::BuildError| LowerError::new(e.to_string());
    if target.needs_clang_22() {
        return xbarrier_build::find_hip_clang_22().map_err(error);
    }
    let clang = xbarrier_build::find_hip_clang().map_err(error)?;
    let Target::Amd(name) = target else { return Ok(clang) };
    // Which compiler knows the processor (a compiler whose list cannot be read is tried as is).
    let knows = |clang: &Path| -> Result<(), xbarrier_build::BuildError> {
        let processors = xbarrier_build::amdgpu_processors(clang).ok();
        xbarrier_build::check_amdgpu_targets(&[name.as_str()], processors.as_deref(), clang, "target").map(|_| ())
    };
    match knows(&clang) {
        Ok(()) => Ok(clang),
        Err(first) => match xbarrier_build::find_hip_clang_22() {
            Ok(newer) if knows(&newer).is_ok() => Ok(newer),
            _ => Err(error(first)),
        },
    }
}

fn unique() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos())
}

fn compile_in(dir: &Path, clang: &Path, target: Target, checked: bool) -> Result<Vec<(Op, OpCode)>, LowerError> {
    let text = assemble_in(dir, clang, target.name(), OPS_SOURCE, checked)?;
    Op::ALL
        .into_iter()
        .map(|op| {
            let kernel = op.kernel();
            let (instructions, intermediate) = function(&text, &kernel)
                .ok_or_else(|| LowerError::new(format!("the {target} assembly has no kernel {kernel}")))?;
            let scratch_bytes = Some(scratch(&text, &kernel).ok_or_else(|| {
                LowerError::new(format!("the {target} assembly has no private segment size for {kernel}"))
            })?);
            // The walks of a round trip (fast_path.rs); other operations have none.
            let walk = |find: fn(&str) -> Option<crate::FastPath>| {
                if op.is_round_trip() {
                    find(&intermediate)
                } else {
                    None
                }
            };
            let fast_path = walk(crate::fast_path::amd);
            let completer = walk(crate::fast_path::amd_completer);
            let arming = walk(crate::fast_path::amd_arming);
            let sleeping_poll = walk(crate::fast_path::amd_sleeping_poll);
            Ok((op, OpCode { instructions, intermediate, scratch_bytes, fast_path, completer, arming, sleeping_poll }))
        })
        .collect()
}

/// Compiles `source` device-only for the AMDGPU `target` with `clang` and returns the
/// assembly. Generic targets (`gfx11-generic`) need code object v6.
pub(crate) fn assemble(clang: &Path, target: &str, source: &str, checked: bool) -> Result<String, LowerError> {
    let dir = std::env::temp_dir().join(format!("xbarrier-lower-{}-{target}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&dir).map_err(|e| LowerError::new(format!("creating {}: {e}", dir.display())))?;
    let result = assemble_in(&dir, clang, target, source, checked);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn assemble_in(dir: &Path, clang: &Path, target: &str, source: &str, checked: bool) -> Result<String, LowerError> {
    let input = dir.join("kernels.hip");
    std::fs::write(&input, source).map_err(|e| LowerError::new(format!("writing {}: {e}", input.display())))?;
    let asm = dir.join("kernels.s");
    let mut command = Command::new(clang);
    command
        .args(["-x", "hip", "--cuda-device-only", "-nogpuinc", "-nogpulib", "-O3", "-S"])
        .arg(format!("--offload-arch={target}"))
        .arg(format!("-DXB_CHECKED={}", u8::from(checked)));
    if target.ends_with("-generic") {
        command.arg("-mcode-object-version=6");
    }
    let out = command
        .arg("-I")
        .arg(env!("XBARRIER_INCLUDE"))
        .arg(&input)
        .arg("-o")
        .arg(&asm)
        .output()
        .map_err(|e| LowerError::new(format!("could not run {}: {e}", clang.display())))?;
    if !out.status.success() {
        return Err(LowerError::new(format!(
            "{} failed for {target} ({}):\n{}",
            clang.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    std::fs::read_to_string(&asm).map_err(|e| LowerError::new(format!("reading {}: {e}", asm.display())))
}

/// The instructions of `name` (from its label to its `.Lfunc_end` label; directives, labels
/// and comments left out) and its text as written. A kernel may have several `s_endpgm`
/// (a checked build's fault path ends its wave early).
pub(crate) fn function(asm: &str, name: &str) -> Option<(Vec<String>, String)> {
    let start = asm.lines().position(|l| l.starts_with(&format!("{name}:")))?;
    let mut instructions = Vec::new();
    let mut text = String::new();
    for line in asm.lines().skip(start) {
        if line.starts_with(".Lfunc_end") {
            return Some((instructions, text));
        }
        text.push_str(line);
        text.push('\n');
        let code = line.split(';').next().unwrap_or("").trim();
        if code.is_empty() || code.starts_with('.') || code.ends_with(':') {
            continue;
        }
        instructions.push(code.to_owned());
    }
    None
}

/// `.amdhsa_private_segment_fixed_size` of kernel `name`.
pub(crate) fn scratch(asm: &str, name: &str) -> Option<u64> {
    let mut in_kernel = false;
    for line in asm.lines() {
        let line = line.trim();
        if let Some(kernel) = line.strip_prefix(".amdhsa_kernel ") {
            in_kernel = kernel.trim() == name;
        } else if in_kernel {
            if let Some(size) = line.strip_prefix(".amdhsa_private_segment_fixed_size ") {
                return size.trim().parse().ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_functions_and_scratch() {
        let asm = "\t.text\nxbl_a:                ; @xbl_a\n; %bb.0:\n\tds_add_rtn_u64 v[0:1], v0, v[0:1] ; x\n.LBB0_1:\n\ts_sleep 1\n\ts_endpgm\n.Lfunc_end0:\n\t.section\n\t.amdhsa_kernel xbl_a\n\t\t.amdhsa_private_segment_fixed_size 0\n\t.end_amdhsa_kernel\n\t.amdhsa_kernel xbl_b\n\t\t.amdhsa_private_segment_fixed_size 8\n";
        let (instructions, text) = function(asm, "xbl_a").expect("xbl_a");
        assert_eq!(instructions, vec!["ds_add_rtn_u64 v[0:1], v0, v[0:1]", "s_sleep 1", "s_endpgm"]);
        assert!(text.starts_with("xbl_a:"));
        assert_eq!(scratch(asm, "xbl_a"), Some(0));
        assert_eq!(scratch(asm, "xbl_b"), Some(8));
        assert!(function(asm, "xbl_c").is_none());
    }
}
