//! The collectives' device code, generated from one table of element kinds and
//! reduction operations.
//!
//! - [`KINDS`]: the twelve machine element kinds (8-, 16-, 32-, 64-bit integers,
//!   signed and unsigned; f32; f64; the half-precision f16 and bf16). Sub-word
//!   kinds are packed in the heap's 32-bit words: a reduction combines the 4 or
//!   2 lanes of a word one by one. Half-precision lanes are combined in f32 and
//!   rounded to nearest even after every step ([`HALF_SOURCE`]), which gives
//!   exactly what native half arithmetic gives (f32 has more than twice their
//!   precision), so no device feature is needed.
//! - [`TYPES`]: ishmem's TYPENAMEs (`char` … `double`), each a kind plus whether
//!   the bitwise operations apply (ishmem's reduction table).
//! - [`ReduceOp`]: and, or, xor, max, min, sum, prod.
//!
//! From them: `vks_combine_<kind>(op, a, b)` and `vks_reduce_<kind>(team, op, dest,
//! source, nelems, tid, nth)` in every library, and the kernels of the
//! host-initiated collectives ([`HostCollective::source`], called as a
//! [`HostCall`]). The data movement that does not depend on the type is in
//! `shaders/collectives.wgsl`.
//!
//! Here [`library_part`] assembles a library's share; the files: `tables`
//! (kinds, TYPENAMEs, operations), `reductions` (per-kind combines and
//! drivers), `device_api` (the `shmem_*` functions), `host_kernels` (the
//! host collectives' kernels) and `wide` (the host's wide-path kernels).

use crate::LibraryConfig;

mod device_api;
mod host_kernels;
mod reductions;
mod tables;
mod wide;

pub use device_api::device_api;
pub use host_kernels::{
    HostArgs, HostCall, HostCollective, HOST_WORKGROUP, WIDE_REDUCE_WORKGROUP, WIDE_WORKGROUP_GPU,
};
use reductions::{combine, kind_used, reduce, swar_sum, vec4_accumulate};
pub use tables::{
    is_half, kind, kind_available, kind_index, wide_kind_available, Kind, ReduceOp, TypeName,
    HALF_SOURCE, KINDS, TYPES,
};
pub use wide::*;

/// The fixed part: data movement shared by every form.
pub const FIXED_SOURCE: &str = include_str!("../../../shaders/collectives.wgsl");

/// The generated collectives code of a library: combine functions and reduction
/// drivers for every available kind, then the fixed movement code.
pub fn library_part(cfg: &LibraryConfig, uses: Option<&str>) -> String {
    let mut s = String::from("\n// ---- collectives (generated) ----\n");
    s.push_str(FIXED_SOURCE);
    if KINDS.iter().any(|k| is_half(k) && kind_used(k, uses)) {
        s.push_str(HALF_SOURCE);
    }
    if cfg.int64 {
        s.push_str(
            "fn vks_load_u64(pe: u32, w: u32) -> u64 {
    return u64(vks_d_plain_load(pe, w)) | (u64(vks_d_plain_load(pe, w + 1u)) << 32u);
}
",
        );
    }
    let vec4 = crate::library::uses_vec4(uses);
    for kind in KINDS
        .iter()
        .filter(|k| kind_available(cfg, k) && kind_used(k, uses))
    {
        combine(&mut s, kind);
        vec4_accumulate(&mut s, cfg, kind, vec4);
        reduce(&mut s, kind);
    }
    s
}
