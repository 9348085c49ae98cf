//! The benchmark kernels (hip-src/kernels/bench), loaded in each variant the build carries,
//! and the small device buffers every benchmark uses to hear back from them.

use xbarrier::{Backend, BackendKind, Buffer, Device, Module, Result, Variant};

/// The bench bundle loaded on one device.
pub(crate) struct Images<B: Backend> {
    /// The native image: xb barriers on the mbarrier hardware on sm_90 (release builds).
    pub native: Module<B>,
    /// The emulated image (the portable protocol on CUDA); `Err` says why there is none.
    pub emulated: std::result::Result<Module<B>, String>,
    /// The grouped image (the portable protocol with lane groups, AMD's code path, on CUDA);
    /// `Err` says why there is none.
    pub grouped: std::result::Result<Module<B>, String>,
    /// xb's round trips as checked device code, in release builds (a checked build's own rows
    /// are checked code); `Err` says why it did not load.
    pub checked: Option<std::result::Result<Module<B>, String>>,
}

impl<B: Backend> Images<B> {
    /// Loads the native image and, where the bundle has them, the emulated and grouped images.
    pub fn load(device: &Device<B>) -> Result<Images<B>> {
        let bundle = crate::bundle()?;
        let native = device.load(&bundle)?;
        let variant = |variant| -> Result<std::result::Result<Module<B>, String>> {
            Ok(if bundle.variants(B::KIND).contains(&variant) {
                Ok(device.load_variant(&bundle, variant)?)
            } else if B::KIND == BackendKind::Cuda {
                Err("checked builds carry only the native image (it runs the protocol): build with --release".into())
            } else {
                Err(format!("the {} backend has one image, the protocol", B::KIND))
            })
        };
        let emulated = variant(Variant::Emulated)?;
        let grouped = variant(Variant::Grouped)?;
        let checked = (!xbarrier::CHECKED)
            .then(|| crate::checked_bundle().and_then(|bundle| device.load(&bundle)).map_err(|e| e.to_string()));
        Ok(Images { native, emulated, grouped, checked })
    }
}

/// A kernel's report words: `[0]` counts wrong results, `[1]` is set when the image lacks
/// the kernel's instructions (raw PTX below sm_90).
pub(crate) struct DeviceReport<B: Backend> {
    pub words: Buffer<B, u64>,
}

/// What a [`DeviceReport`] said.
pub(crate) enum Heard {
    Clean,
    Wrong(u64),
    Unsupported,
}

impl<B: Backend> DeviceReport<B> {
    pub fn new(device: &Device<B>) -> Result<DeviceReport<B>> {
        Ok(DeviceReport { words: device.alloc(2)? })
    }
    /// Zeroes the words (before a checking launch).
    pub fn clear(&mut self) -> Result<()> {
        self.words.write(&[0, 0])
    }
    /// Reads the words (after the stream was synchronized).
    pub fn read(&self) -> Result<Heard> {
        let mut words = [0u64; 2];
        self.words.read_at(0, &mut words)?;
        Ok(match words {
            [_, unsupported] if unsupported != 0 => Heard::Unsupported,
            [0, _] => Heard::Clean,
            [wrong, _] => Heard::Wrong(wrong),
        })
    }
}

/// The `XY` of a CUDA `sm_XY` architecture; `None` for other backends.
pub(crate) fn cuda_arch(arch: &str) -> Option<u32> {
    arch.strip_prefix("sm_").and_then(|n| n.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse().ok())
}

/// Why the raw-PTX baselines cannot run on this device, if they cannot.
pub(crate) fn raw_ptx_missing(kind: BackendKind, arch: &str) -> Option<String> {
    match (kind, cuda_arch(arch)) {
        (BackendKind::Cuda, Some(sm)) if sm >= 90 => None,
        (BackendKind::Cuda, _) => Some(format!("needs sm_90 (mbarrier.try_wait, cp.async.bulk); this is {arch}")),
        (kind, _) => Some(format!("a CUDA baseline; the {kind} backend has no such kernel")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures() {
        assert_eq!(cuda_arch("sm_90"), Some(90));
        assert_eq!(cuda_arch("sm_90a"), Some(90));
        assert_eq!(cuda_arch("sm_100"), Some(100));
        assert_eq!(cuda_arch("host-x86_64"), None);
        assert!(raw_ptx_missing(BackendKind::Cuda, "sm_90").is_none());
        assert!(raw_ptx_missing(BackendKind::Cuda, "sm_80").is_some_and(|r| r.contains("sm_80")));
        assert!(raw_ptx_missing(BackendKind::Host, "host-x86_64").is_some());
    }
}
