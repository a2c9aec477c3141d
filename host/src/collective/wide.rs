//! The wide paths of host collectives: kernels that bind the objects of the
//! members directly and move vec4s, with no per-access PE switch or bounds check.
//!
//! Pull collectives (broadcast, fcollect, alltoall, collect, unit-stride
//! alltoalls) on 16-byte aligned objects and blocks, from any number of
//! members in launches of up to [`WIDE_REDUCE_MAX_MEMBERS`]: each PE copies
//! the blocks it needs into its own dest (`wide_copy_source`); blocks and
//! objects off whole vec4s but in whole words word by word
//! (`wide_copy_words_source`). Only this PE's dest is written, so each PE
//! may choose its path alone. Pushes (broadcast, fcollect, collect: each
//! member writes its share of a source to every member's dest; the
//! broadcast's first member all of it where it submits every part) take
//! objects 16-byte aligned or equally off it in whole words.
//!
//! Reductions of every kind (1-, 2-, 4- and 8-byte elements, the object a
//! whole number of 32-bit words) on objects whose source and dest are
//! 16-byte aligned or equally off it in whole words (`WideArgs::lead`):
//! teams of up to
//! [`WIDE_REDUCE_MAX_MEMBERS`] in one launch (`wide_reduce_source`), larger
//! ones in steps over groups of that many sources into this PE's dest
//! (`wide_accumulate_source`), then pushes of the result (`wide_push_source`).
//! The split of the work is the generic path's (each member combines one
//! slice and writes it to every member) but by vec4 instead of by word, so
//! every member of a call must take the same path: the choice depends only on
//! values the members agreed on, the heap size (symmetric) and the device's
//! binding limit (every PE of a job is on one device).
//!
//! Every kernel moves 16-byte units, as `vec4<u32>` or, where the context's
//! [`WideUnit`] says so (llvmpipe), as `vec2<u64>`. The `vec2<u64>` kernels
//! walk the whole vec4s only; an object's edge vec4s (a start inside its
//! vec4 0, an end inside its last) then go through the `vec4<u32>` kernel in
//! one-workgroup launches beside the main one ([`edge_ranges`],
//! [`WideKernel`]). The unit changes no share or window, so each PE may
//! choose its own.

use vkshmem_device::collectives::{
    self, Kind, ReduceOp, WideArgs, WideCopyArgs, WideUnit, WIDE_REDUCE_MAX_MEMBERS,
    WIDE_REDUCE_WORKGROUP, WIDE_WINDOW_ALIGN, WIDE_WINDOW_MAX_BYTES,
};

use std::sync::Arc;

use super::part::{Part, Planned, Step};
use super::Members;
use crate::context::{Context, HeapWindow};
use crate::error::Result;
use crate::kernels::DeviceKernel;

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

/// One launch of a wide kernel with its immediates (`WideArgs` for pushes,
/// `WideCopyArgs` for pulls).
fn planned<A: bytemuck::Pod>(
    kernel: Arc<DeviceKernel>,
    groups: u32,
    windows: Vec<HeapWindow>,
    args: A,
) -> Planned {
    Planned {
        kernel,
        groups,
        windows,
        immediates: bytemuck::bytes_of(&args).to_vec(),
    }
}

