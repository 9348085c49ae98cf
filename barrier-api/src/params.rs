//! Kernel arguments as GPU launch APIs' `void** kernelParams` want them (`cuLaunchKernel`,
//! `hipModuleLaunchKernel`).
//!
//! The driver reads parameter `i` from `kernelParams[i]`, copying as many bytes as
//! the kernel's `i`-th C parameter has. Each argument therefore lives in its own 8-byte,
//! 8-aligned slot holding exactly the C representation of its type at the start: 4 bytes
//! for `int`/`unsigned`/`float`, 8 for pointers, 64-bit integers and `double`.

use std::ffi::c_void;

use crate::KernelArg;

/// One argument's bytes, aligned for any parameter type we pass.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ArgSlot {
    bytes: [u8; 8],
    len: usize,
}

impl ArgSlot {
    /// The argument's C representation (native byte order, exactly its size).
    fn new(arg: KernelArg) -> ArgSlot {
        let mut bytes = [0u8; 8];
        let len = match arg {
            KernelArg::Ptr(v) | KernelArg::U64(v) => put(&mut bytes, &v.to_ne_bytes()),
            KernelArg::I64(v) => put(&mut bytes, &v.to_ne_bytes()),
            KernelArg::F64(v) => put(&mut bytes, &v.to_ne_bytes()),
            KernelArg::I32(v) => put(&mut bytes, &v.to_ne_bytes()),
            KernelArg::U32(v) => put(&mut bytes, &v.to_ne_bytes()),
            KernelArg::F32(v) => put(&mut bytes, &v.to_ne_bytes()),
        };
        debug_assert_eq!(len, arg.size());
        ArgSlot { bytes, len }
    }

    /// The bytes the kernel receives.
    #[cfg(test)]
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// The pointer that goes into `kernelParams`.
    fn as_param(&mut self) -> *mut c_void {
        self.bytes.as_mut_ptr().cast()
    }
}

fn put(dst: &mut [u8; 8], src: &[u8]) -> usize {
    dst[..src.len()].copy_from_slice(src);
    src.len()
}

/// The arguments of one launch, each in its own aligned slot: what a GPU backend passes to
/// its runtime's launch call.
///
/// ```
/// use xbarrier_api::{backend::KernelParams, KernelArg};
/// let mut params = KernelParams::new(&[KernelArg::U32(7), KernelArg::F64(0.25)]);
/// let pointers = params.pointers(); // what cuLaunchKernel's kernelParams takes
/// // SAFETY: each pointer addresses its argument's slot, which holds the C value at its start.
/// unsafe {
///     assert_eq!(*pointers[0].cast::<u32>(), 7);
///     assert_eq!(*pointers[1].cast::<f64>(), 0.25);
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelParams {
    slots: Vec<ArgSlot>,
}

impl KernelParams {
    /// The slots for `args`, in order.
    pub fn new(args: &[KernelArg]) -> KernelParams {
        KernelParams { slots: args.iter().copied().map(ArgSlot::new).collect() }
    }

    /// The `void*` array to pass as `kernelParams`; valid while `self` is neither moved nor dropped.
    pub fn pointers(&mut self) -> Vec<*mut c_void> {
        self.slots.iter_mut().map(ArgSlot::as_param).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_c_types() {
        let args = [
            KernelArg::Ptr(0x1234_5678_9abc_def0),
            KernelArg::I32(-2),
            KernelArg::U32(7),
            KernelArg::I64(-3),
            KernelArg::U64(u64::MAX),
            KernelArg::F32(1.5),
            KernelArg::F64(-0.25),
        ];
        let slots = KernelParams::new(&args).slots;
        let sizes: Vec<usize> = slots.iter().map(|s| s.as_bytes().len()).collect();
        assert_eq!(sizes, [8, 4, 4, 8, 8, 4, 8]);
        for (arg, slot) in args.iter().zip(&slots) {
            assert_eq!(slot.as_bytes().len(), arg.size(), "{arg:?}");
        }
    }

    #[test]
    fn bytes_are_the_native_representation() {
        assert_eq!(ArgSlot::new(KernelArg::I32(-2)).as_bytes(), (-2i32).to_ne_bytes());
        assert_eq!(ArgSlot::new(KernelArg::U32(0xdead_beef)).as_bytes(), 0xdead_beefu32.to_ne_bytes());
        assert_eq!(ArgSlot::new(KernelArg::F32(1.5)).as_bytes(), 1.5f32.to_ne_bytes());
        assert_eq!(ArgSlot::new(KernelArg::F64(-0.25)).as_bytes(), (-0.25f64).to_ne_bytes());
        assert_eq!(ArgSlot::new(KernelArg::I64(-3)).as_bytes(), (-3i64).to_ne_bytes());
        assert_eq!(ArgSlot::new(KernelArg::Ptr(0xabc)).as_bytes(), 0xabcu64.to_ne_bytes());
    }

    #[test]
    #[allow(unsafe_code)] // reads a slot back through the pointer the driver would get
    fn params_point_at_aligned_slots() {
        let mut params = KernelParams::new(&[KernelArg::U32(1), KernelArg::F64(2.0), KernelArg::Ptr(3)]);
        let ptrs = params.pointers();
        assert_eq!(ptrs.len(), 3);
        for (p, slot) in ptrs.iter().zip(&params.slots) {
            assert_eq!(*p as usize % 8, 0);
            assert_eq!(*p as usize, slot as *const ArgSlot as usize);
        }
        // SAFETY: each pointer addresses a live slot whose first bytes hold the value.
        let second = unsafe { (ptrs[1] as *const f64).read() };
        assert_eq!(second, 2.0);
        assert!(KernelParams::new(&[]).pointers().is_empty());
    }
}
