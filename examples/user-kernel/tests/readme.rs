//! The README's code is this crate's code: its C++ block is `kernels/readme.cpp`, its first
//! Rust block is the body of `build.rs`, its second the launch in `src/main.rs` between the
//! `README` markers. The crate builds and runs in CI, so those blocks compile and work as
//! shown; this test fails when either side changes alone. The C++ block also compiles on its
//! own for the host and, where clang-19 is installed, for AMDGPU (ignored without it, unless
//! XBAR_REQUIRE_TOOLCHAINS=1).

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The README's fenced code blocks: (language, text).
fn blocks() -> Vec<(String, String)> {
    let readme = read(&crate_dir().join("../../README.md"));
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in readme.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(language)) => open = Some((language.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => blocks.extend(open.take()),
            (Some((_, text)), None) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "the README has an unclosed code block");
    blocks
}

fn of(language: &str) -> Vec<String> {
    blocks().into_iter().filter(|(l, _)| l == language).map(|(_, t)| t).collect()
}

/// Lines without their common indentation, trailing blanks trimmed.
fn dedent(text: &str) -> String {
    let indent = text.lines().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min();
    let indent = indent.unwrap_or(0);
    text.lines().map(|l| l.get(indent..).unwrap_or("").trim_end()).collect::<Vec<_>>().join("\n").trim().to_owned()
}

#[test]
fn the_kernel_is_kernels_readme_cpp() {
    let cpp = of("c++");
    assert_eq!(cpp.len(), 1, "the README should show one C++ block, the kernel");
    assert_eq!(cpp[0], read(&crate_dir().join("kernels/readme.cpp")), "README kernel != kernels/readme.cpp");
}

#[test]
fn the_rust_blocks_are_build_rs_and_the_launch_in_main_rs() {
    let rust = of("rust");
    assert_eq!(rust.len(), 2, "the README should show two Rust blocks: build.rs and the launch");
    let build = read(&crate_dir().join("build.rs"));
    let build_code: String = build.lines().filter(|l| !l.starts_with("//")).collect::<Vec<_>>().join("\n");
    assert_eq!(dedent(&rust[0]), dedent(&build_code), "README build.rs != build.rs");
    let main = read(&crate_dir().join("src/main.rs"));
    let launch = main
        .split_once("// README: launch\n")
        .and_then(|(_, rest)| rest.split_once("    // README: end"))
        .map(|(launch, _)| launch)
        .expect("src/main.rs has the README markers");
    assert_eq!(dedent(&rust[1]), dedent(launch), "README launch != src/main.rs between the markers");
}

fn compiles(compiler: &str, args: &[&str], source: &Path) -> Result<(), String> {
    let include = crate_dir().join("../../hip-src/include");
    let out = Command::new(compiler)
        .args(args)
        .arg("-I")
        .arg(&include)
        .arg(source)
        .output()
        .map_err(|e| format!("could not run {compiler}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{compiler} {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr)))
    }
}

#[test]
fn the_kernel_compiles_on_its_own_for_the_host_and_amdgpu() {
    let dir = std::env::temp_dir().join(format!("xbarrier-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let source = dir.join("readme.cpp");
    std::fs::write(&source, &of("c++")[0]).expect("write the kernel");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    compiles(&cxx, &["-std=c++17", "-fsyntax-only", "-x", "c++"], &source).expect("host compile");
    let amd = compiles(
        "clang-19",
        &["-x", "hip", "--cuda-device-only", "-nogpuinc", "-nogpulib", "--offload-arch=gfx90a", "-fsyntax-only"],
        &source,
    );
    let required = std::env::var("XBAR_REQUIRE_TOOLCHAINS").is_ok_and(|v| v == "1");
    match amd {
        Ok(()) => {}
        Err(e) if e.starts_with("could not run") && !required => eprintln!("ignored AMDGPU compile: {e}"),
        Err(e) => panic!("{e}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
