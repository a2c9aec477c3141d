//! A host mapping of a heap block at an address aligned to [`map_align`] of
//! its size.
//!
//! A symmetric object's host address is a heap mapping plus its offset, so an
//! offset aligned to A is an address aligned to A only where the mapping is.
//! `vkMapMemory` promises `minMemoryMapAlignment` (64 bytes) and no more.
//! Where the driver's mapping is a shared mapping of the very file the
//! exported opaque fd names (lavapipe backs memory with a memfd and maps it),
//! the same file range is mapped again at an aligned address inside a
//! reservation of our own. Both mappings then reach the same pages (POSIX
//! `mmap`: with `MAP_SHARED`, stores change the underlying object, which every
//! shared mapping of it sees). Everywhere else the driver's mapping is used as
//! it is, and callers report the alignment it really has.
//!
//! The file and its offset are read from `/proc/self/maps` (device and inode
//! compared with `fstat` of the fd), not from any driver's private layout.

use std::num::NonZeroUsize;
use std::os::fd::BorrowedFd;
use std::ptr::NonNull;

use nix::sys::mman::{mmap, mmap_anonymous, munmap, MapFlags, ProtFlags};

/// The least alignment of a placed heap mapping: a huge page (programs align
/// buffers to it).
pub const MIN_MAP_ALIGN: usize = 2 << 20;

/// The most: 1 GiB (the largest page size).
pub const MAX_MAP_ALIGN: usize = 1 << 30;

/// The alignment a placed mapping of `len` bytes gets: `len` rounded up to a
/// power of two, within [`MIN_MAP_ALIGN`]..=[`MAX_MAP_ALIGN`]. No allocation
/// in the block can need more (one aligned to A sits at a nonzero multiple of
/// A, the control region holding offset 0), and the reservation it takes is
/// address space only, given back but for the mapping itself.
pub fn map_align(len: usize) -> usize {
    len.checked_next_power_of_two()
        .unwrap_or(MAX_MAP_ALIGN)
        .clamp(MIN_MAP_ALIGN, MAX_MAP_ALIGN)
}

/// One line of `/proc/self/maps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Region {
    start: usize,
    end: usize,
    shared: bool,
    /// The file offset of `start`.
    offset: u64,
    /// (major, minor) of the file's device.
    dev: (u64, u64),
    inode: u64,
}

/// Parses `start-end perms offset major:minor inode [path]` (hex but the
/// inode, as proc(5) writes it).
fn parse_region(line: &str) -> Option<Region> {
    let mut f = line.split_whitespace();
    let (start, end) = f.next()?.split_once('-')?;
    let perms = f.next()?;
    let offset = u64::from_str_radix(f.next()?, 16).ok()?;
    let (major, minor) = f.next()?.split_once(':')?;
    let inode = f.next()?.parse().ok()?;
    Some(Region {
        start: usize::from_str_radix(start, 16).ok()?,
        end: usize::from_str_radix(end, 16).ok()?,
        shared: perms.as_bytes().get(3) == Some(&b's'),
        offset,
        dev: (
            u64::from_str_radix(major, 16).ok()?,
            u64::from_str_radix(minor, 16).ok()?,
        ),
        inode,
    })
}

/// The file offset at which `[addr, addr + len)` lies in `maps`, when the
/// whole range is shared mappings of the file `(dev, inode)` at consecutive
/// offsets (the kernel may split one mapping into several lines).
fn file_offset(maps: &str, addr: usize, len: usize, dev: (u64, u64), inode: u64) -> Option<u64> {
    let end = addr.checked_add(len)?;
    let of_file = |r: &Region| r.shared && r.dev == dev && r.inode == inode;
    let mut regions = maps.lines().filter_map(parse_region);
    let first = regions.find(|r| r.start <= addr && addr < r.end)?;
    if !of_file(&first) {
        return None;
    }
    let at = first.offset + (addr - first.start) as u64;
    let mut last = first;
    while last.end < end {
        let next = regions.next()?;
        let continues =
            next.start == last.end && next.offset == last.offset + (last.end - last.start) as u64;
        if !of_file(&next) || !continues {
            return None;
        }
        last = next;
    }
    Some(at)
}

