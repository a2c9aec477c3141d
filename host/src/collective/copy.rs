//! The host path's large copies: `memmove`, or streaming (non-temporal)
//! stores where the call's data is larger than the last-level cache.
//!
//! A plain store first reads the line it writes (write-allocate) and leaves
//! it in the cache, evicting data the call reads next; when the members'
//! sources and dests together overflow the cache, every dest line then costs
//! a read from DRAM and a write back. Streaming stores write whole lines
//! straight to memory, as glibc's `memcpy` does past its own threshold
//! (which a single copy of a collective's block rarely reaches: the
//! footprint that matters is the whole call's, on every member at once).

use std::sync::OnceLock;

use crate::config::parse_size;

/// Copies below this many bytes never stream (the alignment head and the
/// fence cost more than they save).
const STREAM_MIN: usize = 64 << 10;

/// The last-level cache this process's CPUs can count on, in bytes: its
/// size from sysfs, at most [`LLC_PER_CPU_MAX`] for each CPU the process
/// may run on ([`usable_llc`]; `None` where unknown).
fn llc_bytes() -> Option<u64> {
    static LLC: OnceLock<Option<u64>> = OnceLock::new();
    *LLC.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
        sysfs_llc_bytes().map(|llc| usable_llc(llc, cpus))
    })
}

/// The most last-level cache [`llc_bytes`] counts per CPU. A VM with a few
/// CPUs of a large server sees the whole socket's L3 in sysfs, which its
/// neighbours share, so its copies run as if from DRAM long before that
/// size and calls that should stream would not (benches/RESULTS.md, "Shared L3
/// cap"). 32 MiB a CPU leaves bare-metal servers (a few MiB a core) and small
/// VMs that see their own share as they were.
const LLC_PER_CPU_MAX: u64 = 32 << 20;

/// [`llc_bytes`]' rule (pure): `llc` bytes seen, `cpus` usable CPUs.
fn usable_llc(llc: u64, cpus: u64) -> u64 {
    llc.min(LLC_PER_CPU_MAX.saturating_mul(cpus.max(1)))
}

/// The last-level cache's size in bytes, from sysfs (`None` where unknown).
fn sysfs_llc_bytes() -> Option<u64> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let mut best: Option<(u32, u64)> = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let read = |f: &str| std::fs::read_to_string(e.path().join(f)).ok();
        let (Some(level), Some(size)) = (read("level"), read("size")) else {
            continue;
        };
        let Ok(level) = level.trim().parse::<u32>() else {
            continue;
        };
        // sysfs writes "32768K", "2M".
        if let Some(bytes) = parse_size(&size) {
            if best.map_or(true, |(l, _)| level > l) {
                best = Some((level, bytes));
            }
        }
    }
    best.map(|(_, b)| b)
}

/// Whether a call whose members' sources take `sources` bytes and their
/// dests `dests` (on every member together) should stream its dest writes:
/// where the two take at least twice the last-level cache, so that dest
/// lines kept in the cache would only evict sources still to be read.
/// Below that, plain stores stay in the cache and streaming ones, which go
/// out to memory, lose (benches/RESULTS.md, "Streaming stores rule").
/// `asked` is `VKSHMEM_HOST_STREAM`'s `on` or `off` (`None`: `auto`).
pub(crate) fn streams(sources: u64, dests: u64, asked: Option<bool>) -> bool {
    available()
        && asked.unwrap_or_else(|| llc_bytes().is_some_and(|llc| overflows(sources, dests, llc)))
}

/// [`streams`]' rule for a cache of `llc` bytes (pure).
fn overflows(sources: u64, dests: u64, llc: u64) -> bool {
    sources.saturating_add(dests) >= llc.saturating_mul(2)
}

fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Copies `n` bytes from `from` to `to`, with streaming stores where
/// `stream` (and the CPU has them; then call [`fence`] before another PE
/// may read `to`).
///
/// # Safety
/// `from` holds `n` readable bytes and `to` `n` writable ones; nothing else
/// writes either during the call; they do not overlap unless `stream` is
/// false (then they may: a memmove).
pub(crate) unsafe fn copy(from: *const u8, to: *mut u8, n: usize, stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if stream && n >= STREAM_MIN && available() {
        // SAFETY: the caller's promises; AVX (checked).
        return unsafe { x86::stream(from, to, n) };
    }
    // SAFETY: the caller's promises (a memmove).
    unsafe { std::ptr::copy(from, to, n) }
}

