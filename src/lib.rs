//! # xbarrier
//!
//! One barrier API for CUDA, HIP and the CPU. Kernels are written once in C++ against
//! `<xbarrier/barrier.hpp>` (`xb::barrier` with `cuda::barrier`'s semantics: phases,
//! arrival tokens, `arrive_and_drop`, completion functions, transaction counts and scoped
//! fences); this crate runs them on the backend the cargo features select:
//!
//! | feature | backend | devices |
//! | --- | --- | --- |
//! | `host` (default) | [`Host`] | CPU threads (Linux on x86-64 and AArch64; elsewhere it builds and reports [`Error::Unsupported`]) |
//! | `cuda` | `Cuda` | NVIDIA GPUs |
//! | `hip` | `Hip` | AMD GPUs |
//!
//! A crate with its own kernels compiles them in its build script with `xbarrier-build`,
//! which also generates a launcher per kernel typed after its C++ signature; the crate
//! declares those with [`kernels!`] and launches with no `unsafe`. Here the conformance
//! kernels' launchers stand in for a crate's own (`xbc_round_trip(unsigned phases)`):
//!
//! ```
//! // build.rs: xbarrier_build::Kernels::new("my_kernels").dir("kernels").build_or_exit();
//! // src/lib.rs: xbarrier::kernels!(pub mod my_kernels);
//! use xbarrier::{Device, Host, LaunchConfig};
//! use xbarrier_conformance::kernels::Kernels;
//! # fn main() -> xbarrier::Result<()> {
//! let device = Device::<Host>::open(0)?; // or Device::<DefaultBackend>
//! let kernels = Kernels::load(&device)?;
//! let stream = device.stream()?;
//! kernels.xbc_round_trip(&stream, &LaunchConfig::new(2, 64), 100)?.wait()?;
//! # Ok(()) }
//! ```
//!
//! [`kernel_bundle!`] loads a bundle for the untyped, `unsafe` [`Stream::launch`], which
//! kernels whose signature the build cannot type need.
//!
//! ## A runnable example on the host backend
//!
//! The conformance kernels (`xbarrier-conformance`, built by its own build script) run on the
//! CPU, so this needs no GPU. `xbc_copy_tx(src, report, bytes, pieces, rounds)` has thread 0
//! announce `bytes` with `barrier_arrive_tx`, `pieces` threads `memcpy_async_tx` their share of
//! `src` into dynamic shared memory, and every thread compares the tile with global memory
//! after the phase; `report[0]` counts mismatches.
//!
//! ```
//! use xbarrier::{Device, Host, LaunchConfig};
//! use xbarrier_conformance::kernels::Kernels;
//! # fn main() -> xbarrier::Result<()> {
//! let device = Device::<Host>::open(0)?;
//! let kernels = Kernels::load(&device)?;
//! let (bytes, pieces, rounds) = (1024u32, 4u32, 2u32);
//! // Round r reads `bytes` from word 4 * r on, so the source holds 4 words per extra round.
//! let words: Vec<u32> = (0..bytes / 4 + 4 * rounds).collect();
//! let src = device.upload(&words)?;
//! let mut report = device.alloc::<u64>(4)?;
//! let stream = device.stream()?;
//! let config = LaunchConfig::new(1, 64).shared(bytes);
//! // xbc_copy_tx(const unsigned*, unsigned long long*, unsigned, unsigned, unsigned)
//! kernels.xbc_copy_tx(&stream, &config, &src, &mut report, bytes, pieces, rounds)?.wait()?;
//! assert_eq!(report.download()?[0], 0, "every word of the tile landed before the phase completed");
//! # Ok(()) }
//! ```
//!
//! ## Barrier misuse is an error (checked builds)
//!
//! Debug builds and the `checked` feature ([`CHECKED`]) compile kernels that report what CUDA
//! leaves undefined as [`Error::Fault`]; a loaded module says whether its code is checked
//! ([`Module::checked`], recorded in the bundle). `xbm_over_arrival(fb, ft)` makes thread
//! `ft` of block `fb` arrive 3 times on a barrier that expects 1:
//!
//! ```
//! use xbarrier::{BarrierOp, Device, Error, FaultKind, Host, LaunchConfig};
//! use xbarrier_conformance::kernels::Kernels;
//! # fn main() -> xbarrier::Result<()> {
//! let device = Device::<Host>::open(0)?;
//! let kernels = Kernels::load(&device)?;
//! let stream = device.stream()?;
//! if kernels.module().checked() {
//!     // xbm_over_arrival(unsigned fb, unsigned ft)
//!     let result = kernels.xbm_over_arrival(&stream, &LaunchConfig::new(2, 4), 1, 2).and_then(|launch| launch.wait());
//!     match result {
//!         Err(Error::Fault(fault)) => {
//!             assert_eq!((fault.kind, fault.op), (FaultKind::OverArrival, BarrierOp::Arrive));
//!             assert_eq!((fault.record.block, fault.record.thread), ([1, 0, 0], [2, 0, 0]));
//!             println!("{fault}"); // names the kernel, block, thread and the barrier's state
//!         }
//!         other => panic!("expected a barrier fault, got {other:?}"),
//!     }
//! }
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub use xbarrier_api::*;

