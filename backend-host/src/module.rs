//! Kernel objects on the host: a module's image is a shared object, loaded once per *block
//! slot*. Each copy has its own static `__shared__` variables, so a copy serves one running
//! block at a time; the pool grows up to the resident-block limit.

use std::collections::HashMap;
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use libloading::os::unix::{Library, Symbol, RTLD_LOCAL, RTLD_NOW};
use xbarrier_api::{Error, Result};

use crate::abi::{self, AbiFn, BlockInitFn, InvokeFn, SetCurrentFn};

/// One loaded copy of a module.
pub struct Slot {
    _library: Library,
    pub set_current: SetCurrentFn,
    pub block_init: BlockInitFn,
    pub invoke: InvokeFn,
    kernels: Mutex<HashMap<String, usize>>,
}

// SAFETY: the function pointers are immutable after loading and the
// library's code may run on any thread; the symbol cache is behind a mutex.
unsafe impl Send for Slot {}
// SAFETY: as above.
unsafe impl Sync for Slot {}

fn runtime_error(what: String) -> Error {
    Error::Io { context: what, source: std::io::Error::other("host kernel object") }
}

/// `e_machine` of this process's architecture.
#[cfg(target_arch = "x86_64")]
const ELF_MACHINE: u16 = 62; // EM_X86_64
#[cfg(target_arch = "aarch64")]
const ELF_MACHINE: u16 = 183; // EM_AARCH64

