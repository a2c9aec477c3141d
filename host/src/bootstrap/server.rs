//! The bootstrap endpoint: one per job, run by the launcher (`vkshmrun`).
//!
//! PEs connect to an abstract Unix socket whose name is random per job, prove they
//! belong to the job with the job's secret, and must run under the same uid as the
//! endpoint (SO_PEERCRED). After that, the endpoint serves collective requests in a
//! star: every PE sends its part, and the connection thread of the PE that arrives
//! last answers all of them. A PE whose connection drops without a goodbye (it died)
//! fails the job: every other PE gets an [`Msg::Abort`] and returns
//! [`crate::Error::PeerFailed`] from the call it is in.
//!
//! With a wait timeout (`VKSHMEM_WAIT_TIMEOUT`, read by the launcher), a watchdog
//! thread fails the job when a collective has waited longer than that for its last
//! PEs: every PE gets [`Msg::TimedOut`] naming the collective and the PEs that had
//! not arrived, and the ones waiting return [`crate::Error::Timeout`].

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::transport::{peer_uid, recv, send};
use super::wire::{Msg, MAX_FDS_PER_FRAME, MAX_PES, SECRET_LEN};
use crate::error::{Error, Result};
use crate::sync::layout as seg;
use crate::sync::segment::Segment;

/// How long a new connection may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);

/// A running bootstrap endpoint. Dropping it stops it and closes every connection.
pub struct Server {
    endpoint: String,
    secret: [u8; SECRET_LEN],
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    watchdog: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

struct Shared {
    npes: u32,
    /// Which PEs this endpoint serves (its node's; every PE of a vkshmrun job).
    node: Vec<bool>,
    /// How many.
    node_size: u32,
    secret: [u8; SECRET_LEN],
    uid: u32,
    stop: AtomicBool,
    state: Mutex<State>,
    /// The order in which decisions leave: whoever decides, under `state`,
    /// to send something to PEs (a collective's answers, an abort, a
    /// timeout) takes this before releasing `state` and holds it until those
    /// sends are done. So every PE hears decisions in the order `state` took
    /// them: a PE that dies right after its barrier's answer cannot have its
    /// abort overtake that answer on its way to another PE.
    outbox: Mutex<()>,
    /// The node segment (the sync plane, [`crate::sync`]): handed to every PE
    /// at admission; the endpoint raises its abort word and records goodbyes
    /// in it, so PEs waiting on the plane hear of failures.
    segment: Segment,
    segment_fd: OwnedFd,
    /// Called once with the job's first failure (PE, how), after the PEs
    /// were told: a job of several nodes ends the whole job through it.
    on_fail: Mutex<Option<FailHook>>,
}

/// What [`Server::on_failure`] runs: the PE, how it failed, and the flight
/// recorder's table of this endpoint's node then.
type FailHook = Box<dyn FnOnce(u32, &str, &str) + Send>;

/// A PE's connection, write side. Several threads send to one PE (the last
/// arrival of a collective, a failure, the watchdog), never under the global
/// lock (under [`Shared::outbox`] instead): this lock keeps their frames whole.
struct Conn {
    stream: Arc<UnixStream>,
    write: Mutex<()>,
}

impl Conn {
    fn send(&self, msg: &Msg, fds: &[RawFd]) -> Result<()> {
        let _g = self.write.lock().unwrap_or_else(|p| p.into_inner());
        send(&self.stream, msg, fds)
    }
}

enum Part {
    Barrier,
    Gather(Vec<u8>),
    Fd(Option<OwnedFd>),
}

struct Pending {
    seq: u64,
    kind: &'static str,
    part: Part,
}

/// One team allgather in progress.
struct TeamRound {
    seq: u64,
    parts: Vec<Option<Vec<u8>>>,
    arrived: u32,
    /// When the first member arrived.
    since: Instant,
}

#[derive(Default)]
struct State {
    /// Write side of each admitted PE's connection.
    conns: Vec<Option<Arc<Conn>>>,
    /// Every connection ever accepted (to shut them down on stop).
    all: Vec<Arc<UnixStream>>,
    /// PEs that said goodbye.
    done: Vec<bool>,
    /// Contributions to the collective in progress.
    pending: Vec<Option<Pending>>,
    arrived: u32,
    /// When the first PE arrived at the world collective in progress.
    since: Option<Instant>,
    /// Team allgathers in progress, by member set (start, stride, size).
    teams: HashMap<(u32, i32, u32), TeamRound>,
    /// The first failure: PE and how.
    failed: Option<(u32, String)>,
    /// The first `shmem_global_exit`: PE and status.
    global_exit: Option<(u32, i32)>,
}

impl Server {
    /// Starts an endpoint for a job of `npes` PEs, under a fresh random abstract name
    /// and secret.
    pub fn start(npes: u32) -> Result<Server> {
        Server::start_with_timeout(npes, None)
    }

