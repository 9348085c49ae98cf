//! # xbarrier
//!
//! One barrier API for CUDA, HIP and the CPU. Kernels are written once in C++ against
//! `<xbarrier/barrier.hpp>` (`xb::barrier` with `cuda::barrier`'s semantics: phases,
//! arrival tokens, `arrive_and_drop`, completion functions, transaction counts and scoped
//! fences); this crate runs them on the backend the cargo features select:
//!
//! | feature | backend | devices |
//! | --- | --- | --- |
//! | `host` (default) | [`Host`] | CPU threads |
//! | `cuda` | `Cuda` | NVIDIA GPUs |
//! | `hip` | `Hip` | AMD GPUs |
//!
//! A crate with its own kernels compiles them in its build script with `xbarrier-build`
//! and loads them with [`kernel_bundle!`]:
//!
//! ```no_run
//! use xbarrier::{Device, DefaultBackend, LaunchConfig};
//! # fn main() -> xbarrier::Result<()> {
//! # let bundle = xbarrier::KernelBundle::parse("none", b"XBK1\0\0\0\0")?;
//! // let bundle = xbarrier::kernel_bundle!("my_kernels")?;
//! let device = Device::<DefaultBackend>::open(0)?;
//! let module = device.load(&bundle)?;
//! let kernel = module.kernel("scale")?;
//! let data = device.upload(&[1.0f32; 256])?;
//! let stream = device.stream()?;
//! // SAFETY: `scale(float*, unsigned)` takes exactly these arguments; `data` outlives the sync.
//! unsafe { stream.launch(&kernel, &LaunchConfig::new(1, 256), &[data.arg(), 256u32.into()])? };
//! stream.synchronize()?;
//! # Ok(()) }
//! ```

pub use xbarrier_api::*;

#[cfg(feature = "host")]
pub use xbarrier_backend_host::Host;

#[cfg(feature = "cuda")]
pub use xbarrier_backend_cuda::Cuda;

#[cfg(feature = "hip")]
pub use xbarrier_backend_hip::Hip;

/// The backend the features select: CUDA if enabled, else HIP, else the host.
#[cfg(feature = "cuda")]
pub type DefaultBackend = Cuda;
/// The backend the features select: CUDA if enabled, else HIP, else the host.
#[cfg(all(feature = "hip", not(feature = "cuda")))]
pub type DefaultBackend = Hip;
/// The backend the features select: CUDA if enabled, else HIP, else the host.
#[cfg(all(feature = "host", not(feature = "cuda"), not(feature = "hip")))]
pub type DefaultBackend = Host;

/// Whether this build's device code is checked (misuse and deadlocks reported as faults).
pub const CHECKED: bool = matches!(env!("XBARRIER_CHECKED").as_bytes(), b"1");

/// Does something generic for each enabled backend (see [`visit_backends`]).
pub trait BackendVisitor {
    /// What one visit produces.
    type Output;
    /// Called once per enabled backend.
    fn visit<B: Backend>(&mut self) -> Self::Output;
}

/// Calls `visitor` once for every backend enabled by this build's features.
// One push per enabled feature, so no vec![] literal.
#[allow(clippy::vec_init_then_push)]
pub fn visit_backends<V: BackendVisitor>(visitor: &mut V) -> Vec<V::Output> {
    #[allow(unused_mut)]
    let mut out = Vec::new();
    #[cfg(feature = "host")]
    out.push(visitor.visit::<Host>());
    #[cfg(feature = "cuda")]
    out.push(visitor.visit::<Cuda>());
    #[cfg(feature = "hip")]
    out.push(visitor.visit::<Hip>());
    let _ = visitor;
    out
}

/// The backends enabled by this build's features.
pub fn enabled_backends() -> Vec<BackendKind> {
    env!("XBARRIER_BACKENDS").split(',').filter_map(BackendKind::from_name).collect()
}

/// Loads the kernel bundle `name` that the crate's build script made with `xbarrier-build`.
#[macro_export]
macro_rules! kernel_bundle {
    ($name:literal) => {
        $crate::KernelBundle::parse($name, include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".xbk")))
    };
}
