//! Memory-model checks on AMDGPU listings: does the compiled code of a message-passing kernel
//! (`hip-src/kernels/lowering/memory_model.cpp`) carry the instructions a release and an
//! acquire need at the barrier's scope on every path?
//!
//! The AMDGPU memory model (LLVM's AMDGPUUsage, "Memory Model" code-sequence tables) makes
//! ordering the compiler's job: an ordered atomic or fence becomes waits on the memory
//! counters and cache writebacks before the releasing instruction, and cache invalidations
//! after the acquiring one, per target and scope. A missing wait is invisible to every test
//! that runs on one CU, so this module reads the listing instead.
//!
//! The listing becomes a control-flow graph (`s_branch`, `s_cbranch_*`, `s_endpgm`) over its
//! instructions; each instruction is classified by what it touches. The kernels keep their
//! data 32-bit (or 128-bit, a copy's) and the barrier word 64-bit, so:
//! - a *data store* / *data load* is a vector-memory or LDS store / load that is not 64-bit
//!   (a kernel keeps other 64-bit values, such as pointers, out of memory);
//! - a *synchronizing write* is a 64-bit atomic or store (the word: arrivals, tx updates,
//!   the publish); a *synchronizing read* is a 64-bit atomic with return or a 64-bit load
//!   (the word: arrival results, polls).
//!
//! Three analyses over the graph then find:
//! 1. release gaps: a path from a data store to a synchronizing write that misses one of the
//!    release instructions after the store;
//! 2. acquire gaps: a path from a synchronizing read to a data load that misses one of the
//!    acquire instructions after the read;
//! 3. order: a synchronizing write that no path reaches after a data store (the store sunk
//!    below the barrier), and a data load that no path reaches after a synchronizing read
//!    (the load hoisted above it), for kernels whose data accesses all sit on one side of
//!    the barrier.
//!
//! 1 and 2 first run as must-analyses over the bare graph, which also follows paths no wave
//! takes (a block that `s_cbranch_execz` skips only when no lane is active looks skippable).
//! Each gap they find is then searched for along paths a wave can take, following one lane
//! through the exec masks (`fast_path/exec_mask.rs`); it stands only if such a path exists,
//! and is reported with it. 3 asks for one path only, so that it errs on no side.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use crate::fast_path::exec_mask::{Lane, Outcome};
use crate::LowerError;

/// What one instruction does, as far as the checks care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A store of data (not the barrier word).
    DataStore,
    /// A load of data.
    DataLoad,
    /// An atomic on the barrier word that returns its old value: writes and reads it.
    SyncReadWrite,
    /// A write of the barrier word without a result (a store or an atomic without return).
    SyncWrite,
    /// A load of the barrier word (a poll).
    SyncRead,
    /// Anything else.
    Other,
}

impl Access {
    fn writes_sync(self) -> bool {
        matches!(self, Access::SyncReadWrite | Access::SyncWrite)
    }
    fn reads_sync(self) -> bool {
        matches!(self, Access::SyncReadWrite | Access::SyncRead)
    }
}

/// Classifies an AMDGPU instruction (gfx9, gfx10, gfx11 and gfx12 spellings).
pub fn classify(instruction: &str) -> Access {
    let mnemonic = instruction.split_whitespace().next().unwrap_or("");
    let memory = ["ds_", "global_", "flat_", "buffer_", "scratch_"].iter().any(|p| mnemonic.starts_with(p));
    // Cache maintenance (buffer_gl0_inv, buffer_wbl2, global_inv, global_wb) is not an access.
    let cache = ["_inv", "_wb", "wbinvl1", "invl2", "wbl2"].iter().any(|s| mnemonic.contains(s))
        && !mnemonic.contains("load")
        && !mnemonic.contains("store");
    if !memory || cache || mnemonic.starts_with("scratch_") {
        return Access::Other;
    }
    let wide = ["_b64", "_u64", "_i64", "_x2", "dwordx2", "_f64"].iter().any(|s| mnemonic.ends_with(s))
        || mnemonic.contains("_rtn_b64")
        || mnemonic.contains("_rtn_u64");
    let atomic = mnemonic.contains("atomic") || is_lds_atomic(mnemonic);
    if atomic {
        if !wide {
            return Access::Other;
        }
        // LDS atomics spell their result `_rtn_`; global and flat ones return with glc/sc0,
        // or on gfx12 with th:TH_ATOMIC_RETURN.
        let returns = mnemonic.contains("_rtn_")
            || instruction.contains(" glc")
            || instruction.contains(" sc0")
            || instruction.contains("TH_ATOMIC_RETURN");
        return if returns { Access::SyncReadWrite } else { Access::SyncWrite };
    }
    let store = mnemonic.contains("store") || mnemonic.contains("write");
    let load = mnemonic.contains("load") || mnemonic.contains("read");
    // A 32-bit load with a coherence modifier is an atomic load (checked builds poll their
    // fault slot so), not data: a plain data load never carries one.
    let coherent = [" glc", " sc0", " sc1", " dlc", "scope:SCOPE_", " nt"].iter().any(|m| instruction.contains(m));
    if load && !store && !wide && coherent && !mnemonic.starts_with("ds_") {
        return Access::Other;
    }
    match (store, load, wide) {
        (true, _, true) => Access::SyncWrite,
        (true, _, false) => Access::DataStore,
        (false, true, true) => Access::SyncRead,
        (false, true, false) => Access::DataLoad,
        _ => Access::Other,
    }
}

