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
    WIDE_REDUCE_WORKGROUP,
};

use std::sync::Arc;

use super::part::{Part, Planned, Step};
use super::Members;
use crate::error::Result;
use crate::kernels::library::LibraryKernel;
use crate::kernels::DeviceKernel;
use crate::runtime::{HeapWindow, Runtime};

mod copy;
mod plan;
mod reduce;

pub(crate) use plan::*;

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

impl Runtime {
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

    /// The wide kernel `k` in this PE's unit (`Runtime::wide_unit`), and
    /// where the unit leaves the edges and `edges` (the objects have some)
    /// its `vec4<u32>` twin for them; `None` where the library has none.
    pub(super) fn wide_kernel(&self, k: LibraryKernel, edges: bool) -> Result<Option<WideKernel>> {
        let unit = self.wide_unit();
        let Some(main) = self.library_kernel(&k.name(unit), || k.source(unit))? else {
            return Ok(None);
        };
        let edges = if edges && !unit.stores_edges() {
            let words = WideUnit::Vec4U32;
            match self.library_kernel(&k.name(words), || k.source(words))? {
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

    pub(crate) fn wide_launch(&self, vecs: u64, windows: usize) -> (u32, u32) {
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
    /// invocation, as many workgroups of [`Context::wide_workgroup`](crate::Context::wide_workgroup) as that
    /// takes up to the dispatch limit (a GPU needs the parallelism). On
    /// llvmpipe a contiguous share runs faster than the grid-wide stride,
    /// which has every invocation jump across the whole object
    /// (benches/RESULTS.md, "Contiguous shares on llvmpipe").
    pub(super) fn wide_groups(&self, vecs: u64, streams: usize, workgroup: u32) -> (u32, u32) {
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
}
