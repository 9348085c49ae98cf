//! Every C++ block in docs/*.md compiles as shown or is the repository's code as shown, and
//! every Rust block is code of examples/, which CI builds and runs.
//!
//! A block that defines a kernel (it includes a header and declares `XB_KERNEL` or
//! `__global__`) is a whole translation unit: it must compile on its own, for the host with
//! the host C++ compiler and for gfx90a with clang-19 (xbarrier kernels), or for sm_90 with
//! nvcc (a `<cuda/barrier>` kernel, the porting guide's starting point). Any other block is an
//! excerpt: with comments and white space left out, it must stand in a source file under
//! hip-src/ or examples/ (the docs may wrap lines and comment differently). A missing clang-19 or nvcc makes
//! its check ignored with the reason, unless XBAR_REQUIRE_TOOLCHAINS=1 (tools/test.sh sets
//! it). The README's blocks are checked by examples/user-kernel/tests/readme.rs.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// (file, line, text) of every ```c++ block in docs/*.md.
fn cpp_blocks() -> Vec<(String, usize, String)> {
    blocks(&["c++", "cpp"])
}

/// (file, line, text) of every block in docs/*.md whose language is one of `languages`.
fn blocks(languages: &[&str]) -> Vec<(String, usize, String)> {
    let mut blocks = Vec::new();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    for doc in docs {
        let name = doc.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mut open: Option<(usize, String, String)> = None;
        for (n, line) in read(&doc).lines().enumerate() {
            match (&mut open, line.strip_prefix("```")) {
                (None, Some(language)) => open = Some((n + 1, language.trim().to_owned(), String::new())),
                (Some(_), Some(_)) => {
                    if let Some((at, language, text)) = open.take() {
                        if languages.contains(&language.as_str()) {
                            blocks.push((name.clone(), at, text));
                        }
                    }
                }
                (Some((_, _, text)), None) => {
                    text.push_str(line);
                    text.push('\n');
                }
                (None, None) => {}
            }
        }
        assert!(open.is_none(), "{name} has an unclosed code block");
    }
    blocks
}

/// The code of a text: without `//` comments and without white space.
fn code(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).flat_map(|l| l.split_whitespace()).collect()
}

/// The files under `dir` with one of the `extensions`.
fn sources(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, extensions, out);
        } else if path.extension().is_some_and(|x| extensions.iter().any(|e| x == *e)) {
            out.push(path);
        }
    }
}

fn excerpt_found(block: &str) -> bool {
    let want = code(block);
    let mut files = Vec::new();
    sources(&root().join("hip-src"), &["cpp", "hpp", "cu"], &mut files);
    sources(&root().join("examples"), &["cpp", "hpp", "cu"], &mut files);
    !want.is_empty() && files.iter().any(|file| code(&read(file)).contains(&want))
}

#[test]
fn every_rust_block_in_the_docs_is_code_of_the_examples() {
    let mut files = Vec::new();
    sources(&root().join("examples"), &["rs"], &mut files);
    let examples: Vec<String> = files.iter().map(|file| code(&read(file))).collect();
    let blocks = blocks(&["rust"]);
    assert!(!blocks.is_empty(), "no Rust blocks found in docs/");
    let failures: Vec<String> = blocks
        .iter()
        .filter(|(_, _, text)| {
            let want = code(text);
            want.is_empty() || !examples.iter().any(|example| example.contains(&want))
        })
        .map(|(doc, line, _)| format!("docs/{doc}:{line}"))
        .collect();
    assert!(
        failures.is_empty(),
        "Rust blocks that are not code of examples/ (comments and white space aside):\n{}",
        failures.join("\n")
    );
}

fn required() -> bool {
    std::env::var("XBAR_REQUIRE_TOOLCHAINS").is_ok_and(|v| v == "1")
}

/// Compiles `source` with `compiler args`; a compiler that cannot be run is a skip unless
/// toolchains are required.
fn compile(compiler: &str, args: &[&str], source: &Path) -> Result<(), String> {
    let out = match Command::new(compiler).args(args).arg(source).output() {
        Ok(out) => out,
        Err(e) if !required() => {
            eprintln!("ignored: could not run {compiler}: {e}");
            return Ok(());
        }
        Err(e) => return Err(format!("XBAR_REQUIRE_TOOLCHAINS=1 but {compiler} could not run: {e}")),
    };
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{compiler} {args:?}:\n{}", String::from_utf8_lossy(&out.stderr)))
    }
}

#[test]
fn every_cpp_block_in_the_docs_compiles_or_is_the_code() {
    let include = root().join("hip-src/include");
    let include = include.to_string_lossy().into_owned();
    let dir = std::env::temp_dir().join(format!("xbarrier-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let blocks = cpp_blocks();
    assert!(!blocks.is_empty(), "no C++ blocks found in docs/");
    let mut failures = Vec::new();
    for (doc, line, text) in &blocks {
        let whole = text.contains("#include") && (text.contains("XB_KERNEL") || text.contains("__global__"));
        let result = if !whole {
            if excerpt_found(text) {
                Ok(())
            } else {
                Err("not a whole kernel, and not found in hip-src/ or examples/ (comments aside)".to_owned())
            }
        } else {
            let source = dir.join(format!("{}-{line}.cpp", doc.trim_end_matches(".md")));
            std::fs::write(&source, text).expect("write the block");
            if text.lines().any(|l| l.trim_start().starts_with("#include <cuda/barrier>")) {
                let cu = source.with_extension("cu");
                std::fs::write(&cu, text).expect("write the block");
                compile("nvcc", &["-std=c++17", "-arch=sm_90", "-c", "-o", "/dev/null"], &cu)
            } else {
                let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
                let host = ["-std=c++17", "-fsyntax-only", "-x", "c++", "-I", &include];
                let amd = [
                    "-x",
                    "hip",
                    "--cuda-device-only",
                    "-nogpuinc",
                    "-nogpulib",
                    "--offload-arch=gfx90a",
                    "-fsyntax-only",
                    "-I",
                    &include,
                ];
                compile(&cxx, &host, &source).and_then(|()| compile("clang-19", &amd, &source))
            }
        };
        if let Err(e) = result {
            failures.push(format!("docs/{doc}:{line}: {e}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{} of {} blocks:\n{}", failures.len(), blocks.len(), failures.join("\n"));
}
