//! alltoallv: each member's reads of its part of every member's source, the
//! layouts checked pair by pair.

use super::*;

impl Runtime {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alltoallv<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        send_counts: &[usize],
        send_displs: &[usize],
        recv_counts: &[usize],
        recv_displs: &[usize],
    ) -> Result<()> {
        let what = "alltoallv";
        let m = self.members(team)?;
        let n = m.shape.size;
        let es = std::mem::size_of::<T>() as u64;
        let local = (|| {
            for (name, v) in [
                ("send_counts", send_counts),
                ("send_displs", send_displs),
                ("recv_counts", recv_counts),
                ("recv_displs", recv_displs),
            ] {
                Self::check_counts(what, name, v, n)?;
            }
            let s = extent(send_counts, send_displs).ok_or_else(|| overflow(what))?;
            self.check_sym("alltoallv source", source, s)?;
            let r = extent(recv_counts, recv_displs).ok_or_else(|| overflow(what))?;
            self.check_sym("alltoallv dest", dest, r)
        })();
        // The same length on every member, whatever its verdict (the
        // allgather's size limit must fail all or none).
        let nn = n as usize;
        let mut own = vec![source.offset()];
        for v in [send_counts, send_displs, recv_counts, recv_displs] {
            own.extend((0..nn).map(|j| v.get(j).map_or(0, |&c| c as u64)));
        }
        let mine = Mine {
            dest: dest.offset(),
            bytes: extent(recv_counts, recv_displs)
                .unwrap_or(0)
                .saturating_mul(es),
        };
        let args = UccArgs {
            what,
            common: vec![es],
            own,
            part: Some(mine),
            local: Some(local),
        };
        // Member i's list k (send counts, send displs, recv counts, recv
        // displs), entry j.
        let field =
            |sh: &Shared, i: usize, k: usize, j: usize| sh.own[i].get(1 + k * nn + j).copied();
        let list = |sh: &Shared, i: usize, k: usize| -> Vec<usize> {
            (0..nn)
                .map(|j| field(sh, i, k, j).unwrap_or(0) as usize)
                .collect()
        };
        // Every pair, checked the same way on every member.
        let check = |sh: &Shared| {
            for i in 0..nn {
                for j in 0..nn {
                    let (send, recv) = (field(sh, i, 0, j), field(sh, j, 2, i));
                    if send.is_none() || send != recv {
                        return Err(Error::InvalidArgument(format!(
                            "alltoallv: member {i} sends {} elements to member {j}, which expects {}",
                            send.unwrap_or(0),
                            recv.unwrap_or(0)
                        )));
                    }
                }
            }
            Ok(())
        };
        let pull_of = |sh: &Shared, j: u32| {
            let j = j as usize;
            let (recv_counts, recv_displs) = (list(sh, j, 2), list(sh, j, 3));
            Pull {
                reads: (0..nn)
                    .map(|i| Read {
                        from: i as u32,
                        src: sh.own[i][0]
                            .wrapping_add(field(sh, i, 1, j).unwrap_or(0).wrapping_mul(es)),
                        dst: (recv_displs[i] as u64).wrapping_mul(es),
                        bytes: recv_counts[i] as u64 * es,
                    })
                    .collect(),
                bytes: extent(&recv_counts, &recv_displs).unwrap_or(0) * es,
                gaps: true,
                exposed: (
                    sh.own[j][0],
                    extent(&list(sh, j, 0), &list(sh, j, 1)).unwrap_or(0) * es,
                ),
            }
        };
        self.run_pull_checked(&m, args, dest.offset(), check, pull_of)
    }
}
