//! The wait throttle: makes device waits on CPU drivers (Mesa's llvmpipe, that is
//! lavapipe) last seconds instead of about 100 ms, and gives their CPU to the PEs
//! they wait for.
//!
//! # Why
//! On llvmpipe a kernel runs on the driver's CPU threads, and an invocation may
//! run 65535 loop iterations in all before the driver ends every loop (see
//! `LibraryConfig::loop_cap` in the device crate). A device wait polls 64 times
//! per iteration (about 1.6 µs), so it may spin for about 100 ms of *CPU time*.
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
//! running ([`IN_HANDLER`]), so no handler reads the mapping after the launch.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::libc;
use vkshmem_device::layout::ControlHeader;

/// How long the device must have been waiting, with few waits ending, before
/// its threads are throttled.
pub const STUCK_AFTER: Duration = Duration::from_millis(2);
/// Waits that may end within one `STUCK_AFTER` while the device still counts
/// as stuck: more means the waits are short (a fast barrier loop), and sleeping
/// would only slow them down.
pub const QUICK_WAITS: u32 = 16;
/// How long the driver's threads sleep after each signal (at most).
pub const PERIOD: Duration = Duration::from_millis(10);
/// How long they run, at least, between two sleeps.
pub const WINDOW: Duration = Duration::from_micros(150);
/// The handler's sleep step (how soon it sees the hinted condition).
pub const NAP: Duration = Duration::from_micros(100);
/// How often the host looks at the control words while a launch runs.
pub const TICK: Duration = Duration::from_millis(1);
/// How often it looks while it throttles (to re-signal soon after a handler
/// returned because its wait's condition held and the next wait began).
pub const THROTTLE_TICK: Duration = Duration::from_micros(200);

/// The mapped control header of the launch in progress (null: none).
static ACTIVE: AtomicPtr<u32> = AtomicPtr::new(std::ptr::null_mut());
/// Words of the mapping behind `ACTIVE` (the hint's address must be below it).
static ACTIVE_WORDS: AtomicUsize = AtomicUsize::new(0);
/// CLOCK_MONOTONIC nanoseconds when a handler last returned.
static LAST_RETURN: AtomicU64 = AtomicU64::new(0);
/// How handlers ended since the process started: [deadline, abort, wait over,
/// condition held], and naps taken (debug statistics).
static ENDS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
/// Handlers running now.
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);
/// One launch at a time per process may throttle (they share the statics).
static OWNER: Mutex<()> = Mutex::new(());

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
    IN_HANDLER.fetch_add(1, Ordering::SeqCst);
    if nap_while_stuck() {
        rearm_own_timer();
    }
    LAST_RETURN.store(monotonic_ns(), Ordering::SeqCst);
    IN_HANDLER.fetch_sub(1, Ordering::SeqCst);
}

/// Naps while the device of the launch in progress waits, for at most
/// [`PERIOD`]. True when the thread should nap again after [`WINDOW`] (the
/// device still waits, or its hinted condition just held and the next wait
/// may follow); false when the launch is over, the device stopped waiting or
/// the abort word is set.
fn nap_while_stuck() -> bool {
    let until = monotonic_ns() + PERIOD.as_nanos() as u64;
    let nap = libc::timespec {
        tv_sec: 0,
        tv_nsec: NAP.as_nanos() as libc::c_long,
    };
    loop {
        // Re-read every time: the launch withdraws the pointer when it ends,
        // and then waits for IN_HANDLER (counting this handler) to reach zero.
        let base = ACTIVE.load(Ordering::SeqCst);
        if base.is_null() {
            return false;
        }
        if monotonic_ns() >= until {
            ENDS[0].fetch_add(1, Ordering::Relaxed);
            return true;
        }
        // SAFETY: `base` is published only while the launch that owns the
        // mapping runs (module docs); control-header words lie in it.
        let (abort, waiting) = unsafe { (load(base, W_ABORT), load(base, W_WAITING)) };
        if abort != 0 || waiting == 0 {
            ENDS[if abort != 0 { 1 } else { 2 }].fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let words = ACTIVE_WORDS.load(Ordering::SeqCst);
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
            ENDS[3].fetch_add(1, Ordering::Relaxed);
            return true;
        }
        ENDS[4].fetch_add(1, Ordering::Relaxed);
        // SAFETY: nanosleep reads our timespec; async-signal-safe. An early wake
        // (EINTR) only shortens the nap.
        unsafe { libc::nanosleep(&nap, std::ptr::null_mut()) };
    }
}