/// Copies `n` bytes out of this core's L1 cache (`from`: a small buffer
/// just written, such as a reduction's combined chunk, or just read by an
/// earlier copy, such as a gather's pushed chunk) to `to`: with
/// streaming stores where `stream`, else with `rep movsb` where the CPU
/// moves strings fast (ERMS), else as [`copy`].
///
/// A string move writes whole cache lines without reading them first
/// (no read-for-ownership), where vector stores fetch each line of `to`
/// before they overwrite it. That saving counts where the source is in L1,
/// as a reduction's combined chunk is; a plain copy from L3 runs as fast
/// either way, so only copies out of L1 take this path (benches/RESULTS.md,
/// "Reduction L1 chunks").
///
/// # Safety
/// As [`copy`], and the two do not overlap.
pub(crate) unsafe fn copy_from_l1(from: *const u8, to: *mut u8, n: usize, stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if !stream && fast_strings() {
        // SAFETY: `rep movsb` moves rcx bytes from [rsi] to [rdi] upwards
        // (the System V ABI keeps the direction flag clear at calls and
        // returns): `from` holds n readable bytes and `to` n writable ones
        // that no one else touches and that do not overlap (the caller's);
        // it uses no stack and leaves the flags as they were.
        unsafe {
            std::arch::asm!(
                "rep movsb",
                inout("rcx") n => _,
                inout("rsi") from => _,
                inout("rdi") to => _,
                options(nostack, preserves_flags)
            );
        }
        return;
    }
    // SAFETY: the caller's promises.
    unsafe { copy(from, to, n, stream) }
}

/// Whether `rep movsb` is the CPU's fast copy (ERMS; std caches the check).
#[cfg(target_arch = "x86_64")]
fn fast_strings() -> bool {
    is_x86_feature_detected!("ermsb")
}

/// `dst = src` (equal lengths) as the direct host path copies: with
/// streaming stores where `stream` (and the CPU has them), fenced. For the
/// bench's copy roofline, which must be as fast as any copy of a collective.
pub fn copy_slice(src: &[u8], dst: &mut [u8], stream: bool) {
    assert_eq!(src.len(), dst.len(), "copy_slice: lengths differ");
    // SAFETY: `src` is readable and `dst` writable for their (equal)
    // lengths; a shared and an exclusive borrow cannot overlap.
    unsafe { copy(src.as_ptr(), dst.as_mut_ptr(), src.len(), stream) };
    fence(stream);
}

