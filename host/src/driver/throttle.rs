//! The wait throttle: makes device waits on CPU drivers (Mesa's llvmpipe, that is
//! lavapipe) last seconds instead of about 130 ms, and gives their CPU to the PEs
//! they wait for.
//!
//! # Why
//! On llvmpipe a kernel runs on the driver's CPU threads, and an invocation may
//! run 65535 loop iterations in all before the driver ends every loop (see
//! `LibraryConfig::loop_cap` in the device crate). A device wait polls 4 times
//! per iteration, spaced by square roots (about 2 µs, see
//! `capped_polls` in the device crate), so it may spin for about 130 ms of
//! *CPU time*.
//! With more PEs than cores, or any other load, a PE that waits for a peer the
//! scheduler has not run yet spends that budget while taking the CPU the peer
//! needs, and a correct program failed ("the driver cut the kernel's loops
//! short").
//!
//! # How
//! The loop budget is counted in iterations, so a thread that does not run does
//! not spend it. Where the driver caps loops, the device library announces every
//! wait that outlasts its first polls in the PE's control header (`waiting`,
//! `wait_seq`, and the condition as a hint: `wait_addr`, `wait_cond`,
//! `wait_value`). While a kernel that waits on peers runs, the host thread that
//! waits for its fence checks those words every [`TICK`] ([`Session::tick`]).
//! When the device has been waiting at every tick for [`STUCK_AFTER`] with
//! fewer than [`QUICK_WAITS`] waits ending, it signals every thread the driver
//! created ([`driver_threads_since`], [`DriverThreads`]). The handler
//! ([`on_signal`]) naps in steps of [`NAP`] for at most [`PERIOD`], returning
//! early as soon as the hinted condition holds, the device stops waiting or the
//! abort word is set; then, while the device still waits, it re-arms its own
//! thread's timer, which signals it again after [`WINDOW`]. The chain needs no
//! host thread (which a loaded machine may not run for milliseconds) and ends
//! by itself when the device stops waiting; the host starts it again when the
//! device is stuck and no handler has run for two windows.
//!
//! So a stuck wait polls about `WINDOW` in every `PERIOD`: its loop budget
//! lasts seconds instead of 100 ms, the CPU goes to the PEs it waits for, and a
//! wait whose condition the hint names wakes within about `NAP` of it. Other
//! threads of the PE are slowed while the device waits, never stopped.
//!
//! The signal is SIGSYS: Mesa creates its threads with every signal blocked
//! except SIGSYS (seccomp needs it), so no other signal reaches them. Ours come
//! from `tgkill` or a timer (`si_code` `SI_TKILL`, `SI_TIMER`); any other SIGSYS
//! (a seccomp trap) gets the default action back and is raised again.
//!
//! # Safety of the handler
//! It runs on driver threads, in the middle of JIT code. It only reads atomics
//! and this PE's mapped control words (through a pointer published for the
//! duration of one launch), reads the monotonic clock and sleeps: all
//! async-signal-safe. A launch publishes the pointer before its first signal and
//! withdraws it after its fence signalled, then waits until no handler is still
//! running ([`Lane::in_handler`]), so no handler reads the mapping after the launch.
//!
//! # One lane per device
//! A signal handler reaches only statics, so the state a handler reads lives
//! in two process-wide tables: [`SLOTS`] (one per driver thread: its timer and
//! its chain) and [`LANES`] (one per device: the launch in progress, whether
//! it throttles, how long to nap). Each device's driver threads point at its
//! lane, so the PEs of one process (threads, each with its own device)
//! throttle their own devices independently, as PEs in separate processes do.

use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::libc;
use vkshmem_device::layout::ControlHeader;

/// `wait_cond` bit of a wait on this PE's proxy thread (device/src/proxy.rs).
pub const PROXY_WAIT: u32 = 512;

/// How long the device must have been waiting, with few waits ending, before
/// its threads are throttled.
pub const STUCK_AFTER: Duration = Duration::from_millis(2);
/// Waits that may end within one `STUCK_AFTER` while the device still counts
/// as stuck: more means the waits are short (a fast barrier loop), and sleeping
/// would only slow them down.
pub const QUICK_WAITS: u32 = 16;
/// How long the driver's threads sleep after each signal (at most).
pub const PERIOD: Duration = Duration::from_millis(10);
/// The longest sleep, once one wait has kept the device stuck for long (see
/// [`period_after`]).
pub const LONG_PERIOD: Duration = Duration::from_millis(200);
/// How long they run, at least, between two sleeps.
pub const WINDOW: Duration = Duration::from_micros(150);
/// The handler's sleep step (how soon it sees the hinted condition).
pub const NAP: Duration = Duration::from_micros(100);
/// How often the host looks at the control words while a launch runs.
pub const TICK: Duration = Duration::from_millis(1);
/// How often it looks while it throttles (to re-signal soon after a handler
/// returned because its wait's condition held and the next wait began).
pub const THROTTLE_TICK: Duration = Duration::from_micros(200);

