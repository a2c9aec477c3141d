//! The wide paths' pure planning: how an object splits around the wide
//! kernels, the windows and pieces a call binds, the shares of its launches.
//! No Vulkan: unit-tested here.

use vkshmem_device::collectives::{
    WideArgs, WideCopyArgs, WIDE_REDUCE_MAX_MEMBERS, WIDE_WINDOW_ALIGN, WIDE_WINDOW_MAX_BYTES,
};

/// An object's split around the wide path when its source and dest are not
/// 16-byte aligned but equally misaligned (the same offset modulo 16, as
/// when a program offsets both): `head` bytes up to the first 16-byte
/// boundary and the `tail` past the last whole vec4 (unless it is whole
/// words, which the wide kernels store one by one) go through the generic
/// kernels (whole elements: both offsets are multiples of the element
/// size), the `mid` through the wide kernel. Reductions and broadcasts
/// take [`split_words`], which leaves no head where the offsets are whole
/// words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Split {
    pub head: u64,
    pub mid: u64,
    pub tail: u64,
}

/// The [`Split`] of `bytes` at `source` and `dest` (`None` when they are not
/// equally misaligned, or when nothing is left for the wide kernel).
pub(crate) fn split(dest: u64, source: u64, bytes: u64) -> Option<Split> {
    if dest % 16 != source % 16 {
        return None;
    }
    let head = ((16 - dest % 16) % 16).min(bytes);
    let mut mid = (bytes - head) / 16 * 16;
    let mut tail = bytes - head - mid;
    if tail % 4 == 0 {
        // Whole words: the wide kernels store a last partial vec4 word by word
        // (the vec4<u32> kernel, in an edge launch of its own where the unit
        // is vec2<u64>).
        mid += tail;
        tail = 0;
    }
    (mid > 0).then_some(Split { head, mid, tail })
}

/// The [`Split`] of a reduction of `bytes` of elements of `es` bytes at
/// `source` into `dest`: where both are as far off 16-byte alignment in
/// whole words (whole elements for 8-byte kinds), no head, since the wide
/// kernels start such an object inside their vec4 0 (`WideArgs::lead`),
/// and only a tail that is not whole words is left to the generic kernel;
/// otherwise [`split`].
pub(crate) fn split_words(dest: u64, source: u64, bytes: u64, es: u64) -> Option<Split> {
    if dest % 16 != source % 16 || dest % 4 != 0 || (es == 8 && dest % 8 != 0) {
        return split(dest, source, bytes);
    }
    let mid = bytes / 4 * 4;
    (mid > 0).then_some(Split {
        head: 0,
        mid,
        tail: bytes - mid,
    })
}

/// The ranges `(first, end)` of the edge vec4s in the share `first..end` of
/// an object whose `words` words are counted from the start of its vec4 0,
/// where it starts `lead` words in (the immediates of [`WideArgs`] and
/// [`WideCopyArgs`]): vec4 0 where `lead` is not 0, and vec4 `words / 4`
/// where the object ends inside it (unless that is vec4 0 too). A
/// `vec4<u32>` kernel launched over one of these ranges walks nothing in
/// its loop (which skips vec4 0 where `lead` is set and stops below vec4
/// `words / 4`) and stores just that edge, word by word.
pub(crate) fn edge_ranges(first: u32, end: u32, words: u32, lead: u32) -> Vec<(u32, u32)> {
    let mut ranges = Vec::new();
    let last = words / 4;
    if lead != 0 && first == 0 && end > 0 {
        ranges.push((0, 1));
    }
    if words % 4 != 0 && (lead == 0 || last != 0) && first <= last && last < end {
        ranges.push((last, last + 1));
    }
    ranges
}

/// Whether an object of `bytes` at byte offset `at` has an edge vec4 in any
/// of its pieces (pieces are cut at 16-byte multiples from its start).
pub(super) fn has_edges(at: u64, bytes: u64) -> bool {
    at % 16 != 0 || (at + bytes) % 16 != 0
}

/// One member's wide-path launch (a reduction's or a push's): the windows and
/// the kernel's immediates.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WidePlan {
    /// Start and length of every source window.
    pub src: (u64, u64),
    /// Start and length of every dest window.
    pub dst: (u64, u64),
    pub args: WideArgs,
}

/// What bounds a wide plan's windows: the heap's size, and the widest
/// window a launch binds (the device's [`window_max`]: every member of a
/// call on the wide path is on the same device, so all decide alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub heap: u64,
    pub max_range: u64,
}

