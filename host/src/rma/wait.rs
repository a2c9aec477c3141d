//! Point-to-point synchronisation on the host (OpenSHMEM's `wait_until` and
//! `test` in every form, and `signal_wait_until`): a PE waits until words of
//! its own heap, written by other PEs' puts, atomics or device code, satisfy
//! a comparison.
//!
//! The words are read atomically through this PE's host mapping (or, where
//! the heap is not host-mapped, through copies). A wait polls, yielding
//! first and then napping up to [`MAX_NAP`]; it ends with an error when the
//! job aborts (a PE died) or after `VKSHMEM_WAIT_TIMEOUT` when one is set, so
//! a PE that waits for a dead peer does not wait forever.

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};

use bytemuck::Pod;

use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::symbuf::SymSlice;

pub use crate::interop::MAX_NAP;

/// A comparison (`SHMEM_CMP_EQ`, `_NE`, `_GT`, `_GE`, `_LT`, `_LE`): the
/// word on the left, the value on the right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// Equal.
    Eq,
    /// Not equal.
    Ne,
    /// Greater than.
    Gt,
    /// Greater than or equal.
    Ge,
    /// Less than.
    Lt,
    /// Less than or equal.
    Le,
}

impl Cmp {
    /// Whether `word <cmp> value` holds.
    pub fn holds<T: PartialOrd>(self, word: T, value: T) -> bool {
        match self {
            Cmp::Eq => word == value,
            Cmp::Ne => word != value,
            Cmp::Gt => word > value,
            Cmp::Ge => word >= value,
            Cmp::Lt => word < value,
            Cmp::Le => word <= value,
        }
    }
}

/// A type point-to-point synchronisation compares (OpenSHMEM's list:
/// short, int, long, long long and their unsigned forms, the fixed-width
/// integers, size_t and ptrdiff_t).
pub trait WaitValue: Pod + PartialOrd + Sealed {
    /// Reads the value at `p` atomically.
    ///
    /// # Safety
    /// `p` is valid and aligned for `Self`; other writers access it atomically.
    unsafe fn load(p: *const u8) -> Self;
}

mod sealed {
    pub trait Sealed {}
}
use sealed::Sealed;

macro_rules! wait_types {
    ($($t:ty => $atomic:ty, $bits:ty;)*) => {$(
        impl Sealed for $t {}
        impl WaitValue for $t {
            unsafe fn load(p: *const u8) -> Self {
                // SAFETY: the caller's contract (valid, aligned, atomic writers).
                let bits: $bits = unsafe { <$atomic>::from_ptr(p.cast_mut().cast()) }.load(Ordering::SeqCst);
                bytemuck::cast(bits)
            }
        }
    )*};
}

wait_types! {
    i16 => AtomicU16, u16;
    u16 => AtomicU16, u16;
    i32 => AtomicU32, u32;
    u32 => AtomicU32, u32;
    i64 => AtomicU64, u64;
    u64 => AtomicU64, u64;
    isize => AtomicU64, u64;
    usize => AtomicU64, u64;
}

/// The value each word is compared with.
#[derive(Clone, Copy)]
enum Values<'a, T> {
    One(T),
    Each(&'a [T]),
}

impl<T: Copy> Values<'_, T> {
    fn at(&self, i: usize) -> T {
        match self {
            Values::One(v) => *v,
            Values::Each(v) => v[i],
        }
    }
}

impl Runtime {
    /// This PE's words `ivars`, read atomically.
    pub(crate) fn load_own<T: WaitValue>(
        &self,
        ivars: &SymSlice<'_, T>,
        out: &mut Vec<T>,
    ) -> Result<()> {
        let me = self.my_pe();
        out.clear();
        out.resize(ivars.len(), T::zeroed());
        let block = self.check_range(me, ivars.offset(), ivars.bytes())?;
        match block.mapped() {
            Some(base) => {
                for (i, o) in out.iter_mut().enumerate() {
                    let at = ivars.offset() as usize + i * std::mem::size_of::<T>();
                    // SAFETY: inside the mapped block (check_range) and aligned
                    // (check_sym); writers use atomics.
                    *o = unsafe { T::load(base.as_ptr().add(at)) };
                }
                Ok(())
            }
            None => self.read_bytes(me, ivars.offset(), bytemuck::cast_slice_mut(out)),
        }
    }

