//! The node segment in memory: a memfd created by the endpoint, mapped shared by
//! it and by every PE, and the futex calls on its words.

use std::num::NonZeroUsize;
use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use nix::libc;
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};

use super::layout::{self, Layout};
use crate::error::{Error, Result};

/// A mapping of the node segment.
pub struct Segment {
    base: NonNull<u8>,
    len: usize,
    layout: Layout,
}

// SAFETY: the mapping is plain shared memory that lives until drop; every access
// goes through atomics (`word`) or raw byte copies of slots that the sync
// protocol hands to one writer at a time, so sharing the pointer between
// threads is sound.
unsafe impl Send for Segment {}
// SAFETY: as for Send: no method hands out a non-atomic reference.
unsafe impl Sync for Segment {}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("npes", &self.layout.npes)
            .field("bytes", &self.len)
            .finish()
    }
}

impl Segment {
    /// Creates a zeroed segment for `npes` PEs, initialises its header and returns
    /// the mapping and the memfd to hand to the PEs.
    pub fn create(npes: u32) -> Result<(Segment, OwnedFd)> {
        let layout = Layout { npes };
        let fd = nix::sys::memfd::memfd_create(
            c"vkshmem-node-segment",
            nix::sys::memfd::MFdFlags::MFD_CLOEXEC,
        )
        .map_err(|e| Error::io("creating the node segment (memfd_create)", e.into()))?;
        nix::unistd::ftruncate(&fd, layout.bytes() as i64)
            .map_err(|e| Error::io("sizing the node segment", e.into()))?;
        let seg = Segment::map_fd(&fd, layout)?;
        seg.word(layout::VERSION_AT)
            .store(layout::VERSION, Ordering::Relaxed);
        seg.word(layout::NPES_AT).store(npes, Ordering::Relaxed);
        seg.word(layout::DATA_BYTES_AT)
            .store(layout::DATA_BYTES as u32, Ordering::Relaxed);
        seg.word(layout::MAGIC_AT)
            .store(layout::MAGIC, Ordering::Release);
        Ok((seg, fd))
    }

    /// Maps a segment received from the endpoint and checks that it was made for
    /// this layout and job.
    pub fn open(fd: OwnedFd, npes: u32) -> Result<Segment> {
        let layout = Layout { npes };
        let st = nix::sys::stat::fstat(&fd)
            .map_err(|e| Error::io("inspecting the node segment", e.into()))?;
        if (st.st_size as u64) < layout.bytes() as u64 {
            return Err(Error::Bootstrap(format!(
                "the node segment holds {} bytes; {npes} PEs need {}",
                st.st_size,
                layout.bytes()
            )));
        }
        let seg = Segment::map_fd(&fd, layout)?;
        let got = [
            seg.word(layout::MAGIC_AT).load(Ordering::Acquire),
            seg.word(layout::VERSION_AT).load(Ordering::Relaxed),
            seg.word(layout::NPES_AT).load(Ordering::Relaxed),
            seg.word(layout::DATA_BYTES_AT).load(Ordering::Relaxed),
        ];
        let want = [
            layout::MAGIC,
            layout::VERSION,
            npes,
            layout::DATA_BYTES as u32,
        ];
        if got != want {
            return Err(Error::Bootstrap(format!(
                "the node segment's header (magic, version, PEs, data bytes) is {got:?}, this library expects {want:?} (launcher and program from different versions?)"
            )));
        }
        Ok(seg)
    }

    fn map_fd(fd: &OwnedFd, layout: Layout) -> Result<Segment> {
        let len = layout.bytes();
        // SAFETY: a fresh shared mapping of a memfd at least `len` bytes long (sized
        // or checked by the callers); nothing else in this process aliases it.
        let p = unsafe {
            mmap(
                None,
                NonZeroUsize::new(len).expect("a segment has a header"),
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                fd.as_fd(),
                0,
            )
        }
        .map_err(|e| Error::io("mapping the node segment", e.into()))?;
        Ok(Segment {
            base: p.cast(),
            len,
            layout,
        })
    }

    /// The layout it was mapped with.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The 32-bit word at byte `at`.
    pub fn word(&self, at: usize) -> &AtomicU32 {
        assert!(at % 4 == 0 && at + 4 <= self.len, "segment word {at}");
        // SAFETY: in bounds and aligned (checked above; the mapping is page
        // aligned); AtomicU32 has u32's layout, and the memory is only ever
        // accessed atomically (or by raw byte copies of slots no one else writes
        // at that point), so creating a shared atomic reference is sound. The
        // reference cannot outlive the mapping (it borrows self).
        unsafe { &*(self.base.as_ptr().add(at) as *const AtomicU32) }
    }

    /// Copies `src` into the segment at byte `at`.
    pub fn write(&self, at: usize, src: &[u8]) {
        assert!(at + src.len() <= self.len, "segment write past the end");
        // SAFETY: in bounds (checked); the slot being written belongs to this PE
        // until the sync protocol hands it to the readers (see the layout docs),
        // and we copy raw bytes without creating references to shared memory.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.base.as_ptr().add(at), src.len())
        }
    }

    /// Copies bytes at `at` into `dst`.
    pub fn read(&self, at: usize, dst: &mut [u8]) {
        assert!(at + dst.len() <= self.len, "segment read past the end");
        // SAFETY: in bounds (checked); readers copy a slot only after the epoch
        // that published it completed and before its writer may reuse it.
        unsafe {
            std::ptr::copy_nonoverlapping(self.base.as_ptr().add(at), dst.as_mut_ptr(), dst.len())
        }
    }

    /// A raw pointer to byte `at` (for copies straight between the segment and
    /// the mapped heap).
    pub fn ptr(&self, at: usize, len: usize) -> *mut u8 {
        assert!(at + len <= self.len, "segment range past the end");
        // SAFETY: in bounds (checked).
        unsafe { self.base.as_ptr().add(at) }
    }

    /// Raises the job's abort word (the first failure wins) and wakes every
    /// sleeper. Returns the word now in place.
    pub fn raise_abort(&self, word: u32) -> u32 {
        let w = self.word(layout::ABORT_AT);
        let now = match w.compare_exchange(
            layout::ABORT_NONE,
            word,
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            Ok(_) => word,
            Err(old) => old,
        };
        self.wake_all();
        now
    }

    /// Records `pe`'s state and wakes every sleeper (they check their peers).
    pub fn set_pe_state(&self, pe: u32, state: u32) {
        self.word(self.layout.pe_state(pe))
            .store(state, Ordering::SeqCst);
        self.wake_all();
    }

    /// Wakes every PE asleep on any team's `gen`.
    pub fn wake_all(&self) {
        for slot in 0..layout::PLANE_SLOTS as u32 {
            for leader in 0..self.layout.npes {
                let t = self.layout.team(slot, leader);
                if self.word(t + layout::SLEEPERS_AT).load(Ordering::SeqCst) > 0 {
                    futex_wake(self.word(t + layout::GEN_AT));
                }
            }
        }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in map_fd; references into it
        // borrow self, so none outlive it.
        if let Err(e) = unsafe { munmap(self.base.cast(), self.len) } {
            tracing::warn!("unmapping the node segment: {e}");
        }
    }
}

/// Sleeps while `word` holds `expected`, at most `timeout` (a shared futex: the
/// word is in memory mapped by several processes).
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind `word` (valid for the
    // call) and the timespec on our stack; it writes nothing. Spurious wakeups,
    // EAGAIN and EINTR are all fine: callers re-check their condition.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wakes every process asleep on `word`.
pub fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only uses the address as a key; it touches no memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}