/// The wide plan of member `me` of `members` reducing `n` elements of `es` bytes
/// from byte offset `source` into `dest`, within `b`; `None` when the call
/// must take the generic path. The share split and windows are a push's
/// ([`push_plan`]) with the members as the parts.
pub(crate) fn plan(
    es: u32,
    members: u32,
    me: u32,
    dest: u64,
    source: u64,
    n: u64,
    b: Bounds,
) -> Option<WidePlan> {
    let Bounds { heap, max_range } = b;
    // 8-byte elements pair the words of each half vec4: an object off
    // 16-byte alignment must start at a half (as its elements' alignment
    // asks anyway).
    if !matches!(es, 1 | 2 | 4 | 8) || n == 0 || members == 0 || (es == 8 && source % 8 != 0) {
        return None;
    }
    let bytes = n.checked_mul(es as u64)?;
    push_plan(bytes, source, dest, me, members, heap, max_range)
}

/// The window (start, length) that binds `bytes` at byte offset `at`: from the
/// `align`ed start below it; `None` past the `heap` or wider than `max_range`.
pub(super) fn window(
    at: u64,
    bytes: u64,
    heap: u64,
    align: u64,
    max_range: u64,
) -> Option<(u64, u64)> {
    let start = at - at % align;
    let end = at.checked_add(bytes)?;
    (end <= heap && end - start <= max_range).then_some((start, end - start))
}

/// One PE's wide copy: `blocks` blocks of `block` bytes, each at byte offset
/// `src` in its member's heap, into consecutive blocks from `dst` in this PE's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CopyPlan {
    /// Start and length of every source window.
    pub src: (u64, u64),
    /// Start and length of the dest window.
    pub dst: (u64, u64),
    pub args: WideCopyArgs,
}

/// The wide copy plan in units of `unit` bytes, or `None`: 16, vec4s
/// (`wide_copy_source`: blocks, sources and dests in whole words, each
/// source as far off 16-byte alignment as its dest, which is each block's
/// where they are whole vec4s, or one block); 4, words
/// (`wide_copy_words_source`: blocks and addresses in whole 32-bit words,
/// the args counting words). `align` is the device's storage offset
/// alignment; the windows stay within `b`.
pub(crate) fn copy_plan(
    unit: u64,
    blocks: u32,
    block: u64,
    src: u64,
    dst: u64,
    align: u64,
    b: Bounds,
) -> Option<CopyPlan> {
    let Bounds { heap, max_range } = b;
    if blocks == 0 || blocks > WIDE_REDUCE_MAX_MEMBERS || block == 0 {
        return None;
    }
    if block % 4 != 0 || src % 4 != 0 || dst % 4 != 0 {
        return None;
    }
    let align = align.max(16);
    let (lead, src, dst) = match unit {
        16 if src % 16 == dst % 16 && (block % 16 == 0 || blocks == 1) => {
            ((src % 16) / 4, src - src % 16, dst - dst % 16)
        }
        4 => (0, src, dst),
        _ => return None,
    };
    // Each block from the start of its vec4 0 (its word 0 for words) to the
    // end of its last (reading the few bytes past its end is harmless;
    // writing them is not, and the kernel does not).
    let words = lead + block / 4;
    let units = (words * 4).div_ceil(unit);
    let stride = if unit == 16 && block % 16 != 0 {
        units
    } else {
        block / unit
    };
    let s = window(src, units * unit, heap, align, max_range)?;
    let d_bytes = ((blocks as u64 - 1) * stride + units).checked_mul(unit)?;
    let d = window(dst, d_bytes, heap, align, max_range)?;
    u32::try_from(d.1 / unit).ok()?;
    Some(CopyPlan {
        src: s,
        dst: d,
        args: WideCopyArgs {
            first: 0,
            end: units as u32,
            // (The word kernel's lead is 0: its words are its units.)
            words: words as u32,
            s0: ((src - s.0) / unit) as u32,
            d0: ((dst - d.0) / unit) as u32,
            per: 0,
            lead: lead as u32,
            stride: stride as u32,
        },
    })
}

/// The widest window the wide paths bind on a device whose
/// `maxStorageBufferRange` is `range`: its largest power of two, at most 2
/// GiB (the kernels count an object's words in 32 bits) and at least
/// Vulkan's least range, [`WIDE_WINDOW_MAX_BYTES`]. Every member of a call
/// on the wide path is on one device, so all cut alike.
///
/// A large message goes in pieces of half this ([`piece_bytes`]), one
/// launch each per member: on a GPU every launch costs some microseconds
/// beyond its traffic even in one submission, so the widest window the
/// device allows keeps the pieces few (benches/RESULTS.md, "H200 per-launch
/// cost").
pub(crate) fn window_max(range: u64) -> u64 {
    let r = range.clamp(WIDE_WINDOW_MAX_BYTES, 1 << 31);
    1 << (63 - r.leading_zeros())
}

