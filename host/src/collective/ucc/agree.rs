//! Step 1 of every UCC call: the agreement on its arguments.

use super::*;

impl Runtime {
    /// Step 1: shares `common` (alike on every member) and `own`, with this
    /// member's verdict on its own arguments; every member gets the same
    /// answer. A meeting of the members ([`Runtime::meet`]: on the sync
    /// plane for a team on one node, else through the bootstrap socket or
    /// MPI) carries each member's fingerprints, verdict and the length of
    /// its `own` (the same on every member for a call), with `own` itself
    /// in the member's data slot; where the members do not meet on the
    /// plane ([`Runtime::plane_for`]) or `own` does not fit a slot, the
    /// descriptor and `own` go together in one allgather.
    pub(super) fn agree_ucc(
        &self,
        m: &Members,
        what: &str,
        common: &[u64],
        mut own: Vec<u64>,
        part: Option<Mine>,
        local: Result<()>,
    ) -> Result<Shared> {
        // The dest and how this member's part may move (see Shared).
        let flags = match part {
            None => 0,
            Some(p) => {
                let may_host = p.bytes > 0
                    && p.bytes <= self.host_mapped_max
                    && self.own_mapped(p.dest, p.bytes).is_some();
                let leader = if self.leader_submit { MINE_LEADER } else { 0 };
                leader | if may_host { MINE_MAY_HOST } else { 0 }
            }
        };
        own.extend([part.map_or(0, |p| p.dest), flags]);
        let mine = [
            fingerprint(&[fingerprint_str(what)]),
            fingerprint(common),
            u64::from(local.is_err()),
            own.len() as u64,
        ];
        let own_bytes: &[u8] = bytemuck::cast_slice(&own);
        // On the plane where `own` fits a data slot; else one allgather of
        // the descriptor and `own` together. The same choice on every
        // member: `plane_for` is, and `own`'s length is the same for a call.
        let (descs, mut owns) = match self.plane_for(m) {
            Some((plane, _)) if own_bytes.len() <= DATA_BYTES => {
                let met = self
                    .meet(m, &mut |slot| {
                        if let Some(slot) = slot {
                            // SAFETY: `slot` is this PE's data slot for the
                            // coming meeting (DATA_BYTES bytes, which nobody
                            // reads before this PE arrives); `own` fits it
                            // (checked above) and is a local `Vec`, apart
                            // from the plane's segment.
                            unsafe {
                                std::ptr::copy_nonoverlapping(
                                    own_bytes.as_ptr(),
                                    slot,
                                    own_bytes.len(),
                                )
                            };
                        }
                        mine
                    })
                    .map_err(|e| e.during(what))?;
                let t = met.ticket.as_ref().ok_or_else(|| {
                    Error::Bootstrap(format!("{what}: a meeting on the sync plane had no ticket"))
                })?;
                // Each member's slot, as many bytes as this member's `own`
                // (whether the lengths agree is checked below, before any
                // of it is used).
                let owns = (0..m.shape.size)
                    .map(|i| {
                        let mut w = vec![0u64; own.len()];
                        // SAFETY: member i's data slot for this meeting is
                        // DATA_BYTES bytes (own_bytes.len() is no more),
                        // filled before it arrived and left as it is until
                        // this PE's next meeting on the team
                        // (double-buffered by parity: the member rewrites it
                        // two meetings on, after this PE's closing one);
                        // `w` is a local `Vec` of that length.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                plane.data(t, i),
                                w.as_mut_ptr().cast::<u8>(),
                                own_bytes.len(),
                            )
                        };
                        w
                    })
                    .collect();
                (met.descs, owns)
            }
            _ => {
                let words: Vec<u64> = mine.iter().copied().chain(own.iter().copied()).collect();
                let blobs = self
                    .gather_shape(m.shape, bytemuck::cast_slice(&words))
                    .map_err(|e| e.during(what))?;
                let mut descs = Vec::with_capacity(blobs.len());
                let mut owns = Vec::with_capacity(blobs.len());
                for b in &blobs {
                    if b.len() % 8 != 0 || b.len() < 32 {
                        return Err(Error::Bootstrap(format!(
                            "{what}: a member sent malformed arguments"
                        )));
                    }
                    let w: Vec<u64> = b
                        .chunks_exact(8)
                        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                        .collect();
                    descs.push([w[0], w[1], w[2], w[3]]);
                    owns.push(w[4..].to_vec());
                }
                (descs, owns)
            }
        };
        local?;
        for (i, w) in descs.iter().enumerate() {
            let pe = m.shape.member(i as u32);
            if w[0] != mine[0] {
                return Err(Error::InvalidArgument(format!(
                    "collectives out of step on the team: this PE is in {what}, member {i} (PE {pe}) in another call"
                )));
            }
            if w[2] != 0 {
                return Err(Error::InvalidArgument(format!(
                    "{what}: member {i} (PE {pe}) passed invalid arguments (its own error says why)"
                )));
            }
            if w[1] != mine[1] || w[3] != mine[3] {
                return Err(Error::InvalidArgument(format!(
                    "{what}: member {i} (PE {pe}) passed another root, operation or counts; every member must pass the same"
                )));
            }
        }
        let mut dests = Vec::with_capacity(owns.len());
        let mut together = m.shape.size > 1;
        for w in &mut owns {
            let Some(at) = w.len().checked_sub(MINE_WORDS) else {
                return Err(Error::Bootstrap(format!(
                    "{what}: a member sent malformed arguments"
                )));
            };
            let f = w[at + 1];
            dests.push(w[at]);
            together &= f & MINE_LEADER != 0 && f & MINE_MAY_HOST == 0;
            w.truncate(at);
        }
        Ok(Shared {
            own: owns,
            dests,
            together,
        })
    }
}