/// How long the driver's threads sleep per signal once the same wait has kept
/// the device stuck for `stuck`: [`PERIOD`] for a second, then longer, up to
/// [`LONG_PERIOD`]. A stuck wait still wakes within [`NAP`] of its hinted
/// condition, so a longer sleep costs little latency, and the wait's loop
/// budget (about 700 windows of [`WINDOW`]) lasts about 100 s instead of 7 s:
/// long enough for a peer that submits late (a queued collective, whose peers
/// meet on the device only) or is still compiling on a loaded machine.
pub fn period_after(stuck: Duration) -> Duration {
    if stuck < Duration::from_secs(1) {
        PERIOD
    } else if stuck < Duration::from_secs(5) {
        PERIOD * 5
    } else {
        LONG_PERIOD
    }
}

/// One device's throttle state, read by the handlers on its driver threads.
struct Lane {
    /// Taken by a device's [`DriverThreads`].
    taken: AtomicBool,
    /// The mapped control header of the launch in progress (null: none).
    active: AtomicPtr<u32>,
    /// Words of the mapping behind `active` (the hint's address must be
    /// below it).
    active_words: AtomicUsize,
    /// Whether the launch in progress throttles now (the host's decision;
    /// chains end when it is off).
    enabled: AtomicBool,
    /// Invocations that must be inside long waits at once for the device to
    /// count as waiting: 1, or the workgroups of a launch whose workgroups
    /// wait for each other (a multi-workgroup collective: while some of them
    /// still move data, napping the driver's threads would stop those too;
    /// see [`Session::need_waiting`]).
    need_waiting: AtomicU32,
    /// The handlers' sleep now, in ns ([`period_after`]; [`PERIOD`] at first).
    period_ns: AtomicU64,
    /// Handlers running now on this lane's threads.
    in_handler: AtomicUsize,
    /// Debug statistics: handlers that ended at their deadline, on the abort
    /// word, because the wait was over, because the hinted condition held;
    /// naps taken; timers re-armed.
    ends: [AtomicU64; 6],
}

impl Lane {
    // Only the initialiser of LANES: each element is a fresh copy.
    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Lane = Lane {
        taken: AtomicBool::new(false),
        active: AtomicPtr::new(std::ptr::null_mut()),
        active_words: AtomicUsize::new(0),
        enabled: AtomicBool::new(false),
        need_waiting: AtomicU32::new(1),
        period_ns: AtomicU64::new(PERIOD.as_nanos() as u64),
        in_handler: AtomicUsize::new(0),
        ends: [const { AtomicU64::new(0) }; 6],
    };

    /// Whether `waiting` invocations in long waits count as the device
    /// waiting ([`Lane::need_waiting`]).
    fn device_waits(&self, waiting: u32) -> bool {
        waiting >= self.need_waiting.load(Ordering::Relaxed)
    }

    fn count(&self, end: usize) {
        self.ends[end].fetch_add(1, Ordering::Relaxed);
    }
}

/// The devices' lanes: one per device whose driver threads are throttled at
/// once (a process rarely opens more than a few).
static LANES: [Lane; 64] = [Lane::FREE; 64];

const fn word(field: usize) -> usize {
    field / 4
}
const W_WAITING: usize = word(std::mem::offset_of!(ControlHeader, waiting));
const W_SEQ: usize = word(std::mem::offset_of!(ControlHeader, wait_seq));
const W_ADDR: usize = word(std::mem::offset_of!(ControlHeader, wait_addr));
const W_COND: usize = word(std::mem::offset_of!(ControlHeader, wait_cond));
const W_VALUE: usize = word(std::mem::offset_of!(ControlHeader, wait_value));
const W_ABORT: usize = word(std::mem::offset_of!(ControlHeader, abort));

/// The signal the throttle uses: SIGSYS, because Mesa creates its threads with
/// every signal blocked except SIGSYS (which seccomp needs), so nothing else
/// reaches them. The handler tells our signals (sent by `tgkill` or a timer)
/// from a real SIGSYS (a seccomp trap), for which it restores the default
/// action and raises it again, so such a crash still crashes.
fn signal_number() -> libc::c_int {
    libc::SIGSYS
}