/// A wide kernel in the context's [`WideUnit`] and, where that unit leaves
/// the objects' edge vec4s to another launch, the `vec4<u32>` kernel that
/// stores them.
#[derive(Clone)]
pub(crate) struct WideKernel {
    main: Arc<DeviceKernel>,
    /// Whether `main` stores the edges itself ([`WideUnit::stores_edges`]).
    stores_edges: bool,
    /// The kernel for the edges where `main` does not store them and the
    /// objects it was built for have edges.
    edges: Option<Arc<DeviceKernel>>,
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
fn has_edges(at: u64, bytes: u64) -> bool {
    at % 16 != 0 || (at + bytes) % 16 != 0
}

/// The share-describing immediates of the wide kernels.
trait Share: bytemuck::Pod {
    /// `(first, end, words, lead)`.
    fn range(&self) -> (u32, u32, u32, u32);
    /// The same immediates over `first..end` with `per`.
    fn over(self, first: u32, end: u32, per: u32) -> Self;
}

impl Share for WideArgs {
    fn range(&self) -> (u32, u32, u32, u32) {
        (self.first, self.end, self.words, self.lead)
    }
    fn over(self, first: u32, end: u32, per: u32) -> Self {
        WideArgs {
            first,
            end,
            per,
            ..self
        }
    }
}

impl Share for WideCopyArgs {
    fn range(&self) -> (u32, u32, u32, u32) {
        (self.first, self.end, self.words, self.lead)
    }
    fn over(self, first: u32, end: u32, per: u32) -> Self {
        WideCopyArgs {
            first,
            end,
            per,
            ..self
        }
    }
}

/// The launches of `k` over `windows` with immediates `args` (with `per`)
/// in `groups` workgroups, where its loop walks `items` items
/// ([`loop_vecs`], [`copy_items`]): the main kernel (unless `items` is 0
/// and it stores no edges), then one
/// one-workgroup launch of the edge kernel per edge range
/// ([`edge_ranges`]) where the main kernel leaves the edges. They write
/// disjoint bytes: one step.
fn wide_launches<A: Share>(
    k: &WideKernel,
    (groups, per): (u32, u32),
    windows: Vec<HeapWindow>,
    args: A,
    items: u64,
) -> Result<Vec<Planned>> {
    let (first, end, words, lead) = args.range();
    if k.stores_edges {
        return Ok(vec![planned(
            k.main.clone(),
            groups,
            windows,
            args.over(first, end, per),
        )]);
    }
    let edges = edge_ranges(first, end, words, lead);
    let mut launches = Vec::new();
    if items > 0 {
        let a = args.over(first, end, per);
        launches.push(planned(k.main.clone(), groups, windows.clone(), a));
    }
    if !edges.is_empty() {
        let Some(e) = &k.edges else {
            return Err(crate::error::Error::InvalidArgument(format!(
                "wide launch over {first}..{end} of {words} words from lead {lead}: its edges have no kernel"
            )));
        };
        for (f, e_end) in edges {
            launches.push(planned(
                e.clone(),
                1,
                windows.clone(),
                args.over(f, e_end, 0),
            ));
        }
    }
    Ok(launches)
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

/// The wide plan of member `me` of `members` reducing `n` elements of `es` bytes
/// from byte offset `source` into `dest`, in a heap of `heap` bytes; `None` when
/// the call must take the generic path. The share split and windows are a
/// push's ([`push_plan`]) with the members as the parts, windows at most
/// `max_range` bytes (the device's [`window_max`]: every member of a call
/// on the wide path is on the same device, so all decide alike).
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan(
    es: u32,
    members: u32,
    me: u32,
    dest: u64,
    source: u64,
    n: u64,
    heap: u64,
    max_range: u64,
) -> Option<WidePlan> {
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
fn window(at: u64, bytes: u64, heap: u64, align: u64, max_range: u64) -> Option<(u64, u64)> {
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
/// alignment, `max_range` its largest binding, `heap` the heap size.
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_plan(
    unit: u64,
    blocks: u32,
    block: u64,
    src: u64,
    dst: u64,
    heap: u64,
    align: u64,
    max_range: u64,
) -> Option<CopyPlan> {
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

/// Blocks of `block` bytes that one launch of [`Context::copy_wide`] copies:
/// as many as a dest window within `range` (less the offset `align`ment's
/// slack) holds, up to [`WIDE_REDUCE_MAX_MEMBERS`]; one where the wide
/// kernels give each invocation a contiguous share (`shares`: llvmpipe,
/// [`Context::wide_launch`]). There a copy of `k` blocks walks `k` sources
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
const LLVMPIPE_SHARE_MAX: u64 = 32768;

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
const LLVMPIPE_CHUNK: u64 = 128;

/// The windows a wide kernel walks from which [`LLVMPIPE_CHUNK`] applies: a
/// reduction over 4 members (4 sources, 4 dests) ran faster chunked, where
/// pushes to 2 or 4 dests and copies of 2 blocks ran slower, and copies of
/// 8 blocks alike either way (benches/RESULTS.md, "Contiguous shares on
/// llvmpipe").
const LLVMPIPE_CHUNK_STREAMS: usize = 8;

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
        },
    })
}

/// The vec4s that a wide kernel's loop walks in the range `first..end` of an
/// object of `words` words from its vec4 0: those below `words / 4` (an
/// edge vec4 past them, where the object ends inside it, is stored apart).
/// What the chunks are cut from ([`Context::wide_groups`]): an object that
/// starts inside its vec4 0 is then chunked as an aligned one of its size
/// (on llvmpipe, chunks one vec4 longer than the aligned object's ran an
/// unaligned alltoall markedly slower: benches/RESULTS.md, "Contiguous shares
/// on llvmpipe").
fn loop_vecs(first: u32, end: u32, words: u32) -> u64 {
    end.min(words / 4).saturating_sub(first) as u64
}

/// The items a wide copy kernel's loop walks per block: words of the word
/// kernel (its whole `first..end`), or the vec4s below the vec4 kernel's
/// tail edge ([`loop_vecs`]).
fn copy_items(words_kernel: bool, a: &WideCopyArgs) -> u64 {
    if words_kernel {
        (a.end - a.first) as u64
    } else {
        loop_vecs(a.first, a.end, a.words)
    }
}

/// The pieces `(offset, bytes)` of an object of `bytes` bytes, each at most
/// `piece` ([`piece_bytes`]).
fn chunks(bytes: u64, piece: u64) -> impl Iterator<Item = (u64, u64)> {
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

impl Context {
    /// The widest window of the wide paths on this PE's device
    /// ([`window_max`]).
    pub(crate) fn wide_window(&self) -> u64 {
        window_max(self.device_info().max_storage_buffer_range)
    }

    /// The largest piece of an object per wide launch on this PE's device
    /// ([`piece_bytes`]).
    pub(crate) fn wide_piece(&self) -> u64 {
        piece_bytes(self.wide_window())
    }

    /// The wide kernel `name` (the `vec4<u32>` kernel's name; the unit's
    /// kernel takes [`WideUnit::suffix`]) in this PE's unit
    /// ([`Context::wide_unit`]), from `source` for a unit, and where the
    /// unit leaves the edges and `edges` (the objects have some) the
    /// `vec4<u32>` kernel for them; `None` where `source` gives none.
    fn wide_kernel(
        &self,
        name: &str,
        edges: bool,
        source: impl Fn(WideUnit) -> Option<String>,
    ) -> Result<Option<WideKernel>> {
        let unit = self.wide_unit();
        let Some(main) =
            self.library_kernel(&format!("{name}{}", unit.suffix()), || source(unit))?
        else {
            return Ok(None);
        };
        let edges = if edges && !unit.stores_edges() {
            match self.library_kernel(name, || source(WideUnit::Vec4U32))? {
                Some(k) => Some(k),
                None => return Ok(None),
            }
        } else {
            None
        };
        Ok(Some(WideKernel {
            main,
            stores_edges: unit.stores_edges(),
            edges,
        }))
    }

    /// The launches that copy `block` bytes at byte offset `src` of each PE
    /// in `from` into consecutive blocks at `dst` of PE `to`, on the wide
    /// path; `None` when the call must take the generic path (which then
    /// writes the whole dest again). A launch takes a group of blocks
    /// ([`blocks_per_copy`]: up to [`WIDE_REDUCE_MAX_MEMBERS`] whose dest
    /// window fits the device's largest binding, one on llvmpipe); blocks
    /// past [`piece_bytes`] go one at a time, in pieces of that size (all
    /// launches take the wide path or none does).
    pub(crate) fn copy_wide(
        &self,
        to: u32,
        from: &[u32],
        block: u64,
        src: u64,
        dst: u64,
    ) -> Result<Option<Vec<Planned>>> {
        let mut plans = Vec::new();
        let mut add = |p: Option<Vec<Planned>>| p.map(|p| plans.extend(p)).is_some();
        let piece = self.wide_piece();
        if block > piece {
            for (j, &pe) in from.iter().enumerate() {
                for (at, b) in chunks(block, piece) {
                    let to_at = dst + j as u64 * block + at;
                    if !add(self.copy_wide_launch(to, &[pe], b, src + at, to_at)?) {
                        return Ok(None);
                    }
                }
            }
            return Ok(Some(plans));
        }
        let info = self.device_info();
        let fit = blocks_per_copy(
            block,
            info.max_storage_buffer_range,
            info.min_storage_offset_alignment,
            info.is_llvmpipe(),
        );
        for (i, group) in from.chunks(fit).enumerate() {
            let at = (i * fit) as u64 * block;
            if !add(self.copy_wide_launch(to, group, block, src, dst + at)?) {
                return Ok(None);
            }
        }
        Ok(Some(plans))
    }

    /// The launch of one group of at most [`WIDE_REDUCE_MAX_MEMBERS`] of
    /// [`Context::copy_wide`]: in vec4s (blocks and objects equally off
    /// 16-byte alignment start inside their vec4 0, `WideCopyArgs::lead`),
    /// else word by word (sources and dests off alignment unlike each other,
    /// or several blocks off whole vec4s); `None` when it cannot take the
    /// wide path (not whole words, or past the heap or the binding limits).
    /// In vec4s, the edge vec4s' launches follow where the unit leaves them
    /// ([`wide_launches`]).
    fn copy_wide_launch(
        &self,
        to: u32,
        from: &[u32],
        block: u64,
        src: u64,
        dst: u64,
    ) -> Result<Option<Vec<Planned>>> {
        let info = self.device_info();
        let blocks = from.len() as u32;
        let (heap, align, range) = (
            self.heap_size(),
            info.min_storage_offset_alignment,
            info.max_storage_buffer_range,
        );
        let (p, words) = match copy_plan(16, blocks, block, src, dst, heap, align, range) {
            Some(p) => (p, false),
            None => match copy_plan(4, blocks, block, src, dst, heap, align, range) {
                Some(p) => (p, true),
                None => return Ok(None),
            },
        };
        let library = self.library_config()?.bindings().len() as u64;
        if library + from.len() as u64 + 1 > info.max_storage_buffers_per_stage as u64 {
            return Ok(None);
        }
        let wg = self.wide_workgroup();
        let k = if words {
            let k = self.library_kernel(&format!("vkshmem_wide_copy_words_{blocks}"), || {
                collectives::wide_copy_words_source(blocks, wg)
            })?;
            k.map(|main| WideKernel {
                main,
                stores_edges: true,
                edges: None,
            })
        } else {
            let a = p.args;
            let edges = !edge_ranges(a.first, a.end, a.words, a.lead).is_empty();
            self.wide_kernel(&format!("vkshmem_wide_copy_{blocks}"), edges, |unit| {
                collectives::wide_copy_source(blocks, wg, unit)
            })?
        };
        let Some(k) = k else {
            return Ok(None);
        };
        let w: Vec<HeapWindow> = windows(from.iter().copied(), p.src)
            .chain([heap_window(to, p.dst)])
            .collect();
        let items = copy_items(words, &p.args);
        let groups = self.wide_groups(items, w.len(), wg);
        wide_launches(&k, groups, w, p.args, items).map(Some)
    }

    /// The launch of the host collectives' wide copies and pushes over `vecs`
    /// vec4s that read or write `windows` windows: the workgroups (of
    /// [`Context::wide_workgroup`]) and the kernels' `per` immediate
    /// (`WideArgs::per`, `WideCopyArgs::per`). For benchmarks that time the
    /// library's own kernels as its collectives launch them (the bench's
    /// roofline).
    pub fn wide_launch(&self, vecs: u64, windows: usize) -> (u32, u32) {
        self.wide_groups(vecs, windows, self.wide_workgroup())
    }

    /// Workgroups for a wide kernel over `vecs` vec4s that reads or writes
    /// `streams` windows, and the kernel's `per` (vec4s of each chunk an
    /// invocation takes, or 0 for the grid-wide stride; see `wide_loop` in
    /// the device crate). On llvmpipe, a contiguous share of `per` vec4s per
    /// invocation, taken together by each SIMD row of 8 with its lanes
    /// interleaved, over one workgroup per driver thread (more where a share
    /// would pass [`LLVMPIPE_SHARE_MAX`] loop iterations), cut into chunks
    /// of [`LLVMPIPE_CHUNK`] vec4s per invocation dealt round-robin where the
    /// kernel walks [`LLVMPIPE_CHUNK_STREAMS`] windows or more; elsewhere one vec4 per
    /// invocation, as many workgroups of [`Context::wide_workgroup`] as that
    /// takes up to the dispatch limit (a GPU needs the parallelism). On
    /// llvmpipe a contiguous share runs faster than the grid-wide stride,
    /// which has every invocation jump across the whole object
    /// (benches/RESULTS.md, "Contiguous shares on llvmpipe").
    fn wide_groups(&self, vecs: u64, streams: usize, workgroup: u32) -> (u32, u32) {
        let wg = workgroup as u64;
        if self.device_info().is_llvmpipe() {
            let max = self.max_groups();
            let threads = self.resident_workgroups().max(1) as u64;
            let groups = threads
                .max(vecs.div_ceil(wg * LLVMPIPE_SHARE_MAX))
                .min(vecs.div_ceil(wg).max(1))
                .min(max);
            let mut per = vecs.div_ceil(groups * wg).max(1);
            if streams >= 2 * LLVMPIPE_CHUNK_STREAMS {
                per = per.min(LLVMPIPE_CHUNK / 2);
            } else if streams >= LLVMPIPE_CHUNK_STREAMS {
                per = per.min(LLVMPIPE_CHUNK);
            }
            return (groups as u32, per as u32);
        }
        (self.groups_of(vecs, wg), 0)
    }

    /// Whether every block of `pushes` (the whole call's, every member's) can
    /// take the wide push to `dests` dest PEs: decided from the agreed
    /// arguments, the heap size and the device's limits only, so every
    /// member of a call decides alike (a push writes the other members'
    /// dests: all push or none does). Builds the kernels it needs, so that a
    /// kernel that fails to build fails the call before anything moves.
    pub(crate) fn push_possible(&self, pushes: &[Push], dests: usize) -> Result<bool> {
        if dests == 0 || pushes.iter().all(|p| p.bytes == 0) {
            return Ok(false);
        }
        let info = self.device_info();
        let heap = self.heap_size();
        let fits = pushes.iter().all(|p| {
            p.bytes == 0
                || chunks(p.bytes, self.wide_piece()).all(|(at, b)| {
                    push_plan(
                        b,
                        p.src + at,
                        p.dst + at,
                        0,
                        1,
                        heap,
                        info.max_storage_buffer_range,
                    )
                    .is_some()
                })
        });
        let edges = pushes
            .iter()
            .any(|p| p.bytes > 0 && has_edges(p.src, p.bytes));
        Ok(fits && self.push_kernels(dests, edges)?)
    }

    /// Builds the wide push kernels for `dests` dest PEs (a launch per group
    /// of [`WIDE_REDUCE_MAX_MEMBERS`]), with the kernels for the edges where
    /// the objects have `edges`; `false` when the device cannot bind
    /// that many windows beside the library's own bindings (the same answer on
    /// every PE of a device).
    pub(crate) fn push_kernels(&self, dests: usize, edges: bool) -> Result<bool> {
        let group = dests.min(WIDE_REDUCE_MAX_MEMBERS as usize);
        let library = self.library_config()?.bindings().len();
        if group == 0
            || library + 1 + group > self.device_info().max_storage_buffers_per_stage as usize
        {
            return Ok(false);
        }
        let mut sizes = vec![group];
        if dests % group != 0 {
            sizes.push(dests % group);
        }
        for d in sizes {
            if self.push_kernel(d, edges)?.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn push_kernel(&self, dests: usize, edges: bool) -> Result<Option<WideKernel>> {
        self.wide_kernel(&format!("vkshmem_wide_push_{dests}"), edges, |unit| {
            collectives::wide_push_source(dests as u32, self.wide_workgroup(), unit)
        })
    }

    /// The launches of share `part` of `parts` of the wide push `p` to the
    /// PEs `to` (after [`Context::push_possible`] said yes for the whole
    /// call): one per piece of [`piece_bytes`] and per group of
    /// [`WIDE_REDUCE_MAX_MEMBERS`] dests. They write disjoint bytes and read
    /// only the source: one step.
    pub(crate) fn push_wide(
        &self,
        p: &Push,
        to: &[u32],
        part: u32,
        parts: u32,
    ) -> Result<Vec<Planned>> {
        let info = self.device_info();
        let mut launches = Vec::new();
        for (at, bytes) in chunks(p.bytes, self.wide_piece()).filter(|&(_, b)| b > 0) {
            let plan = push_plan(
                bytes,
                p.src + at,
                p.dst + at,
                part,
                parts,
                self.heap_size(),
                info.max_storage_buffer_range,
            )
            .ok_or_else(|| {
                crate::error::Error::InvalidArgument(format!(
                    "wide push of {bytes} bytes at {} to {}: no plan (push_possible said yes)",
                    p.src + at,
                    p.dst + at
                ))
            })?;
            let items = (plan.args.end - plan.args.first) as u64;
            if items == 0 {
                continue;
            }
            launches.extend(self.push_share(
                heap_window(p.from, plan.src),
                to,
                plan.dst,
                plan.args,
            )?);
        }
        Ok(launches)
    }

    /// The launches of the wide push of the share `args.first..args.end`
    /// from the window `source` into the window `dst` of each PE of `to`, one
    /// per group of [`WIDE_REDUCE_MAX_MEMBERS`] (the push kernels built
    /// already: [`Context::push_kernels`]).
    fn push_share(
        &self,
        source: HeapWindow,
        to: &[u32],
        dst: (u64, u64),
        args: WideArgs,
    ) -> Result<Vec<Planned>> {
        let edges = !edge_ranges(args.first, args.end, args.words, args.lead).is_empty();
        let mut launches = Vec::new();
        for group in to.chunks(WIDE_REDUCE_MAX_MEMBERS as usize) {
            let k = self.push_kernel(group.len(), edges)?.ok_or_else(|| {
                crate::error::Error::InvalidArgument(format!(
                    "wide push to {} dests: no kernel (push_kernels built it)",
                    group.len()
                ))
            })?;
            let mut w = vec![source];
            w.extend(windows(group.iter().copied(), dst));
            let vecs = loop_vecs(args.first, args.end, args.words);
            let groups = self.wide_groups(vecs, w.len(), self.wide_workgroup());
            launches.extend(wide_launches(&k, groups, w, args, vecs)?);
        }
        Ok(launches)
    }

    /// The wide kernels and the split when the call qualifies (`None`:
    /// the generic path). Called before the agreement, so that a kernel that
    /// fails to build fails the call on every member through it, instead of
    /// leaving this member's share unwritten. Whether a call qualifies depends
    /// on the arguments (agreed before anything moves), the heap size and this
    /// device's storage-binding limit (every PE of a job is on one device).
    pub(crate) fn wide_prepare(
        &self,
        m: &Members,
        kind: &Kind,
        op: ReduceOp,
        dest: u64,
        source: u64,
        n: u64,
    ) -> Result<Option<(WideReduce, Split)>> {
        let size = m.shape.size;
        if !collectives::wide_kind_available(&self.library_config()?, kind) {
            return Ok(None);
        }
        let es = kind.bytes as u64;
        let Some(sp) = split_words(dest, source, n * es, es) else {
            return Ok(None);
        };
        // Whether a plan exists depends only on the object, not on the
        // member (`push_plan`): each member's own comes with its part, a
        // plan per piece.
        let (d, s, heap) = (dest + sp.head, source + sp.head, self.heap_size());
        let range = self.wide_window();
        if !chunks(sp.mid, piece_bytes(range)).all(|(at, b)| {
            plan(kind.bytes, size, m.me, d + at, s + at, b / es, heap, range).is_some()
        }) {
            return Ok(None);
        }
        let library = self.library_config()?.bindings().len() as u64;
        let most = self.device_info().max_storage_buffers_per_stage as u64;
        let edges = has_edges(d, sp.mid);
        if size > WIDE_REDUCE_MAX_MEMBERS {
            // Groups of up to 8 sources and this PE's dest per step, then a
            // push to up to 8 dests per launch.
            let max = WIDE_REDUCE_MAX_MEMBERS as u64;
            if library + max + 1 > most || !self.push_kernels(size as usize - 1, edges)? {
                return Ok(None);
            }
            let steps = self.accumulate_kernels(kind, op, &chained_groups(size), edges)?;
            return Ok(steps.map(|steps| (WideReduce::Chained(steps), sp)));
        }
        if library + 2 * size as u64 > most {
            return Ok(None);
        }
        let name = format!("vkshmem_wide_reduce_{}_{}_{size}", kind.name, op.name());
        let k = self.wide_kernel(&name, edges, |unit| {
            collectives::wide_reduce_source(kind, op, size, WIDE_REDUCE_WORKGROUP, unit)
        })?;
        Ok(k.map(|k| (WideReduce::Direct(k), sp)))
    }

    /// Member `me`'s part of a reduction of `bytes` (whole words, both
    /// objects 16-byte aligned or equally off it in whole words) of
    /// elements of `es` bytes at `source` into
    /// `dest` on the wide path: one plan per piece of [`piece_bytes`]
    /// (no window past [`window_max`]), the pieces' steps side by
    /// side (they touch disjoint bytes).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reduce_wide(
        &self,
        m: &Members,
        me: u32,
        w: &WideReduce,
        es: u32,
        dest: u64,
        source: u64,
        bytes: u64,
    ) -> Result<Part> {
        let mut parts = Vec::new();
        let range = self.wide_window();
        for (at, b) in chunks(bytes, piece_bytes(range)).filter(|&(_, b)| b > 0) {
            let (d, s) = (dest + at, source + at);
            let n = b / es as u64;
            let p =
                plan(es, m.shape.size, me, d, s, n, self.heap_size(), range).ok_or_else(|| {
                    crate::error::Error::InvalidArgument(format!(
                        "reduce: no wide plan for member {me} at {s} (wide_prepare found one)"
                    ))
                })?;
            parts.push(self.reduce_piece(m, me, w, &p)?);
        }
        Ok(super::part::side_by_side(parts))
    }

    /// Member `me`'s part of one piece of a reduction on the wide path (`p`:
    /// its plan, [`plan`]).
    fn reduce_piece(&self, m: &Members, me: u32, w: &WideReduce, p: &WidePlan) -> Result<Part> {
        let items = (p.args.end - p.args.first) as u64;
        if items == 0 {
            return Ok(Vec::new());
        }
        // Each launch's shape for the windows it walks.
        let vecs = loop_vecs(p.args.first, p.args.end, p.args.words);
        let launch = |k: &WideKernel, w: Vec<HeapWindow>| {
            let groups = self.wide_groups(vecs, w.len(), WIDE_REDUCE_WORKGROUP);
            wide_launches(k, groups, w, p.args, vecs)
        };
        let steps = match w {
            WideReduce::Direct(k) => {
                let w: Vec<HeapWindow> = windows(m.shape.members(), p.src)
                    .chain(windows(m.shape.members(), p.dst))
                    .collect();
                return Ok(vec![Step::Wide(launch(k, w)?)]);
            }
            WideReduce::Chained(steps) => steps,
        };
        // The member's share, group by group into its own dest: its own
        // source first (in place, the dest is the source, whose share only
        // this member reads), then the others in team order from the next one.
        let size = m.shape.size;
        let order: Vec<u32> = (0..size).map(|i| m.shape.member((me + i) % size)).collect();
        let own = heap_window(m.shape.member(me), p.dst);
        let mut part = Vec::new();
        for (k, group) in steps
            .iter()
            .zip(order.chunks(WIDE_REDUCE_MAX_MEMBERS as usize))
        {
            let mut w: Vec<HeapWindow> = windows(group.iter().copied(), p.src).collect();
            w.push(own);
            part.push(Step::Wide(launch(k, w)?));
        }
        // Then the share from the member's dest into the others' (only this
        // member writes that share of any dest).
        let pushes = self.push_share(
            own,
            &order[1..],
            p.dst,
            WideArgs {
                s0: p.args.d0,
                ..p.args
            },
        )?;
        part.push(Step::Wide(pushes));
        Ok(part)
    }
}

impl Context {
    /// The `wide_accumulate_source` kernels of a chained reduction, one per
    /// group of `groups` sources (the first without the dest's running
    /// result, the later ones onto it); `None` where `kind` or `op` has none.
    fn accumulate_kernels(
        &self,
        kind: &Kind,
        op: ReduceOp,
        groups: &[u32],
        edges: bool,
    ) -> Result<Option<Vec<WideKernel>>> {
        let mut kernels = Vec::new();
        for (g, &sources) in groups.iter().enumerate() {
            let accumulate = g > 0;
            let name = format!(
                "vkshmem_wide_acc_{}_{}_{sources}_{}",
                kind.name,
                op.name(),
                if accumulate { "acc" } else { "first" }
            );
            let Some(k) = self.wide_kernel(&name, edges, |unit| {
                collectives::wide_accumulate_source(
                    kind,
                    op,
                    sources,
                    accumulate,
                    WIDE_REDUCE_WORKGROUP,
                    unit,
                )
            })?
            else {
                return Ok(None);
            };
            kernels.push(k);
        }
        Ok(Some(kernels))
    }

    /// The launches that fold `bytes` (whole 32-bit words) of elements of
    /// `kind` at byte offset `sources[i]` of PE `pes[i]`'s heap, in that
    /// order, with `op` into PE `to`'s heap at byte offset `dest`: groups
    /// of up to [`WIDE_REDUCE_MAX_MEMBERS`] sources per step
    /// (`wide_accumulate_source`, the later groups onto the dest's running
    /// result), pieces of [`piece_bytes`] side by side. For UCC's folds
    /// (`vectored.rs`), whose sources sit at each member's own offset.
    /// `None` where the call must fold on the host: the kind has no wide
    /// kernel on this device, the bytes are not whole words, a source is
    /// not as far off 16-byte alignment as the dest or not as far off the
    /// device's storage-offset alignment as the first source (one `s0`
    /// serves every source window), or a window passes the heap or the
    /// binding limits. Every PE of `pes` and `to` must be bound directly
    /// (`Transport::Direct`: the caller checks).
    pub(crate) fn fold_wide(
        &self,
        kind: &Kind,
        op: ReduceOp,
        pes: &[u32],
        sources: &[u64],
        (to, dest): (u32, u64),
        bytes: u64,
    ) -> Result<Option<Part>> {
        let es = kind.bytes as u64;
        let info = self.device_info();
        let align = info.min_storage_offset_alignment.max(16);
        let aligned = |a: u64| a % 16 == dest % 16 && a % align == sources[0] % align;
        if pes.is_empty()
            || pes.len() != sources.len()
            || bytes == 0
            || bytes % 4 != 0
            || dest % 4 != 0
            || (es == 8 && dest % 8 != 0)
            || !sources.iter().all(|&s| aligned(s))
            || !collectives::wide_kind_available(&self.library_config()?, kind)
        {
            return Ok(None);
        }
        let max = WIDE_REDUCE_MAX_MEMBERS as usize;
        let library = self.library_config()?.bindings().len() as u64;
        if library + pes.len().min(max) as u64 + 1 > info.max_storage_buffers_per_stage as u64 {
            return Ok(None);
        }
        let edges = has_edges(dest, bytes);
        let groups: Vec<u32> = pes.chunks(max).map(|g| g.len() as u32).collect();
        let Some(kernels) = self.accumulate_kernels(kind, op, &groups, edges)? else {
            return Ok(None);
        };
        let (heap, range) = (self.heap_size(), self.wide_window());
        let mut parts = Vec::new();
        for (at, b) in chunks(bytes, piece_bytes(range)) {
            let d = dest + at;
            let lead = (d % 16) / 4;
            let words = lead + b / 4;
            let units = words.div_ceil(4);
            // Each object from the start of its vec4 0 to the end of its
            // last (the kernels read no further than the object's words).
            let bind = |a: u64| window(a - a % 16, units * 16, heap, align, range);
            let Some(dw) = bind(d) else {
                return Ok(None);
            };
            let Some(sw) = sources
                .iter()
                .map(|&s| bind(s + at))
                .collect::<Option<Vec<_>>>()
            else {
                return Ok(None);
            };
            let s0 = ((sources[0] + at) / 16 * 16 - sw[0].0) / 16;
            let (Ok(end), Ok(words)) = (u32::try_from(units), u32::try_from(words)) else {
                return Ok(None);
            };
            let args = WideArgs {
                first: 0,
                end,
                words,
                s0: s0 as u32,
                d0: ((d / 16 * 16 - dw.0) / 16) as u32,
                per: 0,
                lead: lead as u32,
            };
            let vecs = loop_vecs(args.first, args.end, args.words);
            let mut part = Vec::new();
            for ((k, group), wins) in kernels.iter().zip(pes.chunks(max)).zip(sw.chunks(max)) {
                let w: Vec<HeapWindow> = group
                    .iter()
                    .zip(wins)
                    .map(|(&pe, &win)| heap_window(pe, win))
                    .chain([heap_window(to, dw)])
                    .collect();
                let groups = self.wide_groups(vecs, w.len(), WIDE_REDUCE_WORKGROUP);
                part.push(Step::Wide(wide_launches(k, groups, w, args, vecs)?));
            }
            parts.push(part);
        }
        Ok(Some(super::part::side_by_side(parts)))
    }
}

/// The window `(offset, bytes)` of PE `pe`.
fn heap_window(pe: u32, (offset, bytes): (u64, u64)) -> HeapWindow {
    HeapWindow { pe, offset, bytes }
}

/// The window `(offset, bytes)` of each PE of `pes`.
fn windows(pes: impl IntoIterator<Item = u32>, at: (u64, u64)) -> impl Iterator<Item = HeapWindow> {
    pes.into_iter().map(move |pe| heap_window(pe, at))
}

/// The kernels of a reduction on the wide path.
pub(crate) enum WideReduce {
    /// One launch binding every member's source and dest (up to
    /// [`WIDE_REDUCE_MAX_MEMBERS`] members).
    Direct(WideKernel),
    /// More members: one step per group of [`chained_groups`] (the first
    /// without the dest's running result), then pushes of this PE's share.
    Chained(Vec<WideKernel>),
}

/// The source counts of the steps of a reduction over `size` members, more
/// than [`WIDE_REDUCE_MAX_MEMBERS`]: groups of that many, the last the rest.
fn chained_groups(size: u32) -> Vec<u32> {
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
                plan(4, 2, 1, 4096 + 12, 12, n, 1 << 33, w).is_some(),
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
            1 << 33,
            window_max(u32::MAX as u64)
        )
        .is_some());
        assert!(plan(4, 2, 0, 0, 1 << 31, 1 << 28, 1 << 33, window_max(1 << 27)).is_none());
        // Blocks up to a piece go grouped (`copy_wide`): two 1 GiB blocks on
        // NVIDIA's range, 4 bytes off alignment, in one launch whose counts
        // fit their u32s.
        let g = 1u64 << 30;
        let p = copy_plan(16, 2, g, 4, 4 * g + 4, 1 << 34, 256, u32::MAX as u64).unwrap();
        let v = 1u32 << 26;
        assert_eq!(
            (p.args.words, p.args.end, p.args.stride),
            (4 * v + 1, v + 1, v)
        );
        assert_eq!((p.src, p.dst), ((0, g + 16), (4 * g, 2 * g + 16)));
        assert!(copy_plan(16, 2, g, 4, 4 * g + 4, 1 << 34, 256, 1 << 27).is_none());
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
                        1 << 30,
                        WIDE_WINDOW_MAX_BYTES,
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
        let p = copy_plan(16, 3, 64, 512 + 32, 1024 + 16, 1 << 20, 64, 1 << 27).unwrap();
        assert_eq!(p.src, (512, 32 + 64));
        assert_eq!(p.dst, (1024, 16 + 192));
        let a = p.args;
        assert_eq!((a.first, a.end, a.words, a.lead), (0, 4, 16, 0));
        assert_eq!((a.s0, a.d0, a.stride), (2, 1, 4));
        // Blocks of whole vec4s equally off alignment in whole words: each
        // starts a word into its vec4 0 and ends in the vec4 of the next one's
        // start; the windows from the vec4s below.
        let p = copy_plan(16, 3, 64, 512 + 36, 1024 + 4, 1 << 20, 64, 1 << 27).unwrap();
        assert_eq!(p.src, (512, 32 + 80));
        assert_eq!(p.dst, (1024, 208));
        let a = p.args;
        assert_eq!((a.first, a.end, a.words, a.lead), (0, 5, 17, 1));
        assert_eq!((a.s0, a.d0, a.stride), (2, 0, 4));
        // One block off whole vec4s: its edges in two vec4s.
        let p = copy_plan(16, 1, 20, 512 + 4, 1024 + 4, 1 << 20, 64, 1 << 27).unwrap();
        assert_eq!((p.src, p.dst), ((512, 32), (1024, 32)));
        let a = p.args;
        assert_eq!((a.end, a.words, a.lead, a.s0, a.d0), (2, 6, 1, 0, 0));
        // Several blocks off whole vec4s, sources and dests off alignment
        // unlike each other, not whole words, too many blocks, past the heap,
        // too wide.
        assert!(copy_plan(16, 3, 24, 0, 0, 1 << 20, 64, 1 << 27).is_none());
        assert!(copy_plan(16, 1, 24, 4, 8, 1 << 20, 64, 1 << 27).is_none());
        assert!(copy_plan(16, 1, 22, 0, 0, 1 << 20, 64, 1 << 27).is_none());
        assert!(copy_plan(16, 3, 64, 8, 0, 1 << 20, 64, 1 << 27).is_none());
        assert!(copy_plan(
            16,
            WIDE_REDUCE_MAX_MEMBERS + 1,
            64,
            0,
            0,
            1 << 20,
            64,
            1 << 27
        )
        .is_none());
        assert!(copy_plan(16, 2, 64, 0, (1 << 20) - 64, 1 << 20, 64, 1 << 27).is_none());
        assert!(copy_plan(16, 2, 1 << 20, 0, 0, 1 << 30, 64, 1 << 20).is_none());
        // Word by word: blocks and addresses in whole words, counts in words,
        // windows from the aligned start below.
        let p = copy_plan(4, 3, 8, 512 + 36, 1024 + 4, 1 << 20, 64, 1 << 27).unwrap();
        assert_eq!(p.src, (512, 36 + 8));
        assert_eq!(p.dst, (1024, 4 + 24));
        let a = p.args;
        assert_eq!((a.first, a.end, a.words, a.lead), (0, 2, 2, 0));
        assert_eq!((a.s0, a.d0, a.stride), (9, 1, 2));
        // Its loop walks every word; the vec4 kernel's the vec4s below its tail.
        let big = copy_plan(4, 2, 1 << 20, 4, 0, 1 << 24, 64, 1 << 27).unwrap();
        assert_eq!(copy_items(true, &big.args), 1 << 18);
        let v = copy_plan(16, 1, (1 << 20) + 4, 4, 4, 1 << 24, 64, 1 << 27).unwrap();
        assert_eq!(copy_items(false, &v.args), 1 << 16);
        assert!(copy_plan(16, 3, 8, 512, 1024, 1 << 20, 64, 1 << 27).is_none());
        assert!(copy_plan(4, 3, 6, 0, 0, 1 << 20, 64, 1 << 27).is_none());
        assert!(copy_plan(4, 3, 8, 2, 0, 1 << 20, 64, 1 << 27).is_none());
        assert!(copy_plan(4, 3, 8, 0, 1, 1 << 20, 64, 1 << 27).is_none());
        assert!(copy_plan(4, 2, 8, 0, (1 << 20) - 8, 1 << 20, 64, 1 << 27).is_none());
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
        assert!(plan(8, 2, 0, 516, 260, 5, 4096, WIDE_WINDOW_MAX_BYTES).is_none());
        assert_eq!(
            plan(8, 2, 0, 520, 264, 5, 4096, WIDE_WINDOW_MAX_BYTES)
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
        let p = plan(4, 2, 0, 256 + 48, 512 + 16, 10, 4096, WIDE_WINDOW_MAX_BYTES).unwrap();
        assert_eq!(p.dst, (256, 48 + 48));
        assert_eq!(p.src, (512, 16 + 48));
        assert_eq!((p.args.d0, p.args.s0), (3, 1));
        // Shares of the whole vec4s (2), the last with the tail's vec4.
        assert_eq!((p.args.first, p.args.end, p.args.words), (0, 1, 10));
        // 8-byte elements: words are twice the elements; 1-byte: a quarter.
        let p = plan(8, 2, 1, 0, 256, 10, 4096, WIDE_WINDOW_MAX_BYTES).unwrap();
        assert_eq!((p.args.first, p.args.end, p.args.words), (3, 5, 20));
        let p = plan(1, 3, 0, 0, 256, 100, 4096, WIDE_WINDOW_MAX_BYTES).unwrap();
        assert_eq!((p.args.first, p.args.end, p.args.words), (0, 2, 25));
        // Any number of members (beyond 8: the chained steps), none is none.
        assert!(plan(
            4,
            WIDE_REDUCE_MAX_MEMBERS + 1,
            0,
            0,
            256,
            10,
            4096,
            WIDE_WINDOW_MAX_BYTES
        )
        .is_some());
        assert!(plan(4, 0, 0, 0, 256, 10, 4096, WIDE_WINDOW_MAX_BYTES).is_none());
        // Not whole words, an odd size, misaligned, past the heap, too large.
        assert!(plan(2, 2, 0, 0, 256, 7, 4096, WIDE_WINDOW_MAX_BYTES).is_none());
        assert!(plan(3, 2, 0, 0, 256, 8, 4096, WIDE_WINDOW_MAX_BYTES).is_none());
        assert!(plan(4, 2, 0, 4, 256, 10, 4096, WIDE_WINDOW_MAX_BYTES).is_none());
        assert!(plan(4, 2, 0, 4096 - 16, 0, 10, 4096, WIDE_WINDOW_MAX_BYTES).is_none());
        assert!(plan(4, 2, 0, 0, 1 << 28, 1 << 26, 1 << 30, WIDE_WINDOW_MAX_BYTES).is_none());
        assert!(plan(4, 2, 0, 0, 0, 0, 4096, WIDE_WINDOW_MAX_BYTES).is_none());
    }
}