mod peer_barrier;
mod system_barrier;
pub use peer_barrier::PeerBarrier;
pub use system_barrier::{SystemBarrier, SystemBarrierArg, SystemToken};

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

/// A device of [`DefaultBackend`], opened without naming the backend:
/// `DefaultDevice::open(0)?` (Rust does not fill in a type parameter's default in a call such
/// as `Device::open(0)`, so the default backend gets a name of its own).
///
/// ```
/// # fn main() -> xbarrier::Result<()> {
/// # #[cfg(all(feature = "host", not(feature = "cuda"), not(feature = "hip")))] {
/// let device = xbarrier::DefaultDevice::open(0)?;
/// assert_eq!(device.info().backend, <xbarrier::DefaultBackend as xbarrier::Backend>::KIND);
/// # }
/// # Ok(()) }
/// ```
#[cfg(any(feature = "host", feature = "cuda", feature = "hip"))]
pub type DefaultDevice = Device<DefaultBackend>;

/// Whether the build helper compiles kernels checked in this build (misuse and deadlocks
/// reported as faults): debug builds, the `checked` feature, or `XBAR_CHECKED=1`. Whether a
/// loaded module's code is checked is [`Module::checked`], which its bundle records.
pub const CHECKED: bool = matches!(env!("XBAR_BUILD_CHECKED").as_bytes(), b"1");

/// Does something generic for each enabled backend (see [`visit_backends`]).
pub trait BackendVisitor {
    /// What one visit produces.
    type Output;
    /// Called once per enabled backend.
    fn visit<B: Backend>(&mut self) -> Self::Output;
}

/// Calls `visitor` once for every backend enabled by this build's features
/// ([`enabled_backends`]): code generic over [`Backend`] runs on each (the conformance suite
/// and `xbar` work this way). The host backend counts only where it runs (Linux on x86-64
/// and AArch64).
///
/// ```
/// use xbarrier::{visit_backends, Backend, BackendVisitor, Device};
/// struct DeviceCount;
/// impl BackendVisitor for DeviceCount {
///     type Output = (xbarrier::BackendKind, usize);
///     fn visit<B: Backend>(&mut self) -> Self::Output {
///         // 0 where the runtime is missing or has no device.
///         (B::KIND, Device::<B>::count().unwrap_or(0))
///     }
/// }
/// let counts = visit_backends(&mut DeviceCount);
/// assert_eq!(counts.len(), xbarrier::enabled_backends().len());
/// # #[cfg(feature = "host")]
/// assert!(counts.contains(&(xbarrier::BackendKind::Host, 2)), "two stand-in devices by default");
/// ```
// One push per enabled feature, so no vec![] literal.
#[allow(clippy::vec_init_then_push)]
pub fn visit_backends<V: BackendVisitor>(visitor: &mut V) -> Vec<V::Output> {
    #[allow(unused_mut)]
    let mut out = Vec::new();
    #[cfg(feature = "host")]
    if xbarrier_backend_host::SUPPORTED {
        out.push(visitor.visit::<Host>());
    }
    #[cfg(feature = "cuda")]
    out.push(visitor.visit::<Cuda>());
    #[cfg(feature = "hip")]
    out.push(visitor.visit::<Hip>());
    let _ = visitor;
    out
}

