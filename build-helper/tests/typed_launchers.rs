//! The typed launchers of a bundle built for the host backend: the generated module holds a
//! launcher per kernel whose signature was read and a note per kernel that has none, and the
//! compiler confirms each reading, so a declaration the reader misreads fails the build, as
//! does a macro that would change the kernel and the check alike.

use std::path::{Path, PathBuf};

use xbarrier::BackendKind;
use xbarrier_build::{Kernels, XbarrierMetadata};

fn metadata() -> XbarrierMetadata {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    XbarrierMetadata {
        include: repo.join("hip-src/include"),
        host_runtime: repo.join("hip-src/host/runtime.cpp"),
        backends: vec![BackendKind::Host],
        checked: false,
    }
}

/// A fresh directory holding `source` as `kernels.cpp`.
fn with_source(test: &str, source: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("typed-launchers-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creates the test directory");
    std::fs::write(dir.join("kernels.cpp"), source).expect("writes the source");
    dir
}

#[test]
fn every_readable_kernel_gets_a_launcher() {
    let dir = with_source(
        "readable",
        "#include <xbarrier/barrier.hpp>\n\
         struct params { float scale; };\n\
         XB_KERNEL void scale(const float* in, float* out, unsigned n, float by) { if (n) out[0] = in[0] * by; }\n\
         XB_KERNEL void widths(int8_t* a, const uint16_t* b, long long c, size_t d, double e) { a[0] = b[0] + c + d + e; }\n\
         XB_KERNEL void by_struct(params p, float* out) { out[0] = p.scale; }\n\
         XB_KERNEL void fed(xb::barrier<xb::thread_scope_system>* __restrict__ bar, const unsigned* v) { bar->arrive_and_wait(); (void)v; }\n",
    );
    Kernels::new("readable").file(dir.join("kernels.cpp")).build_into(&metadata(), &dir).expect("builds");
    let module = std::fs::read_to_string(dir.join("readable.rs")).expect("the launchers were written");
    for want in [
        "pub fn scale<'a>(",
        "r#in: impl __xbarrier::PtrArg<'a, B, f32>,",
        "out: impl __xbarrier::MutPtrArg<'a, B, f32>,",
        "by: f32,",
        "pub fn widths<'a>(",
        "a: impl __xbarrier::MutPtrArg<'a, B, i8>,",
        "b: impl __xbarrier::PtrArg<'a, B, u16>,",
        "c: i64,",
        "d: u64,",
        "e: f64,",
        "/// - `by_struct` (",
        "pub fn fed<'a>(",
        "bar: impl __xbarrier::SystemBarrierArg<'a, B>,",
        "__xbarrier::SystemBarrierArg::launch_arg(bar)",
    ] {
        assert!(module.contains(want), "missing {want:?} in:\n{module}");
    }
    assert!(!module.contains("fn by_struct"), "{module}");
    let unity = std::fs::read_to_string(dir.join("readable.host.cpp")).expect("the translation unit");
    assert!(unity.contains("XB_KERNEL_SIGNATURE(scale, void(const float*, float*, unsigned int, float));"), "{unity}");
    assert!(unity.contains("XB_KERNEL_SCALAR_SIZE(size_t, 8);"), "{unity}");
    assert!(
        unity.contains("XB_KERNEL_SIGNATURE(fed, void(xb::barrier<xb::thread_scope_system>*, const unsigned int*));"),
        "{unity}"
    );
}

#[test]
fn a_reading_the_compiler_disagrees_with_fails_the_build() {
    // The reader sees `unsigned n`; after the macro the compiler sees `unsigned long n`.
    let dir = with_source(
        "misread",
        "#include <xbarrier/barrier.hpp>\n\
         #define n long n\n\
         XB_KERNEL void fill(unsigned n, float* out) { out[0] = n; }\n",
    );
    let error = Kernels::new("misread").file(dir.join("kernels.cpp")).build_into(&metadata(), &dir).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("xbarrier-build read kernel `fill` as void(unsigned int, float*)"), "{text}");

    // A macro that renames a type would change the check as well: the build refuses it.
    let dir = with_source(
        "renamed",
        "#include <xbarrier/barrier.hpp>\n\
         #define size_t float*\n\
         XB_KERNEL void fill(size_t n) { n[0] = 1; }\n",
    );
    let error = Kernels::new("renamed").file(dir.join("kernels.cpp")).build_into(&metadata(), &dir).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("xbarrier-build: `size_t` is a macro here"), "{text}");
}
