//! NVIDIA targets: nvcc compiles the operation kernels to a cubin (SASS, read back with
//! cuobjdump) and to PTX, with the same flags as the build helper's fatbins.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{LowerError, Op, OpCode, Target, Variant, OPS_SOURCE};

/// Compiles every operation for `target`; fails unless each kernel shows up in both forms.
/// `sanitizer`: the checked code built for compute-sanitizer (`XB_SANITIZER=1`).
pub(crate) fn compile(
    target: Target,
    variant: Variant,
    checked: bool,
    sanitizer: bool,
) -> Result<Vec<(Op, OpCode)>, LowerError> {
    let nvcc = xbarrier_build::find_nvcc().map_err(|e| LowerError::new(e.to_string()))?;
    let cuobjdump = find_cuobjdump(&nvcc)?;
    let dir = scratch_dir(target, variant)?;
    let result = compile_in(&dir, &nvcc, &cuobjdump, target, variant, checked, sanitizer);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn compile_in(
    dir: &Path,
    nvcc: &Path,
    cuobjdump: &Path,
    target: Target,
    variant: Variant,
    checked: bool,
    sanitizer: bool,
) -> Result<Vec<(Op, OpCode)>, LowerError> {
    let source = dir.join("ops.cu");
    std::fs::write(&source, OPS_SOURCE).map_err(|e| LowerError::new(format!("writing {}: {e}", source.display())))?;
    let arch = target.name().to_owned();
    let flags = |cmd: &mut Command| {
        cmd.args(["-std=c++17", "-O3"])
            .arg(format!("-arch={arch}"))
            .arg(format!("-DXB_CHECKED={}", u8::from(checked)))
            .args(variant.cuda_defines().iter().map(|(name, value)| format!("-D{name}={value}")))
            .arg(format!("-DXB_SANITIZER={}", u8::from(sanitizer)))
            .arg("-I")
            .arg(env!("XBARRIER_INCLUDE"));
    };
    let cubin = dir.join("ops.cubin");
    let mut cmd = Command::new(nvcc);
    flags(&mut cmd);
    run(cmd.arg("-cubin").arg(&source).arg("-o").arg(&cubin))?;
    let ptx_path = dir.join("ops.ptx");
    let mut cmd = Command::new(nvcc);
    flags(&mut cmd);
    run(cmd.arg("-ptx").arg(&source).arg("-o").arg(&ptx_path))?;
    let sass = run(Command::new(cuobjdump).arg("-sass").arg(&cubin))?;
    let ptx = std::fs::read_to_string(&ptx_path)
        .map_err(|e| LowerError::new(format!("reading {}: {e}", ptx_path.display())))?;

    let functions = parse_sass(&sass);
    Op::ALL
        .into_iter()
        .map(|op| {
            let kernel = op.kernel();
            let body = functions
                .iter()
                .find(|(name, _)| *name == kernel)
                .map(|(_, body)| body)
                .ok_or_else(|| LowerError::new(format!("cuobjdump shows no function {kernel} for {target}")))?;
            let instructions = body.iter().map(|(_, instruction)| instruction.clone()).collect();
            let fast_path = if op.is_round_trip() { crate::fast_path::sass(body) } else { None };
            let intermediate = ptx_entry(&ptx, &kernel)
                .ok_or_else(|| LowerError::new(format!("the PTX for {target} has no entry {kernel}")))?;
            Ok((
                op,
                OpCode {
                    instructions,
                    intermediate,
                    scratch_bytes: None,
                    fast_path,
                    completer: None,
                    arming: None,
                    sleeping_poll: None,
                },
            ))
        })
        .collect()
}

/// `cuobjdump -sass` output -> (function, (address, instruction without encoding)), NOPs left
/// out. The addresses are the branch targets' names.
pub(crate) fn parse_sass(text: &str) -> Vec<(String, Vec<(u64, String)>)> {
    let mut functions: Vec<(String, Vec<(u64, String)>)> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix("Function : ") {
            functions.push((name.trim().to_owned(), Vec::new()));
            continue;
        }
        // "/*0040*/   SYNCS.ARRIVE.TRANS64.A1T0 R2, [UR4], RZ ;   /* 0x... */"
        let Some(rest) = line.strip_prefix("/*") else { continue };
        let Some((address, rest)) = rest.split_once("*/") else { continue };
        let Ok(address) = u64::from_str_radix(address, 16) else { continue };
        let instruction = rest.split(';').next().unwrap_or("").trim();
        if instruction.is_empty() || instruction == "NOP" {
            continue;
        }
        if let Some((_, body)) = functions.last_mut() {
            body.push((address, instruction.to_owned()));
        }
    }
    functions
}