/// Reads word `i` of a live mapping of at least `i + 1` words.
///
/// # Safety
/// `base` must point to a mapping of more than `i` aligned u32 words that stays
/// mapped for the call.
unsafe fn load(base: *const u32, i: usize) -> u32 {
    // SAFETY: the caller guarantees the word is mapped and aligned; other
    // processes and the device write it concurrently, so it is read atomically.
    unsafe { AtomicU32::from_ptr(base.add(i) as *mut u32) }.load(Ordering::Acquire)
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own; async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether `v` satisfies the device library's wait condition `cond` (a
/// `SHMEM_CMP_*` code or 6 for "has reached epoch", plus 256 for signed) against
/// `value`: the host twin of `vks_cond`/`vks_cond_bit` in shaders/vkshmem.wgsl.
pub fn condition_holds(cond: u32, value: u32, v: u32) -> bool {
    let signed = cond & 256 != 0;
    let (a, b) = match cond & 255 {
        6 => return (v.wrapping_sub(value) as i32) >= 0,
        _ if signed => ((v as i32) as i64, (value as i32) as i64),
        _ => (v as i64, value as i64),
    };
    match cond & 255 {
        0 => a == b,
        1 => a != b,
        2 => a > b,
        3 => a >= b,
        4 => a < b,
        5 => a <= b,
        _ => false,
    }
}

/// The signal handler (see the module docs).
extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO.
    let code = unsafe { (*info).si_code };
    if code != libc::SI_TKILL && code != libc::SI_TIMER {
        // Not ours: a seccomp trap or a signal from elsewhere. Crash as if no
        // handler had been installed. SAFETY: signal and raise are
        // async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return;
    }
    // SAFETY: errno is thread-local; the interrupted code must find it as it
    // left it (nanosleep and timer_settime may set it).
    let errno = unsafe { *libc::__errno_location() };
    if let Some((slot, tid)) = own_slot() {
        let lane = &LANES[slot.lane.load(Ordering::SeqCst)];
        lane.in_handler.fetch_add(1, Ordering::SeqCst);
        // Counted before looking again: a device that freed this slot
        // (and waits for its lane's handlers before deleting the timers)
        // either sees this handler or is seen here.
        if slot.tid.load(Ordering::SeqCst) == tid {
            slot.busy.store(true, Ordering::SeqCst);
            if nap_while_stuck(slot, lane) {
                slot.rearm(lane);
            }
            slot.returned_at.store(monotonic_ns(), Ordering::SeqCst);
            slot.cpu_at_return.store(thread_cpu_ns(), Ordering::SeqCst);
            slot.busy.store(false, Ordering::SeqCst);
        }
        lane.in_handler.fetch_sub(1, Ordering::SeqCst);
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// CPU time of the calling thread, ns (async-signal-safe).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Naps while the device of the launch in progress waits, for at most
/// [`PERIOD`]. True when the thread should nap again after [`WINDOW`] (the
/// device still waits, or its hinted condition just held and the next wait
/// may follow); false when the launch is over, throttling is off, the device
/// stopped waiting or the abort word is set.
///
/// The hint names the latest wait only. When it holds but this thread has run
/// since it last woke for it and no new wait began, the wait that keeps the
/// device waiting is another one: the hint is ignored until the period ends.
fn nap_while_stuck(slot: &Slot, lane: &Lane) -> bool {
    let until = monotonic_ns() + lane.period_ns.load(Ordering::Relaxed);
    let nap = libc::timespec {
        tv_sec: 0,
        tv_nsec: NAP.as_nanos() as libc::c_long,
    };
    let ran = thread_cpu_ns() > slot.cpu_at_return.load(Ordering::SeqCst) + RAN.as_nanos() as u64;
    loop {
        // Re-read every time: the launch withdraws the pointer when it ends,
        // and then waits for its lane's handlers (counting this one) to end.
        let base = lane.active.load(Ordering::SeqCst);
        if base.is_null() || !lane.enabled.load(Ordering::SeqCst) {
            return false;
        }
        if monotonic_ns() >= until {
            lane.count(0);
            return true;
        }
        // SAFETY: `base` is published only while the launch that owns the
        // mapping runs (module docs); control-header words lie in it.
        let (abort, waiting, seq) = unsafe {
            (
                load(base, W_ABORT),
                load(base, W_WAITING),
                load(base, W_SEQ),
            )
        };
        if abort != 0 || !lane.device_waits(waiting) {
            lane.count(if abort != 0 { 1 } else { 2 });
            return false;
        }
        let words = lane.active_words.load(Ordering::SeqCst);
        // SAFETY: as above; the hinted address is checked against the mapping.
        let (addr, cond, value) = unsafe {
            (
                load(base, W_ADDR) as usize,
                load(base, W_COND),
                load(base, W_VALUE),
            )
        };
        // SAFETY: addr < words, the mapped length.
        if addr < words && condition_holds(cond, value, unsafe { load(base, addr) }) {
            let key = u64::from(seq) + 1;
            let stale = ran && slot.woke_for.load(Ordering::SeqCst) == key;
            if !stale {
                slot.woke_for.store(key, Ordering::SeqCst);
                lane.count(3);
                return true;
            }
        }
        lane.count(4);
        // SAFETY: nanosleep reads our timespec; async-signal-safe. An early wake
        // (EINTR) only shortens the nap.
        unsafe { libc::nanosleep(&nap, std::ptr::null_mut()) };
    }
}

/// CPU time a thread must have run since its handler returned to count as
/// having polled (see [`nap_while_stuck`]).
const RAN: Duration = Duration::from_micros(20);

/// One driver thread: its id, its device's lane, its timer, and its chain's
/// state, where the handler finds itself (by thread id) and the host sees
/// whether the chain is live.
struct Slot {
    /// Thread id; 0: the slot is free.
    tid: AtomicI32,
    /// Its device's index in [`LANES`].
    lane: AtomicUsize,
    /// Its `timer_t`.
    timer: AtomicUsize,
    /// A handler runs on the thread now.
    busy: AtomicBool,
    /// CLOCK_MONOTONIC ns when its handler last returned.
    returned_at: AtomicU64,
    /// Its CPU time then.
    cpu_at_return: AtomicU64,
    /// `wait_seq + 1` of the hint it last woke for.
    woke_for: AtomicU64,
}

impl Slot {
    // Only the initialiser of SLOTS: each element is a fresh copy.
    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Slot = Slot {
        tid: AtomicI32::new(0),
        lane: AtomicUsize::new(0),
        timer: AtomicUsize::new(0),
        busy: AtomicBool::new(false),
        returned_at: AtomicU64::new(0),
        cpu_at_return: AtomicU64::new(0),
        woke_for: AtomicU64::new(0),
    };

    /// Arms the thread's timer to signal it again after [`WINDOW`]
    /// (async-signal-safe: timer_settime).
    fn rearm(&self, lane: &Lane) {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: 0,
                tv_nsec: WINDOW.as_nanos() as libc::c_long,
            },
        };
        lane.count(5);
        // SAFETY: the timer was created for this thread by DriverThreads; it is
        // deleted only after the slot is freed and no handler runs (Drop).
        unsafe {
            libc::timer_settime(
                self.timer.load(Ordering::SeqCst) as libc::timer_t,
                0,
                &spec,
                std::ptr::null_mut(),
            )
        };
    }
}

