//! Kernel bundles: one file holding a module's image for each backend it was built for.
//!
//! Layout (little-endian): magic `XBK1`, u32 entry count, then per entry u32 code (backend
//! code in the low 16 bits, [`Variant`] code in the high 16), u64 byte length, and the bytes.
//! The build helper writes it; `Device::load` reads it.

use crate::{BackendKind, Error, Result, Variant};

/// First four bytes of every bundle.
pub const BUNDLE_MAGIC: &[u8; 4] = b"XBK1";

/// A parsed bundle: the module's name and its image per backend and variant.
///
/// The build helper writes bundles and `xbarrier::kernel_bundle!` embeds and parses them;
/// [`Device::load`](crate::Device::load) picks the image of its backend.
///
/// ```
/// use xbarrier_api::{BackendKind, Error, KernelBundle, Variant};
///
/// let bytes = KernelBundle::encode(&[
///     (BackendKind::Host, Variant::Native, b"host image".to_vec()),
///     (BackendKind::Cuda, Variant::Native, b"fatbin".to_vec()),
///     (BackendKind::Cuda, Variant::Emulated, b"fatbin, protocol".to_vec()),
/// ]);
/// let bundle = KernelBundle::parse("my_kernels", Box::leak(bytes.into_boxed_slice()))?;
/// assert_eq!(bundle.backends(), [BackendKind::Host, BackendKind::Cuda]);
/// assert_eq!(bundle.variants(BackendKind::Cuda), [Variant::Native, Variant::Emulated]);
/// assert_eq!(bundle.image(BackendKind::Host)?, b"host image");
/// // Built without the `hip` feature: loading on HIP would fail with ImageMissing.
/// assert!(matches!(bundle.image(BackendKind::Hip), Err(Error::ImageMissing { .. })));
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct KernelBundle {
    name: String,
    images: Vec<(BackendKind, Variant, &'static [u8])>,
}

impl KernelBundle {
    /// Serializes `images` into bundle bytes.
    pub fn encode(images: &[(BackendKind, Variant, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(BUNDLE_MAGIC);
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
    /// assert!(matches!(KernelBundle::parse("k", b"XBK1\x01\0\0\0"), Err(Error::BadBundle(_))), "truncated");
    /// assert!(KernelBundle::parse("k", b"XBK1\0\0\0\0")?.backends().is_empty());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn parse(name: &str, bytes: &'static [u8]) -> Result<KernelBundle> {
        let bad = |what: String| Error::BadBundle(format!("module `{name}`: {what}"));
        let mut rest = bytes.strip_prefix(BUNDLE_MAGIC.as_slice()).ok_or_else(|| bad("missing XBK1 magic".into()))?;
        let mut take = |n: usize| -> Result<&'static [u8]> {
            if rest.len() < n {
                return Err(bad(format!("truncated: wanted {n} more bytes, {} left", rest.len())));
            }
            let (head, tail) = rest.split_at(n);
            rest = tail;
            Ok(head)
        };
        let count = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad("count".into()))?);
        let mut images = Vec::new();
        for _ in 0..count {
            let code = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad("code".into()))?);
            let kind =
                BackendKind::from_code(code & 0xffff).ok_or_else(|| bad(format!("unknown backend code {code}")))?;
            let variant = Variant::from_code(code >> 16).ok_or_else(|| bad(format!("unknown variant code {code}")))?;
            let len = u64::from_le_bytes(take(8)?.try_into().map_err(|_| bad("length".into()))?);
            let len = usize::try_from(len).map_err(|_| bad(format!("image of {len} bytes")))?;
            images.push((kind, variant, take(len)?));
        }
        if !rest.is_empty() {
            return Err(bad(format!("{} trailing bytes", rest.len())));
        }
        Ok(KernelBundle { name: name.to_owned(), images })
    }

    /// An 8-byte aligned copy of `image` with at least one trailing zero byte, for loaders
    /// that read an image in place (ELF, fatbin) or as NUL-terminated text (PTX), which
    /// `include_bytes!` data need not satisfy.
    ///
    /// ```
    /// let words = xbarrier_api::KernelBundle::aligned_copy(b"12345678");
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

    /// The module's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The backends this module was built for.
    pub fn backends(&self) -> Vec<BackendKind> {
        let mut kinds: Vec<BackendKind> = self.images.iter().map(|(k, _, _)| *k).collect();
        kinds.dedup();
        kinds
    }

    /// The variants this module carries for `kind`, native first.
    pub fn variants(&self, kind: BackendKind) -> Vec<Variant> {
        let mut variants: Vec<Variant> =
            self.images.iter().filter(|(k, _, _)| *k == kind).map(|(_, v, _)| *v).collect();
        variants.sort();
        variants
    }

    /// The native image for `kind`, or `Err(ImageMissing)`.
    pub fn image(&self, kind: BackendKind) -> Result<&'static [u8]> {
        self.image_of(kind, Variant::Native)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let bytes: &'static [u8] = Box::leak(
            KernelBundle::encode(&[
                (BackendKind::Host, Variant::Native, vec![1, 2, 3]),
                (BackendKind::Cuda, Variant::Native, vec![]),
                (BackendKind::Cuda, Variant::Emulated, vec![4]),
            ])
            .into_boxed_slice(),
        );
        let b = KernelBundle::parse("m", bytes).expect("parses");
        assert_eq!(b.image(BackendKind::Host).expect("host"), &[1, 2, 3]);
        assert_eq!(b.image(BackendKind::Cuda).expect("cuda"), &[] as &[u8]);
        assert_eq!(b.image_of(BackendKind::Cuda, Variant::Emulated).expect("cuda emulated"), &[4]);
        assert_eq!(b.backends(), vec![BackendKind::Host, BackendKind::Cuda]);
        assert_eq!(b.variants(BackendKind::Cuda), vec![Variant::Native, Variant::Emulated]);
        assert_eq!(b.variants(BackendKind::Host), vec![Variant::Native]);
        let missing = b.image(BackendKind::Hip).expect_err("no hip image");
        assert!(missing.to_string().contains("built for: host native, cuda native, cuda emulated"), "{missing}");
        let missing = b.image_of(BackendKind::Host, Variant::Emulated).expect_err("no host emulated image");
        assert!(missing.to_string().contains("no host emulated image"), "{missing}");
        assert!(KernelBundle::parse("m", b"XBK0").is_err());
        let copy = KernelBundle::aligned_copy(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let copied: Vec<u8> = copy.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(&copied[..10], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 0]);
        assert!(KernelBundle::parse("m", &bytes[..bytes.len() - 1]).is_err());
    }
}