/// Checks that `image` is a complete 64-bit little-endian shared object for this machine
/// before the dynamic loader maps it: a file whose segments reach past its end loads, and
/// reading those pages then kills the process with SIGBUS instead of failing the load.
fn check_elf(module: &str, image: &[u8]) -> Result<()> {
    let bad = |what: String| {
        Error::BadBundle(format!("module `{module}`: the host image is not a shared object for this machine: {what}"))
    };
    let u16_at = |at: usize| image.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u64_at = |at: usize| image.get(at..at + 8).map(|b| u64::from_le_bytes(std::array::from_fn(|i| b[i])));
    if image.len() < 64 || !image.starts_with(b"\x7fELF") {
        return Err(bad(format!("no ELF header ({} bytes)", image.len())));
    }
    if image[4] != 2 || image[5] != 1 {
        return Err(bad(format!("ELF class {} data {}, want 64-bit little-endian (2, 1)", image[4], image[5])));
    }
    let (kind, machine) = (u16_at(16), u16_at(18));
    if kind != Some(3) || machine != Some(ELF_MACHINE) {
        return Err(bad(format!("ELF type {kind:?} machine {machine:?}, want a shared object (3) for {ELF_MACHINE}")));
    }
    let fits = |offset: Option<u64>, size: Option<u64>| {
        offset.zip(size).and_then(|(o, s)| o.checked_add(s)).is_some_and(|end| end <= image.len() as u64)
    };
    let table = |offset: usize, entry: usize, count: usize| {
        let (at, entry, count) = (u64_at(offset), u16_at(entry).map(u64::from), u16_at(count).map(u64::from));
        (at, entry.zip(count).and_then(|(e, c)| e.checked_mul(c)))
    };
    let (phoff, phbytes) = table(32, 54, 56);
    let (shoff, shbytes) = table(40, 58, 60);
    if !fits(phoff, phbytes) || !fits(shoff, shbytes) {
        return Err(bad(format!("truncated: its header tables end past its {} bytes", image.len())));
    }
    let (phoff, phnum, phentsize) = (phoff.unwrap_or(0) as usize, u16_at(56).unwrap_or(0), u16_at(54).unwrap_or(0));
    for entry in (0..usize::from(phnum)).map(|i| phoff + i * usize::from(phentsize)) {
        // PT_LOAD: the loader maps p_filesz bytes from p_offset.
        let kind = image.get(entry..entry + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        if kind == Some(1) && !fits(u64_at(entry + 8), u64_at(entry + 32)) {
            return Err(bad(format!("truncated: a loadable segment ends past its {} bytes", image.len())));
        }
    }
    Ok(())
}

impl Slot {
    fn load(module: &str, image: &[u8]) -> Result<Slot> {
        check_elf(module, image)?;
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!("xbarrier-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|source| Error::Io { context: format!("creating {}", dir.display()), source })?;
        let path: PathBuf = dir.join(format!("{module}-{}.so", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::write(&path, image).map_err(|source| Error::Io {
            context: format!("staging host kernels of `{module}` at {}", path.display()),
            source,
        })?;
        // SAFETY: the image is a shared object the build helper compiled from xbarrier kernels;
        // its initializers are the C++ runtime's and the kernels' static constructors.
        let library = unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_LOCAL) };
        // The mapping stays valid after the file is gone; nothing is left in the temp dir.
        let _ = std::fs::remove_file(&path);
        let library = library.map_err(|e| {
            // libloading's Display is only "dlopen failed"; dlerror's text is the source.
            let text = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string());
            runtime_error(format!("loading host kernels of `{module}`: {text}"))
        })?;

        fn symbol<T: Copy>(library: &Library, module: &str, name: &[u8]) -> Result<T> {
            // SAFETY: the symbol names below are the runtime's exports with the matching
            // prototypes from host_abi.h (checked against its version first).
            let s: std::result::Result<Symbol<T>, _> = unsafe { library.get(name) };
            s.map(|s| *s).map_err(|e| {
                runtime_error(format!(
                    "`{module}` is not an xbarrier host kernel object (missing {}): {e}",
                    String::from_utf8_lossy(name)
                ))
            })
        }
        let abi_fn: AbiFn = symbol(&library, module, b"xb_host_abi\0")?;
        let mut sizes = [0u64; 4];
        // SAFETY: xb_host_abi writes exactly four u64s.
        let version = unsafe { abi_fn(sizes.as_mut_ptr()) };
        if version != abi::HOST_ABI_VERSION || sizes != abi::expected_sizes() {
            return Err(runtime_error(format!(
                "`{module}` was built against host ABI {version} with struct sizes {sizes:?}; this runtime has ABI {} with {:?}: rebuild the kernels",
                abi::HOST_ABI_VERSION,
                abi::expected_sizes()
            )));
        }
        Ok(Slot {
            set_current: symbol(&library, module, b"xb_host_set_current\0")?,
            block_init: symbol(&library, module, b"xb_host_block_init\0")?,
            invoke: symbol(&library, module, b"xb_host_invoke\0")?,
            kernels: Mutex::new(HashMap::new()),
            _library: library,
        })
    }

    /// The address of kernel `name` in this copy.
    pub fn kernel(&self, module: &str, name: &str) -> Result<*const c_void> {
        let mut cache = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&addr) = cache.get(name) {
            return Ok(addr as *const c_void);
        }
        let not_found = || Error::KernelNotFound { module: module.to_owned(), kernel: name.to_owned() };
        let cname = std::ffi::CString::new(name).map_err(|_| not_found())?;
        // SAFETY: looking up a symbol; it is only called through xb_host_invoke with the
        // argument layout the launch contract makes the caller responsible for.
        let addr: std::result::Result<Symbol<*const c_void>, _> =
            unsafe { self._library.get(cname.as_bytes_with_nul()) };
        let addr = addr.map_err(|_| not_found())?.into_raw() as usize;
        cache.insert(name.to_owned(), addr);
        Ok(addr as *const c_void)
    }
}

struct Pool {
    free: Vec<Arc<Slot>>,
    loaded: usize,
}

/// A module's image and its pool of loaded copies (one per running block).
pub struct SlotPool {
    pub name: String,
    image: &'static [u8],
    max_slots: usize,
    pool: Mutex<Pool>,
    returned: Condvar,
}

impl SlotPool {
    /// Loads the first copy (so that a bad image fails at load time, not at launch).
    pub fn new(name: &str, image: &'static [u8], max_slots: usize) -> Result<SlotPool> {
        let first = Arc::new(Slot::load(name, image)?);
        Ok(SlotPool {
            name: name.to_owned(),
            image,
            max_slots,
            pool: Mutex::new(Pool { free: vec![first], loaded: 1 }),
            returned: Condvar::new(),
        })
    }

