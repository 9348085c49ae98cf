//! Launch geometry and kernel arguments.

use std::time::Duration;

use crate::{DeviceInfo, Error, Result};

/// A grid or block shape. Integers and tuples convert into it (missing extents are 1).
///
/// ```
/// use xbarrier_api::Dim3;
/// assert_eq!(Dim3::from(256), Dim3 { x: 256, y: 1, z: 1 });
/// assert_eq!(Dim3::from((8, 4, 2)).count(), 64);
/// assert_eq!(Dim3::from((8, 4)).to_array(), [8, 4, 1]);
/// assert_eq!(Dim3::from((u32::MAX, u32::MAX, u32::MAX)).count(), u64::MAX, "saturates");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    /// Extent in x.
    pub x: u32,
    /// Extent in y.
    pub y: u32,
    /// Extent in z.
    pub z: u32,
}

impl Dim3 {
    /// Product of the extents, saturating at `u64::MAX` (three u32 extents can exceed u64;
    /// no device limit comes near the saturated value, so validation still refuses it).
    pub fn count(self) -> u64 {
        u64::from(self.x).saturating_mul(u64::from(self.y)).saturating_mul(u64::from(self.z))
    }
    /// The extents as an array.
    pub fn to_array(self) -> [u32; 3] {
        [self.x, self.y, self.z]
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3 { x, y, z: 1 }
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3 { x, y, z }
    }
}

/// How to launch a kernel: grid and block shape, dynamic shared memory, whether all blocks
/// must be resident at once, and a time limit.
///
/// ```
/// use std::time::Duration;
/// use xbarrier_api::LaunchConfig;
///
/// let config = LaunchConfig::new((4, 2), 256).shared(16 * 1024).timeout(Duration::from_secs(5));
/// assert_eq!((config.grid.count(), config.block.count()), (8, 256));
/// assert_eq!(config.shared_bytes, 16 * 1024);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
    /// All blocks must be resident at once (needed by device-scope barriers across blocks).
    pub cooperative: bool,
    /// Abort the launch (and fail it) when it runs longer than this. Backends that cannot
    /// abort a running kernel report the overrun after it ends.
    pub timeout: Option<Duration>,
}

impl LaunchConfig {
    /// `grid` blocks of `block` threads, no dynamic shared memory.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> LaunchConfig {
        LaunchConfig { grid: grid.into(), block: block.into(), shared_bytes: 0, cooperative: false, timeout: None }
    }
    /// Sets the dynamic shared memory per block.
    pub fn shared(mut self, bytes: u32) -> LaunchConfig {
        self.shared_bytes = bytes;
        self
    }
    /// Requires all blocks to be resident at once: a grid-wide barrier needs it, and
    /// [`validate`](Self::validate) refuses a cooperative grid larger than the device keeps
    /// resident ([`DeviceInfo::max_cooperative_blocks`]).
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// use xbarrier_api::{Device, LaunchConfig};
    /// let device = Device::<xbarrier::Host>::open(0)?;
    /// let most = device.info().max_cooperative_blocks;
    /// assert!(LaunchConfig::new(most, 32).cooperative().validate(device.info()).is_ok());
    /// assert!(LaunchConfig::new(most + 1, 32).cooperative().validate(device.info()).is_err());
    /// # Ok(()) }
    /// ```
    pub fn cooperative(mut self) -> LaunchConfig {
        self.cooperative = true;
        self
    }
    /// Bounds the launch's running time: a launch that runs longer fails with
    /// [`Error::LaunchTimeout`] (see the [`timeout`](Self#structfield.timeout) field).
    ///
    /// ```
    /// # fn main() -> xbarrier_api::Result<()> {
    /// use std::time::Duration;
    /// use xbarrier_api::{Device, Error, LaunchConfig};
    /// let device = Device::<xbarrier::Host>::open(0)?;
    /// let module = device.load(&xbarrier_conformance::bundle()?)?;
    /// let kernel = module.kernel("xbc_round_trip")?;
    /// let stream = device.stream()?;
    /// let config = LaunchConfig::new(1, 64).timeout(Duration::from_millis(50));
    /// // SAFETY: xbc_round_trip(unsigned phases) takes exactly this argument.
    /// let result = unsafe { stream.launch(&kernel, &config, &[u32::MAX.into()]) }.and_then(|()| stream.synchronize());
    /// assert!(matches!(result, Err(Error::LaunchTimeout { .. })), "4 billion phases do not fit in 50 ms");
    /// # Ok(()) }
    /// ```
    pub fn timeout(mut self, limit: Duration) -> LaunchConfig {
        self.timeout = Some(limit);
        self
    }

    /// Checks the configuration against what `device` can run; [`Stream::launch`](crate::Stream::launch)
    /// calls it before anything reaches the device.
    ///
    /// Returns [`Error::InvalidArgument`] (with `call: "launch"`) for an empty grid or block,
    /// more threads per block or dynamic shared memory than the device allows, or a
    /// cooperative grid larger than the device keeps resident.
    ///
    /// ```
    /// use xbarrier_api::{BackendKind, DeviceInfo, Error, LaunchConfig};
    ///
    /// let mut device = DeviceInfo::new(BackendKind::Host, 0, "example", "host");
    /// device.multiprocessors = 4;
    /// device.max_cooperative_blocks = 8;
    /// device.max_threads_per_block = 1024;
    /// device.max_dynamic_shared_bytes = 48 * 1024;
    /// assert!(LaunchConfig::new(8, 1024).cooperative().validate(&device).is_ok());
    /// let refused = LaunchConfig::new(1, 1025).validate(&device).unwrap_err();
    /// assert!(matches!(refused, Error::InvalidArgument { call: "launch", .. }));
    /// assert!(LaunchConfig::new(9, 32).cooperative().validate(&device).is_err());
    /// assert!(LaunchConfig::new(1, 32).shared(64 * 1024).validate(&device).is_err());
    /// ```
    pub fn validate(&self, device: &DeviceInfo) -> Result<()> {
        let bad = |reason: String| Err(Error::InvalidArgument { call: "launch", reason });
        if self.grid.count() == 0 || self.block.count() == 0 {
            return bad(format!("empty grid {:?} or block {:?}", self.grid, self.block));
        }
        if self.block.count() > u64::from(device.max_threads_per_block) {
            return bad(format!(
                "{} threads per block, {} allows at most {}",
                self.block.count(),
                device.name,
                device.max_threads_per_block
            ));
        }
        if self.shared_bytes > device.max_dynamic_shared_bytes {
            return bad(format!(
                "{} bytes of dynamic shared memory, {} allows at most {}",
                self.shared_bytes, device.name, device.max_dynamic_shared_bytes
            ));
        }
        if self.cooperative && self.grid.count() > u64::from(device.max_cooperative_blocks) {
            return bad(format!(
                "cooperative launch of {} blocks, {} can keep at most {} resident",
                self.grid.count(),
                device.name,
                device.max_cooperative_blocks
            ));
        }
        Ok(())
    }
}