/// Arms this thread's timer (see [`DriverThreads`]) to signal it again after
/// [`WINDOW`]: async-signal-safe (gettid, timer_settime).
fn rearm_own_timer() {
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    for (t, timer) in TIMERS.iter() {
        if t.load(Ordering::SeqCst) == tid {
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
            ENDS[5].fetch_add(1, Ordering::Relaxed);
            // SAFETY: the timer was created for this thread by DriverThreads and
            // is deleted only after its slot is cleared; a deleted timer makes
            // the call fail with EINVAL, which is harmless.
            unsafe {
                libc::timer_settime(
                    timer.load(Ordering::SeqCst) as libc::timer_t,
                    0,
                    &spec,
                    std::ptr::null_mut(),
                )
            };
            return;
        }
    }
    ENDS[6].fetch_add(1, Ordering::Relaxed);
}

/// Slots of (driver thread id, its timer) that the handler looks itself up in.
static TIMERS: [(AtomicI32, AtomicUsize); 64] =
    [const { (AtomicI32::new(0), AtomicUsize::new(0)) }; 64];
/// Serialises changes to `TIMERS`.
static TIMERS_LOCK: Mutex<()> = Mutex::new(());

/// The driver's threads of one device (llvmpipe's), each with a one-shot timer
/// that signals that thread only (`SIGEV_THREAD_ID`): a handler that ends its
/// nap re-arms its own thread's timer, so the threads keep napping while the
/// device waits without needing the host thread, which may not be scheduled
/// for milliseconds on a loaded machine.
#[derive(Debug, Default)]
pub struct DriverThreads {
    tids: Vec<i32>,
    /// (slot in TIMERS, timer) of each thread that got one.
    timers: Vec<(usize, usize)>,
}

impl DriverThreads {
    /// Timers for `tids` (threads of this process).
    pub fn new(tids: Vec<i32>) -> DriverThreads {
        let mut me = DriverThreads {
            tids,
            timers: Vec::new(),
        };
        if me.tids.is_empty() || !install() {
            return me;
        }
        let _g = TIMERS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        for &tid in &me.tids {
            let Some(slot) = TIMERS
                .iter()
                .position(|(t, _)| t.load(Ordering::SeqCst) == 0)
            else {
                break;
            };
            // SAFETY: a zeroed sigevent is valid; we fill the fields that
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
            TIMERS[slot].1.store(timer, Ordering::SeqCst);
            TIMERS[slot].0.store(tid, Ordering::SeqCst);
            me.timers.push((slot, timer));
        }
        me
    }

    /// The threads' ids.
    pub fn tids(&self) -> &[i32] {
        &self.tids
    }
}

impl Drop for DriverThreads {
    fn drop(&mut self) {
        let _g = TIMERS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        for &(slot, timer) in &self.timers {
            TIMERS[slot].0.store(0, Ordering::SeqCst);
            // SAFETY: created by `new`, deleted once; a handler that still
            // finds it fails harmlessly (see rearm_own_timer).
            unsafe { libc::timer_delete(timer as libc::timer_t) };
        }
    }
}

/// Installs the handler once per process. False when the signal already has
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
                tracing::warn!("the wait throttle's signal is in use; device waits on this CPU driver are not throttled");
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
/// its queue and disk-cache threads).
pub fn driver_threads_since(before: &[i32]) -> Vec<i32> {
    thread_ids()
        .into_iter()
        .filter(|t| before.binary_search(t).is_err())
        .collect()
}

/// The throttle of one launch: created before the kernel is submitted, ticked
/// while its fence is awaited, dropped after.
pub struct Session<'a> {
    _owner: std::sync::MutexGuard<'static, ()>,
    threads: &'a [i32],
    base: *const u32,
    /// Start of the current observation window and `wait_seq` then (`None`:
    /// the device was not waiting at the last tick).
    window: Option<(Instant, u32)>,
    throttling: bool,
    /// Signals sent (for the tests and the debug log).
    pub signals: u64,
}

