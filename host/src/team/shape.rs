//! Team arithmetic (pure, no Vulkan): which WORLD PEs a team holds, splits,
//! translation between teams.
//!
//! Every team of this version is a *strided* set of WORLD PEs: member `i` is WORLD
//! PE `start + i * stride` for `i < size` (OpenSHMEM's `split_strided` and
//! `split_2d` only ever make such sets; a stride may be negative). The host's
//! handles ([`crate::Team`]) and the device's team table both describe a team by
//! this triple.

use crate::error::{Error, Result};

/// A strided set of WORLD PEs: member `i` is `start + i * stride`, `i < size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TeamShape {
    /// WORLD number of member 0.
    pub start: u32,
    /// WORLD distance between consecutive members (1 when `size` is 1).
    pub stride: i32,
    /// Number of members (at least 1).
    pub size: u32,
}

impl TeamShape {
    /// WORLD: every PE of a job of `n_pes`.
    pub fn world(n_pes: u32) -> TeamShape {
        TeamShape {
            start: 0,
            stride: 1,
            size: n_pes,
        }
    }

    /// The team of one PE.
    pub fn single(pe: u32) -> TeamShape {
        TeamShape {
            start: pe,
            stride: 1,
            size: 1,
        }
    }

    /// A checked shape: every member lies in `0..n_pes` and `size >= 1`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a size of 0, a zero stride with more than one
    /// member, or a member outside `0..n_pes`.
    pub fn new(start: u32, stride: i32, size: u32, n_pes: u32) -> Result<TeamShape> {
        let bad = |why: String| {
            Err(Error::InvalidArgument(format!(
                "team (start {start}, stride {stride}, size {size}) in a job of {n_pes} PEs: {why}"
            )))
        };
        if size == 0 {
            return bad("a team has at least one PE".into());
        }
        if size > 1 && stride == 0 {
            return bad("a stride of 0 repeats a PE".into());
        }
        let last = start as i64 + (size as i64 - 1) * stride as i64;
        if start >= n_pes || !(0..n_pes as i64).contains(&last) {
            return bad(format!("PE {last} is outside the job"));
        }
        Ok(TeamShape {
            start,
            stride: if size == 1 { 1 } else { stride },
            size,
        })
    }

    /// WORLD number of member `i` (`i < size`; debug builds panic beyond, release
    /// builds return a meaningless number).
    pub fn member(&self, i: u32) -> u32 {
        debug_assert!(i < self.size);
        (self.start as i64 + i as i64 * self.stride as i64) as u32
    }