/// One kernel argument, by the C type of the parameter it fills.
///
/// Each must match the kernel's C parameter exactly; Rust numbers convert with `.into()` and
/// buffers give pointers with [`Buffer::arg`](crate::Buffer::arg).
///
/// ```
/// use xbarrier_api::KernelArg;
/// // For `XB_KERNEL void k(unsigned n, float scale, long long offset)`:
/// let args: [KernelArg; 3] = [1024u32.into(), 0.5f32.into(), (-8i64).into()];
/// assert_eq!(args[0], KernelArg::U32(1024));
/// assert_eq!(args.map(KernelArg::size), [4, 4, 8]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelArg {
    /// A pointer (device address).
    Ptr(u64),
    /// `int32_t` / `int`.
    I32(i32),
    /// `uint32_t` / `unsigned`.
    U32(u32),
    /// `int64_t` / `long long`.
    I64(i64),
    /// `uint64_t` / `size_t`.
    U64(u64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
}

impl KernelArg {
    /// Whether the C calling conventions pass it in a floating-point register.
    ///
    /// ```
    /// use xbarrier_api::KernelArg;
    /// assert!(KernelArg::from(1.0f64).is_float() && !KernelArg::from(1u64).is_float());
    /// ```
    pub fn is_float(self) -> bool {
        matches!(self, KernelArg::F32(_) | KernelArg::F64(_))
    }
    /// The value as its parameter's bytes, little-endian, zero- or sign-extended to 8.
    ///
    /// ```
    /// use xbarrier_api::KernelArg;
    /// assert_eq!(KernelArg::from(-1i32).bits(), u64::MAX, "sign-extended");
    /// assert_eq!(KernelArg::from(u32::MAX).bits(), 0xffff_ffff, "zero-extended");
    /// assert_eq!(KernelArg::from(1.0f32).bits(), 0x3f80_0000);
    /// ```
    pub fn bits(self) -> u64 {
        match self {
            KernelArg::Ptr(v) | KernelArg::U64(v) => v,
            KernelArg::I32(v) => i64::from(v) as u64,
            KernelArg::U32(v) => u64::from(v),
            KernelArg::I64(v) => v as u64,
            KernelArg::F32(v) => u64::from(v.to_bits()),
            KernelArg::F64(v) => v.to_bits(),
        }
    }
    /// Size of the C parameter in bytes.
    pub fn size(self) -> usize {
        match self {
            KernelArg::I32(_) | KernelArg::U32(_) | KernelArg::F32(_) => 4,
            _ => 8,
        }
    }
}

macro_rules! arg_from {
    ($($t:ty => $v:ident),*) => { $(impl From<$t> for KernelArg { fn from(x: $t) -> KernelArg { KernelArg::$v(x) } })* };
}
arg_from!(i32 => I32, u32 => U32, i64 => I64, u64 => U64, f32 => F32, f64 => F64);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BackendKind;

    fn info() -> DeviceInfo {
        DeviceInfo {
            backend: BackendKind::Host,
            ordinal: 0,
            name: "test".into(),
            arch: "host".into(),
            wave_size: 1,
            multiprocessors: 2,
            max_cooperative_blocks: 4,
            max_threads_per_block: 1024,
            max_dynamic_shared_bytes: 1 << 16,
        }
    }

    #[test]
    fn validate_rejects_each_limit() {
        let d = info();
        assert!(LaunchConfig::new(2, 256).validate(&d).is_ok());
        for bad in [
            LaunchConfig::new(0, 32),
            LaunchConfig::new(1, (32, 0)),
            LaunchConfig::new(1, 1025),
            LaunchConfig::new(1, 32).shared((1 << 16) + 1),
            LaunchConfig::new(5, 32).cooperative(),
        ] {
            let err = bad.validate(&d).expect_err("must be refused");
            assert!(matches!(err, Error::InvalidArgument { call: "launch", .. }), "{err}");
        }
    }

    #[test]
    fn args_extend_like_c() {
        assert_eq!(KernelArg::I32(-1).bits(), u64::MAX);
        assert_eq!(KernelArg::U32(u32::MAX).bits(), 0xffff_ffff);
        assert_eq!(KernelArg::F32(1.0).bits(), 0x3f80_0000);
        assert!(KernelArg::F64(0.5).is_float() && !KernelArg::Ptr(0).is_float());
    }
}
