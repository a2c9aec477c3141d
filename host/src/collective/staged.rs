//! Host collectives on teams that span devices: the staged transport
//! ([`crate::transport`]).
//!
//! No member touches another member's heap. The data goes through the node
//! segment's staging buffers (host memory every PE maps), in rounds of
//! [`STAGE_BYTES`] per member:
//!
//! 1. each member copies bytes `r S .. (r + 1) S` of its contribution (see
//!    `moves.rs`) from its heap into its staging buffer of parity `r & 1`
//!    (a memcpy when the heap is host-mapped, a copy through the device's
//!    staging buffer otherwise);
//! 2. the members meet on the plane, each saying whether its copies so far
//!    worked (a member that failed stops every member at the same round);
//! 3. each member copies what it needs from the members' buffers into its own
//!    dest (or combines them, for a reduction).
//!
//! A buffer of parity `p` is written again two rounds later, which no member
//! starts before every member has met at the round between, i.e. finished
//! reading; a closing meeting after the last round lets the next call start
//! writing at once. Teams have a set of buffers per team slot (and the active
//! sets one more), so calls on different teams never share one.

use super::host_path::ReduceFn;
use super::moves::{self, Plan};
use super::{Desc, Members};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::sync::layout::STAGE_BYTES;

/// A round's descriptor: a tag (members in another call notice) and whether
/// this member staged its part.
const ROUND_TAG: u32 = 0x5354_4744;

impl Context {
    /// Whether some member of `m` is reached through staging: the same answer
    /// on every member (a member elsewhere exists exactly when the team spans
    /// devices).
    pub(crate) fn spans_devices(&self, m: &Members) -> bool {
        m.shape
            .members()
            .any(|p| self.inner.heap.transport(p) != Some(crate::transport::Transport::Direct))
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
        let plane = self.inner.plane.as_ref().ok_or_else(|| {
            Error::Bootstrap("a team spans devices but this PE has no node segment".into())
        })?;
        let (contrib, plan) = moves::plan(m, all)?;
        let me = self.my_pe();
        let src = all[m.me as usize].source;
        let s = STAGE_BYTES as u64;
        let rounds = contrib.iter().map(|b| b.div_ceil(s)).max().unwrap_or(0);
        let buffer = |member: u32, round: u64| {
            plane.staging(m.slot, m.shape.member(member), (round & 1) as u32)
        };
        let mut combined: Vec<u8> = Vec::new();
        // This PE's first failure (staging its part in, or writing its dest):
        // reported at the next meeting, so that every member stops at the
        // same round instead of waiting for one that left.
        let mut failed: Option<Error> = None;
        for r in 0..rounds {
            let (lo, hi) = (r * s, (r + 1) * s);
            let mine = contrib[m.me as usize].min(hi).saturating_sub(lo);
            if mine > 0 && failed.is_none() {
                // SAFETY: this PE's staging buffer of this parity is its own
                // until it meets the others below (module docs); `mine` is at
                // most STAGE_BYTES; no other reference to it exists here.
                let to = unsafe { std::slice::from_raw_parts_mut(buffer(m.me, r), mine as usize) };
                if let Err(e) = self.read_bytes(me, src + lo, to) {
                    failed = Some(e);
                }
            }
            let met = self
                .meet(m, &mut |_| [ROUND_TAG, u32::from(failed.is_none())])
                .map_err(|e| e.during(name))?;
            if let Some(i) = met.descs.iter().position(|d| d[0] != ROUND_TAG) {
                return Err(Error::InvalidArgument(format!(
                    "collectives out of step on the team: this PE is in {name} (staged round {r}), team member {i} (PE {}) in another call",
                    m.shape.member(i as u32)
                )));
            }
            if let Some(i) = met.descs.iter().position(|d| d[1] == 0) {
                // Every member saw the same descriptors: all stop here.
                return Err(failed.unwrap_or_else(|| {
                    Error::InvalidArgument(format!(
                        "{name}: team member {i} (PE {}) failed in staged round {r} (its error says why)",
                        m.shape.member(i as u32)
                    ))
                }));
            }
            if let Err(e) = self.copy_out_round(m, all, &plan, &contrib, r, reduce, &mut combined) {
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
    #[allow(clippy::too_many_arguments)]
    fn copy_out_round(
        &self,
        m: &Members,
        all: &[Desc],
        plan: &Plan,
        contrib: &[u64],
        r: u64,
        reduce: Option<ReduceFn>,
        combined: &mut Vec<u8>,
    ) -> Result<()> {
        let plane = self.inner.plane.as_ref().expect("checked by staged_move");
        let me = self.my_pe();
        let s = STAGE_BYTES as u64;
        let (lo, hi) = (r * s, (r + 1) * s);
        // The members' parts of this round are readable until this PE meets
        // them again.
        let part = |member: u32, at: u64, n: u64| -> &[u8] {
            let buffer = plane.staging(m.slot, m.shape.member(member), (r & 1) as u32);
            // SAFETY: member's buffer holds its bytes lo..lo + STAGE_BYTES of
            // its contribution (at - lo + n <= STAGE_BYTES: `within` and the
            // round bounds); it filled them before the meeting and rewrites
            // them only after the next one.
            unsafe { std::slice::from_raw_parts(buffer.add((at - lo) as usize), n as usize) }
        };
        match plan {
            Plan::Copies(moves) => {
                for mv in moves {
                    for (at, dest, n) in mv.within(lo, hi.min(contrib[mv.member as usize])) {
                        self.write_bytes(me, dest, part(mv.member, at, n))?;
                    }
                }
            }
            Plan::Reduce { dest, bytes, op } => {
                let n = (*bytes).min(hi) - lo;
                let es = all[m.me as usize].es as u64;
                let slots: Vec<*const u8> =
                    (0..m.shape.size).map(|i| part(i, lo, n).as_ptr()).collect();
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
}
