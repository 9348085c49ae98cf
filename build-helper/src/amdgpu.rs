//! AMDGPU targets: parsing target IDs, asking clang which processors it knows, the default
//! list, and the flags each target needs.

use std::fmt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::{fail, BuildError};

/// Specific targets of the default list: the GPUs whose lowering xbarrier tests (CDNA2,
/// CDNA3, RDNA3, RDNA4). A bundle with a specific code object runs that code object on its
/// GPU, so these GPUs get exactly the code the lowering tests checked.
pub const DEFAULT_SPECIFIC: [&str; 4] = ["gfx90a", "gfx942", "gfx1100", "gfx1200"];

/// Specific targets the default list adds when the compiler is clang 22 or later and knows
/// them (CDNA4 and GFX12.5); clang 19 does not.
pub const DEFAULT_CLANG_22: [&str; 2] = ["gfx950", "gfx1250"];

/// Generic targets of the default list: one code object each for every other GPU of RDNA2
/// (gfx1030 to gfx1036), RDNA3 and RDNA3.5 (gfx1101 to gfx1103, gfx1150 and up) and RDNA4
/// (gfx1201). gfx9-generic is left out: it covers Vega (gfx900 to gfx90c) but neither
/// gfx90a nor gfx942, so CDNA2 and CDNA3 need their specific targets anyway.
pub const DEFAULT_GENERIC: [&str; 3] = ["gfx10-3-generic", "gfx11-generic", "gfx12-generic"];

/// Names `-print-supported-cpus` lists that are not GPU processors: LLVM's defaults for a
/// module without one, which `--offload-arch` rejects.
const NOT_PROCESSORS: [&str; 2] = ["generic", "generic-hsa"];

/// One AMDGPU target ID: a processor and optional target features, as `--offload-arch`
/// takes it (`gfx90a`, `gfx11-generic`, `gfx942:sramecc+:xnack-`).
///
/// ```
/// use xbarrier_build::AmdgpuTarget;
///
/// let target = AmdgpuTarget::parse("gfx942:xnack-:sramecc+")?;
/// assert_eq!(target.to_string(), "gfx942:sramecc+:xnack-"); // clang's canonical order
/// assert_eq!(target.processor(), "gfx942");
/// assert!(!target.is_generic());
/// assert!(AmdgpuTarget::parse("gfx11-generic")?.is_generic());
/// # Ok::<(), xbarrier_build::BuildError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AmdgpuTarget {
    processor: String,
    /// Feature name and whether it is on (`+`) or off (`-`), sorted by name.
    features: Vec<(String, bool)>,
}