/// The driver threads' slots: llvmpipe starts a thread per core and a few
/// more per device, so 512 serve several devices on a large machine.
static SLOTS: [Slot; 512] = [Slot::FREE; 512];
/// Serialises taking and freeing slots and lanes.
static SLOTS_LOCK: Mutex<()> = Mutex::new(());

/// The calling thread's slot and id (async-signal-safe: gettid and atomics).
fn own_slot() -> Option<(&'static Slot, i32)> {
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    let s = SLOTS.iter().find(|s| s.tid.load(Ordering::SeqCst) == tid)?;
    Some((s, tid))
}

/// Waits (at most 200 ms) until no handler runs on `lane`'s threads.
fn drain_handlers(lane: &Lane) -> bool {
    let until = Instant::now() + Duration::from_millis(200);
    while lane.in_handler.load(Ordering::SeqCst) != 0 {
        if Instant::now() >= until {
            tracing::warn!("a wait-throttle handler did not return within 200 ms");
            return false;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    true
}

/// Installs the handler once per process. False when SIGSYS already has
/// another handler (then the throttle stays off).
fn install() -> bool {
    static INSTALLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INSTALLED.get_or_init(|| {
        // SAFETY: sigaction with a zeroed struct, our handler and SA_RESTART (so
        // the driver's interrupted system calls resume); the old action is read
        // first so a handler someone else installed is left alone.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal_number(), std::ptr::null(), &mut old) != 0
                || old.sa_sigaction != libc::SIG_DFL
            {
                tracing::warn!("SIGSYS has a handler already; device waits on this CPU driver are not throttled");
                return false;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as *const () as usize;
            act.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(signal_number(), &act, std::ptr::null_mut()) == 0
        }
    })
}

/// Whether our handler is still SIGSYS's (another library may have replaced it).
fn still_installed() -> bool {
    // SAFETY: reads the current action into a struct we own.
    unsafe {
        let mut cur: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal_number(), std::ptr::null(), &mut cur) == 0
            && cur.sa_sigaction == on_signal as *const () as usize
    }
}

/// This process's thread ids (empty when /proc cannot be read).
pub fn thread_ids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut v: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

/// The threads that exist now and not in `before`: called around opening a
/// device, the driver's own threads (llvmpipe's compute and rasterizer threads,
/// its queue and disk-cache threads), plus any thread the program started
/// meanwhile (it would nap with them while a device wait lasts).
pub fn driver_threads_since(before: &[i32]) -> Vec<i32> {
    let me = thread_name(nix::unistd::gettid().as_raw());
    thread_ids()
        .into_iter()
        .filter(|&t| before.binary_search(&t).is_err())
        .filter(|&t| {
            let name = thread_name(t);
            // Not vkshmem's, nor another thread-PE's (`pe-N`: its driver's
            // threads inherit that name) started meanwhile.
            !is_own_name(&name) && (name == me || !name.starts_with(THREAD_PE_PREFIX))
        })
        .collect()
}

/// What `run_threads` names a thread-PE's thread (`pe-N`).
pub const THREAD_PE_PREFIX: &str = "pe-";

/// Thread `tid`'s name (empty when /proc cannot say).
fn thread_name(tid: i32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|n| n.trim_end().to_string())
        .unwrap_or_default()
}

