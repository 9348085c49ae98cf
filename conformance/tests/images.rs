//! The conformance bundle holds a well-formed image for every backend this build enabled:
//! a shared object for the host, a CUDA fatbin (native and, unchecked, emulated), and a clang
//! offload bundle with a code object per AMDGPU target for HIP. Run with `--features cuda,hip`
//! to cover the GPU images (tools/test.sh does).

use xbarrier::{enabled_backends, BackendKind, Variant};

const FATBIN_MAGIC: [u8; 4] = 0xba55_ed50u32.to_le_bytes();

#[test]
fn every_enabled_backend_has_a_well_formed_image() {
    let bundle = match xbarrier_conformance::bundle() {
        Ok(bundle) => bundle,
        Err(e) => panic!("the conformance bundle does not parse: {e}"),
    };
    assert_eq!(bundle.checked(), xbarrier::CHECKED, "the bundle records how the build helper compiled it");
    for kind in enabled_backends() {
        let image = match bundle.image(kind) {
            Ok(image) => image,
            Err(e) => panic!("{kind}: {e}"),
        };
        match kind {
            BackendKind::Host => assert!(image.starts_with(b"\x7fELF"), "host image is not an ELF shared object"),
            BackendKind::Cuda => {
                assert!(image.starts_with(&FATBIN_MAGIC), "cuda image is not a fatbin");
                let variants = bundle.variants(kind);
                let want = if bundle.checked() { vec![Variant::Default] } else { Variant::ALL.to_vec() };
                assert_eq!(variants, want, "cuda variants (checked = {})", bundle.checked());
            }
            BackendKind::Hip => {
                assert!(image.starts_with(b"__CLANG_OFFLOAD_BUNDLE__"), "hip image is not a clang offload bundle");
                let text = String::from_utf8_lossy(image);
                for target in ["gfx90a", "gfx942", "gfx1100", "gfx1200"] {
                    let entry = format!("hipv4-amdgcn-amd-amdhsa--{target}");
                    assert!(text.contains(&entry), "hip image has no code object for {target}");
                }
                // The CUDA kernel ported through cuda_compat.hpp compiled for every target.
                let ports = text.matches("xbc_cuda_port").count();
                assert!(ports >= 4, "xbc_cuda_port appears {ports} times in the hip image, want it in 4 code objects");
            }
        }
    }
}
