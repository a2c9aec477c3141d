//! Starting and supervising the PEs.
//!
//! The PEs' stdout and stderr are always pipes to vkshmrun, forwarded line by line
//! by [`crate::output`]; vkshmrun's own messages go through [`output::note`]. Every
//! way out of [`run`] once PEs exist waits for them to end and then finishes the
//! forwarder, so the error reports it holds back are printed even when vkshmrun was
//! interrupted (SIGINT, SIGTERM and SIGHUP are caught and forwarded, not fatal).

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use vkshmem_host::bootstrap::Server;
use vkshmem_host::config;

use crate::output::{self, Forwarder, Pipes};

const POLL: Duration = Duration::from_millis(5);

/// How a PE ended, in words.
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with code {c}"),
        (None, Some(s)) => match Signal::try_from(s) {
            Ok(sig) => format!("was killed by signal {s} ({sig})"),
            Err(_) => format!("was killed by signal {s}"),
        },
        _ => format!("ended ({status})"),
    }
}

/// The exit code vkshmrun reports for a PE's status: its code, or 128 + signal.
fn code_of(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

struct Pe {
    child: Child,
    status: Option<ExitStatus>,
}

fn signal_all(pes: &[Pe], sig: Signal) {
    for p in pes.iter().filter(|p| p.status.is_none()) {
        let _ = kill(Pid::from_raw(p.child.id() as i32), sig);
    }
}

/// How long to wait for the PE that the endpoint saw fail first to end, so that its
/// own exit status can be reported, before naming it with the endpoint's words.
/// A panicking PE closes its connection before its Vulkan teardown and exit,
/// which can take over a second on a busy machine.
const BLAME_WAIT: Duration = Duration::from_secs(5);

/// Decides which PE caused the job to fail, once that can be told: the PE whose
/// connection the endpoint saw drop first (a dying PE often takes longer to end
/// than the peers it made fail), else one killed by a signal, else the lowest
/// numbered of those that just failed. Returns the PE, how, and the exit code.
fn blame(
    pes: &[Pe],
    newly_failed: &[(u32, ExitStatus)],
    server: &Server,
    noticed: &mut Option<Instant>,
) -> Option<(u32, String, i32)> {
    if let Some((pe, status)) = server.global_exit() {
        // The job ends with the status the program chose, whatever the
        // others' ends.
        return Some((pe, format!("called shmem_global_exit({status})"), status));
    }
    if let Some((pe, how)) = server.first_failure() {
        let since = *noticed.get_or_insert_with(Instant::now);
        return match pes[pe as usize].status {
            Some(st) if !st.success() => Some((pe, describe(st), code_of(st))),
            Some(st) => Some((pe, format!("{} ({how})", describe(st)), 1)),
            None if since.elapsed() >= BLAME_WAIT => Some((pe, how, 1)),
            None => None,
        };
    }
    let (pe, st) = *newly_failed
        .iter()
        .find(|(_, st)| st.signal().is_some())
        .or(newly_failed.first())?;
    Some((pe, describe(st), code_of(st)))
}

/// Runs the job and returns vkshmrun's exit code.
pub fn run(npes: u32, label: bool, grace: Duration, command: &[OsString]) -> Result<i32> {
    // The PEs inherit the same variable: host waits time out here, in the
    // endpoint (which knows who has not arrived), device waits in each PE.
    let timeout = config::wait_timeout(config::env).context("reading the wait timeout")?;
    let server =
        Server::start_with_timeout(npes, timeout).context("starting the bootstrap endpoint")?;
    let secret = config::encode_hex(server.secret());

    // Signals to forward: remember the last one received.
    let caught = Arc::new(AtomicUsize::new(0));
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        signal_hook::flag::register_usize(sig as i32, caught.clone(), sig as usize)
            .context("installing signal handlers")?;
    }
    // SIGQUIT asks for the flight recorder's table; the job goes on.
    let asked = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(Signal::SIGQUIT as i32, asked.clone())
        .context("installing signal handlers")?;

    let mut pes: Vec<Pe> = Vec::with_capacity(npes as usize);
    let mut pipes = Pipes::default();
    let mut pgid = 0;
    for pe in 0..npes {
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..])
            .env(config::ENV_PE, pe.to_string())
            .env(config::ENV_NPES, npes.to_string())
            .env(config::ENV_BOOTSTRAP, server.endpoint())
            .env(config::ENV_SECRET, &secret)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // One process group for the job: the terminal's Ctrl-C reaches only
            // vkshmrun, which forwards it once to every PE.
            .process_group(pgid);
        // SAFETY: the closure runs in the child between fork and exec and only makes
        // the async-signal-safe prctl(2) call.
        unsafe {
            cmd.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)
            });
        }
        match cmd.spawn() {
            Ok(mut child) => {
                if pgid == 0 {
                    pgid = child.id() as i32;
                }
                pipes.add(pe, &mut child);
                pes.push(Pe {
                    child,
                    status: None,
                });
            }
            Err(e) => {
                output::note(format_args!(
                    "cannot start PE {pe} ({}): {e}",
                    command[0].to_string_lossy()
                ));
                signal_all(&pes, Signal::SIGKILL);
                for p in &mut pes {
                    let _ = p.child.wait();
                }
                // What the PEs started so far wrote still comes out.
                Forwarder::start(pipes, label).finish(None);
                return Ok(127);
            }
        }
    }
    let forwarder = Forwarder::start(pipes, label);

    let mut failure: Option<(u32, i32)> = None;
    let mut noticed: Option<Instant> = None;
    let mut interrupted: Option<i32> = None;
    let mut deadline: Option<Instant> = None;
    let mut killed = false;
    loop {
        if asked.swap(false, Ordering::SeqCst) {
            output::note(format_args!(
                "the job's calls now (SIGQUIT):\n{}",
                server.report()
            ));
        }
        let sig = caught.swap(0, Ordering::SeqCst);
        if sig != 0 {
            if let Ok(s) = Signal::try_from(sig as i32) {
                if interrupted.is_none() {
                    output::note(format_args!("got {s}, passing it to every PE"));
                }
                interrupted = Some(sig as i32);
                signal_all(&pes, s);
                deadline.get_or_insert(Instant::now() + grace);
            }
        }

        // Reap whoever has ended.
        let mut newly_failed = Vec::new();
        for (i, p) in pes.iter_mut().enumerate() {
            if p.status.is_none() {
                if let Ok(Some(st)) = p.child.try_wait() {
                    p.status = Some(st);
                    if !st.success() {
                        newly_failed.push((i as u32, st));
                    }
                }
            }
        }
        if failure.is_none() && interrupted.is_none() {
            if let Some((pe, how, code)) = blame(&pes, &newly_failed, &server, &mut noticed) {
                output::note(format_args!("PE {pe} {how}; stopping the other PEs"));
                server.fail(pe, &how);
                output::note(format_args!(
                    "the job's calls when it failed:\n{}",
                    server.report()
                ));
                failure = Some((pe, code));
                signal_all(&pes, Signal::SIGTERM);
                deadline = Some(Instant::now() + grace);
            }
        }

        if pes.iter().all(|p| p.status.is_some()) {
            break;
        }
        if let Some(d) = deadline {
            if !killed && Instant::now() >= d {
                signal_all(&pes, Signal::SIGKILL);
                killed = true;
            }
        }
        std::thread::sleep(POLL);
    }
    // Every PE has ended: the rest of their output, then their error reports.
    forwarder.finish(failure.map(|(pe, _)| pe));
    if let Some(path) = config::trace(config::env) {
        match vkshmem_host::trace::merge(&path, npes) {
            // A job of one PE merged its own.
            Ok(0) => {}
            Ok(n) => output::note(format_args!(
                "trace of {n} PEs written to {} (Perfetto, chrome://tracing)",
                path.display()
            )),
            Err(e) => output::note(format_args!(
                "merging the trace into {}: {e}",
                path.display()
            )),
        }
    }
    drop(server);

    if let Some(sig) = interrupted {
        return Ok(128 + sig);
    }
    if let Some((pe, code)) = failure {
        if let Some(others) = others_failed(&pes, pe) {
            output::note(format_args!("after PE {pe} failed: {others}"));
        }
        return Ok(code);
    }
    Ok(0)
}

/// How the PEs other than `blamed` that did not succeed ended, PEs that ended
/// alike named together (`PEs 0-2,4 exited with code 2, PE 3 was killed by
/// signal 15 (SIGTERM)`); `None` when all of them succeeded.
fn others_failed(pes: &[Pe], blamed: u32) -> Option<String> {
    let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
    for (i, p) in pes.iter().enumerate() {
        let Some(st) = p.status.filter(|st| !st.success()) else {
            continue;
        };
        if i as u32 == blamed {
            continue;
        }
        let how = describe(st);
        match groups.iter_mut().find(|(h, _)| *h == how) {
            Some((_, list)) => list.push(i as u32),
            None => groups.push((how, vec![i as u32])),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(how, list)| match (list.len(), how.strip_prefix("was ")) {
            (2.., Some(rest)) => format!("{} were {rest}", output::pes_named(list)),
            _ => format!("{} {how}", output::pes_named(list)),
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}