/// LDS atomics other than plain reads and writes (`ds_add_rtn_u64`, `ds_cmpstore_rtn_b64`).
fn is_lds_atomic(mnemonic: &str) -> bool {
    const RMW: &str =
        "add sub rsub inc dec min max and or xor mskor wrxchg storexchg cmpst cmpstore cmpswap condxchg32";
    let stem = mnemonic.strip_prefix("ds_").and_then(|rest| rest.split('_').next());
    stem.is_some_and(|stem| RMW.split_whitespace().any(|op| op == stem))
}

/// Whether `instruction` is the required instruction `want`: the same text, or a wait that
/// includes the wanted counter's zero among others: `s_waitcnt vmcnt(0) lgkmcnt(0)` for
/// `s_waitcnt vmcnt(0)` (gfx9-gfx11), `s_wait_storecnt_dscnt 0x0` for `s_wait_storecnt 0x0`
/// (gfx12).
fn satisfies(instruction: &str, want: &str) -> bool {
    if instruction.starts_with(want) {
        return true;
    }
    if let Some(counter) = want.strip_prefix("s_waitcnt ").filter(|c| !c.contains(' ')) {
        return instruction.starts_with("s_waitcnt ") && instruction.split_whitespace().skip(1).any(|c| c == counter);
    }
    let counters = |wait: &str| -> Option<(Vec<String>, String)> {
        let (mnemonic, operand) = wait.split_once(' ')?;
        let names = mnemonic.strip_prefix("s_wait_")?.split('_').map(str::to_owned).collect();
        Some((names, operand.trim().to_owned()))
    };
    match (counters(want), counters(instruction)) {
        (Some((wanted, zero)), Some((names, operand))) => {
            operand == zero && wanted.len() == 1 && names.iter().any(|n| *n == wanted[0])
        }
        _ => false,
    }
}

/// What a kernel must show.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    /// Instructions that must follow every data store before any synchronizing write.
    pub release: Vec<&'static str>,
    /// Instructions that must follow every synchronizing read before any data load.
    pub acquire: Vec<&'static str>,
    /// Whether every data store precedes the first synchronizing write, and every data load
    /// follows a synchronizing read (false for kernels that also move data before arriving).
    pub one_sided: bool,
}

/// A place where the listing breaks a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    /// Which check found it.
    pub kind: GapKind,
    /// The instruction where it shows (the synchronizing write, or the data load).
    pub at: String,
    /// The required instructions some path lacks (empty for order gaps).
    pub missing: Vec<&'static str>,
    /// For release and acquire gaps: a shortest such path, from the event (the data store,
    /// or the barrier read) to `at`, as listing lines.
    pub path: Vec<String>,
}

/// The kinds of [`Gap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GapKind {
    /// A data store reaches a synchronizing write without the release instructions.
    Release,
    /// A synchronizing read reaches a data load without the acquire instructions.
    Acquire,
    /// A synchronizing write that no path reaches after a data store.
    StoreAfterRelease,
    /// A data load that no path reaches after a synchronizing read.
    LoadBeforeAcquire,
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.describe(f)?;
        if !self.path.is_empty() {
            write!(f, "\n    path:\n      {}", self.path.join("\n      "))?;
        }
        Ok(())
    }
}