/// The names vkshmem gives its own threads (the proxy's end in its PE).
/// Only these are vkshmem's: a thread inherits its creator's name, so the
/// driver's threads of a program called `vkshmem-bench`, or of a thread-PE
/// (`pe-N`), carry that name.
pub const OWN_THREADS: [&str; 4] = [
    "vkshmem-prebuild",
    "vkshmem-queue",
    "vkshmem-proxy-",
    "vkshmem-bootstrap",
];

/// Whether thread `tid` is vkshmem's own ([`OWN_THREADS`]), never the
/// driver's.
fn ours(tid: i32) -> bool {
    is_own_name(&thread_name(tid))
}

/// Whether `comm` (a thread's name as the kernel keeps it: at most 15
/// bytes) is one of [`OWN_THREADS`].
fn is_own_name(comm: &str) -> bool {
    OWN_THREADS
        .iter()
        .any(|own| comm.starts_with(&own[..own.len().min(15)]))
}

/// For a device the program created before vkshmem saw it: the threads that
/// may be the driver's, that is every thread of the process now except the
/// calling one and vkshmem's own ([`OWN_THREADS`]). llvmpipe names only some
/// of its threads (`llvmpipe-N`), so names cannot single them out; a program
/// thread in the list naps with them while a device wait lasts.
pub fn driver_threads_by_name() -> Vec<i32> {
    let me = nix::unistd::gettid().as_raw();
    thread_ids()
        .into_iter()
        .filter(|&t| t != me)
        .filter(|&t| !ours(t))
        .collect()
}

/// The driver's threads of one device (llvmpipe's). At the first launch that
/// throttles, the handler is installed and each thread gets a slot and a
/// one-shot timer that signals that thread only (`SIGEV_THREAD_ID`): a handler
/// that ends its nap re-arms its own thread's timer, so the threads keep
/// napping while the device waits without needing the host thread, which may
/// not be scheduled for milliseconds on a loaded machine.
#[derive(Debug, Default)]
pub struct DriverThreads {
    tids: Vec<i32>,
    /// The lane and slots taken, once the first session asked (`None`: the
    /// throttle is off).
    taken: std::sync::OnceLock<Option<Taken>>,
    /// Held by the session of the launch that throttles now: one per device.
    owner: Mutex<()>,
}

/// A device's lane and its threads' slots.
#[derive(Debug)]
struct Taken {
    lane: usize,
    slots: Vec<usize>,
}

impl DriverThreads {
    /// The threads `tids` (of this process); nothing is installed yet.
    pub fn new(tids: Vec<i32>) -> DriverThreads {
        DriverThreads {
            tids,
            taken: std::sync::OnceLock::new(),
            owner: Mutex::new(()),
        }
    }

    /// The lane and the slots of the threads, installing the handler and
    /// creating the timers the first time; `None` when the throttle cannot
    /// run.
    fn taken(&self) -> Option<&Taken> {
        self.taken
            .get_or_init(|| {
                if self.tids.is_empty() || !install() {
                    return None;
                }
                let _g = SLOTS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
                let Some(lane) = LANES.iter().position(|l| !l.taken.load(Ordering::SeqCst)) else {
                    tracing::warn!("wait throttle: no lane left for another device");
                    return None;
                };
                LANES[lane].taken.store(true, Ordering::SeqCst);
                let mut taken = Vec::new();
                for &tid in &self.tids {
                    let Some(i) = SLOTS.iter().position(|s| s.tid.load(Ordering::SeqCst) == 0)
                    else {
                        tracing::warn!("wait throttle: no slot left for thread {tid}");
                        break;
                    };
                    // SAFETY: a zeroed sigevent is valid; we fill the fields
                    // SIGEV_THREAD_ID uses; timer_create writes the id we own.
                    let timer = unsafe {
                        let mut ev: libc::sigevent = std::mem::zeroed();
                        ev.sigev_notify = libc::SIGEV_THREAD_ID;
                        ev.sigev_signo = signal_number();
                        ev.sigev_notify_thread_id = tid;
                        let mut id: libc::timer_t = std::ptr::null_mut();
                        if libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut id) != 0 {
                            continue;
                        }
                        id as usize
                    };
                    let s = &SLOTS[i];
                    s.lane.store(lane, Ordering::SeqCst);
                    s.timer.store(timer, Ordering::SeqCst);
                    s.busy.store(false, Ordering::SeqCst);
                    s.returned_at.store(0, Ordering::SeqCst);
                    s.woke_for.store(0, Ordering::SeqCst);
                    s.tid.store(tid, Ordering::SeqCst);
                    taken.push(i);
                }
                Some(Taken { lane, slots: taken })
            })
            .as_ref()
    }

    /// The threads' ids.
    pub fn tids(&self) -> &[i32] {
        &self.tids
    }
}

