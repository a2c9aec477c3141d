//! C addresses to symmetric objects, and PE numbers of a context to WORLD
//! PEs.

use vkshmem_host::Team;

use crate::setup::{fatal, OrDie, State};
use crate::CtxH;

/// Where a symmetric object lives: the same offset on every PE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sym {
    /// At this byte offset of the symmetric heap.
    Heap(u64),
    /// At this byte offset of the program's data segment (a global or
    /// static variable).
    Global(usize),
}

impl State {
    /// The symmetric object at `p` with `bytes` bytes, if it is one.
    pub fn try_sym(&self, p: *const u8, bytes: usize) -> Option<Sym> {
        let a = p as usize;
        let end = a.checked_add(bytes)?;
        if a >= self.base && end <= self.base + self.size {
            return Some(Sym::Heap((a - self.base) as u64));
        }
        self.globals.offset_of(a, bytes).map(Sym::Global)
    }

    /// The symmetric object at `p` (`what` names the argument), or the end
    /// of this PE with a message.
    pub fn sym<T>(&self, call: &str, what: &str, p: *const T, n: usize) -> Sym {
        let bytes = n
            .checked_mul(std::mem::size_of::<T>())
            .unwrap_or_else(|| fatal(call, format!("{n} elements overflow the address space")));
        if n == 0 {
            // Zero elements: any address will do (the specification allows
            // NULL); nothing is read or written through it.
            return self.try_sym(p.cast(), 1).unwrap_or(Sym::Heap(0));
        }
        if p.is_null() {
            fatal(call, format!("{what} is NULL"));
        }
        self.try_sym(p.cast(), bytes).unwrap_or_else(|| {
            fatal(
                call,
                format!(
                    "{what} ({p:p}, {bytes} bytes) is not a symmetric object: neither in the symmetric heap \
                     (shmem_malloc) nor a global or static variable of the program"
                ),
            )
        })
    }

    /// The team of context `ctx`.
    pub fn ctx_team(&self, call: &str, ctx: CtxH) -> Team {
        match ctx {
            crate::SHMEM_CTX_DEFAULT => Team::WORLD,
            0 => fatal(call, "the context is SHMEM_CTX_INVALID"),
            h => self
                .ctxs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(h - 2)
                .copied()
                .flatten()
                .unwrap_or_else(|| {
                    fatal(call, format!("context handle {h:#x} names no live context"))
                }),
        }
    }

    /// WORLD PE of PE `pe` of context `ctx`'s team.
    pub fn world_pe(&self, call: &str, ctx: CtxH, pe: i32) -> u32 {
        let team = self.ctx_team(call, ctx);
        if team == Team::WORLD {
            if pe < 0 || pe as u32 >= self.npes {
                fatal(
                    call,
                    format!("PE {pe} is not in the job ({} PEs)", self.npes),
                );
            }
            return pe as u32;
        }
        self.ctx
            .team_translate_pe(team, pe, Team::WORLD)
            .or_die(call)
            .unwrap_or_else(|| fatal(call, format!("PE {pe} is not in the context's team")))
    }
}

/// Elements a strided walk of `n` elements spans, or the end of the PE
/// when that overflows.
pub fn span(call: &str, n: usize, stride: usize) -> usize {
    if n == 0 {
        return 0;
    }
    (n - 1)
        .checked_mul(stride)
        .and_then(|x| x.checked_add(1))
        .unwrap_or_else(|| {
            fatal(
                call,
                format!("{n} elements at stride {stride} overflow the address space"),
            )
        })
}