impl Gap {
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            GapKind::Release => write!(f, "release gap: a data store reaches `{}` without {:?}", self.at, self.missing),
            GapKind::Acquire => {
                write!(f, "acquire gap: `{}` loads data without {:?} after the barrier read", self.at, self.missing)
            }
            GapKind::StoreAfterRelease => write!(f, "order: `{}` releases before any data store", self.at),
            GapKind::LoadBeforeAcquire => write!(f, "order: `{}` loads data before any barrier read", self.at),
        }
    }
}

/// The instructions of a function listing and each one's successors, with the way the
/// instruction went to reach each.
struct Graph {
    instructions: Vec<String>,
    next: Vec<Vec<(usize, Outcome)>>,
}

fn graph(function_asm: &str) -> Result<Graph, String> {
    let mut instructions = Vec::new();
    let mut labels = HashMap::new();
    for line in function_asm.lines() {
        let code = line.split(';').next().unwrap_or("").trim();
        if let Some(label) = code.strip_suffix(':') {
            labels.insert(label.to_owned(), instructions.len());
        } else if !code.is_empty() && !code.starts_with('.') {
            instructions.push(code.to_owned());
        }
    }
    let target = |label: &str| {
        labels.get(label).copied().filter(|&i| i < instructions.len()).ok_or_else(|| format!("no label {label}"))
    };
    let mut next = Vec::with_capacity(instructions.len());
    for (i, instruction) in instructions.iter().enumerate() {
        let mnemonic = instruction.split_whitespace().next().unwrap_or("");
        let label = instruction.split_whitespace().last().unwrap_or("");
        let fall = (i + 1 < instructions.len()).then_some(i + 1);
        let successors: Vec<(usize, Outcome)> = if mnemonic == "s_branch" {
            vec![(target(label)?, Outcome::Next)]
        } else if mnemonic.starts_with("s_cbranch_") {
            std::iter::once((target(label)?, Outcome::Taken)).chain(fall.map(|j| (j, Outcome::NotTaken))).collect()
        } else if mnemonic.starts_with("s_endpgm") {
            vec![]
        } else if mnemonic.starts_with("s_setpc") {
            return Err(format!("indirect control flow (`{instruction}`) is not followed"));
        } else {
            // A call (`s_swappc`, the checked builds' fault report) returns to the next line.
            fall.map(|j| (j, Outcome::Next)).into_iter().collect()
        };
        next.push(successors);
    }
    if instructions.is_empty() {
        return Err("the listing has no instructions".into());
    }
    Ok(Graph { instructions, next })
}

/// A forward must-analysis over `graph`: `transfer` maps the state before an instruction to
/// the state after it, `join` merges the states of two paths; iterates to a fixpoint.
fn fixpoint<S: Clone + PartialEq>(
    graph: &Graph,
    entry: S,
    transfer: impl Fn(&S, &str) -> S,
    join: impl Fn(&S, &S) -> S,
) -> Vec<Option<S>> {
    let mut before: Vec<Option<S>> = vec![None; graph.instructions.len()];
    before[0] = Some(entry);
    let mut work = vec![0usize];
    while let Some(i) = work.pop() {
        let Some(state) = before[i].clone() else { continue };
        let after = transfer(&state, &graph.instructions[i]);
        for &(j, _) in &graph.next[i] {
            let merged = match &before[j] {
                None => after.clone(),
                Some(old) => join(old, &after),
            };
            if before[j].as_ref() != Some(&merged) {
                before[j] = Some(merged);
                work.push(j);
            }
        }
    }
    before
}

/// Since the last event (a data store, or a synchronizing read), which of the required
/// instructions have followed it on every path: `None` while no event happened.
type Since = Option<u32>;

fn join_since(a: &Since, b: &Since) -> Since {
    match (a, b) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => Some(*x),
        (Some(x), Some(y)) => Some(x & y),
    }
}

fn transfer_since(state: &Since, instruction: &str, required: &[&str], event: bool) -> Since {
    if event {
        return Some(0);
    }
    let mut bits = (*state)?;
    for (k, want) in required.iter().enumerate() {
        if satisfies(instruction, want) {
            bits |= 1 << k;
        }
    }
    Some(bits)
}