impl Drop for DriverThreads {
    fn drop(&mut self) {
        let Some(Some(taken)) = self.taken.get() else {
            return;
        };
        let _g = SLOTS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        for &i in &taken.slots {
            SLOTS[i].tid.store(0, Ordering::SeqCst);
        }
        // A handler that found its slot before it was freed may still re-arm
        // its timer: delete the timers only once none runs.
        let lane = &LANES[taken.lane];
        if !drain_handlers(lane) {
            return; // leak the timers and the lane rather than race a handler
        }
        for &i in &taken.slots {
            // SAFETY: created in `taken`, deleted once, no handler uses it
            // now; its slot is free, so no later handler finds it.
            unsafe { libc::timer_delete(SLOTS[i].timer.load(Ordering::SeqCst) as libc::timer_t) };
        }
        lane.taken.store(false, Ordering::SeqCst);
    }
}

/// The throttle of one launch: created before the kernel is submitted, ticked
/// while its fence is awaited, dropped after.
pub struct Session<'a> {
    _owner: std::sync::MutexGuard<'a, ()>,
    threads: &'a DriverThreads,
    lane: &'static Lane,
    base: *const u32,
    /// Start of the current observation window and `wait_seq` then (`None`:
    /// the device was not waiting at the last tick).
    window: Option<(Instant, u32)>,
    /// Since when the device has been stuck in the wait numbered `.1`.
    stuck: Option<(Instant, u32)>,
    throttling: bool,
    /// Signals sent (for the tests and the debug log).
    pub signals: u64,
}

impl<'a> Session<'a> {
    /// Starts throttling `threads` (the driver's) for a launch whose control
    /// header is mapped at `base`, `words` words long, and zeroes the header's
    /// `waiting` word (no kernel of this PE runs yet). `None` when there is
    /// nothing to throttle, the handler cannot be installed or was replaced,
    /// or another launch on this device throttles now.
    ///
    /// # Safety
    /// `base` must stay mapped, with at least `words` (≥ the control header)
    /// aligned words, until the session is dropped.
    pub unsafe fn begin(
        threads: &'a DriverThreads,
        base: *const u32,
        words: usize,
    ) -> Option<Self> {
        // SAFETY: the caller's guarantee.
        unsafe { Self::start(threads, base, words, true) }
    }

    /// Like [`Session::begin`] while kernels of this PE may already run (the
    /// queued collectives' progress thread): leaves the `waiting` word alone.
    ///
    /// # Safety
    /// As [`Session::begin`].
    pub unsafe fn join(threads: &'a DriverThreads, base: *const u32, words: usize) -> Option<Self> {
        // SAFETY: the caller's guarantee.
        unsafe { Self::start(threads, base, words, false) }
    }

    unsafe fn start(
        threads: &'a DriverThreads,
        base: *const u32,
        words: usize,
        reset_waiting: bool,
    ) -> Option<Self> {
        if words < ControlHeader::WORDS as usize {
            return None;
        }
        // Taking the lane installs the handler: look at it after.
        let lane = &LANES[threads.taken()?.lane];
        if !still_installed() {
            return None;
        }
        let owner = match threads.owner.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        if reset_waiting {
            // SAFETY: the header is mapped (caller); no kernel of this PE runs, so
            // a count left by a launch that ended abnormally is reset.
            unsafe { AtomicU32::from_ptr(base.add(W_WAITING) as *mut u32) }
                .store(0, Ordering::SeqCst);
        }
        lane.enabled.store(false, Ordering::SeqCst);
        lane.need_waiting.store(1, Ordering::SeqCst);
        lane.active_words.store(words, Ordering::SeqCst);
        lane.active.store(base as *mut u32, Ordering::SeqCst);
        Some(Session {
            _owner: owner,
            threads,
            lane,
            base,
            window: None,
            stuck: None,
            throttling: false,
            signals: 0,
        })
    }

    /// Counts the device as waiting only while at least `n` invocations are
    /// inside long waits (the launch's workgroups, when they wait for each
    /// other: a multi-workgroup collective's grid sync has one waiter per
    /// workgroup, and the workgroups not waiting yet are moving data on
    /// threads that must not nap). At most the driver's threads.
    pub fn need_waiting(&mut self, n: u32) {
        let threads = self.threads.tids().len().max(1) as u32;
        self.lane
            .need_waiting
            .store(n.clamp(1, threads), Ordering::SeqCst);
    }