/// The largest piece of one object a wide kernel moves per launch on a
/// device whose widest window is `window` ([`window_max`]): objects past it
/// go in pieces of this size (16-byte multiple), so that no window passes
/// `window` (its start aligned down) and large messages need no fallback.
pub(crate) fn piece_bytes(window: u64) -> u64 {
    window / 2
}

/// Blocks of `block` bytes that one launch of `Runtime::copy_wide` copies:
/// as many as a dest window within `range` (less the offset `align`ment's
/// slack) holds, up to [`WIDE_REDUCE_MAX_MEMBERS`]; one where the wide
/// kernels give each invocation a contiguous share (`shares`: llvmpipe,
/// [`Context::wide_launch`](crate::Context::wide_launch)). There a copy of `k` blocks walks `k` sources
/// and its dest at every step, and is slower per byte the more blocks it
/// takes, while a launch costs a dispatch, small against such a call; one
/// block per launch made the 4- and 8-PE alltoalls faster
/// (benches/RESULTS.md, "Copy blocks one per launch"). On a GPU a launch costs
/// more than the copy of a block gains, so the blocks go together.
pub(crate) fn blocks_per_copy(block: u64, range: u64, align: u64, shares: bool) -> usize {
    if shares {
        return 1;
    }
    let slack = align.max(16);
    (range.saturating_sub(slack) / block.max(1)).clamp(1, WIDE_REDUCE_MAX_MEMBERS as u64) as usize
}

/// The longest contiguous share (vec4s, one loop iteration each) a wide
/// kernel gives an invocation on llvmpipe, whose invocations may run 65535
/// loop iterations in all.
pub(super) const LLVMPIPE_SHARE_MAX: u64 = 32768;

/// The chunk (vec4s) of a wide kernel's share on llvmpipe where it walks
/// [`LLVMPIPE_CHUNK_STREAMS`] windows or more: the chunks are dealt
/// round-robin over the invocations, so a SIMD row's 8 lanes walk 8
/// neighbouring chunks of each window, not 8 shares far apart (with a push
/// to 8 dests, 72 places at once per row, which the CPU's prefetch and TLB
/// could not follow). 128 was the fastest chunk for a push to 8 dests; a
/// plain copy, which walks two windows, runs faster in shares, hence
/// shares for kernels of few windows. Kernels of twice
/// [`LLVMPIPE_CHUNK_STREAMS`] windows or more (a reduction over 8 members:
/// 8 sources, 8 dests) take half chunks, which suit them better and would
/// slow the kernels of fewer windows (benches/RESULTS.md, "Contiguous shares on
/// llvmpipe").
pub(super) const LLVMPIPE_CHUNK: u64 = 128;

/// The windows a wide kernel walks from which [`LLVMPIPE_CHUNK`] applies: a
/// reduction over 4 members (4 sources, 4 dests) ran faster chunked, where
/// pushes to 2 or 4 dests and copies of 2 blocks ran slower, and copies of
/// 8 blocks alike either way (benches/RESULTS.md, "Contiguous shares on
/// llvmpipe").
pub(super) const LLVMPIPE_CHUNK_STREAMS: usize = 8;

/// Share `part` of `parts` of a push of `bytes` from byte offset `src` (in the
/// source PE's heap) to `dst` (in every dest PE's), or `None` when it cannot
/// take the wide push: not whole 32-bit words, `src` and `dst` not as far
/// off 16-byte alignment as each other or off whole words (an object that
/// is starts inside its windows' vec4 0: `WideArgs::lead`), or a window
/// past the heap or wider than `max_range` (callers cut
/// larger objects into [`piece_bytes`]). Depends only on its arguments,
/// never on `part`'s validity, so members that compute it for the same object
/// agree.
pub(crate) fn push_plan(
    bytes: u64,
    src: u64,
    dst: u64,
    part: u32,
    parts: u32,
    heap: u64,
    max_range: u64,
) -> Option<WidePlan> {
    if bytes == 0 || bytes % 4 != 0 || src % 4 != 0 || src % 16 != dst % 16 || parts == 0 {
        return None;
    }
    // An object as far off 16-byte alignment at both ends starts `lead`
    // words into the vec4 0 of its windows.
    let lead = (src % 16) / 4;
    let (src, dst) = (src - src % 16, dst - dst % 16);
    let words = u32::try_from(lead + bytes / 4).ok()?;
    let vecs = (words as u64).div_ceil(4);
    // Each object's window runs to its last vec4 (reading the few bytes past
    // its end is harmless; writing them is not, and the kernels do not).
    let w = |at| window(at, vecs * 16, heap, WIDE_WINDOW_ALIGN, max_range);
    let (s, d) = (w(src)?, w(dst)?);
    // Shares of the whole vec4s below `words / 4` (the kernels' loop; vec4 0
    // is whole when `lead` is 0), as an aligned object's would be, so that
    // their chunks are laid alike (`loop_vecs`); the last share also takes
    // the tail's vec4, where the object ends inside one.
    let body = words as u64 / 4;
    let per = body.div_ceil(parts as u64).max(1);
    let first = (part as u64 * per).min(body);
    let end = if part + 1 == parts {
        vecs
    } else {
        (first + per).min(body)
    };
    Some(WidePlan {
        src: s,
        dst: d,
        args: WideArgs {
            first: first as u32,
            end: end as u32,
            words,
            s0: ((src - s.0) / 16) as u32,
            d0: ((dst - d.0) / 16) as u32,
            per: 0,
            lead: lead as u32,
            members: 0,
        },
    })
}

