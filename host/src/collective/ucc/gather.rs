//! gather(v), scatter(v) and allgatherv: each member's reads of the others'
//! parts.

use super::*;

/// A rooted move's layout (gatherv, scatterv): the root, every member's
/// count and displacement, the object that holds each member's `part`
/// and the root's `whole` (each with its name for errors), the member's
/// source, and what it tells of its own part.
struct Rooted<'a, 'b, T: Pod> {
    root: u32,
    counts: &'a [usize],
    displs: &'a [usize],
    part: (&'a str, &'a SymSlice<'b, T>),
    whole: (&'a str, &'a SymSlice<'b, T>),
    source: &'a SymSlice<'b, T>,
    mine: Mine,
}

impl Runtime {
    /// The arguments of the rooted move `r` (gatherv, scatterv): `r.part`
    /// must hold this member's count, and on the root `r.whole` the
    /// layout's extent; every member passes the same root, counts and
    /// displacements.
    fn rooted_args<'a, T: Pod>(&self, m: &Members, what: &'a str, r: Rooted<T>) -> UccArgs<'a> {
        let Rooted {
            root,
            counts,
            displs,
            part,
            whole,
            source,
            mine,
        } = r;
        let n = m.shape.size;
        let local = (|| {
            check_root(what, root, n)?;
            Self::check_counts(what, "counts", counts, n)?;
            Self::check_counts(what, "displs", displs, n)?;
            self.check_sym(part.0, part.1, counts[m.me as usize] as u64)?;
            if m.me == root {
                let e = extent(counts, displs).ok_or_else(|| overflow(what))?;
                self.check_sym(whole.0, whole.1, e)?;
            }
            Ok(())
        })();
        let es = std::mem::size_of::<T>() as u64;
        let common: Vec<u64> = [u64::from(root), es]
            .into_iter()
            .chain(counts.iter().chain(displs).map(|&c| c as u64))
            .collect();
        UccArgs {
            what,
            common,
            own: vec![source.offset()],
            part: Some(mine),
            local: Some(local),
        }
    }

    pub(crate) fn gatherv<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
        displs: Option<&[usize]>,
    ) -> Result<()> {
        let what = "gatherv";
        let m = self.members(team)?;
        let n = m.shape.size;
        let es = std::mem::size_of::<T>() as u64;
        let displs = displs.map_or_else(|| packed(counts), <[usize]>::to_vec);
        let whole = extent(counts, &displs).unwrap_or(0).saturating_mul(es);
        let rooted = Rooted {
            root,
            counts,
            displs: &displs,
            part: ("gatherv source", source),
            whole: ("gatherv dest", dest),
            source,
            mine: Mine {
                dest: dest.offset(),
                bytes: if m.me == root { whole } else { 0 },
            },
        };
        let args = self.rooted_args(&m, what, rooted);
        let pull_of = |sh: &Shared, j: u32| {
            let mut pull = Pull {
                reads: Vec::new(),
                bytes: 0,
                // What the dest holds outside the parts stays as it was.
                gaps: true,
                exposed: (sh.own[j as usize][0], counts[j as usize] as u64 * es),
            };
            if j == root {
                pull.bytes = whole;
                pull.reads.extend((0..n).map(|i| Read {
                    from: i,
                    src: sh.own[i as usize][0],
                    dst: (displs[i as usize] as u64).wrapping_mul(es),
                    bytes: counts[i as usize] as u64 * es,
                }));
            }
            pull
        };
        self.run_pull(&m, args, dest.offset(), pull_of)
    }

    pub(crate) fn gather<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        let n = self.team_n_pes(team)? as usize;
        self.gatherv(team, root, dest, source, &vec![nelems; n], None)
    }

    pub(crate) fn scatterv<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
        displs: Option<&[usize]>,
    ) -> Result<()> {
        let what = "scatterv";
        let m = self.members(team)?;
        let es = std::mem::size_of::<T>() as u64;
        let displs = displs.map_or_else(|| packed(counts), <[usize]>::to_vec);
        let rooted = Rooted {
            root,
            counts,
            displs: &displs,
            part: ("scatterv dest", dest),
            whole: ("scatterv source", source),
            source,
            mine: Mine {
                dest: dest.offset(),
                bytes: (counts.get(m.me as usize).copied().unwrap_or(0) as u64).saturating_mul(es),
            },
        };
        let args = self.rooted_args(&m, what, rooted);
        let pull_of = |sh: &Shared, j: u32| {
            let j = j as usize;
            Pull {
                reads: vec![Read {
                    from: root,
                    src: sh.own[root as usize][0].wrapping_add((displs[j] as u64).wrapping_mul(es)),
                    dst: 0,
                    bytes: counts[j] as u64 * es,
                }],
                bytes: counts[j] as u64 * es,
                gaps: false,
                // Every member reads the root's source.
                exposed: if j == root as usize {
                    (sh.own[j][0], extent(counts, &displs).unwrap_or(0) * es)
                } else {
                    (0, 0)
                },
            }
        };
        self.run_pull(&m, args, dest.offset(), pull_of)
    }

    pub(crate) fn scatter<T: Pod>(
        &self,
        team: Team,
        root: u32,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        nelems: usize,
    ) -> Result<()> {
        let n = self.team_n_pes(team)? as usize;
        self.scatterv(team, root, dest, source, &vec![nelems; n], None)
    }

    pub(crate) fn allgatherv<T: Pod>(
        &self,
        team: Team,
        dest: &SymSlice<T>,
        source: &SymSlice<T>,
        counts: &[usize],
        displs: Option<&[usize]>,
    ) -> Result<()> {
        let what = "allgatherv";
        let m = self.members(team)?;
        let n = m.shape.size;
        let es = std::mem::size_of::<T>() as u64;
        let displs = displs.map_or_else(|| packed(counts), <[usize]>::to_vec);
        let local = (|| {
            Self::check_counts(what, "counts", counts, n)?;
            Self::check_counts(what, "displs", &displs, n)?;
            self.check_sym("allgatherv source", source, counts[m.me as usize] as u64)?;
            let e = extent(counts, &displs).ok_or_else(|| overflow(what))?;
            self.check_sym("allgatherv dest", dest, e)
        })();
        let common: Vec<u64> = std::iter::once(es)
            .chain(counts.iter().chain(&displs).map(|&c| c as u64))
            .collect();
        let bytes = extent(counts, &displs).unwrap_or(0).saturating_mul(es);
        let mine = Mine {
            dest: dest.offset(),
            bytes,
        };
        let args = UccArgs {
            what,
            common,
            own: vec![source.offset()],
            part: Some(mine),
            local: Some(local),
        };
        let pull_of = |sh: &Shared, j: u32| Pull {
            reads: (0..n)
                .map(|i| Read {
                    from: i,
                    src: sh.own[i as usize][0],
                    dst: (displs[i as usize] as u64).wrapping_mul(es),
                    bytes: counts[i as usize] as u64 * es,
                })
                .collect(),
            bytes,
            gaps: true,
            exposed: (sh.own[j as usize][0], counts[j as usize] as u64 * es),
        };
        self.run_pull(&m, args, dest.offset(), pull_of)
    }
}