fn missing(bits: u32, required: &[&'static str]) -> Vec<&'static str> {
    required.iter().enumerate().filter(|(k, _)| bits & (1 << k) == 0).map(|(_, w)| *w).collect()
}

/// Where the search over paths a wave can take gives up (a listing whose mask states
/// multiply without end); the gaps of the must-analysis then stand as found.
const MAX_STATES: usize = 1 << 21;

/// The gaps of one rule on paths a wave can take: one lane is followed through the exec
/// masks (`fast_path/exec_mask.rs`: `s_cbranch_execz` is taken only when the lane is off),
/// from the kernel's entry. An event (a data store, or a barrier read) counts when the lane
/// is active; the required instructions count whenever the wave issues them (waits and cache
/// operations act for the whole wave); a check point (a barrier write, or a data load) with
/// the lane active and a required instruction missing since the last event is a gap. Returns
/// each gap's instruction with a shortest path to it from its event, or `None` when the
/// search gave up.
fn feasible_gaps(
    graph: &Graph,
    required: &[&str],
    event: impl Fn(&str) -> bool,
    checkpoint: impl Fn(&str) -> bool,
) -> Option<HashMap<usize, Vec<String>>> {
    use std::collections::VecDeque;
    type State = (usize, Since, Lane);
    let full: u32 = if required.is_empty() { 0 } else { (1u32 << required.len()) - 1 };
    let start: State = (0, None, Lane::entry());
    let mut previous: HashMap<State, Option<State>> = HashMap::from([(start.clone(), None)]);
    let mut queue = VecDeque::from([start]);
    let mut found: HashMap<usize, Vec<String>> = HashMap::new();
    while let Some(state) = queue.pop_front() {
        let (n, since, lane) = state.clone();
        let instruction = graph.instructions[n].as_str();
        let active = lane.active() != Some(false);
        if let (Some(bits), true, true) = (since, active, checkpoint(instruction)) {
            if bits != full && !found.contains_key(&n) {
                // The path back to the event that started this window.
                let mut path = vec![instruction.to_owned()];
                let mut child = state.clone();
                while let Some(parent) = previous[&child].clone() {
                    path.push(graph.instructions[parent.0].clone());
                    if child.1 == Some(0) && event(&graph.instructions[parent.0]) {
                        break;
                    }
                    child = parent;
                }
                path.reverse();
                found.insert(n, path);
            }
        }
        let after =
            if active && event(instruction) { Some(0) } else { transfer_since(&since, instruction, required, false) };
        for &(j, outcome) in &graph.next[n] {
            for next_lane in lane.step(instruction, outcome) {
                let successor = (j, after, next_lane);
                if !previous.contains_key(&successor) {
                    if previous.len() >= MAX_STATES {
                        return None;
                    }
                    previous.insert(successor.clone(), Some(state.clone()));
                    queue.push_back(successor);
                }
            }
        }
    }
    Some(found)
}

/// Checks one kernel's listing (from its label to `.Lfunc_end`) against `rules`; every gap
/// found, or an error when the listing cannot be followed.
pub fn check(function_asm: &str, rules: &Rules) -> Result<Vec<Gap>, String> {
    let graph = graph(function_asm)?;
    let access: Vec<Access> = graph.instructions.iter().map(|i| classify(i)).collect();
    if !access.iter().any(|a| a.writes_sync()) || !access.iter().any(|a| a.reads_sync()) {
        return Err("the listing has no 64-bit access of a barrier word".into());
    }
    if !access.contains(&Access::DataStore) || !access.contains(&Access::DataLoad) {
        return Err("the listing has no 32-bit data store or load".into());
    }
    let kind_of = classify;
    let mut gaps = Vec::new();
    let full = |required: &[&str]| if required.is_empty() { 0 } else { (1u32 << required.len()) - 1 };

    // The release and acquire sequences are for data in memory that has caches (global and
    // flat accesses); a wave's LDS accesses complete in order and only take part in 3.
    let cached = |i: &str| !i.starts_with("ds_");

    // 1. Release: from each cached data store to each synchronizing write.
    let release = fixpoint(
        &graph,
        None,
        |s, i| transfer_since(s, i, &rules.release, kind_of(i) == Access::DataStore && cached(i)),
        join_since,
    );
    // 2. Acquire: from each synchronizing read to each cached data load.
    let acquire =
        fixpoint(&graph, None, |s, i| transfer_since(s, i, &rules.acquire, kind_of(i).reads_sync()), join_since);
    // 3. Order: can a data store / a synchronizing read have happened on some path? (Some,
    // not every: a wave-aggregated atomic sits in a block that `s_cbranch_execz` may skip,
    // which no wave with an active lane does; the graph does not know exec.)
    let stored = fixpoint(&graph, false, |s, i| *s || kind_of(i) == Access::DataStore, |a, b| *a || *b);
    let synced = fixpoint(&graph, false, |s, i| *s || kind_of(i).reads_sync(), |a, b| *a || *b);

    for (n, instruction) in graph.instructions.iter().enumerate() {
        let a = access[n];
        if a.writes_sync() {
            if let Some(Some(bits)) = release[n] {
                if bits != full(&rules.release) {
                    let missing = missing(bits, &rules.release);
                    gaps.push(Gap {
                        kind: GapKind::Release,
                        at: instruction.clone(),
                        missing,
                        path: vec![n.to_string()],
                    });
                }
            }
            if rules.one_sided && stored[n] == Some(false) {
                gaps.push(Gap {
                    kind: GapKind::StoreAfterRelease,
                    at: instruction.clone(),
                    missing: vec![],
                    path: vec![],
                });
            }
        }
        if a == Access::DataLoad {
            if let (Some(Some(bits)), true) = (acquire[n], cached(instruction)) {
                if bits != full(&rules.acquire) {
                    let missing = missing(bits, &rules.acquire);
                    gaps.push(Gap {
                        kind: GapKind::Acquire,
                        at: instruction.clone(),
                        missing,
                        path: vec![n.to_string()],
                    });
                }
            }
            if rules.one_sided && synced[n] == Some(false) {
                gaps.push(Gap {
                    kind: GapKind::LoadBeforeAcquire,
                    at: instruction.clone(),
                    missing: vec![],
                    path: vec![],
                });
            }
        }
    }
    // The must-analyses also follow paths no wave takes; keep a release or acquire gap only
    // where a wave can take one (or where that search gave up), with its path.
    let is_store = |i: &str| kind_of(i) == Access::DataStore && cached(i);
    let is_load = |i: &str| kind_of(i) == Access::DataLoad && cached(i);
    let mut confirmed = |kind: GapKind, search: &dyn Fn() -> Option<HashMap<usize, Vec<String>>>| {
        if !gaps.iter().any(|g| g.kind == kind) {
            return;
        }
        let Some(feasible) = search() else { return };
        gaps.retain_mut(|g| {
            if g.kind != kind {
                return true;
            }
            let at: usize = g.path.first().and_then(|p| p.parse().ok()).unwrap_or(usize::MAX);
            match feasible.get(&at) {
                Some(path) => {
                    g.path = path.clone();
                    true
                }
                None => false,
            }
        });
    };
    confirmed(GapKind::Release, &|| feasible_gaps(&graph, &rules.release, is_store, |i| kind_of(i).writes_sync()));
    confirmed(GapKind::Acquire, &|| feasible_gaps(&graph, &rules.acquire, |i| kind_of(i).reads_sync(), is_load));
    for gap in &mut gaps {
        // A gap the search could not confirm either way keeps no path.
        if gap.path.len() == 1 && gap.path[0].parse::<usize>().is_ok() {
            gap.path.clear();
        }
    }
    Ok(gaps)
}

/// The message-passing kernels of `memory_model.cpp`.
pub const SOURCE: &str = include_str!("../../hip-src/kernels/lowering/memory_model.cpp");

/// Where a message-passing kernel's barrier word and data live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// A block-scope barrier in LDS, global data.
    Block,
    /// A block-scope barrier in LDS, LDS data.
    BlockLds,
    /// A device-scope barrier in global memory, global data.
    Device,
    /// A system-scope barrier in global memory, global data.
    System,
}

/// One message-passing kernel: `xbmm_<name>`.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// The kernel's name without the `xbmm_` prefix.
    pub name: &'static str,
    /// The barrier's scope and the data's memory.
    pub scope: Scope,
    /// Whether every data access sits on one side of the barrier ([`Rules::one_sided`]).
    pub one_sided: bool,
}

