//! The program's global and static variables as symmetric objects.
//!
//! OpenSHMEM programs use them as symmetric objects (`static long
//! pSync[SHMEM_BARRIER_SYNC_SIZE]`). Every PE runs the same executable, so
//! a variable is at the same offset of its writable data segment (`.data`,
//! `.bss`) on every PE. At `shmem_init`, before the library starts any
//! thread, [`remap`] copies that segment into a memfd and maps the memfd
//! over it (`MAP_FIXED | MAP_SHARED`: same addresses, same contents); then
//! [`Globals::share`] passes every PE's memfd to the PEs of its node, which
//! map it too. A put to a peer's global is then a copy into that mapping,
//! an atomic an atomic instruction on it: host memory shared by the
//! node's processes.
//!
//! What it cannot do (documented in `docs/c-programs.md`): a PE of another node
//! (mpirun) has no mapping, so RMA and atomics on its globals end the PE
//! with a message (collectives work: they move globals through the
//! bootstrap); device code never sees globals (they are not device memory);
//! stores the program makes from another thread while `shmem_init` remaps
//! are lost; a child made by `fork` after `shmem_init` shares the segment
//! instead of copying it.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use vkshmem_host::{Context, Error, Result};

/// This PE's data segment after [`remap`]: address, length and the memfd.
pub struct Local {
    start: usize,
    len: usize,
    /// `start` less the executable's load address (equal on every PE
    /// running the same executable).
    rel: usize,
    fd: OwnedFd,
}

/// The data segments of this node's PEs.
pub struct Globals {
    start: usize,
    len: usize,
    /// Where PE `pe`'s segment is mapped here (0: not mapped).
    peers: Vec<usize>,
}

const PAGE: usize = 4096;

/// The executable's writable segment (page-aligned, less its RELRO part):
/// `(start, len, rel)`.
fn data_segment() -> Option<(usize, usize, usize)> {
    struct Found(Option<(usize, usize, usize)>);
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the first object
        // (the executable) and our `Found`; its program headers are
        // `dlpi_phnum` entries at `dlpi_phdr`.
        let (info, found) = unsafe { (&*info, &mut *data.cast::<Found>()) };
        let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let base = info.dlpi_addr as usize;
        let relro_end = phdrs
            .iter()
            .find(|p| p.p_type == libc::PT_GNU_RELRO)
            .map(|p| base + (p.p_vaddr + p.p_memsz) as usize);
        if let Some(p) = phdrs
            .iter()
            .find(|p| p.p_type == libc::PT_LOAD && p.p_flags & libc::PF_W != 0)
        {
            let lo = base + p.p_vaddr as usize;
            let hi = lo + p.p_memsz as usize;
            // glibc protects RELRO up to its end rounded down.
            let mut start = lo & !(PAGE - 1);
            if let Some(r) = relro_end.filter(|r| *r > lo && *r <= hi) {
                start = start.max(r & !(PAGE - 1));
            }
            let end = (hi + PAGE - 1) & !(PAGE - 1);
            if end > start {
                found.0 = Some((start, end - start, start - base));
            }
        }
        1 // the executable only
    }
    let mut found = Found(None);
    // SAFETY: `first` matches the callback type and only reads what it is given.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut found as *mut Found).cast()) };
    found.0
}

/// Moves the executable's data segment into a memfd at the same address.
/// `None` (globals are then not symmetric; calls on them say so) when
/// there is none or a system call fails.
pub fn remap() -> Option<Local> {
    let (start, len, rel) = data_segment()?;
    let fd =
        nix::sys::memfd::memfd_create(c"vkshmem-globals", nix::sys::memfd::MFdFlags::MFD_CLOEXEC)
            .ok()?;
    nix::unistd::ftruncate(&fd, len as i64).ok()?;
    // SAFETY: [start, start+len) is the executable's mapped, readable
    // data segment (its program headers say so).
    let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, len) };
    let mut done = 0;
    while done < len {
        match nix::sys::uio::pwrite(&fd, &bytes[done..], done as i64) {
            Ok(0) | Err(_) => return None,
            Ok(n) => done += n,
        }
    }
    // SAFETY: replaces the pages of [start, start+len) (page-aligned, the
    // executable's own writable segment) with a shared mapping of the
    // memfd that holds their current contents, so every variable keeps its
    // address and value; no other thread of this process runs yet.
    let at = unsafe {
        libc::mmap(
            start as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            fd.as_raw_fd(),
            0,
        )
    };
    if at as usize != start {
        return None;
    }
    Some(Local {
        start,
        len,
        rel,
        fd,
    })
}

impl Globals {
    /// Passes this PE's segment to the PEs of its node and maps theirs (a
    /// collective over WORLD). Segments of another shape (another
    /// executable) are not mapped.
    ///
    /// # Errors
    /// As [`Context::barrier_all`]; [`Error::Io`] when a mapping fails.
    pub fn share(ctx: &Context, local: Option<Local>) -> Result<Globals> {
        let shape = local
            .as_ref()
            .map_or([0u64; 2], |l| [l.len as u64, l.rel as u64]);
        let all = ctx.allgather_bytes(bytemuck::cast_slice(&shape))?;
        let fds = ctx.exchange_fds(local.as_ref().map(|l| l.fd.as_fd()))?;
        let me = ctx.my_pe() as usize;
        let mut peers = vec![0usize; ctx.n_pes() as usize];
        let Some(l) = local else {
            return Ok(Globals {
                start: 0,
                len: 0,
                peers,
            });
        };
        for (pe, fd) in fds.into_iter().enumerate() {
            let same = all[pe].as_slice() == bytemuck::cast_slice::<u64, u8>(&shape);
            match fd {
                _ if pe == me => peers[pe] = l.start,
                Some(fd) if same => {
                    // SAFETY: maps PE `pe`'s memfd (len bytes, its size)
                    // anywhere; the mapping lives until the process exits.
                    let at = unsafe {
                        libc::mmap(
                            std::ptr::null_mut(),
                            l.len,
                            libc::PROT_READ | libc::PROT_WRITE,
                            libc::MAP_SHARED,
                            fd.as_raw_fd(),
                            0,
                        )
                    };
                    if at == libc::MAP_FAILED {
                        return Err(Error::Io {
                            what: format!("mapping PE {pe}'s global variables"),
                            source: std::io::Error::last_os_error(),
                        });
                    }
                    peers[pe] = at as usize;
                }
                _ => {}
            }
        }
        Ok(Globals {
            start: l.start,
            len: l.len,
            peers,
        })
    }

    /// The segment offset of `[a, a+bytes)`, when it lies in the segment.
    pub fn offset_of(&self, a: usize, bytes: usize) -> Option<usize> {
        (a >= self.start && a.checked_add(bytes)? <= self.start + self.len).then(|| a - self.start)
    }

    /// Where offset `off` of PE `pe`'s segment is mapped here.
    pub fn peer(&self, pe: u32, off: usize) -> Option<*mut u8> {
        match self.peers.get(pe as usize) {
            Some(&b) if b != 0 => Some((b + off) as *mut u8),
            _ => None,
        }
    }

    /// As [`Globals::peer`], or the end of this PE with a message.
    pub fn peer_or_die(&self, call: &str, pe: u32, off: usize) -> *mut u8 {
        self.peer(pe, off).unwrap_or_else(|| {
            crate::setup::fatal(
                call,
                format!(
                    "PE {pe}'s global variables are not reachable from this PE (another node, \
                     or another executable); allocate the object with shmem_malloc"
                ),
            )
        })
    }
}
