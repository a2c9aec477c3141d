//! The library state (one per process, made by `shmem_init`), the setup and
//! query calls, and how an error ends a PE: a message naming the C call on
//! stderr, then exit status 1 (the launcher then stops the job, naming the
//! PE), as OpenSHMEM leaves errors to the implementation.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};

use vkshmem_host::{Context, SymBuffer, Team};

use crate::globals::Globals;

/// What `shmem_init` made.
pub struct State {
    /// The host library's context.
    pub ctx: Context,
    /// This PE and the job's size.
    pub me: u32,
    /// PEs in the job.
    pub npes: u32,
    /// Where this PE's heap is mapped.
    pub base: usize,
    /// Bytes of each heap.
    pub size: usize,
    /// The largest power of two dividing every heap mapping of every PE
    /// (its own and its peers', `Context::heap_mapping_align`): the most
    /// `shmem_align` can promise (a symmetric offset aligned to more is not
    /// an aligned address in every mapping).
    pub base_align: usize,
    /// Live `shmem_malloc` blocks by heap offset.
    pub allocs: Mutex<HashMap<u64, SymBuffer<u8>>>,
    /// The program's data segment, shared.
    pub globals: Globals,
    /// Contexts made by `shmem_ctx_create`, by handle − 2 (`None`: destroyed).
    pub ctxs: Mutex<Vec<Option<Team>>>,
    /// A heap pSync passed on for an active set whose pSync is a global
    /// (the host library checks pSync but never writes it).
    pub psync: SymBuffer<i64>,
}

static STATE: OnceLock<State> = OnceLock::new();
static FINALIZED: AtomicBool = AtomicBool::new(false);
static THREAD_LEVEL: AtomicI32 = AtomicI32::new(3);

/// Ends this PE: `vkshmem: <call>: <why>` on stderr, C's stdio flushed, exit
/// status 1.
pub fn fatal(call: &str, why: impl std::fmt::Display) -> ! {
    eprintln!("vkshmem: {call}: {why}");
    // SAFETY: fflush(NULL) flushes every C stream; _exit ends the process
    // without running atexit handlers that could call back into the library.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(1)
    }
}

/// `Result` → value, or [`fatal`].
pub trait OrDie<T> {
    /// The value, or the end of this PE with a message naming `call`.
    fn or_die(self, call: &str) -> T;
}

impl<T, E: std::fmt::Display> OrDie<T> for Result<T, E> {
    fn or_die(self, call: &str) -> T {
        self.unwrap_or_else(|e| fatal(call, e))
    }
}

/// The state, or [`fatal`] before `shmem_init` or after `shmem_finalize`.
pub fn st(call: &str) -> &'static State {
    if FINALIZED.load(Ordering::Acquire) {
        fatal(call, "called after shmem_finalize");
    }
    STATE
        .get()
        .unwrap_or_else(|| fatal(call, "called before shmem_init"))
}

/// `shmem_init`: joins the job. A second call does nothing.
pub fn init(call: &str) {
    if STATE.get().is_some() {
        return;
    }
    if let Some(filter) = vkshmem_host::config::log_filter(vkshmem_host::config::env) {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init();
    }
    // Before any thread of ours exists: the data segment is copied and
    // mapped again, and a store made meanwhile would be lost.
    let segment = crate::globals::remap();
    let ctx = Context::init().or_die(call);
    let me = ctx.my_pe();
    let Some(base) = ctx.heap_base(me) else {
        fatal(
            call,
            "the C API needs a symmetric heap the host can map (C programs load and store it), \
             and this device's heap memory is not host-visible",
        )
    };
    let globals = Globals::share(&ctx, segment).or_die(call);
    // Every mapping of a heap here (this PE's and its peers' for shmem_ptr).
    let mapped = ctx.heap_mapping_align().unwrap_or(1 << 12);
    let mine = mapped.trailing_zeros() as u8;
    let base_align = 1usize
        << ctx
            .allgather_bytes(&[mine])
            .or_die(call)
            .iter()
            .map(|b| b.first().copied().unwrap_or(12))
            .min()
            .unwrap_or(mine);
    let psync = ctx.calloc::<i64>(1).or_die(call);
    let state = State {
        me,
        npes: ctx.n_pes(),
        base: base.as_ptr() as usize,
        size: ctx.heap_size() as usize,
        base_align,
        allocs: Mutex::new(HashMap::new()),
        globals,
        ctxs: Mutex::new(Vec::new()),
        psync,
        ctx,
    };
    if STATE.set(state).is_err() {
        fatal(call, "initialised twice at once");
    }
    finalize_at_exit(call);
    st(call).ctx.barrier_all().or_die(call);
}

