//! User kernels: WGSL that calls the device library (`shmem_*`), linked with the
//! library generated for this PE, compiled once per process, and launched on the
//! PE's queue with the library's heap bindings in set 0 and the user's buffers in
//! set 1.
//!
//! After every launch the host reads the device error words of the control region
//! and turns them into [`Error::Device`]. While a launch runs, the host watches for
//! a failed peer (the bootstrap's abort) and for `VKSHMEM_WAIT_TIMEOUT`; either sets
//! the control region's abort word, which makes every device-side wait give up, so
//! the launch returns [`Error::PeerFailed`] or [`Error::Timeout`] instead of hanging.

use std::sync::Arc;
use std::time::Duration;

use vkshmem_device::layout::{self, ControlHeader};
use vkshmem_device::{JobView, LibraryConfig};

use crate::error::{Error, Result};
use crate::kernels::builds::Builds;
use crate::kernels::prebuild::{self, Prebuild};
use crate::kernels::{link, DeviceKernel};
use crate::lock::lock;
use crate::runtime::{HeapWindow, Runtime};
use crate::sync::recorder::CallInfo;
use crate::vk::compile_turn::CompileTurn;
use crate::vk::submit::{batch_len, pool_descriptors, Dispatch, Readback, Window};

/// How long a launch whose waits the driver cut short listens for news of a
/// failed peer before reporting the cut (see `Runtime::peer_failure_behind`).
const LATE_FAILURE_GRACE: Duration = Duration::from_millis(1500);

/// How often a launch looks for a failed peer and its timeout.
const WATCH_EVERY: Duration = Duration::from_millis(20);

/// One launch of a [`Runtime::launch_batch`]: as the arguments of
/// [`Context::launch`](crate::Context::launch), and whether it waits for the launches before it.
pub(crate) struct Launch<'a> {
    pub kernel: &'a DeviceKernel,
    pub groups: [u32; 3],
    pub buffers: &'a [HeapWindow],
    pub immediates: &'a [u8],
    /// It reads or writes what launches before it in the batch wrote: a
    /// memory barrier before it (a new submission needs none: each waits for
    /// the one before).
    pub barrier: bool,
    /// The PE whose library it runs as (`None`: this PE): set 0 binds the
    /// heaps as that PE's library does ([`Runtime::library_windows_as`]), so
    /// `vks_my_pe()` and every slot mean that PE. For the host collectives'
    /// generic kernels that the team's first member submits for every
    /// member (`collective::part`).
    pub as_pe: Option<u32>,
}

/// What the host saw while a launch ran.
#[derive(Default)]
struct Watch {
    peer_failed: Option<(u32, String)>,
    timed_out: bool,
    abort_set: bool,
    /// How long the launch ran (host clock).
    ran: Duration,
    /// Signals the wait throttle sent during it.
    throttle_signals: u64,
}

impl Runtime {
    pub(crate) fn library_config(&self) -> Result<LibraryConfig> {
        Ok(self.library)
    }

    pub(crate) fn device_kernel(&self, source: &str, name: &str) -> Result<Arc<DeviceKernel>> {
        self.device_kernel_at(source, None, name)
    }

    pub(crate) fn device_kernel_entry(
        &self,
        source: &str,
        entry: &str,
        name: &str,
    ) -> Result<Arc<DeviceKernel>> {
        self.device_kernel_at(source, Some(entry), name)
    }

    fn device_kernel_at(
        &self,
        source: &str,
        entry: Option<&str>,
        name: &str,
    ) -> Result<Arc<DeviceKernel>> {
        let key = (source.to_string(), entry.map(str::to_string));
        if let Some(k) = lock(&self.kernels).get(&key) {
            return Ok(k.clone());
        }
        let cfg = self.library_config()?;
        // Kernels built in the background were linked for the same configuration
        // (it depends only on the job and the device); check anyway.
        let builds = self.builds().filter(|b| b.cfg == cfg);
        let k = match builds.as_deref().map(|b| b.get_or_claim(&key)) {
            Some(Ok(k)) => k,
            Some(Err(claim)) => {
                let k = self.build_kernel(&cfg, source, entry, name)?;
                claim.done(k.clone());
                k
            }
            None => self.build_kernel(&cfg, source, entry, name)?,
        };
        if let (Some(b), None) = (&builds, entry) {
            prebuild::note_use(b, source, name);
        }
        lock(&self.kernels).insert(key, k.clone());
        Ok(k)
    }