/// The first multiple of `align` (a power of two) at or after `start`.
fn align_up(start: usize, align: usize) -> usize {
    (start + align - 1) & !(align - 1)
}

/// A second mapping of a heap block's pages at an aligned address, unmapped
/// on drop.
#[derive(Debug)]
pub struct AlignedAlias {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value; its users
// copy bytes through raw pointers (as with the driver's mapping), never
// through references, so moving or sharing the handle between threads is sound.
unsafe impl Send for AlignedAlias {}
// SAFETY: as above.
unsafe impl Sync for AlignedAlias {}

impl AlignedAlias {
    /// Maps again the `len` bytes that the driver mapped at `mapped`, at an
    /// address aligned to [`map_align`]`(len)`, when they are a shared
    /// mapping of the file `fd` names at a page-aligned offset; else why not.
    pub fn new(mapped: NonNull<u8>, len: u64, fd: BorrowedFd<'_>) -> Result<Self, String> {
        let len = usize::try_from(len).map_err(|_| "the block is larger than the address space")?;
        let nz_len = NonZeroUsize::new(len).ok_or("an empty block")?;
        let st = nix::sys::stat::fstat(fd).map_err(|e| format!("fstat of the memory fd: {e}"))?;
        let dev = (
            nix::sys::stat::major(st.st_dev),
            nix::sys::stat::minor(st.st_dev),
        );
        let maps = std::fs::read_to_string("/proc/self/maps")
            .map_err(|e| format!("reading /proc/self/maps: {e}"))?;
        let addr = mapped.as_ptr() as usize;
        let at = file_offset(&maps, addr, len, dev, st.st_ino)
            .ok_or("the driver's mapping is not a shared mapping of the exported fd's file")?;
        let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .and_then(|p| usize::try_from(p).ok())
            .ok_or("no page size")?;
        if at % page as u64 != 0 {
            return Err(format!(
                "the block lies at file offset {at}, not page-aligned"
            ));
        }
        if at.saturating_add(len as u64) > st.st_size as u64 {
            return Err("the block runs past the end of its file".into());
        }
        let offset = i64::try_from(at).map_err(|_| "file offset out of range")?;
        let align = map_align(len);
        let reserved = len
            .checked_add(align)
            .and_then(NonZeroUsize::new)
            .ok_or("the block is larger than the address space")?;
        // SAFETY: a new anonymous PROT_NONE mapping at an address the kernel
        // picks from unused space (mmap(2) with a null hint and no MAP_FIXED):
        // it aliases nothing and nothing else refers to it.
        let base = unsafe {
            mmap_anonymous(
                None,
                reserved,
                ProtFlags::PROT_NONE,
                MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
            )
        }
        .map_err(|e| format!("reserving address space: {e}"))?;
        let start = base.as_ptr() as usize;
        let aligned = align_up(start, align);
        // SAFETY: [aligned, aligned + len) lies inside the reservation made
        // above, which only this function knows, so MAP_FIXED replaces none
        // but our own PROT_NONE pages (POSIX mmap: MAP_FIXED removes the
        // mappings it overlaps). The file range is the driver's own mapping's
        // (checked above: same device, inode and offset, within the file).
        let placed = unsafe {
            mmap(
                NonZeroUsize::new(aligned),
                nz_len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED | MapFlags::MAP_FIXED,
                fd,
                offset,
            )
        };
        let map_end = align_up(aligned + len, page);
        let trims = match placed {
            Ok(_) => [(start, aligned), (map_end, start + reserved.get())],
            Err(_) => [(start, start + reserved.get()), (0, 0)],
        };
        for (from, to) in trims {
            if let Some(p) = NonNull::new(from as *mut std::ffi::c_void).filter(|_| to > from) {
                // SAFETY: a page-aligned part of our own reservation that the
                // aligned mapping does not cover (or all of it, on failure):
                // nothing refers to it.
                if let Err(e) = unsafe { munmap(p, to - from) } {
                    tracing::warn!("unmapping a spare address reservation: {e}");
                }
            }
        }
        let p = placed.map_err(|e| format!("mapping the fd at an aligned address: {e}"))?;
        Ok(AlignedAlias { ptr: p.cast(), len })
    }

    /// The aligned mapping.
    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }
}