/// Makes a normal exit (a return from `main`, `exit(0)`) finalize a PE
/// that did not call `shmem_finalize`: OpenSHMEM finalizes a `start_pes`
/// program implicitly, collectively, at exit, and the reference
/// implementations do the same after `shmem_init`. Registered at the end of
/// init, so the exit handlers the program registers later (which may still
/// call the library) run first, and those the Vulkan driver registered
/// during init run after. A non-zero status is a failure the launcher must
/// report, and its peers may never reach the finalize's barrier: that exit
/// finalizes nothing. `fatal` and `shmem_global_exit` end the process with
/// `_exit`, which runs no handler.
fn finalize_at_exit(call: &str) {
    // SAFETY: registers a handler that is a plain `extern "C"` function of
    // this library, which stays loaded until the process ends.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    let failed = unsafe { on_exit(at_exit, std::ptr::null_mut()) } != 0;
    // SAFETY: as above.
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let failed = unsafe { libc::atexit(at_exit_any) } != 0;
    if failed {
        fatal(call, "cannot register the implicit finalize at exit");
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" {
    /// glibc's `atexit` whose handler also gets the exit status.
    fn on_exit(
        handler: extern "C" fn(std::ffi::c_int, *mut c_void),
        arg: *mut c_void,
    ) -> std::ffi::c_int;
}

/// The implicit finalize: runs at exit with the exit status.
extern "C" fn at_exit(status: std::ffi::c_int, _arg: *mut c_void) {
    if status == 0 && STATE.get().is_some() && !FINALIZED.load(Ordering::Acquire) {
        finalize_as("shmem_finalize (implicit, at exit)");
    }
}

/// [`at_exit`] where the C library does not tell the status.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
extern "C" fn at_exit_any() {
    at_exit(0, std::ptr::null_mut());
}

/// `shmem_init_thread`: every level is provided (the host library is
/// thread-safe); returns 0.
pub fn init_thread(requested: i32, provided: *mut i32) -> i32 {
    if !(0..=3).contains(&requested) {
        eprintln!("vkshmem: shmem_init_thread: unknown thread level {requested}");
        return 1;
    }
    init("shmem_init_thread");
    THREAD_LEVEL.store(3, Ordering::Relaxed);
    if !provided.is_null() {
        // SAFETY: the caller passes a valid int pointer (non-null checked).
        unsafe { *provided = 3 };
    }
    0
}

/// `shmem_query_thread`.
pub fn query_thread(provided: *mut i32) {
    let _ = st("shmem_query_thread");
    if provided.is_null() {
        fatal("shmem_query_thread", "provided is NULL");
    }
    // SAFETY: non-null int pointer from the caller.
    unsafe { *provided = THREAD_LEVEL.load(Ordering::Relaxed) };
}

/// `shmem_finalize`: a barrier, then this PE leaves the job. Later calls
/// (but a second finalize, which does nothing) end the PE with a message.
pub fn finalize() {
    finalize_as("shmem_finalize");
}

/// [`finalize`], its errors naming `call`.
fn finalize_as(call: &str) {
    let Some(s) = STATE.get() else {
        fatal(call, "called before shmem_init")
    };
    if FINALIZED.swap(true, Ordering::AcqRel) {
        return;
    }
    s.ctx.finalize_in_place().or_die(call);
}

/// `shmem_global_exit`: C's streams flushed, the job told (the launcher
/// stops every other PE and exits with `status`; mpirun through
/// `MPI_Abort`), then this PE exits with `status`.
pub fn global_exit(status: i32) -> ! {
    // SAFETY: fflush(NULL) flushes every C stream.
    let flush = || unsafe {
        libc::fflush(std::ptr::null_mut());
    };
    match STATE.get() {
        Some(s) if !FINALIZED.load(Ordering::Acquire) => s.ctx.global_exit(status, flush),
        _ => {
            flush();
            // SAFETY: ends the process (no library state to tell).
            unsafe { libc::_exit(status) }
        }
    }
}

/// `shmem_my_pe`.
pub fn my_pe(call: &str) -> i32 {
    st(call).me as i32
}

/// `shmem_n_pes`.
pub fn n_pes(call: &str) -> i32 {
    st(call).npes as i32
}

/// `shmem_pe_accessible`: every PE of the job is reached by every call.
pub fn pe_accessible(pe: i32) -> i32 {
    let s = st("shmem_pe_accessible");
    i32::from(pe >= 0 && (pe as u32) < s.npes)
}

/// `shmem_addr_accessible`.
pub fn addr_accessible(addr: *const c_void, pe: i32) -> i32 {
    let s = st("shmem_addr_accessible");
    if pe < 0 || pe as u32 >= s.npes {
        return 0;
    }
    match s.try_sym(addr.cast(), 1) {
        Some(crate::addr::Sym::Heap(_)) => 1,
        Some(crate::addr::Sym::Global(off)) => i32::from(s.globals.peer(pe as u32, off).is_some()),
        None => 0,
    }
}

/// `shmem_ptr`: the local address of `dest` on `pe` when this PE can load
/// and store it, else NULL.
pub fn ptr(dest: *const c_void, pe: i32) -> *mut c_void {
    let s = st("shmem_ptr");
    if pe < 0 || pe as u32 >= s.npes {
        return std::ptr::null_mut();
    }
    let pe = pe as u32;
    match s.try_sym(dest.cast(), 1) {
        Some(crate::addr::Sym::Heap(off)) => match s.ctx.heap_base(pe) {
            // SAFETY: `off` lies in the heap (try_sym), so the pointer stays
            // inside PE `pe`'s mapping.
            Some(b) => unsafe { b.as_ptr().add(off as usize).cast() },
            None => std::ptr::null_mut(),
        },
        Some(crate::addr::Sym::Global(off)) => s
            .globals
            .peer(pe, off)
            .map_or(std::ptr::null_mut(), |p| p.cast()),
        None => std::ptr::null_mut(),
    }
}

/// `shmem_team_ptr`: as [`ptr`] for PE `pe` of `team`.
pub fn team_ptr(team: crate::TeamH, dest: *const c_void, pe: i32) -> *mut c_void {
    let s = st("shmem_team_ptr");
    match s
        .ctx
        .team_translate_pe(crate::team::team(team), pe, Team::WORLD)
    {
        Ok(Some(w)) => ptr(dest, w as i32),
        _ => std::ptr::null_mut(),
    }
}

/// `shmem_info_get_version`.
pub fn version(major: *mut i32, minor: *mut i32) {
    if major.is_null() || minor.is_null() {
        fatal("shmem_info_get_version", "NULL argument");
    }
    // SAFETY: non-null int pointers from the caller.
    unsafe {
        *major = 1;
        *minor = 5;
    }
}

/// `shmem_info_get_name`: the vendor string, NUL-terminated (at most
/// `SHMEM_MAX_NAME_LEN` bytes).
pub fn name(out: *mut c_char) {
    if out.is_null() {
        fatal("shmem_info_get_name", "NULL argument");
    }
    let s = b"vkshmem\0";
    // SAFETY: the caller's buffer holds SHMEM_MAX_NAME_LEN (256) bytes.
    unsafe { std::ptr::copy_nonoverlapping(s.as_ptr().cast(), out, s.len()) };
}