    /// Checks the arguments of a point-to-point wait on `ivars`.
    fn check_wait<T: WaitValue>(
        &self,
        what: &str,
        ivars: &SymSlice<'_, T>,
        status: Option<&[i32]>,
        values: Values<'_, T>,
    ) -> Result<()> {
        self.check_sym(what, ivars, ivars.len() as u64)?;
        let n = ivars.len();
        if let Some(s) = status.filter(|s| s.len() != n) {
            return Err(Error::InvalidArgument(format!(
                "{what}: {n} words but {} status entries",
                s.len()
            )));
        }
        if let Values::Each(v) = values {
            if v.len() != n {
                return Err(Error::InvalidArgument(format!(
                    "{what}: {n} words but {} comparison values",
                    v.len()
                )));
            }
        }
        Ok(())
    }

    /// Which of the words that `status` leaves in (0: in) satisfy the
    /// comparison now.
    fn satisfied<T: WaitValue>(
        &self,
        ivars: &SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: Values<'_, T>,
        words: &mut Vec<T>,
    ) -> Result<Vec<usize>> {
        self.load_own(ivars, words)?;
        Ok((0..words.len())
            .filter(|&i| included(status, i))
            .filter(|&i| cmp.holds(words[i], values.at(i)))
            .collect())
    }

    /// Polls until `done` says yes for the words' indices that hold, the
    /// job aborts, or the wait timeout passes.
    fn poll<T: WaitValue>(
        &self,
        what: &str,
        ivars: &SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: Values<'_, T>,
        done: impl Fn(&[usize]) -> bool,
    ) -> Result<(Vec<usize>, Vec<T>)> {
        let mut words = Vec::new();
        let mut ok = Vec::new();
        self.poll_until(what, || {
            ok = self.satisfied(ivars, status, cmp, values, &mut words)?;
            Ok(done(&ok))
        })?;
        Ok((ok, words))
    }

    pub(crate) fn wait_until<T: WaitValue>(
        &self,
        ivar: SymSlice<'_, T>,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        let one = first("wait_until", ivar)?;
        self.wait_until_all(one, None, cmp, value)
    }

    pub(crate) fn test<T: WaitValue>(
        &self,
        ivar: SymSlice<'_, T>,
        cmp: Cmp,
        value: T,
    ) -> Result<bool> {
        let one = first("test", ivar)?;
        Ok(self.test_any(one, None, cmp, value)?.is_some())
    }