/// The vec4s that a wide kernel's loop walks in the range `first..end` of an
/// object of `words` words from its vec4 0: those below `words / 4` (an
/// edge vec4 past them, where the object ends inside it, is stored apart).
/// What the chunks are cut from (`Runtime::wide_groups`): an object that
/// starts inside its vec4 0 is then chunked as an aligned one of its size
/// (on llvmpipe, chunks one vec4 longer than the aligned object's ran an
/// unaligned alltoall markedly slower: benches/RESULTS.md, "Contiguous shares
/// on llvmpipe").
pub(super) fn loop_vecs(first: u32, end: u32, words: u32) -> u64 {
    end.min(words / 4).saturating_sub(first) as u64
}

/// The items a wide copy kernel's loop walks per block: words of the word
/// kernel (its whole `first..end`), or the vec4s below the vec4 kernel's
/// tail edge ([`loop_vecs`]).
pub(super) fn copy_items(words_kernel: bool, a: &WideCopyArgs) -> u64 {
    if words_kernel {
        (a.end - a.first) as u64
    } else {
        loop_vecs(a.first, a.end, a.words)
    }
}

/// The pieces `(offset, bytes)` of an object of `bytes` bytes, each at most
/// `piece` ([`piece_bytes`]).
pub(super) fn chunks(bytes: u64, piece: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..bytes.div_ceil(piece).max(1)).map(move |i| {
        let at = i * piece;
        (at, piece.min(bytes - at))
    })
}

/// One block of a wide push: `bytes` at byte offset `src` of PE `from`, to
/// byte offset `dst` of every dest PE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Push {
    pub from: u32,
    pub src: u64,
    pub dst: u64,
    pub bytes: u64,
}