    /// Looks at the device's wait words; throttles while the device keeps
    /// waiting in long waits. Returns how long the host may wait for the fence
    /// before the next tick.
    pub fn tick(&mut self) -> Duration {
        let now = Instant::now();
        // SAFETY: mapped for the session's life (`begin`).
        let (waiting, seq) = unsafe { (load(self.base, W_WAITING), load(self.base, W_SEQ)) };
        if !self.lane.device_waits(waiting) {
            self.window = None;
            self.stuck = None;
            self.set_throttling(false);
            return TICK;
        }
        let (since, seq0) = *self.window.get_or_insert((now, seq));
        // SAFETY: as above.
        if unsafe { load(self.base, W_COND) } & PROXY_WAIT != 0 {
            // A wait on the proxy thread: it needs this CPU to answer, so the
            // driver's threads nap from the start.
            self.set_throttling(true);
        } else if now >= since + STUCK_AFTER {
            // The device waited at every tick of the window: throttle in the
            // next one unless many waits ended (short waits).
            self.set_throttling(seq.wrapping_sub(seq0) < QUICK_WAITS);
            self.window = Some((now, seq));
        }
        if !self.throttling {
            return TICK;
        }
        let stuck = match self.stuck {
            Some((t, s)) if s == seq => t,
            _ => {
                self.stuck = Some((now, seq));
                now
            }
        };
        self.lane.period_ns.store(
            period_after(now - stuck).as_nanos() as u64,
            Ordering::Relaxed,
        );
        self.signal_idle_chains();
        THROTTLE_TICK
    }

    fn set_throttling(&mut self, on: bool) {
        if !on {
            self.lane
                .period_ns
                .store(PERIOD.as_nanos() as u64, Ordering::Relaxed);
        }
        self.throttling = on;
        self.lane.enabled.store(on, Ordering::SeqCst);
    }

