//! Host collectives on teams that span devices: the staged transport
//! ([`crate::transport`]); on one device too, where every member may move a
//! call on the host and it is too large for the plane's data slot (a CPU
//! device, see `host_path.rs`) but the direct path (`direct.rs`) may not
//! take it (a dest that overlaps what peers read, or a member that does not
//! map every member's heap).
//!
//! No member touches another member's heap. The data goes through the node
//! segment's staging buffers (host memory every PE maps), in rounds of
//! [`STAGE_BYTES`] per member:
//!
//! 1. each member copies round `r`'s part of its contribution (see
//!    `moves.rs`: bytes `r S .. (r + 1) S`, or for an alltoall a slice of
//!    every member's block, `moves::Cut`) from its heap into its staging
//!    buffer of parity `r & 1` (a memcpy when the heap is host-mapped, a copy
//!    through the device's staging buffer otherwise);
//! 2. the members meet on the plane, each saying whether its copies so far
//!    worked (a member that failed stops every member at the same round);
//! 3. each member copies what it needs from the members' buffers into its own
//!    dest (or combines them, for a reduction).
//!
//! A buffer of parity `p` is written again two rounds later, which no member
//! starts before every member has met at the round between, i.e. finished
//! reading; a closing meeting after the last round lets the next call start
//! writing at once. (One exception, on a heap the host does not map: a
//! reduction's combined round goes through its owner's buffer of the other
//! parity one round later, after the meeting that ends everyone's reading of
//! it; see `copy_out_by_device`.) Teams have a set of buffers per team slot (and the active
//! sets one more), so calls on different teams never share one.

use super::moves::{self, Cut, Plan, Window};
use super::{Desc, Members};
use crate::combine::ReduceFn;
use std::sync::Arc;

use ash::vk;

use crate::error::{Error, Result};
use crate::lock::lock;
use crate::runtime::Runtime;
use crate::sync::layout::staging_key;
use crate::sync::layout::STAGE_BYTES;
use crate::sync::Plane;
use crate::vk::host_import::HostImport;

/// A round's descriptor: a tag (members in another call notice) and whether
/// this member staged its part.
const ROUND_TAG: u32 = 0x5354_4744;

/// What a round's copy-out reads: the plan, the cut and every member's
/// contribution size, and this PE's private block (index, its mapped source)
/// when it skips staging.
struct RoundIo<'a> {
    plan: &'a Plan,
    cut: &'a Cut,
    contrib: &'a [u64],
    own: Option<(u64, *const u8)>,
    /// The team's staging set imported into this PE's device, when its heap
    /// is not host-mapped.
    import: Option<&'a HostImport>,
}

/// A reduction's round `r` (every member contributes `bytes`, one block
/// under the cut): its first byte and length, the same in every member's
/// staging buffer, from offset 0.
fn reduce_round(cut: &Cut, bytes: u64, r: u64) -> (u64, u64) {
    cut.windows(bytes, r)
        .next()
        .map_or((0, 0), |w| (w.lo, w.hi - w.lo))
}

/// A staged round's parts as the nodes' first members exchange them.
struct Exchange<'a> {
    plane: &'a Plane,
    cut: &'a Cut,
    contrib: &'a [u64],
    r: u64,
}

impl Exchange<'_> {
    /// Member `pe`'s (team index `i`) windows of this round: (offset in its
    /// staging buffer, bytes).
    fn windows(&self, i: usize) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.cut
            .windows(self.contrib[i], self.r)
            .map(|w| (w.at, w.hi - w.lo))
    }

    /// Member `pe`'s staging buffer of this round's parity in `slot`'s set.
    fn buffer(&self, slot: Option<u32>, pe: u32) -> *mut u8 {
        self.plane.staging(slot, pe, (self.r & 1) as u32)
    }
}

/// "Nobody" in a round's verdict words.
const NONE: u32 = u32::MAX;