/// The source counts of the steps of a reduction over `size` members, more
/// than [`WIDE_REDUCE_MAX_MEMBERS`]: groups of that many, the last the rest.
pub(super) fn chained_groups(size: u32) -> Vec<u32> {
    let max = WIDE_REDUCE_MAX_MEMBERS;
    (0..size.div_ceil(max))
        .map(|g| max.min(size - g * max))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_group_blocks_where_a_launch_costs_more_than_a_stream() {
        let max = WIDE_REDUCE_MAX_MEMBERS as usize;
        // A GPU: up to 8 blocks whose dest window fits the binding.
        assert_eq!(blocks_per_copy(4 << 20, u32::MAX as u64, 64, false), max);
        assert_eq!(blocks_per_copy(1 << 30, u32::MAX as u64, 64, false), 3);
        assert_eq!(blocks_per_copy(1 << 27, 1 << 27, 64, false), 1);
        assert_eq!(blocks_per_copy(0, 1 << 27, 16, false), max);
        // Contiguous shares (llvmpipe): one block a launch at any size.
        for block in [0u64, 16, 4 << 20, 1 << 26] {
            assert_eq!(blocks_per_copy(block, 1 << 27, 16, true), 1);
        }
    }

    #[test]
    fn windows_grow_with_the_device_range_up_to_2_gib() {
        // lavapipe (2^27), NVIDIA (2^32 - 1), a range off a power of two.
        assert_eq!(window_max(1 << 27), 1 << 27);
        assert_eq!(window_max(u32::MAX as u64), 1 << 31);
        assert_eq!(window_max((1 << 30) + (1 << 29)), 1 << 30);
        assert_eq!(window_max(1 << 20), WIDE_WINDOW_MAX_BYTES);
        for range in [1u64 << 27, 3 << 28, u32::MAX as u64] {
            let w = window_max(range);
            let piece = piece_bytes(w);
            // A piece at any aligned-down start fits its window.
            assert!(piece + WIDE_WINDOW_ALIGN <= w && w <= range.max(WIDE_WINDOW_MAX_BYTES));
            let pieces: Vec<_> = chunks(3 * piece + 16, piece).collect();
            assert_eq!(
                pieces,
                [
                    (0, piece),
                    (piece, piece),
                    (2 * piece, piece),
                    (3 * piece, 16)
                ]
            );
            // A whole piece at the worst offset has a plan at this range.
            let n = piece / 4;
            assert!(
                plan(
                    4,
                    2,
                    1,
                    4096 + 12,
                    12,
                    n,
                    Bounds {
                        heap: 1 << 33,
                        max_range: w
                    }
                )
                .is_some(),
                "{range}"
            );
        }
        // 1 GiB of f32 (the whole message): one piece on NVIDIA, not on lavapipe.
        assert!(plan(
            4,
            2,
            0,
            0,
            1 << 31,
            1 << 28,
            Bounds {
                heap: 1 << 33,
                max_range: window_max(u32::MAX as u64)
            }
        )
        .is_some());
        assert!(plan(
            4,
            2,
            0,
            0,
            1 << 31,
            1 << 28,
            Bounds {
                heap: 1 << 33,
                max_range: window_max(1 << 27)
            }
        )
        .is_none());
        // Blocks up to a piece go grouped (`copy_wide`): two 1 GiB blocks on
        // NVIDIA's range, 4 bytes off alignment, in one launch whose counts
        // fit their u32s.
        let g = 1u64 << 30;
        let p = copy_plan(
            16,
            2,
            g,
            4,
            4 * g + 4,
            256,
            Bounds {
                heap: 1 << 34,
                max_range: u32::MAX as u64,
            },
        )
        .unwrap();
        let v = 1u32 << 26;
        assert_eq!(
            (p.args.words, p.args.end, p.args.stride),
            (4 * v + 1, v + 1, v)
        );
        assert_eq!((p.src, p.dst), ((0, g + 16), (4 * g, 2 * g + 16)));
        assert!(copy_plan(
            16,
            2,
            g,
            4,
            4 * g + 4,
            256,
            Bounds {
                heap: 1 << 34,
                max_range: 1 << 27
            }
        )
        .is_none());
    }

    #[test]
    fn shares_cover_every_vec4_once() {
        for members in 1..=WIDE_REDUCE_MAX_MEMBERS {
            for n in [1u64, 3, 4, 5, 17, 1000, 1 << 20] {
                let mut next = 0;
                for me in 0..members {
                    let p = plan(
                        4,
                        members,
                        me,
                        4096,
                        8192,
                        n,
                        Bounds {
                            heap: 1 << 30,
                            max_range: WIDE_WINDOW_MAX_BYTES,
                        },
                    )
                    .unwrap();
                    assert!(p.args.first as u64 <= p.args.end as u64);
                    if p.args.first < p.args.end {
                        assert_eq!(p.args.first, next, "members {members} n {n}");
                        next = p.args.end;
                    }
                }
                assert_eq!(next as u64, n.div_ceil(4));
            }
        }
    }

    #[test]
    fn loops_and_edge_ranges_cover_every_vec4_once() {
        // For every start offset in whole words, length and member count:
        // the loop's vec4s (those a vec2<u64> kernel moves) and the edge
        // ranges (which the vec4<u32> kernel stores) over every member's
        // share touch each vec4 of the object exactly once, and no other.
        for lead_bytes in [0u64, 4, 8, 12] {
            for bytes in [4u64, 8, 12, 16, 20, 28, 32, 44, 64, 1000, 4096 + 4, 1 << 16] {
                for parts in [1u32, 2, 3, 4, 7, 8] {
                    let mut seen = std::collections::BTreeMap::new();
                    for part in 0..parts {
                        let src = 4096 + lead_bytes;
                        let p = push_plan(bytes, src, src + 8192, part, parts, 1 << 20, 1 << 27)
                            .unwrap();
                        let a = p.args;
                        let low = u32::from(a.lead != 0);
                        for i in a.first.max(low)..a.end.min(a.words / 4) {
                            *seen.entry(i).or_insert(0) += 1;
                        }
                        for (f, e) in edge_ranges(a.first, a.end, a.words, a.lead) {
                            assert_eq!(e, f + 1);
                            *seen.entry(f).or_insert(0) += 1;
                        }
                    }
                    let vecs = (lead_bytes + bytes).div_ceil(16) as u32;
                    let want: std::collections::BTreeMap<u32, i32> =
                        (0..vecs).map(|i| (i, 1)).collect();
                    assert_eq!(seen, want, "lead {lead_bytes} bytes {bytes} parts {parts}");
                    assert_eq!(
                        has_edges(4096 + lead_bytes, bytes),
                        lead_bytes != 0 || bytes % 16 != 0
                    );
                }
            }
        }
        // An aligned object of whole vec4s has none.
        assert!(edge_ranges(0, 64, 256, 0).is_empty());
        // Only the share that holds an edge gets it.
        assert_eq!(edge_ranges(0, 10, 81, 1), vec![(0, 1)]);
        assert_eq!(edge_ranges(10, 21, 81, 1), vec![(20, 21)]);
        assert_eq!(edge_ranges(5, 10, 81, 1), vec![]);
        // An object inside one vec4: the head's launch stores it whole.
        assert_eq!(edge_ranges(0, 1, 3, 1), vec![(0, 1)]);
    }

    #[test]
    fn chained_groups_cover_the_team() {
        assert_eq!(chained_groups(9), vec![8, 1]);
        assert_eq!(chained_groups(16), vec![8, 8]);
        assert_eq!(chained_groups(21), vec![8, 8, 5]);
        for size in 9..40 {
            let g = chained_groups(size);
            assert_eq!(g.iter().sum::<u32>(), size);
            assert!(g
                .iter()
                .all(|&k| (1..=WIDE_REDUCE_MAX_MEMBERS).contains(&k)));
        }
    }

    #[test]
    fn splits() {
        // Aligned: all wide, a tail of whole words too.
        assert_eq!(
            split(256, 512, 100),
            Some(Split {
                head: 0,
                mid: 100,
                tail: 0
            })
        );
        // A tail of bytes.
        assert_eq!(
            split(256, 512, 102),
            Some(Split {
                head: 0,
                mid: 96,
                tail: 6
            })
        );
        // Equally misaligned by 4: 12 head bytes.
        assert_eq!(
            split(260, 516, 100),
            Some(Split {
                head: 12,
                mid: 88,
                tail: 0
            })
        );
        assert_eq!(
            split(257, 1, 50),
            Some(Split {
                head: 15,
                mid: 32,
                tail: 3
            })
        );
        // Unequally misaligned, or nothing left for the wide kernel.
        assert_eq!(split(260, 512, 100), None);
        assert_eq!(split(260, 516, 12), None);
        assert_eq!(split(260, 516, 27), None);
        // Every split covers the object.
        for (d, s, b) in [(3u64, 19u64, 1000u64), (8, 24, 17), (0, 0, 1), (14, 30, 18)] {
            if let Some(sp) = split(d, s, b) {
                assert_eq!(sp.head + sp.mid + sp.tail, b);
                assert_eq!((d + sp.head) % 16, 0);
            }
        }
    }

    #[test]
    fn copy_plans() {
        let p = copy_plan(
            16,
            3,
            64,
            512 + 32,
            1024 + 16,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27,
            },
        )
        .unwrap();
        assert_eq!(p.src, (512, 32 + 64));
        assert_eq!(p.dst, (1024, 16 + 192));
        let a = p.args;
        assert_eq!((a.first, a.end, a.words, a.lead), (0, 4, 16, 0));
        assert_eq!((a.s0, a.d0, a.stride), (2, 1, 4));
        // Blocks of whole vec4s equally off alignment in whole words: each
        // starts a word into its vec4 0 and ends in the vec4 of the next one's
        // start; the windows from the vec4s below.
        let p = copy_plan(
            16,
            3,
            64,
            512 + 36,
            1024 + 4,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27,
            },
        )
        .unwrap();
        assert_eq!(p.src, (512, 32 + 80));
        assert_eq!(p.dst, (1024, 208));
        let a = p.args;
        assert_eq!((a.first, a.end, a.words, a.lead), (0, 5, 17, 1));
        assert_eq!((a.s0, a.d0, a.stride), (2, 0, 4));
        // One block off whole vec4s: its edges in two vec4s.
        let p = copy_plan(
            16,
            1,
            20,
            512 + 4,
            1024 + 4,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27,
            },
        )
        .unwrap();
        assert_eq!((p.src, p.dst), ((512, 32), (1024, 32)));
        let a = p.args;
        assert_eq!((a.end, a.words, a.lead, a.s0, a.d0), (2, 6, 1, 0, 0));
        // Several blocks off whole vec4s, sources and dests off alignment
        // unlike each other, not whole words, too many blocks, past the heap,
        // too wide.
        assert!(copy_plan(
            16,
            3,
            24,
            0,
            0,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27
            }
        )
        .is_none());
        assert!(copy_plan(
            16,
            1,
            24,
            4,
            8,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27
            }
        )
        .is_none());
        assert!(copy_plan(
            16,
            1,
            22,
            0,
            0,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27
            }
        )
        .is_none());
        assert!(copy_plan(
            16,
            3,
            64,
            8,
            0,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27
            }
        )
        .is_none());
        assert!(copy_plan(
            16,
            WIDE_REDUCE_MAX_MEMBERS + 1,
            64,
            0,
            0,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27
            }
        )
        .is_none());
        assert!(copy_plan(
            16,
            2,
            64,
            0,
            (1 << 20) - 64,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27
            }
        )
        .is_none());
        assert!(copy_plan(
            16,
            2,
            1 << 20,
            0,
            0,
            64,
            Bounds {
                heap: 1 << 30,
                max_range: 1 << 20
            }
        )
        .is_none());
        // Word by word: blocks and addresses in whole words, counts in words,
        // windows from the aligned start below.
        let p = copy_plan(
            4,
            3,
            8,
            512 + 36,
            1024 + 4,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27,
            },
        )
        .unwrap();
        assert_eq!(p.src, (512, 36 + 8));
        assert_eq!(p.dst, (1024, 4 + 24));
        let a = p.args;
        assert_eq!((a.first, a.end, a.words, a.lead), (0, 2, 2, 0));
        assert_eq!((a.s0, a.d0, a.stride), (9, 1, 2));
        // Its loop walks every word; the vec4 kernel's the vec4s below its tail.
        let big = copy_plan(
            4,
            2,
            1 << 20,
            4,
            0,
            64,
            Bounds {
                heap: 1 << 24,
                max_range: 1 << 27,
            },
        )
        .unwrap();
        assert_eq!(copy_items(true, &big.args), 1 << 18);
        let v = copy_plan(
            16,
            1,
            (1 << 20) + 4,
            4,
            4,
            64,
            Bounds {
                heap: 1 << 24,
                max_range: 1 << 27,
            },
        )
        .unwrap();
        assert_eq!(copy_items(false, &v.args), 1 << 16);
        assert!(copy_plan(
            16,
            3,
            8,
            512,
            1024,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27
            }
        )
        .is_none());
        assert!(copy_plan(
            4,
            3,
            6,
            0,
            0,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27
            }
        )
        .is_none());
        assert!(copy_plan(
            4,
            3,
            8,
            2,
            0,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27
            }
        )
        .is_none());
        assert!(copy_plan(
            4,
            3,
            8,
            0,
            1,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27
            }
        )
        .is_none());
        assert!(copy_plan(
            4,
            2,
            8,
            0,
            (1 << 20) - 8,
            64,
            Bounds {
                heap: 1 << 20,
                max_range: 1 << 27
            }
        )
        .is_none());
    }

    #[test]
    fn objects_off_alignment_start_inside_vec4_0() {
        // 4 bytes past alignment at both ends: windows from the vec4 below,
        // one word of it before the object.
        let p = push_plan(40, 260, 516, 0, 1, 4096, 1 << 27).unwrap();
        assert_eq!((p.src, p.dst), ((256, 48), (512, 48)));
        let a = p.args;
        assert_eq!(
            (a.s0, a.d0, a.lead, a.words, a.first, a.end),
            (0, 0, 1, 11, 0, 3)
        );
        // Shares by vec4 over the parts, vec4 0 (the head) in the first.
        // The shares split the whole vec4s below words / 4 (2), the last also
        // takes the tail's vec4.
        let q = push_plan(40, 260 + 1024, 516, 1, 2, 4096, 1 << 27).unwrap();
        assert_eq!((q.args.first, q.args.end, q.args.s0), (1, 3, 0));
        let z = push_plan(40, 260 + 1024, 516, 0, 2, 4096, 1 << 27).unwrap();
        assert_eq!((z.args.first, z.args.end), (0, 1));
        assert_eq!(loop_vecs(z.args.first, z.args.end, z.args.words), 1);
        assert_eq!(loop_vecs(q.args.first, q.args.end, q.args.words), 1);
        // An object inside one vec4: the last share holds it.
        for part in 0..3 {
            let t = push_plan(8, 4, 4, part, 3, 4096, 1 << 27).unwrap();
            let want = if part == 2 { (0, 1) } else { (0, 0) };
            assert_eq!((t.args.first, t.args.end), want, "part {part}");
        }
        assert_eq!(q.src, (1280, 48));
        // Unequally off, or off whole words: no plan.
        assert!(push_plan(40, 260, 520, 0, 1, 4096, 1 << 27).is_none());
        assert!(push_plan(40, 258, 514, 0, 1, 4096, 1 << 27).is_none());
        // 8-byte elements start at a half vec4.
        assert!(plan(
            8,
            2,
            0,
            516,
            260,
            5,
            Bounds {
                heap: 4096,
                max_range: WIDE_WINDOW_MAX_BYTES
            }
        )
        .is_none());
        assert_eq!(
            plan(
                8,
                2,
                0,
                520,
                264,
                5,
                Bounds {
                    heap: 4096,
                    max_range: WIDE_WINDOW_MAX_BYTES
                }
            )
            .unwrap()
            .args
            .lead,
            2
        );
        // A reduction's split: no head where the wide kernels start inside
        // vec4 0; a tail off whole words on the generic kernel.
        let sp = |head, mid, tail| Some(Split { head, mid, tail });
        assert_eq!(split_words(260, 516, 100, 4), sp(0, 100, 0));
        assert_eq!(split_words(262 - 2, 518 - 2, 102, 2), sp(0, 100, 2));
        assert_eq!(split_words(260, 516, 96, 8), split(260, 516, 96));
        assert_eq!(split_words(264, 520, 96, 8), sp(0, 96, 0));
        assert_eq!(split_words(257, 1, 50, 1), split(257, 1, 50));
        assert_eq!(split_words(260, 516, 2, 2), None);
    }

    #[test]
    fn windows_and_fallbacks() {
        let p = plan(
            4,
            2,
            0,
            256 + 48,
            512 + 16,
            10,
            Bounds {
                heap: 4096,
                max_range: WIDE_WINDOW_MAX_BYTES,
            },
        )
        .unwrap();
        assert_eq!(p.dst, (256, 48 + 48));
        assert_eq!(p.src, (512, 16 + 48));
        assert_eq!((p.args.d0, p.args.s0), (3, 1));
        // Shares of the whole vec4s (2), the last with the tail's vec4.
        assert_eq!((p.args.first, p.args.end, p.args.words), (0, 1, 10));
        // 8-byte elements: words are twice the elements; 1-byte: a quarter.
        let p = plan(
            8,
            2,
            1,
            0,
            256,
            10,
            Bounds {
                heap: 4096,
                max_range: WIDE_WINDOW_MAX_BYTES,
            },
        )
        .unwrap();
        assert_eq!((p.args.first, p.args.end, p.args.words), (3, 5, 20));
        let p = plan(
            1,
            3,
            0,
            0,
            256,
            100,
            Bounds {
                heap: 4096,
                max_range: WIDE_WINDOW_MAX_BYTES,
            },
        )
        .unwrap();
        assert_eq!((p.args.first, p.args.end, p.args.words), (0, 2, 25));
        // Any number of members (beyond 8: the chained steps), none is none.
        assert!(plan(
            4,
            WIDE_REDUCE_MAX_MEMBERS + 1,
            0,
            0,
            256,
            10,
            Bounds {
                heap: 4096,
                max_range: WIDE_WINDOW_MAX_BYTES
            }
        )
        .is_some());
        assert!(plan(
            4,
            0,
            0,
            0,
            256,
            10,
            Bounds {
                heap: 4096,
                max_range: WIDE_WINDOW_MAX_BYTES
            }
        )
        .is_none());
        // Not whole words, an odd size, misaligned, past the heap, too large.
        assert!(plan(
            2,
            2,
            0,
            0,
            256,
            7,
            Bounds {
                heap: 4096,
                max_range: WIDE_WINDOW_MAX_BYTES
            }
        )
        .is_none());
        assert!(plan(
            3,
            2,
            0,
            0,
            256,
            8,
            Bounds {
                heap: 4096,
                max_range: WIDE_WINDOW_MAX_BYTES
            }
        )
        .is_none());
        assert!(plan(
            4,
            2,
            0,
            4,
            256,
            10,
            Bounds {
                heap: 4096,
                max_range: WIDE_WINDOW_MAX_BYTES
            }
        )
        .is_none());
        assert!(plan(
            4,
            2,
            0,
            4096 - 16,
            0,
            10,
            Bounds {
                heap: 4096,
                max_range: WIDE_WINDOW_MAX_BYTES
            }
        )
        .is_none());
        assert!(plan(
            4,
            2,
            0,
            0,
            1 << 28,
            1 << 26,
            Bounds {
                heap: 1 << 30,
                max_range: WIDE_WINDOW_MAX_BYTES
            }
        )
        .is_none());
        assert!(plan(
            4,
            2,
            0,
            0,
            0,
            0,
            Bounds {
                heap: 4096,
                max_range: WIDE_WINDOW_MAX_BYTES
            }
        )
        .is_none());
    }
}