    /// All members' WORLD numbers, in team order.
    pub fn members(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.size).map(|i| self.member(i))
    }

    /// The team number of WORLD PE `pe`, if it is a member.
    pub fn index_of(&self, pe: u32) -> Option<u32> {
        let d = pe as i64 - self.start as i64;
        let s = self.stride as i64;
        if s == 0 {
            // Not a shape `new` makes (the fields are public): one member at most.
            return (d == 0 && self.size > 0).then_some(0);
        }
        if d % s != 0 {
            return None;
        }
        let i = d / s;
        (0..self.size as i64).contains(&i).then_some(i as u32)
    }

    /// `shmem_team_split_strided`: the members `start + j * stride` (`j < size`)
    /// of this team, numbered in this team. Every index must lie in the team.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a size below 1, a zero stride with more than
    /// one member, an index outside this team, a stride that overflows in WORLD
    /// numbers, or a malformed `self` (see [`TeamShape::check`]).
    pub fn split_strided(&self, start: i32, stride: i32, size: i32) -> Result<TeamShape> {
        self.check()?;
        let bad = |why: &str| {
            Err(Error::InvalidArgument(format!(
                "split_strided(start {start}, stride {stride}, size {size}) of a team of {} PEs: {why}",
                self.size
            )))
        };
        if size < 1 {
            return bad("the new team needs at least one PE");
        }
        if size > 1 && stride == 0 {
            return bad("a stride of 0 repeats a PE");
        }
        let last = start as i64 + (size as i64 - 1) * stride as i64;
        let n = self.size as i64;
        if !(0..n).contains(&(start as i64)) || !(0..n).contains(&last) {
            return bad("it names PEs outside the parent team");
        }
        let world_stride = stride as i64 * self.stride as i64;
        if size > 1 && i32::try_from(world_stride).is_err() {
            return bad("the stride overflows");
        }
        Ok(TeamShape {
            start: self.member(start as u32),
            stride: if size == 1 { 1 } else { world_stride as i32 },
            size: size as u32,
        })
    }

    /// `shmem_team_split_2d` seen from member `index`: the x-axis team (the row of
    /// `xrange` consecutive members holding it; the last row may be shorter) and the
    /// y-axis team (the column: every `xrange`-th member from its column). An
    /// `xrange` above the team's size is the team's size.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an `xrange` below 1, an `index` outside the
    /// team, or a malformed `self` (see [`TeamShape::check`]).
    pub fn split_2d(&self, xrange: i32, index: u32) -> Result<(TeamShape, TeamShape)> {
        self.check()?;
        if index >= self.size {
            return Err(Error::InvalidArgument(format!(
                "split_2d: member {index} of a team of {} PEs",
                self.size
            )));
        }
        if xrange < 1 {
            return Err(Error::InvalidArgument(format!(
                "split_2d: xrange {xrange} must be at least 1"
            )));
        }
        let n = self.size as i32;
        let x = xrange.min(n);
        let (row, col) = (index as i32 / x, index as i32 % x);
        let xs = self.split_strided(row * x, 1, x.min(n - row * x))?;
        let ys = self.split_strided(col, x, (n - col + x - 1) / x)?;
        Ok((xs, ys))
    }

    /// `shmem_team_translate_pe`: the number in `to` of this team's member `pe`, or
    /// `None` when `pe` is not a member of this team or the PE is not in `to`
    /// (or either shape is malformed).
    pub fn translate(&self, pe: i32, to: &TeamShape) -> Option<u32> {
        if !(0..self.size as i64).contains(&(pe as i64)) || self.check().is_err() {
            return None;
        }
        to.index_of(self.member(pe as u32))
    }

    /// The shape of the OpenSHMEM active set (`PE_start`, `logPE_stride`,
    /// `PE_size`) of the deprecated collectives.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a negative `PE_start`, a `logPE_stride`
    /// outside `0..31`, a `PE_size` below 1, or a PE outside `0..n_pes`.
    pub fn active_set(
        pe_start: i32,
        log_stride: i32,
        pe_size: i32,
        n_pes: u32,
    ) -> Result<TeamShape> {
        if !(0..31).contains(&log_stride) || pe_start < 0 || pe_size < 1 {
            return Err(Error::InvalidArgument(format!(
                "active set (PE_start {pe_start}, logPE_stride {log_stride}, PE_size {pe_size}): PE_start >= 0, 0 <= logPE_stride < 31 and PE_size >= 1"
            )));
        }
        TeamShape::new(pe_start as u32, 1 << log_stride, pe_size as u32, n_pes)
    }

    /// Checks a shape built from its public fields: at least one member, at most
    /// `i32::MAX`, a non-zero stride when there are several, and every member a
    /// valid WORLD number (`0..=u32::MAX`). Shapes made by this module pass.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming what is wrong.
    pub fn check(&self) -> Result<()> {
        let last = self.start as i64 + (self.size as i64 - 1) * self.stride as i64;
        let why = if self.size == 0 {
            "a team has at least one PE"
        } else if self.size > i32::MAX as u32 {
            "more members than a team number can count"
        } else if self.size > 1 && self.stride == 0 {
            "a stride of 0 repeats a PE"
        } else if !(0..=u32::MAX as i64).contains(&last) {
            "its last member is not a PE number"
        } else {
            return Ok(());
        };
        Err(Error::InvalidArgument(format!("{self:?}: {why}")))
    }

    /// The smallest strided set holding exactly `pes` (sorted, distinct), if any:
    /// how SHARED is described.
    pub fn from_members(pes: &[u32]) -> Option<TeamShape> {
        let (&first, rest) = pes.split_first()?;
        let stride = rest.first().map(|&p| p as i64 - first as i64).unwrap_or(1);
        let fits = pes
            .iter()
            .enumerate()
            .all(|(i, &p)| p as i64 == first as i64 + i as i64 * stride);
        (fits && stride > 0 && stride <= i32::MAX as i64).then_some(TeamShape {
            start: first,
            stride: stride as i32,
            size: pes.len() as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(t: &TeamShape) -> Vec<u32> {
        t.members().collect()
    }

    #[test]
    fn strided_splits_compose() {
        let w = TeamShape::world(10);
        let evens = w.split_strided(0, 2, 5).unwrap();
        assert_eq!(members(&evens), [0, 2, 4, 6, 8]);
        let back = evens.split_strided(4, -1, 5).unwrap();
        assert_eq!(members(&back), [8, 6, 4, 2, 0]);
        let mid = back.split_strided(1, 2, 2).unwrap();
        assert_eq!(members(&mid), [6, 2]);
        assert_eq!(mid.index_of(2), Some(1));
        assert_eq!(mid.index_of(4), None);
        assert_eq!(mid.index_of(9), None);
        let one = w.split_strided(7, 0, 1).unwrap();
        assert_eq!((members(&one), one.stride), (vec![7], 1));
    }

    #[test]
    fn bad_splits_are_errors() {
        let w = TeamShape::world(4);
        for (s, st, n) in [
            (0, 1, 5),
            (4, 1, 1),
            (-1, 1, 1),
            (0, 0, 2),
            (3, 1, 2),
            (0, 1, 0),
            (1, -2, 2),
        ] {
            assert!(w.split_strided(s, st, n).is_err(), "({s}, {st}, {n})");
        }
        assert!(w.split_2d(0, 0).is_err());
        assert!(TeamShape::new(0, 1, 5, 4).is_err());
        assert!(TeamShape::new(3, -1, 4, 4).is_ok());
    }

    #[test]
    fn split_2d_covers_the_grid() {
        // 7 PEs, xrange 3: rows {0,1,2} {3,4,5} {6}; columns {0,3,6} {1,4} {2,5}.
        let w = TeamShape::world(7);
        for i in 0..7 {
            let (x, y) = w.split_2d(3, i).unwrap();
            let row: Vec<u32> = (i / 3 * 3..(i / 3 * 3 + 3).min(7)).collect();
            let col: Vec<u32> = (i % 3..7).step_by(3).collect();
            assert_eq!(members(&x), row, "x team of {i}");
            assert_eq!(members(&y), col, "y team of {i}");
        }
        let (x, y) = w.split_2d(100, 4).unwrap();
        assert_eq!((x.size, y.size), (7, 1));
    }

    #[test]
    fn translate_between_teams() {
        let w = TeamShape::world(8);
        let odds = w.split_strided(1, 2, 4).unwrap();
        let rev = w.split_strided(7, -1, 8).unwrap();
        assert_eq!(odds.translate(0, &w), Some(1));
        assert_eq!(odds.translate(3, &rev), Some(0));
        assert_eq!(w.translate(2, &odds), None);
        assert_eq!(w.translate(8, &odds), None);
        assert_eq!(w.translate(-1, &odds), None);
    }

    #[test]
    fn shapes_from_member_lists() {
        assert_eq!(
            TeamShape::from_members(&[1, 3, 5]),
            Some(TeamShape {
                start: 1,
                stride: 2,
                size: 3
            })
        );
        assert_eq!(TeamShape::from_members(&[4]), Some(TeamShape::single(4)));
        assert_eq!(TeamShape::from_members(&[0, 1, 3]), None);
        assert_eq!(TeamShape::from_members(&[]), None);
        let a = TeamShape::active_set(1, 1, 3, 8).unwrap();
        assert_eq!(members(&a), [1, 3, 5]);
        assert!(TeamShape::active_set(4, 1, 3, 8).is_err());
    }

    #[test]
    fn malformed_shapes_are_errors_not_panics() {
        let zero_stride = TeamShape {
            start: 2,
            stride: 0,
            size: 3,
        };
        let empty = TeamShape {
            start: 0,
            stride: 1,
            size: 0,
        };
        let huge = TeamShape {
            start: 0,
            stride: 1,
            size: u32::MAX,
        };
        let below_zero = TeamShape {
            start: 1,
            stride: -1,
            size: 3,
        };
        let w = TeamShape::world(4);
        for t in [zero_stride, empty, huge, below_zero] {
            assert!(t.check().is_err(), "{t:?}");
            assert!(matches!(
                t.split_strided(0, 1, 1),
                Err(Error::InvalidArgument(_))
            ));
            assert!(matches!(t.split_2d(1, 0), Err(Error::InvalidArgument(_))));
            assert_eq!(t.translate(0, &w), None);
        }
        assert_eq!(zero_stride.index_of(2), Some(0));
        assert_eq!(zero_stride.index_of(3), None);
        assert_eq!(w.translate(2, &zero_stride), Some(0));
        assert!(w.check().is_ok());
        // A member index outside the team.
        assert!(w.split_2d(2, 4).is_err());
        assert!(w.split_2d(2, u32::MAX).is_err());
    }
}