/// Compiles [`SOURCE`] for the AMDGPU `target` with `clang`, checked or not, and returns
/// each case's listing.
pub fn compile(clang: &Path, target: &str, checked: bool) -> Result<Vec<(Case, String)>, LowerError> {
    let asm = crate::amd::assemble(clang, target, SOURCE, checked)?;
    CASES
        .into_iter()
        .map(|case| {
            let (_, text) = crate::amd::function(&asm, &case.kernel())
                .ok_or_else(|| LowerError::new(format!("the {target} assembly has no kernel {}", case.kernel())))?;
            Ok((case, text))
        })
        .collect()
}

/// Every kernel of [`SOURCE`].
pub const CASES: [Case; 14] = [
    Case { name: "arrive_wait", scope: Scope::Block, one_sided: true },
    Case { name: "arrive_and_wait", scope: Scope::Block, one_sided: true },
    Case { name: "wait_parity", scope: Scope::Block, one_sided: true },
    Case { name: "try_wait", scope: Scope::Block, one_sided: true },
    Case { name: "try_wait_for", scope: Scope::Block, one_sided: true },
    Case { name: "arrive_and_drop", scope: Scope::Block, one_sided: true },
    Case { name: "arrive_tx", scope: Scope::Block, one_sided: true },
    Case { name: "expect_complete_tx", scope: Scope::Block, one_sided: true },
    Case { name: "completion", scope: Scope::Block, one_sided: true },
    Case { name: "lds_arrive_and_wait", scope: Scope::BlockLds, one_sided: true },
    // Thread 0 loads the copy's source before the barrier.
    Case { name: "memcpy_async_tx", scope: Scope::BlockLds, one_sided: false },
    Case { name: "device_arrive_and_wait", scope: Scope::Device, one_sided: true },
    Case { name: "device_arrive_wait", scope: Scope::Device, one_sided: true },
    Case { name: "system_arrive_and_wait", scope: Scope::System, one_sided: true },
];