    /// Like [`Server::start`]; a collective that has waited `timeout` for its last
    /// PEs fails the job ([`Msg::TimedOut`] to every PE, naming those PEs).
    pub fn start_with_timeout(npes: u32, timeout: Option<Duration>) -> Result<Server> {
        Server::start_for_node(npes, &(0..npes).collect::<Vec<_>>(), timeout)
    }

    /// The endpoint of one node of a job of `npes` PEs (several nodes under
    /// mpirun): it admits the PEs `node` only, and its collectives (fd
    /// exchange, allgather, barrier) are over them; the job's own collectives
    /// go over MPI. The node segment has room for all `npes` (per-PE words
    /// are indexed by job PE).
    pub fn start_for_node(npes: u32, node: &[u32], timeout: Option<Duration>) -> Result<Server> {
        if npes == 0 || npes > MAX_PES {
            return Err(Error::InvalidArgument(format!(
                "a job has 1 to {MAX_PES} PEs, not {npes}"
            )));
        }
        let mut on_node = vec![false; npes as usize];
        for &p in node {
            match on_node.get_mut(p as usize) {
                Some(b) => *b = true,
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "node PE {p} is outside a job of {npes} PEs"
                    )))
                }
            }
        }
        let node_size = on_node.iter().filter(|b| **b).count() as u32;
        if node_size == 0 {
            return Err(Error::InvalidArgument("a node has at least one PE".into()));
        }
        let mut secret = [0u8; SECRET_LEN];
        getrandom::fill(&mut secret)
            .map_err(|e| Error::Bootstrap(format!("no randomness for the job secret: {e}")))?;
        let mut tag = [0u8; 8];
        getrandom::fill(&mut tag)
            .map_err(|e| Error::Bootstrap(format!("no randomness for the endpoint name: {e}")))?;
        let name = format!(
            "vkshmem-{}-{}",
            std::process::id(),
            crate::config::encode_hex(&tag)
        );
        let addr = SocketAddr::from_abstract_name(name.as_bytes())
            .map_err(|e| Error::io("naming the bootstrap socket", e))?;
        let listener = UnixListener::bind_addr(&addr)
            .map_err(|e| Error::io("binding the bootstrap socket", e))?;
        let (segment, segment_fd) = Segment::create(npes)?;
        let shared = Arc::new(Shared {
            npes,
            node: on_node,
            node_size,
            secret,
            uid: nix::unistd::getuid().as_raw(),
            stop: AtomicBool::new(false),
            segment,
            segment_fd,
            on_fail: Mutex::new(None),
            outbox: Mutex::new(()),
            state: Mutex::new(State {
                conns: (0..npes).map(|_| None).collect(),
                done: vec![false; npes as usize],
                pending: (0..npes).map(|_| None).collect(),
                ..State::default()
            }),
        });
        let s2 = shared.clone();
        let accept = std::thread::Builder::new()
            .name("vkshmem-bootstrap".into())
            .spawn(move || accept_loop(listener, s2))
            .map_err(|e| Error::io("starting the bootstrap thread", e))?;
        let watchdog = match timeout {
            Some(t) => {
                let s2 = shared.clone();
                Some(
                    std::thread::Builder::new()
                        .name("vkshmem-bootstrap-watchdog".into())
                        .spawn(move || watchdog(&s2, t))
                        .map_err(|e| Error::io("starting the bootstrap watchdog", e))?,
                )
            }
            None => None,
        };
        Ok(Server {
            endpoint: format!("@{name}"),
            secret,
            shared,
            accept: Some(accept),
            watchdog,
            addr,
        })
    }

    /// The endpoint to hand to PEs (`VKSHMEM_BOOTSTRAP`): `@` and the abstract name.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The job's secret, to hand to PEs (`VKSHMEM_SECRET`, hex).
    pub fn secret(&self) -> &[u8; SECRET_LEN] {
        &self.secret
    }

    /// Records that `pe` failed (`how` says how) unless a failure is already known,
    /// and tells every other PE to abort.
    pub fn fail(&self, pe: u32, how: &str) {
        self.shared.fail(pe, how);
    }

    /// Runs `hook` with the job's first failure (a PE died, broke the
    /// protocol or timed out: the PE and how), after the endpoint has told
    /// its PEs. An MPI job of several nodes ends there (`MPI_Abort`), since
    /// the other nodes' PEs do not hear this endpoint.
    pub fn on_failure(&self, hook: impl FnOnce(u32, &str, &str) + Send + 'static) {
        *self
            .shared
            .on_fail
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Box::new(hook));
    }

    /// The first failure the endpoint saw, if any: the PE and how.
    pub fn first_failure(&self) -> Option<(u32, String)> {
        self.shared.lock().failed.clone()
    }

    /// The flight recorder's table of this node's PEs now: each one's
    /// current call and phase, and the cause where one shows
    /// (`crate::sync::recorder`).
    pub fn report(&self) -> String {
        self.shared.report()
    }

    /// The first PE that called `shmem_global_exit`, and its status.
    pub fn global_exit(&self) -> Option<(u32, i32)> {
        self.shared.lock().global_exit
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop with a connection of our own.
        let _ = UnixStream::connect_addr(&self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        if let Some(h) = self.watchdog.take() {
            let _ = h.join();
        }
        for c in self.shared.lock().all.drain(..) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// Fails the job when a collective has waited `timeout` for its last PEs.
fn watchdog(shared: &Shared, timeout: Duration) {
    let tick = (timeout / 8).clamp(Duration::from_millis(5), Duration::from_millis(100));
    while !shared.stop.load(Ordering::SeqCst) {
        std::thread::sleep(tick);
        let late = {
            let st = shared.lock();
            if st.failed.is_some() {
                return;
            }
            st.overdue(timeout, &shared.node)
        };
        if let Some((what, waited, missing)) = late {
            shared.time_out(&what, waited, &missing);
            return;
        }
    }
}

fn accept_loop(listener: UnixListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let stream = Arc::new(stream);
        shared.lock().all.push(stream.clone());
        let s2 = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("vkshmem-bootstrap-conn".into())
            .spawn(move || serve(stream, s2));
        if let Err(e) = spawned {
            tracing::error!("bootstrap: cannot start a connection thread: {e}");
        }
    }
}

/// Checks a new connection and returns its PE number, or why it is refused.
fn admit(stream: &UnixStream, shared: &Shared) -> std::result::Result<u32, String> {
    let uid = peer_uid(stream).map_err(|e| e.to_string())?;
    if uid != shared.uid {
        return Err(format!(
            "uid {uid} may not join a job of uid {}",
            shared.uid
        ));
    }
    stream
        .set_read_timeout(Some(HELLO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let (secret, pe, npes) = match recv(stream) {
        Ok(Some((Msg::Hello { secret, pe, npes }, _))) => (secret, pe, npes),
        Ok(Some((other, _))) => return Err(format!("expected hello, got {}", other.kind())),
        Ok(None) => return Err("closed before hello".into()),
        Err(e) => return Err(e.to_string()),
    };
    stream.set_read_timeout(None).map_err(|e| e.to_string())?;
    // Constant-time comparison: no early exit on the first differing byte.
    let diff = secret
        .iter()
        .zip(shared.secret.iter())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if diff != 0 {
        return Err("wrong job secret".into());
    }
    if npes != shared.npes {
        return Err(format!(
            "PE count {npes} does not match the job's {}",
            shared.npes
        ));
    }
    if pe >= shared.npes {
        return Err(format!("PE {pe} is outside a job of {} PEs", shared.npes));
    }
    if !shared.node[pe as usize] {
        return Err(format!("PE {pe} is not on this endpoint's node"));
    }
    let mut st = shared.lock();
    if st.conns[pe as usize].is_some() || st.done[pe as usize] {
        return Err(format!("PE {pe} has already joined"));
    }
    // Welcome under the lock (one socket, the newcomer's), so that no abort can
    // interleave with it: a failure recorded after this sees the connection.
    send(stream, &Msg::Welcome, &[shared.segment_fd.as_raw_fd()]).map_err(|e| e.to_string())?;
    st.conns[pe as usize] = Some(Arc::new(Conn {
        stream: Arc::new(stream.try_clone().map_err(|e| e.to_string())?),
        write: Mutex::new(()),
    }));
    Ok(pe)
}

fn serve(stream: Arc<UnixStream>, shared: Arc<Shared>) {
    let pe = match admit(&stream, &shared) {
        Ok(pe) => pe,
        Err(reason) => {
            tracing::warn!("bootstrap: refused a connection: {reason}");
            let _ = send(&stream, &Msg::Refused { reason }, &[]);
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return;
        }
    };
    loop {
        match recv(&stream) {
            Ok(Some((Msg::Goodbye, _))) => {
                let mut st = shared.lock();
                st.done[pe as usize] = true;
                st.conns[pe as usize] = None;
                // PEs waiting for this one on the sync plane fail instead of hanging.
                shared.segment.set_pe_state(pe, seg::PE_FINALIZED);
                if st.arrived > 0 || st.teams.values().any(|t| t.arrived > 0) {
                    // Others wait in a collective this PE will never enter.
                    drop(st);
                    shared.fail(pe, "finalized while other PEs wait in a collective, which can then never complete");
                }
                return;
            }
            Ok(Some((Msg::GlobalExit { status }, _))) => {
                shared.lock().global_exit.get_or_insert((pe, status));
                shared.fail(pe, &format!("called shmem_global_exit({status})"));
                return;
            }
            Ok(Some((Msg::Barrier { seq }, _))) => shared.arrive(pe, seq, "barrier", Part::Barrier),
            Ok(Some((Msg::Gather { seq, data }, _))) => {
                shared.arrive(pe, seq, "allgather", Part::Gather(data))
            }
            Ok(Some((
                Msg::TeamGather {
                    start,
                    stride,
                    size,
                    seq,
                    data,
                },
                _,
            ))) => shared.team_arrive(pe, (start, stride, size), seq, data),
            Ok(Some((Msg::FdOffer { seq, .. }, mut fds))) => {
                shared.arrive(pe, seq, "fd-exchange", Part::Fd(fds.pop()))
            }
            Ok(Some((Msg::Abort { pe: gone, reason }, _))) => {
                // A PE waiting on the sync plane for `gone`, which finalized.
                let finalized = shared.lock().done.get(gone as usize) == Some(&true);
                if !finalized {
                    shared.fail(
                        pe,
                        &format!("protocol violation: reported PE {gone} as finalized"),
                    );
                    return;
                }
                shared.fail(gone, &reason);
            }
            Ok(Some((
                Msg::TimedOut {
                    what,
                    waited_ms,
                    missing,
                },
                _,
            ))) => {
                // A wait on the sync plane timed out on this PE.
                if missing.iter().any(|&m| m >= shared.npes) {
                    shared.fail(
                        pe,
                        "protocol violation: timed out waiting for PEs outside the job",
                    );
                    return;
                }
                shared.time_out(&what, Duration::from_millis(waited_ms), &missing);
            }
            Ok(Some((other, _))) => {
                shared.fail(pe, &format!("protocol violation: sent {}", other.kind()));
                return;
            }
            Ok(None) => {
                if !shared.stop.load(Ordering::SeqCst) {
                    shared.fail(
                        pe,
                        "exited or crashed without finalizing (connection closed)",
                    );
                }
                return;
            }
            Err(e) => {
                if !shared.stop.load(Ordering::SeqCst) {
                    shared.fail(pe, &format!("bootstrap connection broke: {e}"));
                }
                return;
            }
        }
    }
}

impl State {
    /// Forgets every collective in progress (the job is failing).
    fn clear_rounds(&mut self) {
        for p in self.pending.iter_mut() {
            *p = None;
        }
        self.arrived = 0;
        self.since = None;
        self.teams.clear();
    }

    /// The first collective in progress that has waited at least `timeout`:
    /// what it is, how long it waited and the PEs that have not arrived.
    fn overdue(&self, timeout: Duration, node: &[bool]) -> Option<(String, Duration, Vec<u32>)> {
        if let Some(since) = self.since.filter(|s| s.elapsed() >= timeout) {
            let (kind, seq) = self
                .pending
                .iter()
                .flatten()
                .map(|p| (p.kind, p.seq))
                .next()
                .unwrap_or(("collective", 0));
            let missing = (0..self.pending.len() as u32)
                .filter(|&p| node[p as usize] && self.pending[p as usize].is_none())
                .collect();
            return Some((format!("{kind} #{seq}"), since.elapsed(), missing));
        }
        self.teams.iter().find_map(|(&(start, stride, size), r)| {
            (r.since.elapsed() >= timeout).then(|| {
                let member = |i: u32| (start as i64 + i as i64 * stride as i64) as u32;
                let missing = (0..size).filter(|&i| r.parts[i as usize].is_none());
                (
                    format!(
                        "team allgather #{} over the PEs {start}:{stride}:{size} (start:stride:size)",
                        r.seq
                    ),
                    r.since.elapsed(),
                    missing.map(member).collect(),
                )
            })
        })
    }

    /// When the job has already failed: the abort to send to `pe` (which just
    /// entered a collective), to be sent after the lock is released.
    fn failure_for(&self, pe: u32) -> Option<(Option<Arc<Conn>>, Msg)> {
        let (fpe, how) = self.failed.clone()?;
        Some((
            self.conns[pe as usize].clone(),
            Msg::Abort {
                pe: fpe,
                reason: how,
            },
        ))
    }
}

/// Sends `msg` to each connection (outside the global lock).
fn send_all<'a>(conns: impl IntoIterator<Item = &'a Arc<Conn>>, msg: &Msg, what: &str) {
    for c in conns {
        if let Err(e) = c.send(msg, &[]) {
            tracing::debug!("bootstrap: sending {what}: {e}");
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a connection thread panicked; the state itself
        // is still consistent enough to report failures.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the outbox ([`Shared::outbox`]), then releases `st`: the sends
    /// made under the returned guard keep the order of the state's decisions.
    /// Never take `state` while holding the outbox.
    fn to_outbox<'a>(&'a self, st: MutexGuard<'a, State>) -> MutexGuard<'a, ()> {
        let out = self.outbox.lock().unwrap_or_else(|p| p.into_inner());
        drop(st);
        out
    }

    fn fail(&self, pe: u32, how: &str) {
        let mut st = self.lock();
        if st.failed.is_some() {
            return;
        }
        tracing::debug!("bootstrap: PE {pe} failed: {how}");
        st.failed = Some((pe, how.to_string()));
        let abort = Msg::Abort {
            pe,
            reason: how.to_string(),
        };
        st.clear_rounds();
        let conns: Vec<Arc<Conn>> = st.conns.iter().flatten().cloned().collect();
        let out = self.to_outbox(st);
        // The failed PE hears it too: it may be alive and waiting (a protocol
        // violation); a dead one's send just fails.
        send_all(&conns, &abort, "an abort");
        drop(out);
        // The socket message goes first: a PE that sees the abort word finds
        // the reason waiting in its socket.
        if pe < self.npes {
            self.segment.set_pe_state(pe, seg::PE_FAILED);
        }
        self.segment
            .raise_abort(seg::ABORT_FAILED | (pe & seg::ABORT_PE_MASK));
        self.run_hook(pe, how);
    }

    /// The failure hook ([`Server::on_failure`]), once.
    fn run_hook(&self, pe: u32, how: &str) {
        let hook = self
            .on_fail
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(h) = hook {
            h(pe, how, &self.report());
        }
    }

    /// The flight recorder's table of this node's PEs.
    fn report(&self) -> String {
        let on = |pe: u32| self.node.get(pe as usize).copied().unwrap_or(false);
        crate::sync::recorder::report_of(&self.segment, &on)
    }

    /// Fails the job because `what` waited `waited` for the PEs `missing`.
    fn time_out(&self, what: &str, waited: Duration, missing: &[u32]) {
        let mut st = self.lock();
        if st.failed.is_some() {
            return;
        }
        let list = missing
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let how = format!(
            "did not arrive at {what} within {:.1} s (VKSHMEM_WAIT_TIMEOUT); PEs not arrived: {list}",
            waited.as_secs_f64()
        );
        tracing::debug!("bootstrap: {how}");
        let first = missing.first().copied().unwrap_or(u32::MAX);
        st.failed = Some((first, how));
        let msg = Msg::TimedOut {
            what: what.to_string(),
            waited_ms: waited.as_millis().min(u64::MAX as u128) as u64,
            missing: missing.to_vec(),
        };
        st.clear_rounds();
        let conns: Vec<Arc<Conn>> = st.conns.iter().flatten().cloned().collect();
        let out = self.to_outbox(st);
        send_all(&conns, &msg, "a timeout");
        drop(out);
        self.segment
            .raise_abort(seg::ABORT_TIMEOUT | (first & seg::ABORT_PE_MASK));
        let how = self.lock().failed.clone().map(|f| f.1).unwrap_or_default();
        self.run_hook(first, &how);
    }

    /// Records `pe`'s part of allgather `seq` over the member set `team`; the last
    /// member to arrive answers the members.
    fn team_arrive(&self, pe: u32, team: (u32, i32, u32), seq: u64, data: Vec<u8>) {
        let (start, stride, size) = team;
        if size == 0 || size > self.npes || (size > 1 && stride == 0) {
            self.fail(
                pe,
                &format!("protocol violation: team allgather over (start {start}, stride {stride}, size {size}), which is not a team of {} PEs", self.npes),
            );
            return;
        }
        let members: Option<Vec<u32>> = (0..size)
            .map(|i| {
                let w = start as i64 + i as i64 * stride as i64;
                (0..self.npes as i64).contains(&w).then_some(w as u32)
            })
            .collect();
        let index = match members
            .as_ref()
            .and_then(|m| m.iter().position(|&w| w == pe))
        {
            Some(i) if size >= 1 => i,
            _ => {
                self.fail(
                    pe,
                    &format!(
                        "protocol violation: team allgather over (start {start}, stride {stride}, size {size}), which is not a team of this job containing PE {pe}"
                    ),
                );
                return;
            }
        };
        let members = members.expect("checked above");
        let mut st = self.lock();
        if let Some((conn, abort)) = st.failure_for(pe) {
            let _out = self.to_outbox(st);
            send_all(&conn, &abort, "an abort");
            return;
        }
        if let Some(gone) = members.iter().find(|&&m| st.done[m as usize]) {
            drop(st);
            self.fail(
                *gone,
                &format!("finalized while PE {pe} entered a team collective it is part of, which can then never complete"),
            );
            return;
        }
        let round = st.teams.entry(team).or_insert_with(|| TeamRound {
            seq,
            parts: vec![None; size as usize],
            arrived: 0,
            since: Instant::now(),
        });
        if round.seq != seq || round.parts[index].is_some() {
            let how = format!(
                "team collectives out of step on (start {start}, stride {stride}, size {size}): #{} in progress, PE {pe} entered #{seq}",
                round.seq
            );
            drop(st);
            self.fail(pe, &how);
            return;
        }
        round.parts[index] = Some(data);
        round.arrived += 1;
        if round.arrived < size {
            return;
        }
        let round = st.teams.remove(&team).expect("present");
        let blobs: Vec<Vec<u8>> = round
            .parts
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect();
        let msg = Msg::Gathered { seq, blobs };
        let conns: Vec<Arc<Conn>> = members
            .iter()
            .filter_map(|m| st.conns[*m as usize].clone())
            .collect();
        let _out = self.to_outbox(st);
        for c in &conns {
            if let Err(e) = c.send(&msg, &[]) {
                tracing::warn!("bootstrap: delivering team allgather #{seq}: {e}");
            }
        }
    }

    /// Records `pe`'s part of collective `seq`; the last to arrive answers everyone.
    fn arrive(&self, pe: u32, seq: u64, kind: &'static str, part: Part) {
        let mut st = self.lock();
        if let Some((conn, abort)) = st.failure_for(pe) {
            let _out = self.to_outbox(st);
            send_all(&conn, &abort, "an abort");
            return;
        }
        if let Some(gone) = st.done.iter().position(|d| *d) {
            // A PE that said goodbye will never arrive: fail now rather than hang.
            drop(st);
            self.fail(
                gone as u32,
                &format!(
                    "finalized while PE {pe} entered {kind} #{seq}, which can then never complete"
                ),
            );
            return;
        }
        if st.pending[pe as usize].is_some() {
            drop(st);
            self.fail(pe, "protocol violation: two collectives at once");
            return;
        }
        st.pending[pe as usize] = Some(Pending { seq, kind, part });
        if st.arrived == 0 {
            st.since = Some(Instant::now());
        }
        st.arrived += 1;
        if st.arrived < self.node_size {
            return;
        }
        st.arrived = 0;
        st.since = None;
        // Every PE of the node has a part (the others none).
        let parts: Vec<Option<Pending>> = st.pending.iter_mut().map(Option::take).collect();
        let (first, f) = parts
            .iter()
            .enumerate()
            .find_map(|(i, p)| p.as_ref().map(|p| (i, p)))
            .expect("node_size >= 1 parts");
        if let Some((odd, o)) = parts.iter().enumerate().find_map(|(i, p)| {
            p.as_ref()
                .filter(|p| p.seq != f.seq || p.kind != f.kind)
                .map(|p| (i, p))
        }) {
            let how = format!(
                "bootstrap collectives out of step: PE {first} is in {} #{}, PE {odd} in {} #{}",
                f.kind, f.seq, o.kind, o.seq
            );
            drop(st);
            self.fail(odd as u32, &how);
            return;
        }
        let conns: Vec<Arc<Conn>> = st.conns.iter().flatten().cloned().collect();
        let _out = self.to_outbox(st);
        let result = deliver(&conns, seq, parts);
        if let Err(e) = result {
            tracing::warn!("bootstrap: delivering {kind} #{seq}: {e}");
        }
    }
}

/// Sends the result of a completed collective to every PE (`parts`: every
/// job PE's, `None` for those of other nodes). A send that fails (a PE that
/// died since it arrived) does not keep the others from theirs: the first
/// error is returned after every PE was served.
fn deliver(conns: &[Arc<Conn>], seq: u64, parts: Vec<Option<Pending>>) -> Result<()> {
    let mut result = Ok(());
    let sent = |r: Result<()>, result: &mut Result<()>| {
        if let (Err(e), Ok(())) = (r, &result) {
            *result = Err(e);
        }
    };
    let first = parts.iter().flatten().next().map(|p| &p.part);
    match first {
        None => {}
        Some(Part::Barrier) => {
            for c in conns {
                sent(c.send(&Msg::BarrierDone { seq }, &[]), &mut result);
            }
        }
        Some(Part::Gather(_)) => {
            let blobs: Vec<Vec<u8>> = parts
                .into_iter()
                .map(|p| match p.map(|p| p.part) {
                    Some(Part::Gather(d)) => d,
                    _ => Vec::new(),
                })
                .collect();
            let msg = Msg::Gathered { seq, blobs };
            for c in conns {
                sent(c.send(&msg, &[]), &mut result);
            }
        }
        Some(Part::Fd(_)) => {
            let fds: Vec<Option<OwnedFd>> = parts
                .into_iter()
                .map(|p| match p.map(|p| p.part) {
                    Some(Part::Fd(f)) => f,
                    _ => None,
                })
                .collect();
            // Chunks of at most MAX_FDS_PER_FRAME descriptors each.
            let mut chunks: Vec<(u32, Vec<bool>, Vec<RawFd>)> = Vec::new();
            let mut cur = (0u32, Vec::new(), Vec::new());
            for (i, f) in fds.iter().enumerate() {
                if cur.2.len() == MAX_FDS_PER_FRAME && f.is_some() {
                    chunks.push(std::mem::replace(
                        &mut cur,
                        (i as u32, Vec::new(), Vec::new()),
                    ));
                }
                cur.1.push(f.is_some());
                if let Some(f) = f {
                    cur.2.push(f.as_raw_fd());
                }
            }
            chunks.push(cur);
            for c in conns {
                for (first, present, raw) in &chunks {
                    let msg = Msg::FdChunk {
                        seq,
                        first: *first,
                        present: present.clone(),
                    };
                    sent(c.send(&msg, raw), &mut result);
                }
            }
            // `fds` drops here: the kernel has duplicated them into the receivers.
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::Bootstrap;

    /// Runs `npes` PEs as threads against an endpoint with `timeout`.
    fn job<T: Send + 'static>(
        npes: u32,
        timeout: Duration,
        body: impl Fn(Bootstrap) -> T + Send + Sync + 'static,
    ) -> (Server, Vec<T>) {
        let server = Server::start_with_timeout(npes, Some(timeout)).unwrap();
        let (ep, secret) = (server.endpoint().to_string(), server.secret().to_vec());
        let body = Arc::new(body);
        let handles: Vec<_> = (0..npes)
            .map(|pe| {
                let (ep, secret, body) = (ep.clone(), secret.clone(), body.clone());
                std::thread::spawn(move || {
                    body(Bootstrap::connect(&ep, &secret, pe, npes).unwrap())
                })
            })
            .collect();
        let out = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (server, out)
    }

    #[test]
    fn a_late_pe_times_the_barrier_out_and_is_named() {
        let t0 = Instant::now();
        // Generous times: the test must hold on a loaded machine with few
        // cores.
        // (A timeout of 1 s also bounded barrier #1, with threads still
        // connecting.)
        let (server, errs) = job(4, Duration::from_millis(3000), |mut b| {
            b.barrier().unwrap(); // everyone arrives at #1
            if b.pe() == 1 || b.pe() == 3 {
                // Late for #2 (alive, just slow): hears the timeout when it comes.
                std::thread::sleep(Duration::from_millis(10_000));
            }
            b.barrier().unwrap_err()
        });
        // The waiting PEs were released after the timeout, not after the sleepers.
        assert!(t0.elapsed() < Duration::from_secs(30));
        for (pe, e) in errs.iter().enumerate() {
            match (pe, e) {
                (
                    0 | 2,
                    Error::Timeout {
                        what,
                        pe: p,
                        missing,
                        seconds,
                    },
                ) => {
                    assert_eq!(what, "barrier #2");
                    assert_eq!(*p, pe as u32);
                    assert_eq!(missing, ", waiting for PEs 1, 3");
                    assert!(*seconds >= 3.0 && *seconds < 10.0, "{seconds}");
                }
                // The late PEs' next call fails with the job's failure.
                (1 | 3, Error::PeerFailed { pe: 1, how }) => {
                    assert!(
                        how.contains("barrier #2") && how.contains("PEs 1, 3"),
                        "{how}"
                    )
                }
                _ => panic!("PE {pe}: {e}"),
            }
        }
        let (pe, how) = server.first_failure().unwrap();
        assert_eq!(pe, 1);
        assert!(how.contains("VKSHMEM_WAIT_TIMEOUT"), "{how}");
    }

    #[test]
    fn a_team_allgather_times_out_naming_its_missing_member() {
        let (_server, out) = job(3, Duration::from_millis(500), |mut b| {
            // Team of PEs 2, 0 (start 2, stride -2); PE 0 never comes.
            match b.pe() {
                2 => Some(b.team_allgather(2, -2, 2, b"x").unwrap_err()),
                _ => {
                    std::thread::sleep(Duration::from_millis(2000));
                    None
                }
            }
        });
        match &out[2] {
            Some(Error::Timeout { what, missing, .. }) => {
                assert!(
                    what.starts_with("team allgather #1 over the PEs 2:-2:2"),
                    "{what}"
                );
                assert_eq!(missing, ", waiting for PE 0");
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn collectives_that_complete_in_time_are_not_timed_out() {
        let (server, out) = job(3, Duration::from_millis(3000), |mut b| {
            for i in 0..20u32 {
                b.barrier()?;
                b.allgather(&i.to_le_bytes())?;
                // Spread over more than the timeout in total, never in one round.
                std::thread::sleep(Duration::from_millis(200));
            }
            b.finalize()
        });
        for r in out {
            r.unwrap();
        }
        assert!(server.first_failure().is_none());
    }
}