impl Drop for AlignedAlias {
    fn drop(&mut self) {
        // SAFETY: our own mapping of `len` bytes; its users are gone (it is
        // dropped with the heap block, after every user of the block).
        if let Err(e) = unsafe { munmap(self.ptr.cast(), self.len) } {
            tracing::warn!("unmapping a heap alias: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{align_up, file_offset, map_align, parse_region, Region};

    const MAPS: &str = "\
56455d84e000-56455d84f000 rw-s 00000000 00:01 3236                       /memfd:g (deleted)
7f48dbffc000-7f48ebffe000 rw-s 00000000 00:01 3239                       /memfd:llvmpipe memory fd (deleted)
7f48ebffe000-7f48ec000000 rw-s 00000000 00:01 2260                       /memfd:llvmpipe memory fd (deleted)
7f48ec000000-7f48fc000000 rw-s 00002000 00:01 2260                       /memfd:llvmpipe memory fd (deleted)
7f48fc000000-7f48fc001000 rw-p 00000000 00:00 0
7f4929b78000-7f493a409000 rw-p 00001000 fd:02 2260                       /usr/lib/x
";

    #[test]
    fn parses_proc_maps_lines() {
        let r = parse_region(MAPS.lines().nth(1).unwrap()).unwrap();
        assert_eq!(
            r,
            Region {
                start: 0x7f48dbffc000,
                end: 0x7f48ebffe000,
                shared: true,
                offset: 0,
                dev: (0, 1),
                inode: 3239,
            }
        );
        let anon = parse_region(MAPS.lines().nth(4).unwrap()).unwrap();
        assert!(!anon.shared && anon.inode == 0);
        assert_eq!(parse_region("garbage"), None);
        assert_eq!(parse_region(""), None);
    }

    #[test]
    fn finds_the_file_offset_of_a_mapped_range() {
        // Inside one line.
        assert_eq!(
            file_offset(MAPS, 0x7f48dbffd000, 0x1000, (0, 1), 3239),
            Some(0x1000)
        );
        // Across two lines of one file at consecutive offsets.
        assert_eq!(
            file_offset(MAPS, 0x7f48ebfff000, 0x2000, (0, 1), 2260),
            Some(0x1000)
        );
        // Another file, device or inode: no.
        assert_eq!(
            file_offset(MAPS, 0x7f48dbffd000, 0x1000, (0, 1), 2260),
            None
        );
        assert_eq!(
            file_offset(MAPS, 0x7f48dbffd000, 0x1000, (0, 2), 3239),
            None
        );
        // Running into a private mapping, or past the last line, or into a
        // line whose offset does not continue: no.
        assert_eq!(
            file_offset(MAPS, 0x7f48fbfff000, 0x2000, (0, 1), 2260),
            None
        );
        assert_eq!(
            file_offset(MAPS, 0x7f48dbffd000, 0x20000000, (0, 1), 3239),
            None
        );
        let gap =
            "1000-2000 rw-s 00000000 00:01 7 /memfd:a\n2000-3000 rw-s 00005000 00:01 7 /memfd:a\n";
        assert_eq!(file_offset(gap, 0x1000, 0x2000, (0, 1), 7), None);
        // The same inode on another device (a private file mapping): no.
        assert_eq!(
            file_offset(MAPS, 0x7f4929b79000, 0x1000, (0, 1), 2260),
            None
        );
        // Unmapped address.
        assert_eq!(file_offset(MAPS, 0x10, 0x10, (0, 1), 3239), None);
    }

    #[test]
    fn a_mapping_is_aligned_to_its_size_within_bounds() {
        assert_eq!(map_align(1), 2 << 20);
        assert_eq!(map_align(2 << 20), 2 << 20);
        assert_eq!(map_align((2 << 20) + 1), 4 << 20);
        assert_eq!(map_align(256 << 20), 256 << 20);
        assert_eq!(map_align((1 << 30) + 4096), 1 << 30);
        assert_eq!(map_align(usize::MAX), 1 << 30);
    }

    #[test]
    fn aligns_up() {
        assert_eq!(align_up(0, 4096), 0);
        assert_eq!(align_up(1, 4096), 4096);
        assert_eq!(align_up(4096, 4096), 4096);
        assert_eq!(align_up(0x7f48ebfff000, 2 << 20), 0x7f48ec000000);
    }
}
