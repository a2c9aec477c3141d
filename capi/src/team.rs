//! Teams (`shmem_team_*`) and communication contexts (`shmem_ctx_*`).
//! A context is its team: every context is thread-safe and its puts
//! complete before they return, so `ctx_quiet` is `shmem_quiet`.

use vkshmem_host::{Team, TeamConfig};

use crate::setup::{fatal, st, OrDie};
use crate::{CtxH, TeamConfigC, TeamH};

/// The team of a C handle (`Team::INVALID` for an unknown one).
pub fn team(h: TeamH) -> Team {
    match h {
        0 => Team::INVALID,
        1 => Team::WORLD,
        2 => Team::SHARED,
        3 => Team::NODE,
        h if h >= 1 << 32 => Team::from_raw(h as u64),
        _ => Team::INVALID,
    }
}

/// The C handle of a team.
pub fn handle(t: Team) -> TeamH {
    match t {
        Team::INVALID => 0,
        Team::WORLD => 1,
        Team::SHARED => 2,
        Team::NODE => 3,
        t => t.to_raw() as usize,
    }
}

/// `shmem_team_my_pe`: -1 for an invalid team.
pub fn my_pe(h: TeamH) -> i32 {
    st("shmem_team_my_pe")
        .ctx
        .team_my_pe(team(h))
        .map_or(-1, |v| v as i32)
}

/// `shmem_team_n_pes`: -1 for an invalid team.
pub fn n_pes(h: TeamH) -> i32 {
    st("shmem_team_n_pes")
        .ctx
        .team_n_pes(team(h))
        .map_or(-1, |v| v as i32)
}

/// `shmem_team_get_config`.
pub fn get_config(h: TeamH, mask: i64, config: *mut TeamConfigC) -> i32 {
    let call = "shmem_team_get_config";
    match st(call).ctx.team_get_config(team(h)) {
        Ok(c) => {
            if mask & 1 != 0 {
                if config.is_null() {
                    fatal(call, "config is NULL");
                }
                // SAFETY: non-null config from the caller.
                unsafe { (*config).num_contexts = c.num_contexts };
            }
            0
        }
        Err(_) => -1,
    }
}

/// `shmem_team_translate_pe`: -1 when the PE is in no such place.
pub fn translate(src: TeamH, pe: i32, dst: TeamH) -> i32 {
    match st("shmem_team_translate_pe")
        .ctx
        .team_translate_pe(team(src), pe, team(dst))
    {
        Ok(Some(p)) => p as i32,
        _ => -1,
    }
}

fn config(call: &str, c: *const TeamConfigC, mask: i64) -> TeamConfig {
    if mask & 1 != 0 {
        if c.is_null() {
            fatal(
                call,
                "config is NULL while config_mask has SHMEM_TEAM_NUM_CONTEXTS",
            );
        }
        // SAFETY: non-null config from the caller.
        TeamConfig {
            num_contexts: unsafe { (*c).num_contexts },
        }
    } else {
        TeamConfig::default()
    }
}

fn out(call: &str, p: *mut TeamH, t: Option<Team>) {
    if p.is_null() {
        fatal(call, "the new team's pointer is NULL");
    }
    // SAFETY: non-null team handle from the caller.
    unsafe { *p = t.map_or(0, handle) };
}

/// `shmem_team_split_strided`: 0 on success (the new team, or
/// SHMEM_TEAM_INVALID on PEs not in it); nonzero with a message otherwise.
#[allow(clippy::too_many_arguments)]
pub fn split_strided(
    parent: TeamH,
    start: i32,
    stride: i32,
    size: i32,
    c: *const TeamConfigC,
    mask: i64,
    new: *mut TeamH,
) -> i32 {
    let call = "shmem_team_split_strided";
    let cfg = config(call, c, mask);
    match st(call)
        .ctx
        .team_split_strided(team(parent), start, stride, size, &cfg)
    {
        Ok(t) => {
            out(call, new, t);
            0
        }
        Err(e) => {
            eprintln!("vkshmem: {call}: {e}");
            if !new.is_null() {
                out(call, new, None);
            }
            1
        }
    }
}

/// `shmem_team_split_2d`.
#[allow(clippy::too_many_arguments)]
pub fn split_2d(
    parent: TeamH,
    xrange: i32,
    xc: *const TeamConfigC,
    xmask: i64,
    xteam: *mut TeamH,
    yc: *const TeamConfigC,
    ymask: i64,
    yteam: *mut TeamH,
) -> i32 {
    let call = "shmem_team_split_2d";
    let (xcfg, ycfg) = (config(call, xc, xmask), config(call, yc, ymask));
    match st(call)
        .ctx
        .team_split_2d(team(parent), xrange, &xcfg, &ycfg)
    {
        Ok((x, y)) => {
            out(call, xteam, Some(x));
            out(call, yteam, Some(y));
            0
        }
        Err(e) => {
            eprintln!("vkshmem: {call}: {e}");
            for t in [xteam, yteam] {
                if !t.is_null() {
                    out(call, t, None);
                }
            }
            1
        }
    }
}

/// `shmem_team_destroy`.
pub fn destroy(h: TeamH) {
    let call = "shmem_team_destroy";
    if h == 0 {
        return;
    }
    st(call).ctx.team_destroy(team(h)).or_die(call);
}

/// `shmem_team_sync`.
pub fn sync(h: TeamH) -> i32 {
    let call = "shmem_team_sync";
    if h == 0 {
        return -1;
    }
    st(call).ctx.team_sync(team(h)).or_die(call);
    0
}

/// `shmem_ctx_create` / `shmem_team_create_ctx`: 0 and the context, or
/// nonzero and SHMEM_CTX_INVALID for an invalid team.
pub fn ctx_create(h: TeamH, options: i64, ctx: *mut CtxH) -> i32 {
    let call = "shmem_ctx_create";
    let _ = options;
    let s = st(call);
    if ctx.is_null() {
        fatal(call, "ctx is NULL");
    }
    let t = team(h);
    if s.ctx.team_n_pes(t).is_err() {
        // SAFETY: non-null context handle from the caller.
        unsafe { *ctx = 0 };
        return 1;
    }
    let mut all = s.ctxs.lock().unwrap_or_else(|e| e.into_inner());
    let i = all.iter().position(Option::is_none).unwrap_or_else(|| {
        all.push(None);
        all.len() - 1
    });
    all[i] = Some(t);
    // SAFETY: as above.
    unsafe { *ctx = i + 2 };
    0
}

/// `shmem_ctx_destroy`: the context's updates complete, then it is gone.
pub fn ctx_destroy(ctx: CtxH) {
    let call = "shmem_ctx_destroy";
    let s = st(call);
    if ctx == 0 {
        return;
    }
    if ctx == crate::SHMEM_CTX_DEFAULT {
        fatal(call, "SHMEM_CTX_DEFAULT cannot be destroyed");
    }
    let _ = s.ctx_team(call, ctx);
    s.ctx.quiet().or_die(call);
    s.ctxs.lock().unwrap_or_else(|e| e.into_inner())[ctx - 2] = None;
}

/// `shmem_ctx_get_team`.
pub fn ctx_get_team(ctx: CtxH, t: *mut TeamH) -> i32 {
    let call = "shmem_ctx_get_team";
    let s = st(call);
    if t.is_null() {
        return 1;
    }
    if ctx == 0 {
        // SAFETY: non-null handle from the caller.
        unsafe { *t = 0 };
        return 1;
    }
    let team = s.ctx_team(call, ctx);
    // SAFETY: as above.
    unsafe { *t = handle(team) };
    0
}