    pub(crate) fn wait_until_all<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        self.all("wait_until_all", ivars, status, cmp, Values::One(value))
    }

    pub(crate) fn wait_until_all_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<()> {
        self.all(
            "wait_until_all_vector",
            ivars,
            status,
            cmp,
            Values::Each(values),
        )
    }

    fn all<T: WaitValue>(
        &self,
        what: &str,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: Values<'_, T>,
    ) -> Result<()> {
        self.check_wait(what, &ivars, status, values)?;
        let wanted = (0..ivars.len()).filter(|&i| included(status, i)).count();
        self.poll(what, &ivars, status, cmp, values, |ok| ok.len() == wanted)
            .map(drop)
    }

    pub(crate) fn wait_until_any<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        self.any(
            "wait_until_any",
            ivars,
            status,
            cmp,
            Values::One(value),
            true,
        )
    }

    pub(crate) fn wait_until_any_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Option<usize>> {
        self.any(
            "wait_until_any_vector",
            ivars,
            status,
            cmp,
            Values::Each(values),
            true,
        )
    }

    pub(crate) fn wait_until_some<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Vec<usize>> {
        self.some(
            "wait_until_some",
            ivars,
            status,
            cmp,
            Values::One(value),
            true,
        )
    }

    pub(crate) fn wait_until_some_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Vec<usize>> {
        self.some(
            "wait_until_some_vector",
            ivars,
            status,
            cmp,
            Values::Each(values),
            true,
        )
    }

    pub(crate) fn test_all<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<bool> {
        self.test_all_of("test_all", ivars, status, cmp, Values::One(value))
    }

    pub(crate) fn test_all_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<bool> {
        self.test_all_of("test_all_vector", ivars, status, cmp, Values::Each(values))
    }

    fn test_all_of<T: WaitValue>(
        &self,
        what: &str,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: Values<'_, T>,
    ) -> Result<bool> {
        self.check_wait(what, &ivars, status, values)?;
        let wanted = (0..ivars.len()).filter(|&i| included(status, i)).count();
        let ok = self.satisfied(&ivars, status, cmp, values, &mut Vec::new())?;
        Ok(ok.len() == wanted)
    }

    pub(crate) fn test_any<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        self.any("test_any", ivars, status, cmp, Values::One(value), false)
    }

    pub(crate) fn test_any_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Option<usize>> {
        self.any(
            "test_any_vector",
            ivars,
            status,
            cmp,
            Values::Each(values),
            false,
        )
    }

    pub(crate) fn test_some<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Vec<usize>> {
        self.some("test_some", ivars, status, cmp, Values::One(value), false)
    }

    pub(crate) fn test_some_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Vec<usize>> {
        self.some(
            "test_some_vector",
            ivars,
            status,
            cmp,
            Values::Each(values),
            false,
        )
    }

    fn any<T: WaitValue>(
        &self,
        what: &str,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: Values<'_, T>,
        wait: bool,
    ) -> Result<Option<usize>> {
        Ok(self
            .some(what, ivars, status, cmp, values, wait)?
            .first()
            .copied())
    }

    fn some<T: WaitValue>(
        &self,
        what: &str,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: Values<'_, T>,
        wait: bool,
    ) -> Result<Vec<usize>> {
        self.check_wait(what, &ivars, status, values)?;
        let none_in = (0..ivars.len()).all(|i| status.is_some_and(|s| s[i] != 0));
        if !wait || none_in {
            return self.satisfied(&ivars, status, cmp, values, &mut Vec::new());
        }
        self.poll(what, &ivars, status, cmp, values, |ok| !ok.is_empty())
            .map(|(ok, _)| ok)
    }

    pub(crate) fn signal_wait_until(
        &self,
        sig: SymSlice<'_, u64>,
        cmp: Cmp,
        value: u64,
    ) -> Result<u64> {
        let what = "signal_wait_until";
        let one = first(what, sig)?;
        let values = Values::One(value);
        self.check_wait(what, &one, None, values)?;
        // The value that satisfied the comparison, not a later one.
        let (_, words) = self.poll(what, &one, None, cmp, values, |ok| !ok.is_empty())?;
        Ok(words[0])
    }
}

/// Whether `status` leaves word `i` in (entry 0, or no status at all).
fn included(status: Option<&[i32]>, i: usize) -> bool {
    status.map_or(true, |s| s[i] == 0)
}

/// The first element of `s`, as a slice of one.
fn first<'a, T: Pod>(what: &str, s: SymSlice<'a, T>) -> Result<SymSlice<'a, T>> {
    if s.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{what}: the object is empty"
        )));
    }
    Ok(s.prefix(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons() {
        assert!(Cmp::Eq.holds(3, 3) && !Cmp::Eq.holds(3, 4));
        assert!(Cmp::Ne.holds(3, 4));
        assert!(Cmp::Gt.holds(-1i32, -2) && !Cmp::Gt.holds(2, 2));
        assert!(Cmp::Ge.holds(2u64, 2));
        assert!(Cmp::Lt.holds(-5i16, 0));
        assert!(Cmp::Le.holds(0usize, 0) && !Cmp::Le.holds(1usize, 0));
    }
}