    /// Takes `count` copies at once (loading more as needed), waiting while other launches
    /// hold them. Taking them together keeps two cooperative launches from each holding half.
    pub fn acquire(&self, count: usize) -> Result<Vec<Arc<Slot>>> {
        if count > self.max_slots {
            return Err(Error::InvalidArgument {
                call: "launch",
                reason: format!("{count} resident blocks requested, the host backend keeps at most {} (XBAR_HOST_MAX_RESIDENT_BLOCKS)", self.max_slots),
            });
        }
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let loadable = self.max_slots - pool.loaded;
            if pool.free.len() + loadable >= count {
                let take = count.min(pool.free.len());
                let keep = pool.free.len() - take;
                let mut slots: Vec<Arc<Slot>> = pool.free.split_off(keep);
                let missing = count - take;
                pool.loaded += missing;
                drop(pool);
                for _ in 0..missing {
                    match Slot::load(&self.name, self.image) {
                        Ok(slot) => slots.push(Arc::new(slot)),
                        Err(e) => {
                            // The copies loaded so far go back to the pool; the rest never existed.
                            let loaded_now = slots.len() - take;
                            let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
                            pool.loaded -= missing - loaded_now;
                            drop(pool);
                            self.release(slots);
                            return Err(e);
                        }
                    }
                }
                return Ok(slots);
            }
            pool = self.returned.wait(pool).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Gives copies back to the pool.
    pub fn release(&self, slots: Vec<Arc<Slot>>) {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        // A copy in the pool twice would be handed to two running blocks at once.
        debug_assert!(slots.iter().all(|s| !pool.free.iter().any(|f| Arc::ptr_eq(f, s))), "slot returned twice");
        pool.free.extend(slots);
        drop(pool);
        self.returned.notify_all();
    }

    /// Checks that kernel `name` exists (in the first copy).
    pub fn check_kernel(&self, name: &str) -> Result<()> {
        let slots = self.acquire(1)?;
        let found = slots[0].kernel(&self.name, name).map(|_| ());
        self.release(slots);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal shared object header for this machine: one PT_LOAD of `filesz` bytes at 0.
    fn elf(filesz: u64, len: usize) -> Vec<u8> {
        let mut image = vec![0u8; len.max(64 + 56)];
        image[..4].copy_from_slice(b"\x7fELF");
        image[4] = 2;
        image[5] = 1;
        image[16..18].copy_from_slice(&3u16.to_le_bytes());
        image[18..20].copy_from_slice(&ELF_MACHINE.to_le_bytes());
        image[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        image[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        image[56..58].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        image[64..68].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        image[64 + 32..64 + 40].copy_from_slice(&filesz.to_le_bytes());
        image.truncate(len.max(64 + 56));
        image
    }

    #[test]
    fn complete_shared_objects_pass() {
        check_elf("m", &elf(4096, 4096)).expect("segment inside the file");
    }

    #[test]
    fn broken_images_are_refused_before_dlopen() {
        let refused = |image: &[u8]| match check_elf("m", image) {
            Err(Error::BadBundle(text)) => text,
            other => panic!("expected BadBundle, got {other:?}"),
        };
        assert!(refused(b"not an ELF at all").contains("no ELF header"));
        assert!(refused(&elf(4096, 1000)).contains("loadable segment ends past its 1000 bytes"));
        let mut big_endian = elf(100, 200);
        big_endian[5] = 2;
        assert!(refused(&big_endian).contains("64-bit little-endian"));
        let mut executable = elf(100, 200);
        executable[16] = 2;
        assert!(refused(&executable).contains("want a shared object"));
        let mut tables_past_the_end = elf(100, 200);
        tables_past_the_end[56..58].copy_from_slice(&100u16.to_le_bytes());
        assert!(refused(&tables_past_the_end).contains("header tables end past"));
    }
}
