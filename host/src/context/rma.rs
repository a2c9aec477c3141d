//! The façade of one-sided calls, atomics and point-to-point waits (`crate::rma`).

use bytemuck::Pod;

use crate::error::Result;
use crate::rma::{AmoBitwise, AmoInteger, AmoValue, Cmp, SignalOp, WaitValue};
use crate::symbuf::SymSlice;

use super::Context;

impl Context {
    /// The first element of `src` on PE `pe`, read atomically
    /// (`shmem_atomic_fetch`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when `src` is empty, outside one live
    /// allocation, or `pe` is not in the job; [`Error::Unsupported`](crate::Error::Unsupported) for an
    /// 8-byte type on a heap the host does not map, on a device without
    /// 64-bit atomics;
    /// [`Error::PeerFailed`](crate::Error::PeerFailed) when the job aborts while the proxy carries it.
    pub fn atomic_fetch<T: AmoValue>(&self, src: SymSlice<'_, T>, pe: u32) -> Result<T> {
        self.rt.atomic_fetch(src, pe)
    }

    /// Sets the first element of `dest` on PE `pe` atomically
    /// (`shmem_atomic_set`).
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`](crate::Context::atomic_fetch).
    pub fn atomic_set<T: AmoValue>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<()> {
        self.rt.atomic_set(dest, value, pe)
    }

    /// Swaps `value` into the first element of `dest` on PE `pe`; returns
    /// the old value (`shmem_atomic_swap`).
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`](crate::Context::atomic_fetch).
    pub fn atomic_swap<T: AmoValue>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<T> {
        self.rt.atomic_swap(dest, value, pe)
    }

    /// Sets the first element of `dest` on PE `pe` to `value` if it equals
    /// `cond`; returns the old value either way (`shmem_atomic_compare_swap`).
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// let ctx = vkshmem_host::Context::init()?;
    /// let lock = ctx.calloc::<u64>(1)?;
    /// // Take a lock word on PE 0: 0 means free.
    /// while ctx.atomic_compare_swap(lock.as_slice(), 0, ctx.my_pe() as u64 + 1, 0)? != 0 {}
    /// ctx.atomic_set(lock.as_slice(), 0, 0)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`](crate::Context::atomic_fetch).
    pub fn atomic_compare_swap<T: AmoInteger>(
        &self,
        dest: SymSlice<'_, T>,
        cond: T,
        value: T,
        pe: u32,
    ) -> Result<T> {
        self.rt.atomic_compare_swap(dest, cond, value, pe)
    }

    /// Adds `value` to the first element of `dest` on PE `pe`; returns the
    /// old value (`shmem_atomic_fetch_add`). Integers wrap.
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`](crate::Context::atomic_fetch).
    pub fn atomic_fetch_add<T: AmoInteger>(
        &self,
        dest: SymSlice<'_, T>,
        value: T,
        pe: u32,
    ) -> Result<T> {
        self.rt.atomic_fetch_add(dest, value, pe)
    }

    /// [`Context::atomic_fetch_add`](crate::Context::atomic_fetch_add) without the fetch (`shmem_atomic_add`).
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`](crate::Context::atomic_fetch).
    pub fn atomic_add<T: AmoInteger>(
        &self,
        dest: SymSlice<'_, T>,
        value: T,
        pe: u32,
    ) -> Result<()> {
        self.rt.atomic_add(dest, value, pe)
    }

    /// Adds one; returns the old value (`shmem_atomic_fetch_inc`).
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`](crate::Context::atomic_fetch).
    pub fn atomic_fetch_inc<T: AmoInteger>(&self, dest: SymSlice<'_, T>, pe: u32) -> Result<T> {
        self.rt.atomic_fetch_inc(dest, pe)
    }

    /// Adds one (`shmem_atomic_inc`).
    ///
    /// # Errors
    /// As [`Context::atomic_fetch`](crate::Context::atomic_fetch).
    pub fn atomic_inc<T: AmoInteger>(&self, dest: SymSlice<'_, T>, pe: u32) -> Result<()> {
        self.rt.atomic_inc(dest, pe)
    }

    /// Copies `src` into the first `src.len()` elements of `dest` on PE `pe`
    /// (`shmem_put`); returns once the data is in place at `pe`.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// let ctx = vkshmem_host::Context::init()?;
    /// let buf = ctx.calloc::<u64>(4)?;
    /// let right = (ctx.my_pe() + 1) % ctx.n_pes();
    /// ctx.put(buf.as_slice(), &[ctx.my_pe() as u64; 4], right)?;
    /// ctx.barrier_all()?;
    /// assert_eq!(buf.to_vec()?[0], ((ctx.my_pe() + ctx.n_pes() - 1) % ctx.n_pes()) as u64);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when `dest` holds fewer elements, lies
    /// outside one live allocation or `pe` is not in the job;
    /// [`Error::PeerFailed`](crate::Error::PeerFailed) when the job aborts while the proxy carries it.
    pub fn put<T: Pod>(&self, dest: SymSlice<'_, T>, src: &[T], pe: u32) -> Result<()> {
        self.rt.put(dest, src, pe)
    }

    /// Copies the first `dest.len()` elements of `src` on PE `pe` into
    /// `dest` (`shmem_get`).
    ///
    /// # Errors
    /// As [`Context::put`](crate::Context::put).
    pub fn get<T: Pod>(&self, dest: &mut [T], src: SymSlice<'_, T>, pe: u32) -> Result<()> {
        self.rt.get(dest, src, pe)
    }

    /// [`Context::put`](crate::Context::put) that may complete as late as the next
    /// [`Context::quiet`](crate::Context::quiet) (`shmem_put_nbi`); this version completes it before
    /// returning.
    ///
    /// # Errors
    /// As [`Context::put`](crate::Context::put).
    pub fn put_nbi<T: Pod>(&self, dest: SymSlice<'_, T>, src: &[T], pe: u32) -> Result<()> {
        self.rt.put_nbi(dest, src, pe)
    }

    /// [`Context::get`](crate::Context::get) whose `dest` may be filled as late as the next
    /// [`Context::quiet`](crate::Context::quiet) (`shmem_get_nbi`); this version fills it before
    /// returning.
    ///
    /// # Errors
    /// As [`Context::put`](crate::Context::put).
    pub fn get_nbi<T: Pod>(&self, dest: &mut [T], src: SymSlice<'_, T>, pe: u32) -> Result<()> {
        self.rt.get_nbi(dest, src, pe)
    }

    /// Writes one element, the first of `dest`, on PE `pe` (`shmem_p`).
    ///
    /// # Errors
    /// As [`Context::put`](crate::Context::put).
    pub fn p<T: Pod>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<()> {
        self.rt.p(dest, value, pe)
    }

    /// Reads one element, the first of `src`, on PE `pe` (`shmem_g`).
    ///
    /// # Errors
    /// As [`Context::put`](crate::Context::put).
    pub fn g<T: Pod>(&self, src: SymSlice<'_, T>, pe: u32) -> Result<T> {
        self.rt.g(src, pe)
    }

    /// Strided put (`shmem_iput`): element `i * sst` of `src` goes to
    /// element `i * dst` of `dest` on PE `pe`, for `i` in `0..nelems`.
    ///
    /// # Errors
    /// As [`Context::put`](crate::Context::put); also a zero stride, or `src` too short.
    pub fn iput<T: Pod>(
        &self,
        dest: SymSlice<'_, T>,
        src: &[T],
        dst: usize,
        sst: usize,
        nelems: usize,
        pe: u32,
    ) -> Result<()> {
        self.rt.iput(dest, src, dst, sst, nelems, pe)
    }

    /// Strided get (`shmem_iget`): element `i * sst` of `src` on PE `pe`
    /// goes to element `i * dst` of `dest`, for `i` in `0..nelems`.
    ///
    /// # Errors
    /// As [`Context::iput`](crate::Context::iput).
    pub fn iget<T: Pod>(
        &self,
        dest: &mut [T],
        src: SymSlice<'_, T>,
        dst: usize,
        sst: usize,
        nelems: usize,
        pe: u32,
    ) -> Result<()> {
        self.rt.iget(dest, src, dst, sst, nelems, pe)
    }

    /// Puts `src` into `dest` on PE `pe`, then updates the signal word `sig`
    /// on `pe` with `signal` (`shmem_put_signal`): a PE that sees the signal
    /// change (for example through [`Context::signal_wait_until`](crate::Context::signal_wait_until)) sees the
    /// data.
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// use vkshmem_host::{rma::{Cmp, SignalOp}, Context};
    /// let ctx = Context::init()?;
    /// let data = ctx.calloc::<f32>(8)?;
    /// let sig = ctx.calloc::<u64>(1)?;
    /// if ctx.my_pe() == 0 && ctx.n_pes() > 1 {
    ///     ctx.put_signal(data.as_slice(), &[1.5; 8], sig.as_slice(), 1, SignalOp::Set, 1)?;
    /// } else if ctx.my_pe() == 1 {
    ///     ctx.signal_wait_until(sig.as_slice(), Cmp::Eq, 1)?;
    ///     assert_eq!(data.to_vec()?, vec![1.5; 8]);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Context::put`](crate::Context::put); [`Error::Unsupported`](crate::Error::Unsupported) on a heap the host does
    /// not map, on a device without 64-bit atomics.
    pub fn put_signal<T: Pod>(
        &self,
        dest: SymSlice<'_, T>,
        src: &[T],
        sig: SymSlice<'_, u64>,
        signal: u64,
        op: SignalOp,
        pe: u32,
    ) -> Result<()> {
        self.rt.put_signal(dest, src, sig, signal, op, pe)
    }

    /// [`Context::put_signal`](crate::Context::put_signal) that may complete as late as the next
    /// [`Context::quiet`](crate::Context::quiet); this version completes it before returning.
    ///
    /// # Errors
    /// As [`Context::put_signal`](crate::Context::put_signal).
    pub fn put_signal_nbi<T: Pod>(
        &self,
        dest: SymSlice<'_, T>,
        src: &[T],
        sig: SymSlice<'_, u64>,
        signal: u64,
        op: SignalOp,
        pe: u32,
    ) -> Result<()> {
        self.rt.put_signal_nbi(dest, src, sig, signal, op, pe)
    }

    /// This PE's signal word `sig`, read atomically (`shmem_signal_fetch`).
    ///
    /// # Errors
    /// As [`Context::put`](crate::Context::put).
    pub fn signal_fetch(&self, sig: SymSlice<'_, u64>) -> Result<u64> {
        self.rt.signal_fetch(sig)
    }

    /// Orders this PE's puts, atomics and stores to each PE before its later
    /// ones to that PE (`shmem_fence`). Every host operation here completes
    /// before returning, so this is a memory fence.
    pub fn fence(&self) {
        self.rt.fence()
    }

    /// Waits until the first word of `ivar` (on this PE) compares to
    /// `value` as `cmp` says (`shmem_wait_until`).
    ///
    /// ```no_run
    /// # fn main() -> vkshmem_host::Result<()> {
    /// use vkshmem_host::rma::Cmp;
    /// let ctx = vkshmem_host::Context::init()?;
    /// let flag = ctx.calloc::<u32>(1)?;
    /// ctx.barrier_all()?;
    /// if ctx.my_pe() == 0 {
    ///     for pe in 1..ctx.n_pes() {
    ///         ctx.atomic_set(flag.as_slice(), 7, pe)?;
    ///     }
    /// } else {
    ///     ctx.wait_until(flag.as_slice(), Cmp::Eq, 7)?;
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when `ivar` is empty or outside one live
    /// allocation; [`Error::PeerFailed`](crate::Error::PeerFailed) when the job aborts first;
    /// [`Error::Timeout`](crate::Error::Timeout) past `VKSHMEM_WAIT_TIMEOUT`.
    pub fn wait_until<T: WaitValue>(
        &self,
        ivar: SymSlice<'_, T>,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        self.rt.wait_until(ivar, cmp, value)
    }

    /// Whether the first word of `ivar` compares to `value` as `cmp` says
    /// now (`shmem_test`).
    ///
    /// # Errors
    /// As [`Context::wait_until`](crate::Context::wait_until) (without the waiting ones).
    pub fn test<T: WaitValue>(&self, ivar: SymSlice<'_, T>, cmp: Cmp, value: T) -> Result<bool> {
        self.rt.test(ivar, cmp, value)
    }

    /// Waits until every word of `ivars` that `status` leaves in (entry 0;
    /// `None`: all) compares to `value` (`shmem_wait_until_all`).
    ///
    /// # Errors
    /// As [`Context::wait_until`](crate::Context::wait_until); also a `status` of another length.
    pub fn wait_until_all<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<()> {
        self.rt.wait_until_all(ivars, status, cmp, value)
    }

    /// [`Context::wait_until_all`](crate::Context::wait_until_all) with a value per word
    /// (`shmem_wait_until_all_vector`).
    ///
    /// # Errors
    /// As [`Context::wait_until_all`](crate::Context::wait_until_all); also `values` of another length.
    pub fn wait_until_all_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<()> {
        self.rt.wait_until_all_vector(ivars, status, cmp, values)
    }

    /// Waits until some word of `ivars` that `status` leaves in compares to
    /// `value`; returns its index, or `None` at once when `status` leaves
    /// none in (`shmem_wait_until_any`).
    ///
    /// # Errors
    /// As [`Context::wait_until_all`](crate::Context::wait_until_all).
    pub fn wait_until_any<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        self.rt.wait_until_any(ivars, status, cmp, value)
    }

    /// [`Context::wait_until_any`](crate::Context::wait_until_any) with a value per word.
    ///
    /// # Errors
    /// As [`Context::wait_until_all_vector`](crate::Context::wait_until_all_vector).
    pub fn wait_until_any_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Option<usize>> {
        self.rt.wait_until_any_vector(ivars, status, cmp, values)
    }

    /// Waits until at least one word that `status` leaves in compares to
    /// `value`; returns the indices of all that do (empty at once when
    /// `status` leaves none in) (`shmem_wait_until_some`).
    ///
    /// # Errors
    /// As [`Context::wait_until_all`](crate::Context::wait_until_all).
    pub fn wait_until_some<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Vec<usize>> {
        self.rt.wait_until_some(ivars, status, cmp, value)
    }

    /// [`Context::wait_until_some`](crate::Context::wait_until_some) with a value per word.
    ///
    /// # Errors
    /// As [`Context::wait_until_all_vector`](crate::Context::wait_until_all_vector).
    pub fn wait_until_some_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Vec<usize>> {
        self.rt.wait_until_some_vector(ivars, status, cmp, values)
    }

    /// Whether every word that `status` leaves in compares to `value` now
    /// (`shmem_test_all`).
    ///
    /// # Errors
    /// As [`Context::wait_until_all`](crate::Context::wait_until_all) (without the waiting ones).
    pub fn test_all<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<bool> {
        self.rt.test_all(ivars, status, cmp, value)
    }

    /// [`Context::test_all`](crate::Context::test_all) with a value per word.
    ///
    /// # Errors
    /// As [`Context::wait_until_all_vector`](crate::Context::wait_until_all_vector) (without the waiting ones).
    pub fn test_all_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<bool> {
        self.rt.test_all_vector(ivars, status, cmp, values)
    }

    /// The index of a word that `status` leaves in and compares to `value`
    /// now, if any (`shmem_test_any`).
    ///
    /// # Errors
    /// As [`Context::test_all`](crate::Context::test_all).
    pub fn test_any<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        self.rt.test_any(ivars, status, cmp, value)
    }

    /// [`Context::test_any`](crate::Context::test_any) with a value per word.
    ///
    /// # Errors
    /// As [`Context::test_all_vector`](crate::Context::test_all_vector).
    pub fn test_any_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Option<usize>> {
        self.rt.test_any_vector(ivars, status, cmp, values)
    }

    /// The indices of the words that `status` leaves in and compare to
    /// `value` now (`shmem_test_some`).
    ///
    /// # Errors
    /// As [`Context::test_all`](crate::Context::test_all).
    pub fn test_some<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Vec<usize>> {
        self.rt.test_some(ivars, status, cmp, value)
    }

    /// [`Context::test_some`](crate::Context::test_some) with a value per word.
    ///
    /// # Errors
    /// As [`Context::test_all_vector`](crate::Context::test_all_vector).
    pub fn test_some_vector<T: WaitValue>(
        &self,
        ivars: SymSlice<'_, T>,
        status: Option<&[i32]>,
        cmp: Cmp,
        values: &[T],
    ) -> Result<Vec<usize>> {
        self.rt.test_some_vector(ivars, status, cmp, values)
    }

    /// Waits until this PE's signal word `sig` compares to `value`; returns
    /// the signal's value then (`shmem_signal_wait_until`).
    ///
    /// # Errors
    /// As [`Context::wait_until`](crate::Context::wait_until).
    pub fn signal_wait_until(&self, sig: SymSlice<'_, u64>, cmp: Cmp, value: u64) -> Result<u64> {
        self.rt.signal_wait_until(sig, cmp, value)
    }
}

