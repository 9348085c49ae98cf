//! Kernel bundles: one file holding a module's image for each backend it was built for.
//!
//! Layout (little-endian): magic `XBK2`; u32 flags (bit 0: the device code is checked; the
//! other bits are zero); u32 entry count; then per entry a u32 code (backend code in the low
//! 16 bits, [`Variant`] code in the high 16), a u64 byte length, and the bytes. The build
//! helper writes it; `Device::load` reads it.

use crate::{BackendKind, Error, Result, Variant};

/// First four bytes of every bundle.
pub const BUNDLE_MAGIC: &[u8; 4] = b"XBK2";

/// The magic of the format before the flags word; refused with a message saying to rebuild.
const OLD_MAGIC: &[u8; 4] = b"XBK1";

/// Flags bit: the device code was compiled checked (`XB_CHECKED=1`).
const FLAG_CHECKED: u32 = 1;

/// A parsed bundle: the module's name, whether its device code is checked, and its image
/// per backend and variant.
///
/// The build helper writes bundles and `xbarrier::kernel_bundle!` embeds and parses them;
/// [`Device::load`](crate::Device::load) picks the image of its backend.
///
/// ```
/// use xbarrier_api::{BackendKind, Error, KernelBundle, Variant};
///
/// let bytes = KernelBundle::encode(false, &[
///     (BackendKind::Host, Variant::Default, b"host image".to_vec()),
///     (BackendKind::Cuda, Variant::Default, b"fatbin".to_vec()),
///     (BackendKind::Cuda, Variant::Emulated, b"fatbin, protocol".to_vec()),
/// ]);
/// let bundle = KernelBundle::parse("my_kernels", Box::leak(bytes.into_boxed_slice()))?;
/// assert!(!bundle.checked(), "release device code: misuse is undefined behaviour");
/// assert_eq!(bundle.backends(), [BackendKind::Host, BackendKind::Cuda]);
/// assert_eq!(bundle.variants(BackendKind::Cuda), [Variant::Default, Variant::Emulated]);
/// assert_eq!(bundle.image(BackendKind::Host)?, b"host image");
/// // Built without the `hip` feature: loading on HIP would fail with ImageMissing.
/// assert!(matches!(bundle.image(BackendKind::Hip), Err(Error::ImageMissing { .. })));
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct KernelBundle {
    name: String,
    checked: bool,
    images: Vec<(BackendKind, Variant, &'static [u8])>,
}

impl KernelBundle {
    /// Serializes `images` into bundle bytes; `checked` records whether their device code was
    /// compiled checked (misuse reported as faults), which [`checked`](Self::checked) and
    /// [`Module::checked`](crate::Module::checked) report back.
    pub fn encode(checked: bool, images: &[(BackendKind, Variant, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(BUNDLE_MAGIC);
        out.extend_from_slice(&(if checked { FLAG_CHECKED } else { 0 }).to_le_bytes());
        out.extend_from_slice(&(images.len() as u32).to_le_bytes());
        for (kind, variant, bytes) in images {
            out.extend_from_slice(&(kind.code() | variant.code() << 16).to_le_bytes());
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        out
    }

    /// Parses bundle bytes embedded in the program (`include_bytes!`); [`Error::BadBundle`]
    /// when they are not a well-formed bundle.
    ///
    /// ```
    /// use xbarrier_api::{Error, KernelBundle};
    /// assert!(matches!(KernelBundle::parse("k", b"ELF..."), Err(Error::BadBundle(_))));
    /// assert!(matches!(KernelBundle::parse("k", b"XBK2\0\0\0\0\x01\0\0\0"), Err(Error::BadBundle(_))), "truncated");
    /// assert!(matches!(KernelBundle::parse("k", b"XBK2\x80\0\0\0\0\0\0\0"), Err(Error::BadBundle(_))), "unknown flag");
    /// let empty = KernelBundle::parse("k", b"XBK2\x01\0\0\0\0\0\0\0")?;
    /// assert!(empty.backends().is_empty() && empty.checked());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn parse(name: &str, bytes: &'static [u8]) -> Result<KernelBundle> {
        let bad = |what: String| Error::BadBundle(format!("module `{name}`: {what}"));
        if bytes.starts_with(OLD_MAGIC) {
            return Err(bad(
                "an XBK1 bundle from an older xbarrier-build, which does not record whether its device code is checked; rebuild it"
                    .into(),
            ));
        }
        let mut rest = bytes.strip_prefix(BUNDLE_MAGIC.as_slice()).ok_or_else(|| bad("missing XBK2 magic".into()))?;
        let mut take = |n: usize| -> Result<&'static [u8]> {
            if rest.len() < n {
                return Err(bad(format!("truncated: wanted {n} more bytes, {} left", rest.len())));
            }
            let (head, tail) = rest.split_at(n);
            rest = tail;
            Ok(head)
        };
        let le32 = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let flags = le32(take(4)?);
        if flags & !FLAG_CHECKED != 0 {
            return Err(bad(format!("unknown flags {flags:#x} (written by a newer xbarrier-build?)")));
        }
        let count = le32(take(4)?);
        let mut images = Vec::new();
        for _ in 0..count {
            let code = le32(take(4)?);
            let kind =
                BackendKind::from_code(code & 0xffff).ok_or_else(|| bad(format!("unknown backend code {code}")))?;
            let variant = Variant::from_code(code >> 16).ok_or_else(|| bad(format!("unknown variant code {code}")))?;
            let len = take(8)?;
            let len = u64::from_le_bytes(std::array::from_fn(|i| len[i]));
            let len = usize::try_from(len).map_err(|_| bad(format!("image of {len} bytes")))?;
            images.push((kind, variant, take(len)?));
        }
        if !rest.is_empty() {
            return Err(bad(format!("{} trailing bytes", rest.len())));
        }
        Ok(KernelBundle { name: name.to_owned(), checked: flags & FLAG_CHECKED != 0, images })
    }

    /// The module's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the device code is checked: barrier misuse and deadlocks are reported as
    /// [`Error::Fault`] (debug builds and the `checked` feature); otherwise misuse is
    /// undefined behaviour, as in CUDA. The build helper records it in the bundle.
    pub fn checked(&self) -> bool {
        self.checked
    }

    /// The backends this module was built for.
    pub fn backends(&self) -> Vec<BackendKind> {
        let mut kinds: Vec<BackendKind> = self.images.iter().map(|(k, _, _)| *k).collect();
        kinds.dedup();
        kinds
    }

    /// The variants this module carries for `kind`, [`Variant::Default`] first.
    pub fn variants(&self, kind: BackendKind) -> Vec<Variant> {
        let mut variants: Vec<Variant> =
            self.images.iter().filter(|(k, _, _)| *k == kind).map(|(_, v, _)| *v).collect();
        variants.sort();
        variants
    }

    /// The [`Variant::Default`] image for `kind`, or `Err(ImageMissing)`.
    pub fn image(&self, kind: BackendKind) -> Result<&'static [u8]> {
        self.image_of(kind, Variant::Default)
    }

    /// The image for `kind` in `variant`, or `Err(ImageMissing)`.
    pub fn image_of(&self, kind: BackendKind, variant: Variant) -> Result<&'static [u8]> {
        self.images.iter().find(|(k, v, _)| *k == kind && *v == variant).map(|(_, _, b)| *b).ok_or_else(|| {
            Error::ImageMissing {
                module: self.name.clone(),
                backend: kind,
                variant,
                available: self.images.iter().map(|(k, v, _)| format!("{k} {v}")).collect::<Vec<_>>().join(", "),
            }
        })
    }
}