impl AmdgpuTarget {
    /// Parses a target ID: a processor name, then `:feature+` or `:feature-` for each target
    /// feature (at most once each). Whether the compiler knows the processor is checked by
    /// [`check_amdgpu_targets`]; whether the processor supports a feature, by clang itself.
    pub fn parse(id: &str) -> Result<AmdgpuTarget, BuildError> {
        let syntax = "a target ID is a processor name followed by optional `:feature+` or `:feature-` parts, e.g. `gfx90a`, `gfx11-generic` or `gfx942:sramecc+:xnack-`";
        let mut parts = id.trim().split(':');
        let processor = parts.next().unwrap_or_default();
        if processor.is_empty() || !processor.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return fail(format!("AMDGPU target `{id}`: `{processor}` is not a processor name; {syntax}"));
        }
        let mut features: Vec<(String, bool)> = Vec::new();
        for part in parts {
            let (name, on) = match part.strip_suffix('+') {
                Some(name) => (name, true),
                None => match part.strip_suffix('-') {
                    Some(name) => (name, false),
                    None => return fail(format!("AMDGPU target `{id}`: feature `{part}` has no `+` or `-`; {syntax}")),
                },
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
                return fail(format!("AMDGPU target `{id}`: `{part}` is not a target feature; {syntax}"));
            }
            if features.iter().any(|(n, _)| n == name) {
                return fail(format!("AMDGPU target `{id}`: feature `{name}` appears twice"));
            }
            features.push((name.to_owned(), on));
        }
        // clang names bundle entries and matches `-Xarch_<target>` by the canonical form,
        // whose features are in alphabetical order.
        features.sort();
        Ok(AmdgpuTarget { processor: processor.to_owned(), features })
    }

    /// The processor, without target features (`gfx942` of `gfx942:xnack-`).
    pub fn processor(&self) -> &str {
        &self.processor
    }

    /// Whether this is a generic target (`gfx11-generic`): one code object for a family of
    /// processors, which the runtime picks for a GPU that has no specific code object.
    pub fn is_generic(&self) -> bool {
        self.processor.ends_with("-generic")
    }

    /// The code object version this target needs, when it needs one above the compiler's
    /// default: generic targets exist from code object v6 on, and clang 19 defaults to v5.
    pub fn code_object_version(&self) -> Option<u32> {
        self.is_generic().then_some(6)
    }

    /// The clang arguments that compile for this target: `--offload-arch=<id>`, and for a
    /// generic target `-Xarch_<id> -mcode-object-version=6`. The version goes to this target
    /// alone, so that the bundle's specific code objects keep the compiler's default (v5 for
    /// clang 19, which older HIP runtimes load too). clang 19 warns that v6 "is still in
    /// development" only when `-mcode-object-version=6` applies to the whole compile, so
    /// passing it per target also keeps that warning out of every build (clang 22 makes v6
    /// its default and has no such warning).
    pub fn clang_args(&self) -> Vec<String> {
        let mut args = vec![format!("--offload-arch={self}")];
        if let Some(version) = self.code_object_version() {
            args.push(format!("-Xarch_{self}"));
            args.push(format!("-mcode-object-version={version}"));
        }
        args
    }
}

impl fmt::Display for AmdgpuTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.processor)?;
        for (name, on) in &self.features {
            write!(f, ":{name}{}", if *on { '+' } else { '-' })?;
        }
        Ok(())
    }
}

/// The AMDGPU processors `clang` knows, in the order it lists them, from
/// `clang --target=amdgcn-amd-amdhsa -nogpulib -print-supported-cpus`. This includes
/// generic targets and older alternative names (`tahiti`); it leaves out `generic` and
/// `generic-hsa`, which are not GPUs.
pub fn amdgpu_processors(clang: &Path) -> Result<Vec<String>, BuildError> {
    // -nogpulib: without it clang looks for the ROCm device libraries first and fails.
    let args = ["--target=amdgcn-amd-amdhsa", "-nogpulib", "-print-supported-cpus"];
    let output = Command::new(clang)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .or_else(|e| fail(format!("could not run {} to list its AMDGPU processors: {e}", clang.display())))?;
    // clang 19 and 22 print the list on stderr; read both streams in case another prints it
    // on stdout.
    let text = format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let processors = parse_amdgpu_processors(&text);
    if processors.is_empty() {
        let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no output");
        return fail(format!(
            "`{} {}` listed no AMDGPU processors ({}; it said: {first}); this clang may lack the AMDGPU target.\n  fix: use a clang built with AMDGPU (`bash tools/install-toolchains.sh amd`), or set HIP_CLANG",
            clang.display(),
            args.join(" "),
            output.status
        ));
    }
    Ok(processors)
}