/// The bitwise atomics' façade, generated: `fetch_<op>` returns the old value, `<op>`
/// does not.
macro_rules! bitwise {
    ($($fetch:ident, $plain:ident, $name:literal;)*) => {
        impl Context {$(
            #[doc = concat!("Applies bitwise ", $name, " with `value` to the first element of `dest` on PE `pe`; returns the old value (`shmem_atomic_fetch_", $name, "`).")]
            ///
            /// # Errors
            /// As [`Context::atomic_fetch`](crate::Context::atomic_fetch).
            pub fn $fetch<T: AmoBitwise>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<T> {
                self.rt.$fetch(dest, value, pe)
            }

            #[doc = concat!("Applies bitwise ", $name, " with `value` to the first element of `dest` on PE `pe` (`shmem_atomic_", $name, "`).")]
            ///
            /// # Errors
            /// As [`Context::atomic_fetch`](crate::Context::atomic_fetch).
            pub fn $plain<T: AmoBitwise>(&self, dest: SymSlice<'_, T>, value: T, pe: u32) -> Result<()> {
                self.rt.$plain(dest, value, pe)
            }
        )*}
    };
}

bitwise! {
    atomic_fetch_and, atomic_and, "and";
    atomic_fetch_or, atomic_or, "or";
    atomic_fetch_xor, atomic_xor, "xor";
}