impl<'a> Session<'a> {
    /// Starts throttling `threads` (the driver's) for a launch whose control
    /// header is mapped at `base`, `words` words long. `None` when there is
    /// nothing to throttle or the signal is unavailable.
    ///
    /// # Safety
    /// `base` must stay mapped, with at least `words` (≥ the control header)
    /// aligned words, until the session is dropped.
    pub unsafe fn begin(threads: &'a [i32], base: *const u32, words: usize) -> Option<Self> {
        if threads.is_empty() || words < ControlHeader::WORDS as usize || !install() {
            return None;
        }
        // Another launch of this process throttles now: this one runs without.
        let owner = match OWNER.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        ACTIVE_WORDS.store(words, Ordering::SeqCst);
        ACTIVE.store(base as *mut u32, Ordering::SeqCst);
        Some(Session {
            _owner: owner,
            threads,
            base,
            window: None,
            throttling: false,
            signals: 0,
        })
    }

    /// Looks at the device's wait words; throttles while the device keeps
    /// waiting in long waits. Returns how long the host may wait for the fence
    /// before the next tick.
    pub fn tick(&mut self) -> Duration {
        let now = Instant::now();
        // SAFETY: mapped for the session's life (`begin`).
        let (waiting, seq) = unsafe { (load(self.base, W_WAITING), load(self.base, W_SEQ)) };
        if waiting == 0 {
            self.window = None;
            self.throttling = false;
            return TICK;
        }
        let (since, seq0) = *self.window.get_or_insert((now, seq));
        if now >= since + STUCK_AFTER {
            // The device waited at every tick of the window: throttle in the
            // next one unless many waits ended (short waits).
            self.throttling = seq.wrapping_sub(seq0) < QUICK_WAITS;
            self.window = Some((now, seq));
        }
        if !self.throttling {
            return TICK;
        }
        // A handler that returned within two windows has re-armed its timer:
        // the threads keep throttling themselves.
        let ran = monotonic_ns().saturating_sub(LAST_RETURN.load(Ordering::SeqCst));
        if IN_HANDLER.load(Ordering::SeqCst) == 0 && ran >= 2 * WINDOW.as_nanos() as u64 {
            self.signal();
        }
        THROTTLE_TICK
    }

    /// Puts the driver's threads to sleep for up to [`PERIOD`].
    fn signal(&mut self) {
        let pid = std::process::id() as libc::pid_t;
        for &tid in self.threads {
            // SAFETY: tgkill sends our installed signal to a thread of this
            // process; a thread that has exited makes it fail with ESRCH, which
            // is harmless.
            unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, signal_number()) };
        }
        self.signals += 1;
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        ACTIVE.store(std::ptr::null_mut(), Ordering::SeqCst);
        // A handler that read ACTIVE before it was withdrawn may still be
        // reading the mapping; it sees the null within one NAP.
        while IN_HANDLER.load(Ordering::SeqCst) != 0 {
            std::thread::sleep(Duration::from_micros(50));
        }
        if self.signals > 0 {
            let ends: Vec<u64> = ENDS.iter().map(|e| e.load(Ordering::Relaxed)).collect();
            tracing::debug!(
                signals = self.signals,
                "device wait throttled (handler ends so far: deadline {}, abort {}, wait over {}, condition {}; naps {}, re-armed {}, no timer {})",
                ends[0], ends[1], ends[2], ends[3], ends[4], ends[5], ends[6]
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_stuck_wait_puts_the_threads_to_sleep_until_its_condition_holds() {
        // A fake control region; this test thread plays the driver's thread.
        let mut heap = vec![0u32; 4096];
        let flag = 2000usize;
        heap[W_WAITING] = 1;
        heap[W_SEQ] = 7;
        heap[W_ADDR] = flag as u32;
        heap[W_COND] = 3; // GE
        heap[W_VALUE] = 1;
        let base = heap.as_mut_ptr();
        let me = [nix::unistd::gettid().as_raw()];
        // SAFETY: `heap` outlives the session and holds 4096 words.
        let mut s = unsafe { Session::begin(&me, base, heap.len()) }.expect("session");
        s.throttling = true;
        s.window = Some((Instant::now(), 7));
        let setter = {
            let addr = base as usize + flag * 4;
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(3));
                // SAFETY: the heap lives until after the join below.
                unsafe { AtomicU32::from_ptr(addr as *mut u32) }.store(1, Ordering::SeqCst);
            })
        };
        let t0 = Instant::now();
        // The signal is delivered to this thread before tgkill returns; the
        // handler naps until the setter's store makes the condition hold.
        LAST_RETURN.store(0, Ordering::SeqCst);
        s.tick();
        let slept = t0.elapsed();
        setter.join().unwrap();
        assert_eq!(s.signals, 1);
        assert!(slept >= Duration::from_millis(2), "slept {slept:?}");
        drop(s);
        drop(heap);
    }
}