impl Case {
    /// The kernel's symbol.
    pub fn kernel(&self) -> String {
        format!("xbmm_{}", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: fn() -> Rules =
        || Rules { release: vec!["s_waitcnt_vscnt null, 0x0"], acquire: vec!["buffer_gl0_inv"], one_sided: true };

    fn gaps(asm: &str) -> Vec<GapKind> {
        check(asm, &RULES()).expect("listing").into_iter().map(|g| g.kind).collect()
    }

    #[test]
    fn classifies_accesses() {
        assert_eq!(classify("ds_add_rtn_u64 v[0:1], v0, v[0:1]"), Access::SyncReadWrite);
        assert_eq!(classify("ds_cmpst_rtn_b64 v[0:1], v4, v[0:1], v[2:3]"), Access::SyncReadWrite);
        assert_eq!(classify("ds_read_b64 v[2:3], v0"), Access::SyncRead);
        assert_eq!(classify("ds_load_b64 v[2:3], v0"), Access::SyncRead);
        assert_eq!(classify("ds_write_b32 v0, v1"), Access::DataStore);
        assert_eq!(classify("ds_store_b128 v0, v[1:4]"), Access::DataStore);
        assert_eq!(classify("ds_load_b32 v0, v1"), Access::DataLoad);
        assert_eq!(classify("global_store_b32 v8, v9, s[8:9]"), Access::DataStore);
        assert_eq!(classify("global_store_dword v8, v9, s[8:9]"), Access::DataStore);
        assert_eq!(classify("global_load_b32 v0, v[0:1], off"), Access::DataLoad);
        assert_eq!(classify("global_atomic_add_x2 v[0:1], v2, v[0:1], s[0:1] glc"), Access::SyncReadWrite);
        assert_eq!(
            classify("global_atomic_add_u64 v[0:1], v2, v[0:1], s[0:1] th:TH_ATOMIC_RETURN"),
            Access::SyncReadWrite
        );
        assert_eq!(classify("global_atomic_add_x2 v2, v[0:1], s[0:1]"), Access::SyncWrite);
        assert_eq!(classify("global_load_dwordx2 v[0:1], v2, s[0:1]"), Access::SyncRead);
        assert_eq!(classify("buffer_gl0_inv"), Access::Other);
        assert_eq!(classify("global_inv scope:SCOPE_SE"), Access::Other);
        assert_eq!(classify("global_wb scope:SCOPE_DEV"), Access::Other);
        assert_eq!(classify("buffer_wbl2 sc1"), Access::Other);
        assert_eq!(classify("s_load_b128 s[8:11], s[0:1], 0x0"), Access::Other);
        assert_eq!(classify("global_load_dword v1, v0, s[40:41] glc"), Access::Other);
        assert_eq!(classify("global_load_dword v1, v0, s[36:37] sc1"), Access::Other);
        assert_eq!(classify("global_load_b32 v1, v0, s[36:37] scope:SCOPE_DEV"), Access::Other);
    }

    #[test]
    fn waits_match_combined_forms() {
        assert!(satisfies("s_waitcnt vmcnt(0) lgkmcnt(0)", "s_waitcnt vmcnt(0)"));
        assert!(satisfies("s_waitcnt vmcnt(0)", "s_waitcnt vmcnt(0)"));
        assert!(!satisfies("s_waitcnt vmcnt(1) lgkmcnt(0)", "s_waitcnt vmcnt(0)"));
        assert!(satisfies("s_waitcnt_vscnt null, 0x0", "s_waitcnt_vscnt null, 0x0"));
        assert!(!satisfies("s_waitcnt lgkmcnt(0)", "s_waitcnt_vscnt null, 0x0"));
        assert!(satisfies("s_wait_storecnt_dscnt 0x0", "s_wait_storecnt 0x0"));
        assert!(satisfies("s_wait_storecnt 0x0", "s_wait_storecnt 0x0"));
        assert!(!satisfies("s_wait_loadcnt_dscnt 0x0", "s_wait_storecnt 0x0"));
        assert!(!satisfies("s_wait_storecnt_dscnt 0x1", "s_wait_storecnt 0x0"));
    }

    const CORRECT: &str = "k:\n\tglobal_store_b32 v8, v9, s[8:9]\n\ts_waitcnt_vscnt null, 0x0\n\
                           \tds_add_rtn_u64 v[0:1], v0, v[0:1]\n.LBB0_1:\n\tds_load_b64 v[2:3], v0\n\
                           \ts_cbranch_vccnz .LBB0_1\n\tbuffer_gl0_inv\n\tglobal_load_b32 v0, v[0:1], off\n\ts_endpgm\n";

    #[test]
    fn a_correct_listing_has_no_gap() {
        assert_eq!(gaps(CORRECT), vec![]);
    }

    #[test]
    fn a_missing_release_wait_is_a_release_gap() {
        let asm = CORRECT.replace("\ts_waitcnt_vscnt null, 0x0\n", "");
        let found = check(&asm, &RULES()).expect("listing");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, GapKind::Release);
        assert_eq!(found[0].at, "ds_add_rtn_u64 v[0:1], v0, v[0:1]");
        assert_eq!(found[0].missing, vec!["s_waitcnt_vscnt null, 0x0"]);
        assert_eq!(found[0].path, vec!["global_store_b32 v8, v9, s[8:9]", "ds_add_rtn_u64 v[0:1], v0, v[0:1]"]);
    }

    #[test]
    fn a_missing_invalidate_is_an_acquire_gap() {
        assert_eq!(gaps(&CORRECT.replace("\tbuffer_gl0_inv\n", "")), vec![GapKind::Acquire]);
    }

    #[test]
    fn one_path_without_the_wait_is_enough() {
        // A uniform branch around the wait: the other arm reaches the atomic with the store
        // pending, and the path (from the store) says so.
        let asm = "k:\n\tglobal_store_b32 v8, v9, s[8:9]\n\ts_cmp_eq_u32 s0, 0\n\ts_cbranch_scc1 .LBB0_2\n\
                   \ts_waitcnt_vscnt null, 0x0\n.LBB0_2:\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\
                   \tbuffer_gl0_inv\n\tglobal_load_b32 v0, v[0:1], off\n\ts_endpgm\n";
        let found = check(asm, &RULES()).expect("listing");
        assert_eq!(found.iter().map(|g| g.kind).collect::<Vec<_>>(), vec![GapKind::Release]);
        assert_eq!(found[0].path.first().map(String::as_str), Some("global_store_b32 v8, v9, s[8:9]"));
        assert!(found[0].path.contains(&"s_cbranch_scc1 .LBB0_2".to_owned()), "{:?}", found[0].path);
    }

    #[test]
    fn a_path_only_an_empty_exec_takes_is_no_gap() {
        // `s_cbranch_execz` skips the wait only when no lane is active, and then no lane
        // performs the atomic either: the must-analysis flags it, the lane search clears it.
        let asm = "k:\n\tglobal_store_b32 v8, v9, s[8:9]\n\ts_cbranch_execz .LBB0_2\n\
                   \ts_waitcnt_vscnt null, 0x0\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n.LBB0_2:\n\
                   \tbuffer_gl0_inv\n\tglobal_load_b32 v0, v[0:1], off\n\ts_endpgm\n";
        assert_eq!(gaps(asm), vec![]);
        // Skipping onto the atomic: the lane that skipped is off there too.
        let onto_atomic = "k:\n\tglobal_store_b32 v8, v9, s[8:9]\n\ts_cbranch_execz .LBB0_2\n\
                           \ts_waitcnt_vscnt null, 0x0\n.LBB0_2:\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\
                           \tbuffer_gl0_inv\n\tglobal_load_b32 v0, v[0:1], off\n\ts_endpgm\n";
        assert_eq!(gaps(onto_atomic), vec![]);
        // Turning a lane back on between the skip and the atomic makes it a gap.
        let reenabled = "k:\n\tglobal_store_b32 v8, v9, s[8:9]\n\ts_mov_b32 s4, exec_lo\n\
                         \ts_and_saveexec_b32 s2, vcc_lo\n\ts_cbranch_execz .LBB0_2\n\
                         \ts_waitcnt_vscnt null, 0x0\n.LBB0_2:\n\ts_or_b32 exec_lo, exec_lo, s2\n\
                         \tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\tbuffer_gl0_inv\n\
                         \tglobal_load_b32 v0, v[0:1], off\n\ts_endpgm\n";
        assert_eq!(gaps(reenabled), vec![GapKind::Release]);
    }

    #[test]
    fn an_invalidate_inside_the_loop_before_a_later_poll_is_not_enough() {
        // The exit test follows a poll that no invalidate follows.
        let asm = "k:\n\tglobal_store_b32 v8, v9, s[8:9]\n\ts_waitcnt_vscnt null, 0x0\n\
                   \tds_add_rtn_u64 v[0:1], v0, v[0:1]\n.LBB0_1:\n\tbuffer_gl0_inv\n\tds_load_b64 v[2:3], v0\n\
                   \ts_cbranch_vccnz .LBB0_1\n\tglobal_load_b32 v0, v[0:1], off\n\ts_endpgm\n";
        assert_eq!(gaps(asm), vec![GapKind::Acquire]);
    }

    #[test]
    fn sunk_stores_and_hoisted_loads_are_order_gaps() {
        let sunk = "k:\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\tglobal_store_b32 v8, v9, s[8:9]\n\
                    \tds_load_b64 v[2:3], v0\n\tbuffer_gl0_inv\n\tglobal_load_b32 v0, v[0:1], off\n\ts_endpgm\n";
        assert_eq!(gaps(sunk), vec![GapKind::StoreAfterRelease]);
        let hoisted = "k:\n\tglobal_store_b32 v8, v9, s[8:9]\n\ts_waitcnt_vscnt null, 0x0\n\
                       \tglobal_load_b32 v0, v[0:1], off\n\tds_add_rtn_u64 v[0:1], v0, v[0:1]\n\
                       \tds_load_b64 v[2:3], v0\n\ts_endpgm\n";
        assert_eq!(gaps(hoisted), vec![GapKind::LoadBeforeAcquire]);
    }

    #[test]
    fn listings_without_the_accesses_are_errors() {
        assert!(check("k:\n\ts_endpgm\n", &RULES()).is_err());
        assert!(check("", &RULES()).is_err());
        assert!(check("k:\n\ts_branch .LBB9_9\n", &RULES()).is_err());
    }

    #[test]
    fn every_case_has_its_kernel_in_the_source() {
        for case in CASES {
            assert!(SOURCE.contains(&format!("XB_KERNEL void {}(", case.kernel())), "{}", case.kernel());
        }
    }
}
