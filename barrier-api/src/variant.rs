//! Which lowering of the barrier API a kernel image carries.

use std::fmt;

/// Which of a module's images to load ([`Device::load_variant`](crate::Device::load_variant)).
///
/// Every bundle carries a [`Default`](Variant::Default) image for each backend it was built
/// for, and [`Device::load`](crate::Device::load) loads it: the best lowering the target and
/// the build allow. That is the `mbarrier` hardware for block-scope barriers in shared
/// memory on NVIDIA sm_90 and later in unchecked builds (arrivals, waits, tx-count and bulk
/// copies), and the portable protocol everywhere else: on the host, on AMD GPUs, on older
/// NVIDIA GPUs, and in checked builds (the hardware traps on misuse instead of reporting it).
///
/// Unchecked CUDA builds also carry an [`Emulated`](Variant::Emulated) image: the portable
/// protocol on sm_90 too, the protocol AMD GPUs and the host run, for comparing the two
/// lowerings on one GPU; and a [`Grouped`](Variant::Grouped) image: the same protocol with
/// the lanes of a warp that arrive together grouped behind one leader's atomic, as an AMD
/// wave's lanes always are, so that the code path AMD GPUs take runs on NVIDIA hardware. No
/// other backend has them.
///
/// ```
/// use xbarrier_api::Variant;
/// assert_eq!(Variant::from_name("emulated"), Some(Variant::Emulated));
/// assert_eq!(Variant::default(), Variant::Default);
/// assert_eq!(Variant::Default.to_string(), "default");
/// assert_eq!(Variant::from_name("mbarrier"), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// The best lowering the target and build allow (what [`Device::load`](crate::Device::load) loads).
    #[default]
    Default,
    /// CUDA, unchecked builds: the portable protocol instead of the `mbarrier` hardware.
    Emulated,
    /// CUDA, unchecked builds: the portable protocol with lane groups, AMD's code path (one
    /// atomic per group of lanes that arrive together, every decision made once per group).
    Grouped,
}

impl Variant {
    /// Every variant, [`Default`](Variant::Default) first.
    pub const ALL: [Variant; 3] = [Variant::Default, Variant::Emulated, Variant::Grouped];

    /// The lower-case name used in test names, messages and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Default => "default",
            Variant::Emulated => "emulated",
            Variant::Grouped => "grouped",
        }
    }

    /// The preprocessor definitions a CUDA image of this variant is compiled with
    /// (`hip-src/include/xbarrier/config.hpp` says what each switches).
    ///
    /// ```
    /// use xbarrier_api::Variant;
    /// assert_eq!(Variant::Grouped.cuda_defines(), [("XB_EMULATED", "1"), ("XB_GROUP_LANES", "1")]);
    /// ```
    pub fn cuda_defines(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Variant::Default => &[("XB_EMULATED", "0")],
            Variant::Emulated => &[("XB_EMULATED", "1")],
            Variant::Grouped => &[("XB_EMULATED", "1"), ("XB_GROUP_LANES", "1")],
        }
    }

    /// The variant with that [`name`](Self::name), if any.
    pub fn from_name(name: &str) -> Option<Variant> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The number that tags an image of this variant inside a bundle entry's code.
    pub(crate) fn code(self) -> u32 {
        match self {
            Variant::Default => 0,
            Variant::Emulated => 1,
            Variant::Grouped => 2,
        }
    }

    pub(crate) fn from_code(code: u32) -> Option<Variant> {
        Self::ALL.into_iter().find(|v| v.code() == code)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