/// The text of `.entry name(...) { ... }` in a PTX module.
pub fn ptx_entry(ptx: &str, name: &str) -> Option<String> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let line_start = ptx[..start].rfind('\n').map_or(0, |i| i + 1);
    let end = ptx[start..].find("\n}").map(|i| start + i + 2)?;
    Some(ptx[line_start..end].to_owned())
}

/// cuobjdump beside nvcc (the CUDA wheels and toolkits put it there), else on PATH.
fn find_cuobjdump(nvcc: &Path) -> Result<PathBuf, LowerError> {
    let beside = nvcc.parent().map(|dir| dir.join("cuobjdump"));
    let mut candidates: Vec<PathBuf> = beside.into_iter().collect();
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|dir| dir.join("cuobjdump")));
    }
    candidates.into_iter().find(|c| c.is_file()).ok_or_else(|| {
        LowerError::new(format!(
            "cuobjdump was not found beside {} or on PATH; install it with `bash tools/install-toolchains.sh cuda` (pip nvidia-cuda-cuobjdump) or the CUDA toolkit",
            nvcc.display()
        ))
    })
}

fn scratch_dir(target: Target, variant: Variant) -> Result<PathBuf, LowerError> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("xbarrier-lower-{}-{nanos}-{target}-{variant}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| LowerError::new(format!("creating {}: {e}", dir.display())))?;
    Ok(dir)
}

fn run(cmd: &mut Command) -> Result<String, LowerError> {
    let out = cmd.output().map_err(|e| LowerError::new(format!("could not run {:?}: {e}", cmd.get_program())))?;
    if !out.status.success() {
        return Err(LowerError::new(format!(
            "{cmd:?} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cuobjdump_and_ptx() {
        let sass = "\t\tFunction : xbl_arrive\n        /*0000*/                   LDC R1, c[0x0][0x28] ;   /* 0x000 */\n        /*0010*/                   NOP;\n        /*0020*/               @P1 SYNCS.ARRIVE.TRANS64.A1T0 R2, [UR4], RZ ;  /* 0x1 */\n\t\tFunction : xbl_wait\n        /*0000*/                   EXIT ;\n";
        let f = parse_sass(sass);
        assert_eq!(f.len(), 2);
        let at = |a: u64, i: &str| (a, i.to_owned());
        assert_eq!(
            f[0].1,
            vec![at(0, "LDC R1, c[0x0][0x28]"), at(0x20, "@P1 SYNCS.ARRIVE.TRANS64.A1T0 R2, [UR4], RZ")]
        );
        assert_eq!(crate::mnemonic(&f[0].1[1].1), "SYNCS.ARRIVE.TRANS64.A1T0");
        assert_eq!(f[1].1, vec![at(0, "EXIT")]);
        let ptx = ".version 9.0\n.visible .entry xbl_a(\n)\n{\n ret;\n}\n.visible .entry xbl_b(\n)\n{\n}\n";
        assert_eq!(ptx_entry(ptx, "xbl_a").as_deref(), Some(".visible .entry xbl_a(\n)\n{\n ret;\n}"));
        assert!(ptx_entry(ptx, "xbl_c").is_none());
    }
}