impl Runtime {
    /// A staged round's meeting on a team that spans nodes (`h`: this PE's
    /// node's part): the node's members meet on their plane; the node's first
    /// member then sends the node's parts of the round (every node member's
    /// windows, from their staging buffers) and its verdict to the other
    /// nodes' first members (an MPI allgather among them), and writes what
    /// it receives into those members' staging buffers on this node; a second
    /// meeting on the node hands its verdict to the node's members. Returns
    /// the team's first member out of step and first that failed (team
    /// indices), the same on every member.
    ///
    /// The buffers of parity `p` of the other nodes' members on this node
    /// are written by its first member only, after its node's first meeting
    /// of the round (every member there has finished reading round `r - 2`),
    /// and read by the node's members after the second.
    fn meet_across_nodes(
        &self,
        m: &Members,
        h: &crate::runtime::rendezvous::NodePart,
        io: &Exchange,
        ok: bool,
    ) -> Result<(Option<usize>, Option<usize>)> {
        let index = |pe: u32| m.shape.index_of(pe).map_or(NONE, |i| i);
        let met = self.meet(&h.members, &mut |_| [ROUND_TAG, u32::from(ok), 0])?;
        let (mut odd, mut bad) = (NONE, NONE);
        for (i, d) in met.descs.iter().enumerate() {
            let t = index(h.members.shape.member(i as u32));
            if d[0] != ROUND_TAG {
                odd = odd.min(t);
            }
            if d[1] == 0 {
                bad = bad.min(t);
            }
        }
        if h.leader() {
            let mine = &h.parts[h.mine];
            let bytes: u64 = mine
                .iter()
                .flat_map(|&pe| io.windows(index(pe) as usize))
                .map(|(_, n)| n)
                .sum();
            let mut payload = Vec::with_capacity(8 + bytes as usize);
            payload.extend_from_slice(&odd.to_le_bytes());
            payload.extend_from_slice(&bad.to_le_bytes());
            for &pe in mine {
                let buf = io.buffer(m.slot, pe);
                for (at, n) in io.windows(index(pe) as usize) {
                    // SAFETY: the member filled this window of its buffer
                    // (within STAGE_BYTES, `Cut`) before the node's meeting
                    // above and rewrites it only after the next one.
                    payload.extend_from_slice(unsafe {
                        std::slice::from_raw_parts(buf.add(at as usize), n as usize)
                    });
                }
            }
            let leaders = h.leaders();
            let all = self.with_boot(Vec::new(), |b| {
                b.job()
                    .ok_or_else(|| {
                        Error::Bootstrap("a team spans nodes but this PE has no MPI".into())
                    })?
                    .group_allgather(&leaders, &payload)
            })?;
            for (j, blob) in all.iter().enumerate() {
                if j == h.mine {
                    continue;
                }
                let word = |k: usize| {
                    blob.get(4 * k..4 * k + 4)
                        .map_or(NONE, |b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
                };
                odd = odd.min(word(0));
                bad = bad.min(word(1));
                let mut at = 8usize;
                for &pe in &h.parts[j] {
                    let buf = io.buffer(m.slot, pe);
                    for (off, n) in io.windows(index(pe) as usize) {
                        let n = n as usize;
                        let Some(part) = blob.get(at..at + n) else {
                            return Err(Error::Bootstrap(format!(
                                "node of PE {} sent {} bytes for staged round {}, short of its parts",
                                leaders[j],
                                blob.len(),
                                io.r
                            )));
                        };
                        // SAFETY: PE `pe` is on another node: its buffers in
                        // this node's segment are written by this PE alone,
                        // now (see above: nobody here reads this parity
                        // until the meeting below); the window lies within
                        // STAGE_BYTES (`Cut`).
                        unsafe {
                            std::ptr::copy_nonoverlapping(part.as_ptr(), buf.add(off as usize), n)
                        };
                        at += n;
                    }
                }
            }
        }
        let verdict = [ROUND_TAG, odd, bad];
        let met = self.meet(&h.members, &mut |_| verdict)?;
        let v = met.descs[0];
        let some = |w: u32| (w != NONE).then_some(w as usize);
        Ok((some(v[1]), some(v[2])))
    }

    /// Whether some member of `m` is reached through staging: the same answer
    /// on every member (a member elsewhere exists exactly when the team spans
    /// devices).
    pub(crate) fn spans_devices(&self, m: &Members) -> bool {
        m.shape.members().any(|p| !self.bound_here(p))
    }

    /// Whether PE `pe`'s heap is on this PE's device, bound by kernels as a
    /// window (`Transport::Direct`).
    pub(crate) fn bound_here(&self, pe: u32) -> bool {
        self.heap.transport(pe) == Some(crate::transport::Transport::Direct)
    }

    /// Runs an agreed call through the staging buffers (see the module docs).
    /// `reduce` combines the members' parts of a reduction.
    pub(crate) fn staged_move(
        &self,
        m: &Members,
        all: &[Desc],
        name: &str,
        reduce: Option<ReduceFn>,
    ) -> Result<()> {
        let plane = self.plane.as_ref().ok_or_else(|| {
            Error::Bootstrap("a team spans devices but this PE has no node segment".into())
        })?;
        let (contrib, plan) = moves::plan(m, all)?;
        let me = self.my_pe();
        let src = all[m.me as usize].source;
        let cut = Cut::new(m, all, STAGE_BYTES as u64);
        let rounds = contrib.iter().map(|&b| cut.rounds(b)).max().unwrap_or(0);
        let buffer = |member: u32, round: u64| {
            plane.staging(m.slot, m.shape.member(member), (round & 1) as u32)
        };
        // An alltoall's block for this PE is read by this PE alone: with its
        // heap mapped it goes from the source straight to dest, never
        // through staging (a copy less of 1/n of the data).
        let own = cut.private_block(m.me).and_then(|k| {
            Some((
                k,
                self.own_mapped(src, contrib[m.me as usize])?.cast_const(),
            ))
        });
        // A heap the host does not map (a GPU's device-local memory): the
        // device copies between it and the staging buffers, imported into it,
        // a round's pieces in one submission each way.
        let import = if self.heap.block(me)?.mapped().is_none() {
            self.staging_import(plane, m.slot)
        } else {
            None
        };
        let mut combined: Vec<u8> = Vec::new();
        // A team that spans nodes: each round's parts cross between nodes
        // through their first members (`meet_across_nodes`).
        let hier = self.node_part(m);
        // This PE's first failure (staging its part in, or writing its dest):
        // reported at the next meeting, so that every member stops at the
        // same round instead of waiting for one that left.
        let mut failed: Option<Error> = None;
        for r in 0..rounds {
            match import.as_deref() {
                _ if failed.is_some() => {}
                Some(imp) => {
                    let base = Plane::staging_offset(me, r as u32);
                    let regions: Vec<vk::BufferCopy> = cut
                        .windows(contrib[m.me as usize], r)
                        .map(|w| vk::BufferCopy {
                            src_offset: src + w.lo,
                            dst_offset: base + w.at,
                            size: w.hi - w.lo,
                        })
                        .collect();
                    if let Err(e) = self.device_copies(me, &regions, imp, true) {
                        failed = Some(e);
                    }
                }
                None => {
                    for Window { block, lo, hi, at } in cut.windows(contrib[m.me as usize], r) {
                        if own.is_some_and(|(k, _)| k == block) {
                            continue;
                        }
                        // SAFETY: this PE's staging buffer of this parity is
                        // its own until it meets the others below (module
                        // docs); the window lies within its STAGE_BYTES
                        // (`Cut`); no other reference to it exists here.
                        let to = unsafe {
                            std::slice::from_raw_parts_mut(
                                buffer(m.me, r).add(at as usize),
                                (hi - lo) as usize,
                            )
                        };
                        if let Err(e) = self.read_bytes(me, src + lo, to) {
                            failed = Some(e);
                            break;
                        }
                    }
                }
            }
            // The first member out of step and the first that failed.
            let (odd, bad) = match &hier {
                None => {
                    let met = self
                        .meet(m, &mut |_| [ROUND_TAG, u32::from(failed.is_none())])
                        .map_err(|e| e.during(name))?;
                    (
                        met.descs.iter().position(|d| d[0] != ROUND_TAG),
                        met.descs.iter().position(|d| d[1] == 0),
                    )
                }
                Some(h) => {
                    let io = Exchange {
                        plane,
                        cut: &cut,
                        contrib: &contrib,
                        r,
                    };
                    self.meet_across_nodes(m, h, &io, failed.is_none())
                        .map_err(|e| e.during(name))?
                }
            };
            if let Some(i) = odd {
                return Err(Error::InvalidArgument(format!(
                    "collectives out of step on the team: this PE is in {name} (staged round {r}), team member {i} (PE {}) in another call",
                    m.shape.member(i as u32)
                )));
            }
            if let Some(i) = bad {
                // Every member saw the same descriptors: all stop here.
                return Err(failed.unwrap_or_else(|| {
                    Error::InvalidArgument(format!(
                        "{name}: team member {i} (PE {}) failed in staged round {r} (its error says why)",
                        m.shape.member(i as u32)
                    ))
                }));
            }
            let io = RoundIo {
                plan: &plan,
                cut: &cut,
                contrib: &contrib,
                own,
                import: import.as_deref(),
            };
            if let Err(e) = self.copy_out_round(m, all, &io, r, reduce, &mut combined) {
                failed = Some(e);
            }
        }
        if rounds > 0 {
            self.sync_members(m, name).map_err(|e| e.during(name))?;
        }
        // A failure in the last round's copy-out is this PE's own (its dest).
        failed.map_or(Ok(()), Err)
    }

    /// Round `r`'s copy-out: this PE's dest from the members' staging
    /// buffers (after the round's meeting).
    fn copy_out_round(
        &self,
        m: &Members,
        all: &[Desc],
        io: &RoundIo,
        r: u64,
        reduce: Option<ReduceFn>,
        combined: &mut Vec<u8>,
    ) -> Result<()> {
        if let Some(imp) = io.import {
            return self.copy_out_by_device(m, all, io, imp, r, reduce);
        }
        let plane = self.plane.as_ref().expect("checked by staged_move");
        let me = self.my_pe();
        // The members' parts of this round are readable until this PE meets
        // them again: `n` bytes at `offset` of the member's buffer.
        let part = |member: u32, offset: u64, n: u64| -> &[u8] {
            let buffer = plane.staging(m.slot, m.shape.member(member), (r & 1) as u32);
            // SAFETY: offset + n lies within one of the member's windows of
            // this round (`Cut::windows` and `within`), inside its
            // STAGE_BYTES; it filled them before the meeting and rewrites
            // them only after the next one.
            unsafe { std::slice::from_raw_parts(buffer.add(offset as usize), n as usize) }
        };
        match io.plan {
            Plan::Copies(moves) => {
                for mv in moves {
                    // Straight into the mapped dest when it is mapped: one
                    // range check per move, not one call per block.
                    let mapped = self.own_mapped(mv.dest, mv.dest_span());
                    for w in io.cut.windows(io.contrib[mv.member as usize], r) {
                        let own = io.own.filter(|&(k, _)| mv.member == m.me && k == w.block);
                        for (at, dest, n) in mv.within(w.lo, w.hi) {
                            let from = match own {
                                // SAFETY: contribution byte `at` of this PE is
                                // byte src + at of its mapped heap (own_mapped
                                // checked the whole contribution).
                                Some((_, p)) => unsafe { p.add(at as usize) },
                                None => part(mv.member, w.at + at - w.lo, n).as_ptr(),
                            };
                            match mapped {
                                // SAFETY: dest..dest + n lies within the
                                // move's dest span (`within`), which
                                // own_mapped checked lies in this PE's
                                // mapping; `from` holds n bytes (a staging
                                // buffer's window, or this PE's source, which
                                // an in-place call may make the same bytes:
                                // hence `copy`, a memmove); raw bytes, no
                                // references.
                                Some(p) => unsafe {
                                    std::ptr::copy(
                                        from,
                                        p.add((dest - mv.dest) as usize),
                                        n as usize,
                                    )
                                },
                                None => {
                                    // SAFETY: as above, n readable bytes.
                                    let from =
                                        unsafe { std::slice::from_raw_parts(from, n as usize) };
                                    self.write_bytes(me, dest, from)?
                                }
                            }
                        }
                    }
                }
            }
            Plan::Reduce { dest, bytes, op } => {
                let (lo, n) = reduce_round(io.cut, *bytes, r);
                let es = all[m.me as usize].es as u64;
                let slots: Vec<*const u8> =
                    (0..m.shape.size).map(|i| part(i, 0, n).as_ptr()).collect();
                let f = reduce.expect("reductions pass their combiner");
                if let Some(out) = self.own_mapped(dest + lo, n) {
                    // Straight into the mapped dest.
                    f(*op, (n / es) as usize, &slots, out);
                } else {
                    combined.resize(n as usize, 0);
                    f(*op, (n / es) as usize, &slots, combined.as_mut_ptr());
                    self.write_bytes(me, dest + lo, combined)?;
                }
            }
        }
        Ok(())
    }

    /// The staging set of `slot` imported into this PE's device, made on
    /// first use; `None` where the device cannot import it (then the copies
    /// go through the bounce buffer of `read_bytes`/`write_bytes`).
    fn staging_import(&self, plane: &Plane, slot: Option<u32>) -> Option<Arc<HostImport>> {
        let key = staging_key(slot);
        let mut imports = lock(&self.staging_imports);
        imports
            .entry(key)
            .or_insert_with(|| {
                let (ptr, len) = plane.staging_set(slot);
                let gpu = &self.gpu;
                if !HostImport::possible(gpu, ptr, len as u64) {
                    tracing::info!(
                        "PE {}: staged copies through a bounce buffer ({} cannot import the staging buffers: VK_EXT_external_memory_host missing or alignment)",
                        self.my_pe(),
                        gpu.info.name
                    );
                    return None;
                }
                // SAFETY: the range is part of the node segment's mapping,
                // which `self.plane` keeps for the life of the context;
                // the import is dropped before it (`Inner`'s field order).
                match unsafe { HostImport::new(gpu, ptr, len as u64) } {
                    Ok(i) => {
                        tracing::info!(
                            "PE {}: staging set of slot {key} ({len} bytes) imported into {}: staged copies by the device",
                            self.my_pe(),
                            gpu.info.name
                        );
                        Some(Arc::new(i))
                    }
                    Err(e) => {
                        tracing::warn!(
                            "PE {}: staged copies through a bounce buffer: {e}",
                            self.my_pe()
                        );
                        None
                    }
                }
            })
            .clone()
    }

    /// Runs `regions` between this PE's heap and the imported staging set in
    /// one submission: heap to staging when `inbound`, else staging to heap.
    /// Checks every region against both before recording.
    fn device_copies(
        &self,
        me: u32,
        regions: &[vk::BufferCopy],
        imp: &HostImport,
        inbound: bool,
    ) -> Result<()> {
        let heap = self.heap.block(me)?;
        for r in regions {
            let (h, st) = if inbound {
                (r.src_offset, r.dst_offset)
            } else {
                (r.dst_offset, r.src_offset)
            };
            self.check_range(me, h, r.size)?;
            if st + r.size > imp.size() {
                return Err(Error::InvalidArgument(format!(
                    "staged copy of {} bytes at {st} beyond the staging set ({} bytes)",
                    r.size,
                    imp.size()
                )));
            }
        }
        let (src, dst) = if inbound {
            (heap.buffer, imp.buffer)
        } else {
            (imp.buffer, heap.buffer)
        };
        lock(&self.submit).copy_regions(src, dst, regions)
    }

    /// Round `r`'s copy-out by the device (heap not host-mapped): the pieces
    /// of the members' staging buffers into dest in one submission, or, for
    /// a reduction, the combined round written into this PE's staging buffer
    /// of the other parity, then copied into dest. That buffer is free: every
    /// member finished reading it in the last round before this round's
    /// meeting, and this PE refills it only in the next round.
    fn copy_out_by_device(
        &self,
        m: &Members,
        all: &[Desc],
        io: &RoundIo,
        imp: &HostImport,
        r: u64,
        reduce: Option<ReduceFn>,
    ) -> Result<()> {
        let plane = self.plane.as_ref().expect("checked by staged_move");
        let me = self.my_pe();
        let parity = r as u32;
        let regions: Vec<vk::BufferCopy> = match io.plan {
            Plan::Copies(moves) => {
                let mut regions = Vec::new();
                for mv in moves {
                    let base = Plane::staging_offset(m.shape.member(mv.member), parity);
                    for w in io.cut.windows(io.contrib[mv.member as usize], r) {
                        regions.extend(mv.within(w.lo, w.hi).map(|(at, dest, n)| vk::BufferCopy {
                            src_offset: base + w.at + at - w.lo,
                            dst_offset: dest,
                            size: n,
                        }));
                    }
                }
                regions
            }
            Plan::Reduce { dest, bytes, op } => {
                let (lo, n) = reduce_round(io.cut, *bytes, r);
                let es = all[m.me as usize].es as u64;
                let slots: Vec<*const u8> = (0..m.shape.size)
                    .map(|i| {
                        plane
                            .staging(m.slot, m.shape.member(i), parity)
                            .cast_const()
                    })
                    .collect();
                let out = plane.staging(m.slot, me, parity + 1);
                let f = reduce.expect("reductions pass their combiner");
                // `out` is this PE's other staging buffer (see above): n <=
                // STAGE_BYTES bytes nobody else touches now, aligned.
                f(*op, (n / es) as usize, &slots, out);
                vec![vk::BufferCopy {
                    src_offset: Plane::staging_offset(me, parity + 1),
                    dst_offset: dest + lo,
                    size: n,
                }]
            }
        };
        let regions: Vec<vk::BufferCopy> = regions.into_iter().filter(|r| r.size > 0).collect();
        self.device_copies(me, &regions, imp, false)
    }
}