    /// Links, builds and warms up a kernel on the caller's thread.
    fn build_kernel(
        &self,
        cfg: &LibraryConfig,
        source: &str,
        entry: Option<&str>,
        name: &str,
    ) -> Result<Arc<DeviceKernel>> {
        let linked = link(&self.gpu, cfg, source, entry, name)?;
        let k = DeviceKernel::build_in_turn(&self.gpu, cfg, linked, name, |k, turn| {
            self.warm_up(k, turn).map(|()| true)
        })?;
        Ok(Arc::new(k))
    }

    /// The kernels being built beside this context's own calls, when a
    /// background builder was started (`Runtime::prebuild_host_kernels`).
    pub(crate) fn builds(&self) -> Option<Arc<Builds>> {
        lock(&self.submit)
            .companion::<Prebuild>()
            .map(|p| p.builds.clone())
    }

    /// Dispatches `kernel` over zero workgroups. Some drivers (llvmpipe) compile a
    /// pipeline at its first dispatch, not at its creation; this moves that
    /// compilation here, before the sync that precedes a launch, so that no PE
    /// spins in device code while a peer is still compiling (see the
    /// forward-progress rules in ARCHITECTURE.md). The user's bindings get the
    /// start of this PE's heap: nothing runs, but every descriptor must be valid.
    /// `turn` is this kernel's compile turn (`crate::vk::compile_turn`): it
    /// is watched while the warm-up waits, for the context's submitter (which
    /// another thread of the program may hold through a collective that
    /// waits for a peer) and then for the queue.
    fn warm_up(&self, kernel: &DeviceKernel, turn: &mut CompileTurn) -> Result<()> {
        let library = self.library_windows()?;
        let own = Window {
            buffer: self.heap.block(self.my_pe())?.buffer,
            offset: 0,
            range: self
                .heap_size()
                .min(self.device_info().max_storage_buffer_range),
        };
        let mut submit = loop {
            match self.submit.try_lock() {
                Ok(s) => break s,
                Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if !turn.held() => {
                    break lock(&self.submit)
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    turn.watch_warm_up(false);
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        };
        kernel.warm_up_on(&mut submit, &library, own, turn)
    }

    /// Set 0 of every user kernel: the device library's windows on the heaps of
    /// the PEs this PE reaches directly.
    pub(crate) fn library_windows(&self) -> Result<Vec<Window>> {
        self.library_windows_as(self.my_pe())
    }

    /// Whether this PE's library kernels may run as any PE of the job
    /// ([`Runtime::library_windows_as`]): every PE is reached directly, so
    /// every PE's library is this one's with its slots turned (one compile
    /// per job: the PE's number is read at run time from slot 0's control
    /// header).
    pub(crate) fn runs_as_any_pe(&self) -> bool {
        self.job.reaches_all()
    }

    /// Set 0 as PE `pe`'s library binds it: slot `s` is the heap of PE
    /// `(pe + s) mod n` (this PE's own windows for `pe` = this PE). Only
    /// where [`Runtime::runs_as_any_pe`] for another PE.
    pub(crate) fn library_windows_as(&self, pe: u32) -> Result<Vec<Window>> {
        let cfg = self.library_config()?;
        if pe != self.my_pe() && !self.runs_as_any_pe() {
            return Err(Error::InvalidArgument(format!(
                "PE {} cannot run library kernels as PE {pe}: it does not reach every PE's heap directly",
                self.my_pe()
            )));
        }
        JobView {
            my_pe: pe,
            ..self.job
        }
        .bindings(&cfg)
        .iter()
        .map(|b| {
            Ok(Window {
                buffer: self.heap.block(b.pe)?.buffer,
                offset: b.offset,
                range: b.bytes,
            })
        })
        .collect()
    }

    pub(crate) fn launch(
        &self,
        kernel: &DeviceKernel,
        groups: [u32; 3],
        buffers: &[HeapWindow],
        immediates: &[u8],
    ) -> Result<()> {
        self.launch_inner(kernel, groups, buffers, immediates, false)
            .map(|_| ())
    }

    /// A launch of the program's kernel ([`crate::Context::launch`]):
    /// [`Runtime::launch`], in the flight recorder (the library's own
    /// launches are parts of the calls that record them).
    pub(crate) fn launch_user(
        &self,
        kernel: &DeviceKernel,
        groups: [u32; 3],
        buffers: &[HeapWindow],
        immediates: &[u8],
    ) -> Result<()> {
        self.recorded(&CallInfo::named("launch"), || {
            self.launch(kernel, groups, buffers, immediates)
        })
    }

    pub(crate) fn launch_timed(
        &self,
        kernel: &DeviceKernel,
        groups: [u32; 3],
        buffers: &[HeapWindow],
        immediates: &[u8],
    ) -> Result<Duration> {
        self.recorded(&CallInfo::named("launch"), || {
            self.launch_inner(kernel, groups, buffers, immediates, true)?
                .ok_or_else(|| Error::Unsupported {
                    device: self.device_info().name.clone(),
                    what: "timestamps on the compute queue".into(),
                })
        })
    }

    fn launch_inner(
        &self,
        kernel: &DeviceKernel,
        groups: [u32; 3],
        buffers: &[HeapWindow],
        immediates: &[u8],
        timed: bool,
    ) -> Result<Option<Duration>> {
        let resident = self.gpu.info.resident_workgroups;
        let total = groups.iter().map(|&g| u64::from(g)).product::<u64>();
        if kernel.linked.waits_on_groups && total > u64::from(resident) {
            // Its workgroups wait for each other: more than the device runs at
            // once would wait for ones that cannot start (see the
            // forward-progress rules in ARCHITECTURE.md). Refused before the
            // launch's sync, so the PEs stay in step.
            return Err(Error::InvalidArgument(format!(
                "kernel {:?} calls a multi-workgroup collective (_work_groups) and is launched over {total} workgroups ({groups:?}); this device runs at most {resident} of one dispatch at once (Context::resident_workgroups)",
                kernel.name
            )));
        }
        if kernel.linked.waits_on_peers && !self.device_waits_across_processes() {
            // The same answer on every PE that shares this device: refused
            // before the launch's sync, so the PEs stay in step.
            return Err(self.no_cross_process_waits(&format!("kernel {:?}", kernel.name)));
        }
        let r = self.launch_checked(kernel, groups, buffers, immediates, timed);
        if let Err(e) = &r {
            if kernel.linked.waits_on_peers && self.n_pes() > 1 {
                // Peers may be in the launch's sync, inside this kernel or past
                // it: a later collective call would pair with the wrong one.
                *lock(&self.broken) = Some(e.to_string());
            }
        }
        r
    }

    /// Launches `items` in order in as few submissions as possible
    /// ([`crate::vk::submit::MAX_BATCH`] dispatches each, within the descriptor pool), with no barrier between them except
    /// before the items that ask for one ([`Launch::barrier`]): for kernels
    /// that wait for nothing (the wide kernels of host collectives), which
    /// would otherwise pay one submission each (on NVIDIA, a context switch
    /// per process and submission when several PEs share the GPU), and for
    /// the generic kernels that the team's first member runs as the other
    /// members ([`Launch::as_pe`]).
    ///
    /// # Errors
    /// As [`Context::launch`](crate::Context::launch); [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a kernel that
    /// waits on peers, on other workgroups or on the proxy.
    pub(crate) fn launch_batch(&self, items: &[Launch<'_>]) -> Result<()> {
        for it in items {
            self.check_launch(it.kernel, it.groups, it.buffers, it.immediates)?;
            let l = &it.kernel.linked;
            if l.waits_on_peers || l.waits_on_groups || l.waits_on_proxy {
                return Err(Error::InvalidArgument(format!(
                    "kernel {:?} waits, so it is launched alone (Context::launch)",
                    it.kernel.name
                )));
            }
        }
        // Set 0 by the PE each launch runs as (this PE's first).
        let me = self.my_pe();
        let mut libraries: Vec<(u32, Vec<Window>)> = vec![(me, self.library_windows()?)];
        for it in items {
            let pe = it.as_pe.unwrap_or(me);
            if libraries.iter().all(|(p, _)| *p != pe) {
                libraries.push((pe, self.library_windows_as(pe)?));
            }
        }
        let library_of = |it: &Launch<'_>| {
            let pe = it.as_pe.unwrap_or(me);
            let (_, w) = libraries
                .iter()
                .find(|(p, _)| *p == pe)
                .expect("every PE's windows made above");
            &w[..]
        };
        let pool = pool_descriptors(self.device_info());
        let mut rest = items;
        while !rest.is_empty() {
            let n = batch_len(
                pool,
                rest.iter()
                    .map(|it| it.kernel.library_set(library_of(it)).len() + it.buffers.len()),
            );
            let (chunk, after) = rest.split_at(n);
            rest = after;
            let user = chunk
                .iter()
                .map(|it| self.bind_windows(it.buffers))
                .collect::<Result<Vec<_>>>()?;
            let sets: Vec<[&[Window]; 2]> = chunk
                .iter()
                .zip(&user)
                .map(|(it, u)| [it.kernel.library_set(library_of(it)), &u[..]])
                .collect();
            let dispatches: Vec<Dispatch<'_>> = chunk
                .iter()
                .zip(&sets)
                .map(|(it, sets)| Dispatch {
                    kernel: &it.kernel.kernel,
                    groups: it.groups,
                    sets,
                    push: it.immediates,
                    barrier: it.barrier,
                })
                .collect();
            let mut seen = Watch::default();
            let started = std::time::Instant::now();
            let mut next_watch = Duration::ZERO;
            let mut submit = lock(&self.submit);
            let mut watch = |elapsed| {
                // A failed peer is still news while the batch runs.
                if elapsed >= next_watch {
                    self.watch(&mut seen, elapsed, None);
                    next_watch = elapsed + WATCH_EVERY;
                }
                None
            };
            let r = submit.dispatch_many_reading(
                &dispatches,
                false,
                self.error_readback()?,
                &mut watch,
            );
            drop(submit);
            let (_, header) = r?;
            seen.ran = started.elapsed();
            // Launches run as other PEs raise their errors in those PEs'
            // control headers: every header read and cleared before the
            // first error returns, so no member meets a stale one later.
            let mut first = self.check_device_errors(chunk[0].kernel, &seen, None, header);
            let mut others: Vec<(u32, &DeviceKernel)> = Vec::new();
            for it in chunk {
                if let Some(pe) = it.as_pe.filter(|&p| p != me) {
                    if others.iter().all(|(p, _)| *p != pe) {
                        others.push((pe, it.kernel));
                    }
                }
            }
            for (pe, kernel) in others {
                let r = self.check_errors_run_as(kernel, pe);
                if first.is_ok() {
                    first = r;
                }
            }
            first?;
        }
        Ok(())
    }

    /// The device errors that a launch run as PE `pe` (a library kernel with
    /// set 0 bound as `pe`'s, [`Launch::as_pe`]) raised in `pe`'s control
    /// header: read, cleared and returned as [`Error::Device`](crate::Error::Device) naming `pe`
    /// (and the first kernel of the batch that ran as `pe`). `pe` waits at
    /// the call's closing meeting meanwhile, so no launch of its own writes
    /// those words (its queued collectives, which run on the user's queue
    /// while it waits, keep their errors in their own completion slots).
    fn check_errors_run_as(&self, kernel: &DeviceKernel, pe: u32) -> Result<()> {
        let first = std::mem::offset_of!(ControlHeader, error) as u64;
        let mut raw = [0u8; 12];
        self.read_bytes(pe, first, &mut raw)?;
        let [bits, arg_pe, arg_addr]: [u32; 3] = bytemuck::cast(raw);
        if bits == 0 {
            return Ok(());
        }
        self.write_bytes(pe, first, &[0u8; 12])?;
        Err(Error::Device {
            kernel: kernel.name.clone(),
            pe,
            what: layout::describe_errors(bits).join("; "),
            bits,
            arg_pe,
            arg_addr,
        })
    }

    /// The checks of a launch before anything is bound: the context, the
    /// buffer count, the immediates and the workgroup count.
    fn check_launch(
        &self,
        kernel: &DeviceKernel,
        groups: [u32; 3],
        buffers: &[HeapWindow],
        immediates: &[u8],
    ) -> Result<()> {
        if !Arc::ptr_eq(&kernel.kernel.gpu, &self.gpu) {
            return Err(Error::InvalidArgument(format!(
                "kernel {:?} was compiled on another context (compile it again on this one)",
                kernel.name
            )));
        }
        let want = kernel.linked.user_bindings.len();
        if buffers.len() != want {
            let names: Vec<_> = kernel
                .linked
                .user_bindings
                .iter()
                .map(|b| format!("{}: {}", b.binding, b.name))
                .collect();
            return Err(Error::InvalidArgument(format!(
                "kernel {:?} binds {want} buffers ({}), {} given",
                kernel.name,
                names.join(", "),
                buffers.len()
            )));
        }
        if immediates.len() != kernel.linked.immediate_bytes as usize {
            return Err(Error::InvalidArgument(format!(
                "kernel {:?} takes {} bytes of immediates, {} given",
                kernel.name,
                kernel.linked.immediate_bytes,
                immediates.len()
            )));
        }
        self.check_groups(groups)
    }

    fn launch_checked(
        &self,
        kernel: &DeviceKernel,
        groups: [u32; 3],
        buffers: &[HeapWindow],
        immediates: &[u8],
        timed: bool,
    ) -> Result<Option<Duration>> {
        self.check_launch(kernel, groups, buffers, immediates)?;
        let library = self.library_windows()?;
        let user = self.bind_windows(buffers)?;
        let timeout = self.wait_timeout.filter(|_| kernel.linked.waits_on_peers);
        if kernel.linked.waits_on_peers {
            // Every PE's pipeline is built and its launch about to be submitted
            // before any PE's device code starts waiting for the others: waits stay
            // short, and no PE spins while a peer is still compiling (see the
            // forward-progress rules in ARCHITECTURE.md).
            self.sync_all()
                .map_err(|e| e.during(&format!("launch of kernel {:?}", kernel.name)))?;
        }
        // The proxy polls its ring closely while the kernel runs.
        let _busy = self.proxy.get().map(|p| p.busy());
        let mut seen = Watch::default();
        let mut throttle = self.wait_throttle(kernel)?;
        if let (Some(t), true) = (&mut throttle, kernel.linked.waits_on_groups) {
            t.need_waiting(groups.iter().product());
        }
        let started = std::time::Instant::now();
        let mut next_watch = Duration::ZERO;
        let read = self.error_readback()?;
        let mut submit = lock(&self.submit);
        let mut watch = |elapsed| {
            // The bootstrap and the timeout at the usual pace, the
            // throttle as often as it asks.
            if elapsed >= next_watch {
                self.watch(&mut seen, elapsed, timeout);
                next_watch = elapsed + WATCH_EVERY;
            }
            throttle.as_mut().map(|t| t.tick())
        };
        let sets: [&[Window]; 2] = [kernel.library_set(&library), &user];
        let one = [Dispatch {
            kernel: &kernel.kernel,
            groups,
            sets: &sets,
            push: immediates,
            barrier: false,
        }];
        let took = submit.dispatch_many_reading(&one, timed, read, &mut watch);
        // Under the submit lock no other launch of this PE runs; a queued
        // collective's kernel may (the user's queue), and may hold a ticket
        // it has not posted yet: settle only when none is outstanding.
        let queued = self.queue.get().is_some_and(|q| q.outstanding() > 0);
        if let (Ok(_), Some(b), false) = (&took, &_busy, queued) {
            b.settle();
        }
        drop(submit);
        seen.throttle_signals = throttle.as_ref().map_or(0, |t| t.signals);
        drop(throttle);
        let (took, header) = took?;
        seen.ran = started.elapsed();
        self.check_device_errors(kernel, &seen, timeout, header)?;
        Ok(took)
    }

    /// The wait throttle for a launch of `kernel` (see [`crate::driver::throttle`]): on a
    /// driver that caps loops, for kernels that wait on peers or on the proxy
    /// in a job of several PEs, when this PE's heap is host-mapped.
    fn wait_throttle(
        &self,
        kernel: &DeviceKernel,
    ) -> Result<Option<crate::driver::throttle::Session<'_>>> {
        let threads = &self.driver_threads;
        let waits = kernel.linked.waits_on_peers || kernel.linked.waits_on_proxy;
        if !waits || self.n_pes() < 2 || threads.tids().is_empty() {
            return Ok(None);
        }
        let Some(base) = self.heap.block(self.my_pe())?.mapped() else {
            return Ok(None);
        };
        let words = usize::try_from(self.heap_size() / 4).unwrap_or(usize::MAX);
        // SAFETY: the own block stays mapped while the context lives, which
        // outlives the session (dropped before this launch returns); the heap
        // is `heap_size` bytes, past the control header.
        Ok(unsafe {
            crate::driver::throttle::Session::begin(threads, base.as_ptr().cast::<u32>(), words)
        })
    }

    /// Called while a launch waits: looks for a failed peer and the timeout, and
    /// sets the abort word when either happened.
    fn watch(&self, seen: &mut Watch, elapsed: Duration, timeout: Option<Duration>) {
        if seen.abort_set {
            return;
        }
        if seen.peer_failed.is_none() {
            if let Ok(mut boot) = self.boot.try_lock() {
                seen.peer_failed = boot.as_mut().and_then(|b| b.poll_abort());
            }
        }
        seen.timed_out = timeout.is_some_and(|t| elapsed >= t);
        if seen.peer_failed.is_some() || seen.timed_out {
            let abort = (std::mem::offset_of!(ControlHeader, abort)) as u64;
            match self.heap.block(self.my_pe()).map(|b| b.mapped()) {
                Ok(Some(_)) => {
                    // The mapped path does not take the submit lock we hold.
                    let _ = self.write_bytes(self.my_pe(), abort, &1u32.to_le_bytes());
                    seen.abort_set = true;
                }
                _ => tracing::warn!(
                    "cannot interrupt device waits: this PE's heap is not host-mapped"
                ),
            }
        }
    }

    /// A peer failure that may explain a wait the driver cut short: lavapipe
    /// ends a wait for a dead peer after its loop cap (tens of milliseconds),
    /// often before the launcher has told this PE that the peer died. Then the
    /// bootstrap gets [`LATE_FAILURE_GRACE`] to say so, and the peer's failure is
    /// reported rather than the cut loop (which would also name this PE as the
    /// first to fail).
    fn peer_failure_behind(&self, kernel: &DeviceKernel, bits: u32) -> Option<(u32, String)> {
        if bits & layout::ERR_LOOPS_CUT == 0 || !kernel.linked.waits_on_peers || self.n_pes() < 2 {
            return None;
        }
        let until = std::time::Instant::now() + LATE_FAILURE_GRACE;
        loop {
            if let Ok(mut boot) = self.boot.try_lock() {
                if let Some(f) = boot.as_mut().and_then(|b| b.poll_abort()) {
                    return Some(f);
                }
            }
            if std::time::Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Reads and clears the device error words; turns them into an error.
    /// Where a launch's submission copies this PE's device error words to
    /// the host when the host does not map this PE's heap (else `None`: the
    /// mapping reads them): the 16 bytes from `ControlHeader::error` that
    /// [`Runtime::check_device_errors`] reads, so that no second submission
    /// fetches them.
    fn error_readback(&self) -> Result<Option<Readback>> {
        let block = self.heap.block(self.my_pe())?;
        Ok(block.mapped().is_none().then(|| Readback {
            buffer: block.buffer,
            offset: std::mem::offset_of!(ControlHeader, error) as u64,
            bytes: 16,
        }))
    }

    /// Reads (or takes `header`, the 16 bytes from `ControlHeader::error`
    /// that the launch's own submission copied back, see
    /// [`Runtime::error_readback`]) this PE's device error words after a
    /// launch of `kernel`: clears them and returns the error they report.
    fn check_device_errors(
        &self,
        kernel: &DeviceKernel,
        seen: &Watch,
        timeout: Option<Duration>,
        header: Option<Vec<u8>>,
    ) -> Result<()> {
        let first = std::mem::offset_of!(ControlHeader, error) as u64;
        let mut raw = [0u8; 16];
        match header {
            Some(h) if h.len() == raw.len() => raw.copy_from_slice(&h),
            _ => self.read_bytes(self.my_pe(), first, &mut raw)?,
        }
        let [bits, arg_pe, arg_addr, abort]: [u32; 4] = bytemuck::cast(raw);
        if bits == 0 && abort == 0 && !seen.abort_set {
            return Ok(());
        }
        self.write_bytes(self.my_pe(), first, &[0u8; 16])?;
        let late = if seen.peer_failed.is_none() {
            self.peer_failure_behind(kernel, bits)
        } else {
            None
        };
        if let Some((pe, how)) = seen.peer_failed.as_ref().or(late.as_ref()) {
            return Err(Error::PeerFailed {
                pe: *pe,
                how: how.clone(),
            });
        }
        if seen.timed_out {
            let flags = layout::WORLD_FLAGS_WORD;
            let missing = if bits & layout::ERR_ABORTED != 0
                && (flags..flags + self.n_pes()).contains(&arg_addr)
            {
                format!(", waiting for PE {}", arg_addr - flags)
            } else {
                String::new()
            };
            return Err(Error::Timeout {
                what: format!("kernel {:?}", kernel.name),
                pe: self.my_pe(),
                seconds: timeout.map(|t| t.as_secs_f64()).unwrap_or(0.0),
                missing,
            });
        }
        let mut what = layout::describe_errors(bits).join("; ");
        if bits & layout::ERR_LOOPS_CUT != 0 {
            what += &format!(
                " [the launch ran {:.3} s; the wait throttle signalled {} times]",
                seen.ran.as_secs_f64(),
                seen.throttle_signals
            );
        }
        Err(Error::Device {
            kernel: kernel.name.clone(),
            pe: self.my_pe(),
            what,
            bits,
            arg_pe,
            arg_addr,
        })
    }
}