/// The processor names in the output of `clang --target=amdgcn-amd-amdhsa -nogpulib
/// -print-supported-cpus` or `llc -march=amdgcn -mcpu=help`: the indented lines after
/// "Available CPUs for this target:", up to the first blank or unindented line, first word
/// of each (`llc` adds " - Select the gfx90a processor."); without `generic` and
/// `generic-hsa`. Empty when the text has no such list.
pub fn parse_amdgpu_processors(text: &str) -> Vec<String> {
    let mut lines = text.lines().skip_while(|line| !line.trim_start().starts_with("Available CPUs for this target"));
    if lines.next().is_none() {
        return Vec::new();
    }
    let mut names = Vec::new();
    for line in lines {
        if line.trim().is_empty() {
            if names.is_empty() {
                continue;
            }
            break;
        }
        if !line.starts_with(char::is_whitespace) {
            break;
        }
        let Some(name) = line.split_whitespace().next() else { continue };
        let is_name = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if is_name && !NOT_PROCESSORS.contains(&name) && !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// The default targets, given the processors the compiler knows and its major version: the
/// specific [`DEFAULT_SPECIFIC`] targets always, [`DEFAULT_CLANG_22`] with clang 22 or later,
/// and the [`DEFAULT_GENERIC`] targets the compiler knows (clang 19 knows all three). Also
/// returns the default targets left out because the compiler does not know them.
pub fn default_amdgpu_targets(
    processors: &[String],
    clang_major: Option<u32>,
) -> (Vec<AmdgpuTarget>, Vec<&'static str>) {
    let knows = |name: &str| processors.iter().any(|p| p == name);
    let mut chosen: Vec<&str> = DEFAULT_SPECIFIC.to_vec();
    let mut missing = Vec::new();
    if clang_major.is_some_and(|major| major >= 22) {
        for name in DEFAULT_CLANG_22 {
            if knows(name) {
                chosen.push(name);
            } else {
                missing.push(name);
            }
        }
    }
    for name in DEFAULT_GENERIC {
        if knows(name) {
            chosen.push(name);
        } else {
            missing.push(name);
        }
    }
    let targets =
        chosen.into_iter().map(|name| AmdgpuTarget { processor: name.to_owned(), features: Vec::new() }).collect();
    (targets, missing)
}

/// Parses `requested` target IDs (from `from`, named in errors) and checks that the compiler
/// (`clang`, which knows `processors`; `None` when its list could not be read) knows each
/// one's processor; drops repeats. The error for an unknown processor names every processor
/// the compiler knows.
pub fn check_amdgpu_targets<S: AsRef<str>>(
    requested: &[S],
    processors: Option<&[String]>,
    clang: &Path,
    from: &str,
) -> Result<Vec<AmdgpuTarget>, BuildError> {
    let mut targets: Vec<AmdgpuTarget> = Vec::new();
    for id in requested {
        let target = AmdgpuTarget::parse(id.as_ref()).or_else(|e| fail(format!("{from}: {e}")))?;
        if let Some(processors) = processors.filter(|known| !known.contains(&target.processor)) {
            return fail(unknown_target_message(&target, processors, clang, from));
        }
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    if targets.is_empty() {
        return fail(format!("{from} names no AMDGPU target"));
    }
    Ok(targets)
}

fn unknown_target_message(target: &AmdgpuTarget, processors: &[String], clang: &Path, from: &str) -> String {
    let newer = if DEFAULT_CLANG_22.contains(&target.processor()) {
        " (gfx950 and gfx1250 need clang 22: set HIP_CLANG to it, e.g. HIP_CLANG=clang-22)"
    } else {
        ""
    };
    format!(
        "{from}: `{target}` is not an AMDGPU processor {} knows{newer}.\n  it knows: {}\n  fix: name targets from that list (a target ID may add features, e.g. gfx90a:xnack+), or point HIP_CLANG at a clang that knows `{}`",
        clang.display(),
        processors.join(", "),
        target.processor()
    )
}

/// `XBAR_AMDGPU_TARGETS`-style list: target IDs separated by semicolons (or commas), blanks
/// ignored.
pub(crate) fn split_target_list(list: &str) -> Vec<String> {
    list.split([';', ',']).map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What clang 19 prints for `-print-supported-cpus` (shortened), on stderr.
    const CLANG_19: &str = "Debian clang version 19.1.7 (3~deb12u1)
Target: amdgcn-amd-amdhsa
Thread model: posix
InstalledDir: /usr/lib/llvm-19/bin
Available CPUs for this target:

\tbonaire
\tgeneric
\tgeneric-hsa
\tgfx10-3-generic
\tgfx1030
\tgfx11-generic
\tgfx1100
\tgfx12-generic
\tgfx1200
\tgfx9-generic
\tgfx90a
\tgfx942
\ttahiti

Use -mcpu or -mtune to specify the target's processor.
For example, clang --target=aarch64-unknown-linux-gnu -mcpu=cortex-a35
";

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_processor_list_is_read_from_clang_and_llc_output() {
        let want = names(&[
            "bonaire",
            "gfx10-3-generic",
            "gfx1030",
            "gfx11-generic",
            "gfx1100",
            "gfx12-generic",
            "gfx1200",
            "gfx9-generic",
            "gfx90a",
            "gfx942",
            "tahiti",
        ]);
        assert_eq!(parse_amdgpu_processors(CLANG_19), want);
        // stdout first (empty here), then stderr: what amdgpu_processors hands the parser.
        assert_eq!(parse_amdgpu_processors(&format!("\n{CLANG_19}")), want);
        // llc -march=amdgcn -mcpu=help: two spaces, a description, then the feature list.
        let llc = "Available CPUs for this target:\n\n  gfx1100         - Select the gfx1100 processor.\n  gfx90a          - Select the gfx90a processor.\n\nAvailable features for this target:\n\n  xnack - Enable XNACK.\n";
        assert_eq!(parse_amdgpu_processors(llc), names(&["gfx1100", "gfx90a"]));
        assert!(parse_amdgpu_processors("clang: error: unknown target triple 'amdgcn-amd-amdhsa'").is_empty());
        assert!(parse_amdgpu_processors("Available CPUs for this target:\n\n").is_empty());
    }

    #[test]
    fn target_ids_parse_into_canonical_form() {
        let t = AmdgpuTarget::parse(" gfx942:xnack-:sramecc+ ").expect("valid");
        assert_eq!(t.to_string(), "gfx942:sramecc+:xnack-");
        assert_eq!(t.processor(), "gfx942");
        assert_eq!(AmdgpuTarget::parse("gfx90a:xnack+").expect("valid").to_string(), "gfx90a:xnack+");
        for bad in ["", ":xnack+", "gfx90a:xnack", "gfx90a:+", "gfx90a:xnack+:xnack-", "gfx 90a", "gfx90a;gfx942"] {
            let err = AmdgpuTarget::parse(bad).expect_err(bad).to_string();
            assert!(err.contains("AMDGPU target"), "{bad}: {err}");
        }
    }

    #[test]
    fn generic_targets_and_only_they_get_code_object_v6() {
        let generic = AmdgpuTarget::parse("gfx11-generic").expect("valid");
        assert!(generic.is_generic());
        assert_eq!(generic.code_object_version(), Some(6));
        assert_eq!(
            generic.clang_args(),
            ["--offload-arch=gfx11-generic", "-Xarch_gfx11-generic", "-mcode-object-version=6"]
        );
        // -Xarch_ must name the target exactly as clang canonicalizes it, features included.
        let with_feature = AmdgpuTarget::parse("gfx9-generic:xnack-").expect("valid");
        assert_eq!(with_feature.clang_args()[1], "-Xarch_gfx9-generic:xnack-");
        for specific in ["gfx90a", "gfx942:sramecc+:xnack-", "gfx1100", "gfx1200", "gfx950", "gfx1250"] {
            let target = AmdgpuTarget::parse(specific).expect("valid");
            assert!(!target.is_generic(), "{specific}");
            assert_eq!(target.code_object_version(), None, "{specific}");
            assert_eq!(target.clang_args(), [format!("--offload-arch={specific}")]);
        }
    }

    #[test]
    fn the_default_list_depends_on_what_the_compiler_knows() {
        let show = |targets: &[AmdgpuTarget]| targets.iter().map(ToString::to_string).collect::<Vec<_>>();
        let clang_19 = parse_amdgpu_processors(CLANG_19);
        let (targets, missing) = default_amdgpu_targets(&clang_19, Some(19));
        let want = ["gfx90a", "gfx942", "gfx1100", "gfx1200", "gfx10-3-generic", "gfx11-generic", "gfx12-generic"];
        assert_eq!(show(&targets), want);
        assert!(missing.is_empty(), "{missing:?}");

        let mut clang_22 = clang_19.clone();
        clang_22.extend(names(&["gfx950", "gfx1250"]));
        let (targets, _) = default_amdgpu_targets(&clang_22, Some(22));
        assert_eq!(
            show(&targets),
            [
                "gfx90a",
                "gfx942",
                "gfx1100",
                "gfx1200",
                "gfx950",
                "gfx1250",
                "gfx10-3-generic",
                "gfx11-generic",
                "gfx12-generic"
            ]
        );

        // A compiler without generic targets (clang 17) builds the specific ones and says
        // which defaults it lacks.
        let (targets, missing) = default_amdgpu_targets(&names(&["gfx90a", "gfx942", "gfx1100"]), Some(17));
        assert_eq!(show(&targets), ["gfx90a", "gfx942", "gfx1100", "gfx1200"]);
        assert_eq!(missing, DEFAULT_GENERIC);
    }

    #[test]
    fn an_unknown_target_is_an_error_naming_the_known_ones() {
        let known = parse_amdgpu_processors(CLANG_19);
        let clang = Path::new("clang-19");
        let err = check_amdgpu_targets(&["gfx90a", "gfx9000"], Some(&known), clang, "XBAR_AMDGPU_TARGETS")
            .expect_err("gfx9000 is unknown")
            .to_string();
        assert!(err.starts_with("XBAR_AMDGPU_TARGETS: `gfx9000` is not an AMDGPU processor clang-19 knows"), "{err}");
        assert!(err.contains("it knows: bonaire, gfx10-3-generic, gfx1030, "), "{err}");
        assert!(err.contains("fix: "), "{err}");
        // gfx950 with clang 19: say which compiler has it.
        let err = check_amdgpu_targets(&["gfx950"], Some(&known), clang, "XBAR_AMDGPU_TARGETS").expect_err("unknown");
        assert!(err.to_string().contains("need clang 22"), "{err}");
        // Features are checked for syntax; the processor must be known.
        let err =
            check_amdgpu_targets(&["gfx90a:xnack"], Some(&known), clang, "Kernels::amdgpu_targets").expect_err("bad");
        assert!(err.to_string().starts_with("Kernels::amdgpu_targets: AMDGPU target `gfx90a:xnack`"), "{err}");
        // Known targets pass, in canonical form, without repeats.
        let ok = check_amdgpu_targets(
            &["gfx942:xnack-:sramecc+", "gfx11-generic", "gfx942:sramecc+:xnack-"],
            Some(&known),
            clang,
            "XBAR_AMDGPU_TARGETS",
        )
        .expect("known");
        assert_eq!(ok.iter().map(ToString::to_string).collect::<Vec<_>>(), ["gfx942:sramecc+:xnack-", "gfx11-generic"]);
        let empty: [&str; 0] = [];
        assert!(check_amdgpu_targets(&empty, Some(&known), clang, "XBAR_AMDGPU_TARGETS").is_err());
        // Without the compiler's list only the syntax is checked.
        let unchecked = check_amdgpu_targets(&["gfx9000"], None, clang, "XBAR_AMDGPU_TARGETS").expect("unchecked");
        assert_eq!(unchecked[0].to_string(), "gfx9000");
        assert!(check_amdgpu_targets(&["gfx9000:"], None, clang, "XBAR_AMDGPU_TARGETS").is_err());
    }

    #[test]
    fn target_lists_split_on_semicolons_and_commas() {
        assert_eq!(
            split_target_list(" gfx90a; gfx11-generic,gfx942:xnack- ;;"),
            ["gfx90a", "gfx11-generic", "gfx942:xnack-"]
        );
        assert!(split_target_list(" ; ").is_empty());
    }
}
