//! `xbar lower`: the instructions each barrier operation becomes on a GPU target, from the
//! same compile the lowering tests assert on (`xbarrier-lowering`).

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Args;
use xbarrier_lowering::{Lowering, Op, Target, Variant};

/// Options of `xbar lower`.
#[derive(Debug, Args)]
pub struct LowerArgs {
    /// The target: sm_90, sm_80, or any AMDGPU target ID the AMD compilers know (gfx90a,
    /// gfx1101, gfx11-generic, gfx942:xnack-, ...)
    #[arg(long, default_value = "sm_90")]
    target: String,
    /// Operations to show, comma-separated (all when absent)
    #[arg(long, value_delimiter = ',')]
    op: Vec<String>,
    /// The image variant: default (mbarrier on sm_90), emulated (the portable protocol) or
    /// grouped (the portable protocol with lane groups, as AMD GPUs run it)
    #[arg(long, default_value = "default")]
    variant: String,
    /// Checked device code (runs the protocol on every path)
    #[arg(long)]
    checked: bool,
    /// Print the intermediate code (PTX) instead of the machine instructions
    #[arg(long)]
    ptx: bool,
    /// Print only the fast path of the round-trip operations (arrive_and_wait): the
    /// instructions a non-last arrival whose first poll succeeds issues
    #[arg(long, conflicts_with_all = ["ptx", "completing_wave", "arming_wave", "sleeping_poll"])]
    fast_path: bool,
    /// AMD targets: print only the walk of the wave that completes the phase in a round trip
    /// (its leader's arrival, the completion step's publish where there is one, no poll)
    #[arg(long, conflicts_with_all = ["ptx", "arming_wave", "sleeping_poll"])]
    completing_wave: bool,
    /// AMD targets: print only the walk of the wave whose arrival is its phase's first in a
    /// round trip (its leader's arrival, the arming of the phase, a poll that succeeds)
    #[arg(long, conflicts_with_all = ["ptx", "sleeping_poll"])]
    arming_wave: bool,
    /// AMD targets: print only one poll of a round trip's wait loop at its longest sleep (the
    /// cycle from the poll back to it)
    #[arg(long, conflicts_with = "ptx")]
    sleeping_poll: bool,
    /// List the targets and operations
    #[arg(long)]
    list: bool,
}

fn names<T: Copy, S: AsRef<str>>(all: &[T], name: impl Fn(T) -> S) -> String {
    all.iter().map(|&t| name(t).as_ref().to_owned()).collect::<Vec<_>>().join(", ")
}

fn usage(message: String) -> ExitCode {
    eprintln!("xbar: error: {message}");
    ExitCode::from(2)
}

/// Runs `xbar lower`.
pub fn run(args: &LowerArgs) -> ExitCode {
    if args.list {
        println!(
            "targets: {} (and any other AMDGPU target ID the AMD compilers know)",
            names(&Target::ALL, |t| t.name().to_owned())
        );
        println!("variants: {}", names(&Variant::ALL, Variant::name));
        println!("operations: {}", names(&Op::ALL, Op::name));
        return ExitCode::SUCCESS;
    }
    let Some(target) = Target::from_name(&args.target) else {
        return usage(format!(
            "unknown target `{}`; known: {}, or an AMDGPU target ID such as gfx1101 or gfx11-generic",
            args.target,
            names(&Target::ALL, |t| t.name().to_owned())
        ));
    };
    let Some(variant) = Variant::from_name(&args.variant) else {
        return usage(format!("unknown variant `{}`; known: {}", args.variant, names(&Variant::ALL, Variant::name)));
    };
    let mut ops = Vec::new();
    for name in &args.op {
        match Op::from_name(name) {
            Some(op) => ops.push(op),
            None => return usage(format!("unknown operation `{name}`; known: {}", names(&Op::ALL, Op::name))),
        }
    }
    if ops.is_empty() {
        ops = Op::ALL.to_vec();
    }
    let walk = if args.fast_path {
        Some("--fast-path")
    } else if args.completing_wave {
        Some("--completing-wave")
    } else if args.arming_wave {
        Some("--arming-wave")
    } else if args.sleeping_poll {
        Some("--sleeping-poll")
    } else {
        None
    };
    if let Some(flag) = walk {
        ops.retain(|op| op.is_round_trip());
        if ops.is_empty() {
            let round_trips: Vec<Op> = Op::ALL.into_iter().filter(|op| op.is_round_trip()).collect();
            return usage(format!("{flag} needs a round-trip operation: {}", names(&round_trips, Op::name)));
        }
        if flag != "--fast-path" && !target.is_amd() {
            return usage(format!("{flag} needs an AMD target (the walk follows AMDGPU's exec masks)"));
        }
    }
    let lowering = match Lowering::compile(target, variant, args.checked) {
        Ok(lowering) => lowering,
        Err(error) => {
            eprintln!("xbar: error: cannot lower for {target}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mode = if args.checked { "checked" } else { "unchecked" };
    let mut text = String::new();
    for op in ops {
        let code = lowering.op(op);
        if args.ptx {
            let _ = writeln!(text, "== {op} on {target} {variant} ({mode}): PTX of kernel {}", op.kernel());
            let _ = writeln!(text, "{}\n", code.intermediate);
        } else {
            let count = code.instructions.len();
            let mut fast = match (&code.fast_path, op.is_round_trip()) {
                (Some(path), _) => format!("; fast path {} instructions", path.count()),
                (None, true) => "; no fast path found".to_owned(),
                (None, false) => String::new(),
            };
            if let Some(path) = &code.completer {
                let _ = write!(fast, ", completing wave {}", path.count());
            }
            if let Some(path) = &code.arming {
                let _ = write!(fast, ", arming wave {}", path.count());
            }
            if let Some(path) = &code.sleeping_poll {
                let _ = write!(fast, ", sleeping poll {}", path.count());
            }
            let _ = writeln!(
                text,
                "== {op} on {target} {variant} ({mode}): {count} instructions in kernel {}{fast}",
                op.kernel()
            );
            let chosen = match walk {
                Some("--fast-path") => Some(&code.fast_path),
                Some("--completing-wave") => Some(&code.completer),
                Some("--arming-wave") => Some(&code.arming),
                Some(_) => Some(&code.sleeping_poll),
                None => None,
            };
            let listed = match chosen {
                Some(Some(path)) => &path.instructions,
                Some(None) => continue,
                None => &code.instructions,
            };
            for instruction in listed {
                let _ = writeln!(text, "    {instruction}");
            }
            text.push('\n');
        }
    }
    print!("{text}");
    ExitCode::SUCCESS
}