    /// Signals every driver thread whose chain is not live (no handler on it,
    /// none returned within two windows): it naps for up to [`PERIOD`].
    fn signal_idle_chains(&mut self) {
        let pid = std::process::id() as libc::pid_t;
        let now = monotonic_ns();
        let mut sent = false;
        let slots = self.threads.taken().map_or(&[][..], |t| &t.slots);
        for &i in slots {
            let s = &SLOTS[i];
            let live = s.busy.load(Ordering::SeqCst)
                || now.saturating_sub(s.returned_at.load(Ordering::SeqCst))
                    < 2 * WINDOW.as_nanos() as u64;
            if live {
                continue;
            }
            // SAFETY: tgkill sends our installed signal to a thread of this
            // process; a thread that has exited makes it fail with ESRCH, which
            // is harmless.
            unsafe {
                libc::syscall(
                    libc::SYS_tgkill,
                    pid,
                    s.tid.load(Ordering::SeqCst),
                    signal_number(),
                )
            };
            sent = true;
        }
        if sent {
            self.signals += 1;
        }
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let lane = self.lane;
        lane.enabled.store(false, Ordering::SeqCst);
        lane.period_ns
            .store(PERIOD.as_nanos() as u64, Ordering::Relaxed);
        lane.active.store(std::ptr::null_mut(), Ordering::SeqCst);
        // A handler that read the pointer before it was withdrawn may still
        // be reading the mapping; it sees the null within one NAP.
        drain_handlers(lane);
        if self.signals > 0 {
            let ends: Vec<u64> = lane
                .ends
                .iter()
                .map(|e| e.load(Ordering::Relaxed))
                .collect();
            tracing::debug!(
                signals = self.signals,
                "device wait throttled (handler ends on this device so far: deadline {}, abort {}, wait over {}, condition {}; naps {}, re-armed {})",
                ends[0], ends[1], ends[2], ends[3], ends[4], ends[5]
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_vkshmems_own_names_are_ours() {
        for own in [
            "vkshmem-prebuil",
            "vkshmem-queue",
            "vkshmem-proxy-3",
            "vkshmem-bootstr",
        ] {
            assert!(is_own_name(own), "{own}");
        }
        // Names a driver thread inherits from its creator.
        for other in [
            "vkshmem-bench",
            "vkshmem-pe-1",
            "pe-0",
            "llvmpipe-0",
            "threads",
        ] {
            assert!(!is_own_name(other), "{other}");
        }
    }

    #[test]
    fn long_waits_sleep_longer() {
        assert_eq!(period_after(Duration::ZERO), PERIOD);
        assert_eq!(period_after(Duration::from_millis(999)), PERIOD);
        assert!(period_after(Duration::from_secs(2)) > PERIOD);
        assert_eq!(period_after(Duration::from_secs(60)), LONG_PERIOD);
        // The windows a stuck wait gets in its first 100 s stay within the
        // loop budget's ~700 (each polls about WINDOW).
        let mut t = Duration::ZERO;
        let mut windows = 0;
        while t < Duration::from_secs(100) {
            t += period_after(t) + WINDOW;
            windows += 1;
        }
        assert!(windows < 700, "{windows}");
    }

    #[test]
    fn conditions_match_the_device_library() {
        // (cond, value, v, holds)
        let cases = [
            (0, 5, 5, true),
            (0, 5, 6, false),
            (1, 5, 6, true),
            (2, 5, 6, true),
            (2, 5, 5, false),
            (3, 5, 5, true),
            (4, 5, 4, true),
            (5, 5, 6, false),
            // unsigned: 0xffffffff is large; signed (+256): it is -1.
            (2, 1, u32::MAX, true),
            (2 + 256, 1, u32::MAX, false),
            (4 + 256, 0, u32::MAX, true),
            // epochs wrap: u32::MAX has reached u32::MAX - 3, and 2 has reached
            // u32::MAX (it wrapped past it), but 2 has not reached 3.
            (6, u32::MAX - 3, u32::MAX, true),
            (6, u32::MAX, 2, true),
            (6, 3, 2, false),
            (7, 0, 0, false),
        ];
        for (cond, value, v, want) in cases {
            assert_eq!(condition_holds(cond, value, v), want, "{cond} {value} {v}");
        }
    }

    /// A fake heap whose device waits (cond GE 1 on word `FLAG`); this test
    /// thread plays the driver's thread.
    const FLAG: usize = 2000;

    fn fake_heap() -> Vec<u32> {
        let mut heap = vec![0u32; 4096];
        heap[W_SEQ] = 7;
        heap[W_ADDR] = FLAG as u32;
        heap[W_COND] = 3; // GE
        heap[W_VALUE] = 1;
        heap
    }

    fn store(base: *mut u32, i: usize, v: u32) {
        // SAFETY: the tests' heaps hold 4096 words and outlive the stores.
        unsafe { AtomicU32::from_ptr(base.add(i)) }.store(v, Ordering::SeqCst);
    }

    /// Makes `s` throttle as if the device had been stuck in the fake heap's
    /// wait (seq 7) for a while.
    fn stuck(s: &mut Session, base: *mut u32) {
        store(base, W_WAITING, 1);
        s.set_throttling(true);
        s.window = Some((Instant::now(), 7));
    }

    /// The tests time naps by their own thread's CPU clock: one at a time, so
    /// that neither's signals or load reach the other's measurement.
    static ONE: Mutex<()> = Mutex::new(());

    #[test]
    fn a_stuck_wait_puts_the_threads_to_sleep_until_its_condition_holds() {
        let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
        let mut heap = fake_heap();
        let base = heap.as_mut_ptr();
        let me = DriverThreads::new(vec![nix::unistd::gettid().as_raw()]);
        // SAFETY: `heap` outlives the session and holds 4096 words.
        let mut s = unsafe { Session::begin(&me, base, 4096) }.expect("session");
        stuck(&mut s, base);
        // The setter's nap starts once `t0` is taken, so however late this
        // thread runs, the store comes at least 3 ms after `t0`.
        let go = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let setter = {
            let (addr, go) = (base as usize, go.clone());
            std::thread::spawn(move || {
                while !go.load(std::sync::atomic::Ordering::Acquire) {
                    std::thread::yield_now();
                }
                std::thread::sleep(Duration::from_millis(3));
                store(addr as *mut u32, FLAG, 1);
            })
        };
        let t0 = Instant::now();
        go.store(true, std::sync::atomic::Ordering::Release);
        // The signal is delivered to this thread before tgkill returns; the
        // handler naps until the setter's store makes the condition hold.
        s.tick();
        let slept = t0.elapsed();
        setter.join().unwrap();
        assert_eq!(s.signals, 1);
        assert!(slept >= Duration::from_millis(3), "slept {slept:?}");
        drop(s);
        drop(me);
        drop(heap);
    }

    #[test]
    fn a_stuck_wait_keeps_its_thread_napping_without_the_host() {
        let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
        let mut heap = fake_heap();
        let base = heap.as_mut_ptr();
        let me = DriverThreads::new(vec![nix::unistd::gettid().as_raw()]);
        // SAFETY: `heap` outlives the session and holds 4096 words.
        let mut s = unsafe { Session::begin(&me, base, 4096) }.expect("session");
        stuck(&mut s, base);
        s.tick();
        // The host ticks no more: the thread's own timer keeps it napping
        // while it "spins" (as a shader would) for 200 ms of wall time.
        let (t0, cpu0) = (Instant::now(), thread_cpu_ns());
        while t0.elapsed() < Duration::from_millis(200) {
            std::hint::spin_loop();
        }
        let cpu = Duration::from_nanos(thread_cpu_ns() - cpu0);
        let wall = t0.elapsed();
        // The wait ends: the chain stops, and the thread runs freely again.
        store(base, W_WAITING, 0);
        std::thread::sleep(PERIOD * 2);
        let (t1, cpu1) = (Instant::now(), thread_cpu_ns());
        while t1.elapsed() < Duration::from_millis(50) {
            std::hint::spin_loop();
        }
        let free_cpu = Duration::from_nanos(thread_cpu_ns() - cpu1);
        drop(s);
        drop(me);
        drop(heap);
        assert!(
            cpu < wall / 4,
            "spun {cpu:?} of {wall:?} while the device waited"
        );
        assert!(
            free_cpu > Duration::from_millis(5),
            "ran only {free_cpu:?} of 50 ms after the wait ended"
        );
    }
}