/// Orders this thread's streaming stores before its later stores (the
/// arrival at the meeting after which peers read them).
pub(crate) fn fence(stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if stream && available() {
        // SAFETY: SSE is part of x86-64's baseline.
        unsafe { std::arch::x86_64::_mm_sfence() }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_stream_si256};

    /// [`super::copy`] with streaming stores: a plain head up to `to`'s
    /// next 32-byte boundary, 128 bytes a step, a plain tail.
    ///
    /// # Safety
    /// As [`super::copy`] with `stream`; the CPU has AVX.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn stream(from: *const u8, to: *mut u8, n: usize) {
        let head = (to as usize).wrapping_neg() % 32;
        let body = (n - head) / 128 * 128;
        // SAFETY: head + body <= n, inside both (the caller's); `to + head`
        // is 32-byte aligned as `_mm256_stream_si256` requires; unaligned
        // loads; the ranges do not overlap (the caller's).
        unsafe {
            std::ptr::copy_nonoverlapping(from, to, head);
            let (f, t) = (from.add(head), to.add(head));
            let mut i = 0;
            while i < body {
                let s = f.add(i).cast::<__m256i>();
                let d = t.add(i).cast::<__m256i>();
                let (a, b) = (_mm256_loadu_si256(s), _mm256_loadu_si256(s.add(1)));
                let (c, e) = (_mm256_loadu_si256(s.add(2)), _mm256_loadu_si256(s.add(3)));
                _mm256_stream_si256(d, a);
                _mm256_stream_si256(d.add(1), b);
                _mm256_stream_si256(d.add(2), c);
                _mm256_stream_si256(d.add(3), e);
                i += 128;
            }
            let done = head + body;
            std::ptr::copy_nonoverlapping(from.add(done), to.add(done), n - done);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The measured cases (`streams`' docs) on a 32 MiB cache.
    #[test]
    fn streams_from_twice_the_cache() {
        let (mib, llc) = (1u64 << 20, 32u64 << 20);
        let call = |sources: u64, dests: u64| overflows(sources * mib, dests * mib, llc);
        // 8-PE alltoall of 1 MiB blocks, 8-PE collect of 1 MiB, 4-PE
        // collect of 4 MiB, 8-PE reduction of 4 MiB.
        assert!(call(64, 64));
        assert!(call(8, 64));
        assert!(call(16, 64));
        assert!(call(32, 32));
        // 8-PE broadcast of 4 MiB, 2-PE alltoall of 4 MiB blocks, just
        // under twice the cache.
        assert!(!call(4, 32));
        assert!(!call(16, 16));
        assert!(!call(16, 32 - 16 + 15));
        // No overflow on absurd sizes.
        assert!(overflows(u64::MAX, u64::MAX, u64::MAX));
    }

    /// A few CPUs of a large cache count on 32 MiB each; a cache that
    /// small per CPU is taken whole.
    #[test]
    fn usable_llc_per_cpu() {
        let mib = 1u64 << 20;
        // 2 CPUs that report a 480 MiB L3: 64 MiB, so an 8-PE collect of
        // 4 MiB (288 MiB) streams and a 4-PE one (80 MiB) not.
        assert_eq!(usable_llc(480 * mib, 2), 64 * mib);
        assert!(overflows(32 * mib, 256 * mib, usable_llc(480 * mib, 2)));
        assert!(!overflows(16 * mib, 64 * mib, usable_llc(480 * mib, 2)));
        // 2 CPUs with a 32 MiB L3 and a 64-core server (256 MiB).
        assert_eq!(usable_llc(32 * mib, 2), 32 * mib);
        assert_eq!(usable_llc(256 * mib, 64), 256 * mib);
        // No CPU count, no overflow.
        assert_eq!(usable_llc(480 * mib, 0), 32 * mib);
        assert_eq!(usable_llc(u64::MAX, u64::MAX), u64::MAX);
    }

    /// Both ways, and both ways out of L1 (`rep movsb` where the CPU has
    /// ERMS), copy every byte, at every alignment of either end and lengths
    /// around the step and the threshold.
    #[test]
    fn copies_every_byte() {
        let src: Vec<u8> = (0..(STREAM_MIN + 1024))
            .map(|i| (i * 7 + 3) as u8)
            .collect();
        for n in [
            0,
            1,
            31,
            127,
            128,
            4095,
            STREAM_MIN - 1,
            STREAM_MIN,
            STREAM_MIN + 161,
        ] {
            for (fa, ta) in [(0, 0), (1, 0), (0, 3), (5, 17), (32, 31)] {
                for (stream, l1) in [(false, false), (true, false), (false, true), (true, true)] {
                    let mut dst = vec![0u8; n + 64];
                    let (from, to) = (src[fa..].as_ptr(), dst[ta..].as_mut_ptr());
                    // SAFETY: fa + n <= src.len(), ta + n <= dst.len(); two
                    // vectors, no overlap.
                    unsafe {
                        if l1 {
                            copy_from_l1(from, to, n, stream);
                        } else {
                            copy(from, to, n, stream);
                        }
                    }
                    fence(stream);
                    assert_eq!(
                        &dst[ta..ta + n],
                        &src[fa..fa + n],
                        "n={n} {fa} {ta} stream={stream} l1={l1}"
                    );
                    assert!(dst[..ta].iter().chain(&dst[ta + n..]).all(|&b| b == 0));
                }
            }
        }
    }
}