/// The backends enabled by this build's features; `host` only where it runs (Linux on
/// x86-64 and AArch64), which is also the list the build helper compiles kernels for.
///
/// ```
/// # #[cfg(feature = "host")]
/// assert!(xbarrier::enabled_backends().contains(&xbarrier::BackendKind::Host));
/// ```
pub fn enabled_backends() -> Vec<BackendKind> {
    env!("XBAR_BUILD_BACKENDS").split(',').filter_map(BackendKind::from_name).collect()
}

/// Loads the kernel bundle `name` that the crate's build script made with `xbarrier-build`.
///
/// Expands to [`KernelBundle::parse`] over `include_bytes!("$OUT_DIR/name.xbk")`, so it must be
/// used in the crate whose `build.rs` called `xbarrier_build::Kernels::new("name")`; it fails
/// to compile when that file does not exist, and returns [`Error::BadBundle`] if the file is
/// not a bundle.
///
/// ```ignore
/// // build.rs: xbarrier_build::Kernels::new("my_kernels").dir("kernels").build_or_exit();
/// let bundle = xbarrier::kernel_bundle!("my_kernels")?;
/// let module = device.load(&bundle)?;
/// ```
#[macro_export]
macro_rules! kernel_bundle {
    ($name:literal) => {
        $crate::KernelBundle::parse($name, include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".xbk")))
    };
}

/// Declares the module of typed launchers that the crate's build script generated for bundle
/// `name` with `xbarrier-build`: `xbarrier::kernels!(mod name);` (with any visibility and
/// attributes, doc comments included; `mod other = "name"` names the module differently)
/// makes
/// `name::Kernels<B>`, which loads the bundle on a device and has one method per kernel,
/// typed after its C++ signature.
///
/// For `XB_KERNEL void stream_in(const float* in, float* out, unsigned n)` the method is
/// `fn stream_in<'a>(&self, stream: &'a Stream<B>, config: &LaunchConfig, r#in: &'a Buffer<B,
/// f32>, out: &'a mut Buffer<B, f32>, n: u32) -> Result<Launch<'a, B>>`: a wrong type or
/// count does not compile, and the returned [`Launch`] keeps the buffers borrowed until the
/// stream has run the kernel. Kernels whose signature cannot be typed (structs by value,
/// typedefs of your own, templates, variadic lists) get a build warning naming them and stay
/// available untyped, through `Kernels::module` and the unsafe [`Stream::launch`].
///
/// ```ignore
/// // build.rs: xbarrier_build::Kernels::new("my_kernels").file("kernels/stream_in.cpp").build_or_exit();
/// xbarrier::kernels!(mod my_kernels);
///
/// let kernels = my_kernels::Kernels::load(&device)?;
/// kernels.stream_in(&stream, &LaunchConfig::new(1, 256), &input, &mut output, 1024)?.wait()?;
/// ```
#[macro_export]
macro_rules! kernels {
    ($(#[$attr:meta])* $vis:vis mod $name:ident) => {
        $crate::kernels!($(#[$attr])* $vis mod $name = stringify!($name));
    };
    ($(#[$attr:meta])* $vis:vis mod $name:ident = $bundle:expr) => {
        $(#[$attr])*
        $vis mod $name {
            // The generated code names xbarrier through this, whatever the crate calls it.
            #[doc(hidden)]
            #[allow(unused_imports)]
            mod __xbarrier {
                pub use $crate::*;
            }
            include!(concat!(env!("OUT_DIR"), "/", $bundle, ".rs"));
        }
    };
}