/// An 8-byte aligned copy of `image` with at least one trailing zero byte, for loaders that
/// read an image in place (ELF, fatbin) or as NUL-terminated text (PTX), which
/// `include_bytes!` data need not satisfy.
///
/// ```
/// let words = xbarrier_api::backend::aligned_copy(b"12345678");
/// assert_eq!(words.len(), 2, "8 bytes and the terminating zero");
/// assert_eq!(words[0].to_ne_bytes(), *b"12345678");
/// assert_eq!(words[1], 0);
/// ```
pub fn aligned_copy(image: &[u8]) -> Vec<u64> {
    let mut words = vec![0u64; image.len() / 8 + 1];
    for (word, chunk) in words.iter_mut().zip(image.chunks(8)) {
        let mut bytes = [0u8; 8];
        bytes[..chunk.len()].copy_from_slice(chunk);
        *word = u64::from_ne_bytes(bytes);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leak(bytes: Vec<u8>) -> &'static [u8] {
        Box::leak(bytes.into_boxed_slice())
    }

    #[test]
    fn round_trip_and_errors() {
        let bytes = leak(KernelBundle::encode(
            true,
            &[
                (BackendKind::Host, Variant::Default, vec![1, 2, 3]),
                (BackendKind::Cuda, Variant::Default, vec![]),
                (BackendKind::Cuda, Variant::Emulated, vec![4]),
            ],
        ));
        let b = KernelBundle::parse("m", bytes).expect("parses");
        assert!(b.checked());
        assert_eq!(b.image(BackendKind::Host).expect("host"), &[1, 2, 3]);
        assert_eq!(b.image(BackendKind::Cuda).expect("cuda"), &[] as &[u8]);
        assert_eq!(b.image_of(BackendKind::Cuda, Variant::Emulated).expect("cuda emulated"), &[4]);
        assert_eq!(b.backends(), vec![BackendKind::Host, BackendKind::Cuda]);
        assert_eq!(b.variants(BackendKind::Cuda), vec![Variant::Default, Variant::Emulated]);
        assert_eq!(b.variants(BackendKind::Host), vec![Variant::Default]);
        let missing = b.image(BackendKind::Hip).expect_err("no hip image");
        assert!(missing.to_string().contains("built for: host default, cuda default, cuda emulated"), "{missing}");
        let missing = b.image_of(BackendKind::Host, Variant::Emulated).expect_err("no host emulated image");
        assert!(missing.to_string().contains("no host emulated image"), "{missing}");
        assert!(KernelBundle::parse("m", &bytes[..bytes.len() - 1]).is_err());
        let unchecked = KernelBundle::parse("m", leak(KernelBundle::encode(false, &[]))).expect("parses");
        assert!(!unchecked.checked());
    }

    #[test]
    fn malformed_bundles_say_what_is_wrong() {
        let error = |bytes: &'static [u8]| match KernelBundle::parse("m", bytes) {
            Err(Error::BadBundle(text)) => text,
            other => panic!("expected BadBundle, got {other:?}"),
        };
        assert!(error(b"XBK0").contains("missing XBK2 magic"));
        assert!(error(b"XBK1\0\0\0\0").contains("older xbarrier-build"));
        assert!(error(b"XBK2\x02\0\0\0\0\0\0\0").contains("unknown flags 0x2"));
        assert!(error(b"XBK2\0\0\0\0\x01\0\0\0\x09\0\0\0").contains("unknown backend code 9"));
        assert!(error(b"XBK2\0\0\0\0\0\0\0\0!").contains("1 trailing bytes"));
        assert!(error(b"XBK2\0\0").contains("truncated"));
    }

    #[test]
    fn aligned_copies_end_in_a_zero_byte() {
        let copy = aligned_copy(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let copied: Vec<u8> = copy.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(&copied[..10], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 0]);
        for len in [0usize, 1, 7, 8, 9, 100] {
            let image: Vec<u8> = (0..len).map(|i| i as u8 | 1).collect();
            let bytes: Vec<u8> = aligned_copy(&image).iter().flat_map(|w| w.to_ne_bytes()).collect();
            assert!(bytes.len() > len);
            assert_eq!(&bytes[..len], &image[..]);
            assert_eq!(bytes[len], 0);
        }
    }
}
