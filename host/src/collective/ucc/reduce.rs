//! The reductions that leave each member a part (reduce_scatter(v), the
//! rooted reduce, the named allreduce) and the prefix sums.

use super::*;

/// A reduction in blocks (reduce_scatterv, the rooted reduce): member `i`
/// combines block `i` (`counts[i]` elements) of every member's `source`
/// with `op` into its `dest`; `whole`: the rooted reduce's count, whose
/// blocks all start at element 0; `pre`: a check the caller made.
struct Blocks<'a, 'b, T: Pod> {
    op: ReduceOp,
    dest: &'a SymSlice<'b, T>,
    source: &'a SymSlice<'b, T>,
    counts: &'a [usize],
    whole: Option<usize>,
    pre: Result<()>,
}

impl Runtime {
    pub(crate) fn reduce_scatterv<T: Reduce>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
    ) -> Result<()> {
        let m = self.members(team)?;
        let blocks = Blocks {
            op,
            dest,
            source,
            counts,
            whole: None,
            pre: Ok(()),
        };
        self.reduce_blocks(&m, "reduce_scatterv", blocks)
    }

    pub(crate) fn reduce_scatter<T: Reduce>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        count: usize,
    ) -> Result<()> {
        let n = self.team_n_pes(team)? as usize;
        self.reduce_scatterv(team, op, dest, source, &vec![count; n])
    }

    pub(crate) fn reduce_to_root<T: Reduce>(
        &self,
        team: Team,
        root: u32,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        let m = self.members(team)?;
        let n = m.shape.size;
        let root_ok = check_root("reduce", root, n);
        let mut counts = vec![0; n as usize];
        if root_ok.is_ok() {
            counts[root as usize] = nreduce;
        }
        let blocks = Blocks {
            op,
            dest,
            source,
            counts: &counts,
            whole: Some(nreduce),
            pre: root_ok,
        };
        self.reduce_blocks(&m, "reduce", blocks)
    }

    pub(crate) fn allreduce<T: Reduce>(
        &self,
        team: Team,
        op: ReduceOp,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.reduce(team, op, dest, source, nreduce)
    }

    /// Member `i` combines block `i` of every member's source (see
    /// [`Blocks`]).
    fn reduce_blocks<T: Reduce>(&self, m: &Members, what: &str, b: Blocks<T>) -> Result<()> {
        let Blocks {
            op,
            dest,
            source,
            counts,
            whole,
            pre,
        } = b;
        let n = m.shape.size;
        let me = m.me as usize;
        let es = std::mem::size_of::<T>() as u64;
        let displs = match whole {
            Some(_) => vec![0; counts.len()],
            None => packed(counts),
        };
        let kind =
            vkshmem_device::collectives::kind(T::KIND).expect("every Reduce kind is in the table");
        let local = pre.and_then(|()| {
            self.check_kind(what, &kind, op)?;
            Self::check_counts(what, "counts", counts, n)?;
            let total = whole.map_or_else(
                || {
                    counts
                        .iter()
                        .try_fold(0u64, |a, &c| a.checked_add(c as u64))
                },
                |w| Some(w as u64),
            );
            let total = total.ok_or_else(|| overflow(what))?;
            self.check_sym(&format!("{what} source"), source, total)?;
            self.check_sym(&format!("{what} dest"), dest, counts[me] as u64)
        });
        let common: Vec<u64> = [op as u64, es, fingerprint_str(T::KIND)]
            .into_iter()
            .chain(counts.iter().map(|&c| c as u64))
            .collect();
        let mine = Mine {
            dest: dest.offset(),
            bytes: (counts.get(me).copied().unwrap_or(0) as u64).saturating_mul(es),
        };
        let args = UccArgs {
            what,
            common,
            own: vec![source.offset()],
            part: Some(mine),
            local: Some(local),
        };
        // Every member reads its block of this member's source.
        let total = whole
            .unwrap_or_else(|| counts.iter().fold(0, |a: usize, &c| a.saturating_add(c)))
            as u64;
        let fold_of = |sh: &Shared, j: u32| {
            let j = j as usize;
            let fold = Fold {
                at: displs[j] as u64 * es,
                op,
                members: 0..n as usize,
                dest: sh.dests[j],
                exposed: (sh.own[j][0], total.saturating_mul(es)),
            };
            (fold, counts[j])
        };
        self.run_fold::<T>(m, args, fold_of)
    }

    pub(crate) fn sum_inscan<T: Reduce>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.scan(team, "sum_inscan", dest, source, nelems, true)
    }

    pub(crate) fn sum_exscan<T: Reduce>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        self.scan(team, "sum_exscan", dest, source, nelems, false)
    }

    pub(super) fn scan<T: Reduce>(
        &self,
        team: Team,
        what: &str,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
        inclusive: bool,
    ) -> Result<()> {
        let m = self.members(team)?;
        let es = std::mem::size_of::<T>() as u64;
        let kind =
            vkshmem_device::collectives::kind(T::KIND).expect("every Reduce kind is in the table");
        let local = (|| {
            self.check_kind(what, &kind, ReduceOp::Sum)?;
            self.check_sym(&format!("{what} source"), source, nelems as u64)?;
            self.check_sym(&format!("{what} dest"), dest, nelems as u64)
        })();
        let common = [es, fingerprint_str(T::KIND), nelems as u64];
        let mine = Mine {
            dest: dest.offset(),
            bytes: (nelems as u64).saturating_mul(es),
        };
        let args = UccArgs {
            what,
            common: common.to_vec(),
            own: vec![source.offset()],
            part: Some(mine),
            local: Some(local),
        };
        let fold_of = |sh: &Shared, j: u32| {
            let j = j as usize;
            let fold = Fold {
                at: 0,
                op: ReduceOp::Sum,
                members: 0..if inclusive { j + 1 } else { j },
                dest: sh.dests[j],
                // The members after this one read its source.
                exposed: (sh.own[j][0], nelems as u64 * es),
            };
            (fold, nelems)
        };
        self.run_fold::<T>(&m, args, fold_of)
    }
}
