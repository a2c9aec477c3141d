//! Generates the WGSL device library for a device: one text serves every
//! job on it whose slot span rounds to one power of two.
//!
//! The library is two parts: a generated part (this module: the shape's
//! constants, the heap bindings, the accessors that pick a peer's binding, and the typed
//! `shmem_<TYPE>_*` functions, all instantiated from tables) and a fixed
//! part (`shaders/vkshmem.wgsl`: waits, team sync, barriers).
//!
//! Here [`library_source_for`] assembles it from the emitters of `heap` (binding
//! declarations, PE slots), `accessors`, `errors`, `waits`, `vec4` (bulk moves)
//! and `api` (the typed API), under the configuration of `config`.
//!
//! # How device code reaches the heaps
//!
//! One storage-buffer binding per (slot, chunk) in descriptor set 0, for a
//! power of two of slots (`LibraryConfig::slots`): PE `p`'s heap is cut into
//! chunks of at most `maxStorageBufferRange` bytes (lavapipe: 128 MiB);
//! bindings are numbered from 0 in (slot, chunk) order, where PE `p`'s slot
//! is `(p - my_pe) mod k` (this PE's heap is slot 0; `k` is the job's PEs, or
//! the node's where this PE reaches exactly its node's aligned block of PEs,
//! `JobView::slot_span`, read at run time from the control header). A slot
//! without a PE reached directly is bound to this PE's own heap, and the
//! direct-slot mask (`layout::DIRECT_WORD`) keeps device code off it. Each
//! accessor `switch`es on `vks_slot(pe)`, then on the chunk of the address
//! (so `VKS_SELF`, slot 0, folds to its own chunks). Every binding is declared twice, as
//! `array<atomic<u32>>` (`vks_a_S_C`) and `array<u32>` (`vks_w_S_C`); WGSL (naga)
//! refuses two variables on one binding, so the plain view is declared at binding
//! `PLAIN_VIEW_OFFSET + b` and the SPIR-V pass moves it onto `b` (Vulkan allows
//! aliased variables on one binding when both match the descriptor type). A
//! kernel that uses 64-bit atomics (on a device with
//! `shaderBufferInt64Atomics`) gets a third view, `array<atomic<u64>>`
//! (`vks_q_S_C`, declared at `QUAD_VIEW_OFFSET + b`), indexed by word address
//! / 2: 64-bit atomics need 8-byte alignment, so their word address is even.
//!
//! A binding array indexed by PE would be shorter, but Mesa 22.3 (lavapipe) has no
//! non-uniform indexing of buffer arrays and our collectives index by a PE that
//! differs between invocations; a `switch` over separate bindings is valid
//! everywhere, and the driver folds it when the PE is uniform.

use std::fmt::Write as _;

use crate::layout;

mod accessors;
mod api;
mod config;
mod errors;
mod heap;
mod vec4;
mod waits;

use accessors::{accessor, ACCESSORS, ACCESSORS_64};
use api::{typed, TYPES};
pub use config::{
    heap_binding, vec4_unit, HeapBinding, JobView, LibraryConfig, PeSet, CAPPED_DELAY_STEPS,
    CAPPED_POLLS_PER_ITERATION, LIBRARY_SET, MIN_SLOTS, NO_SLOT, PLAIN_VIEW_OFFSET,
    QUAD_VIEW_OFFSET, ROW_LANES, USER_SET, VEC4_VIEW_OFFSET,
};
use errors::{raise, LOOP_CHECK};
use heap::{bindings, is_direct, own_volatile_load, MY_PE_SOURCE};
pub use vec4::{is_one_row, PUSH_ALL_MAX_PES, UNROLL};
use vec4::{vec4_copy, vec4_push_all};
pub(crate) use vec4::{vec4_pieces, Chunk};
pub(crate) use waits::capped_polls;
use waits::{poll_many, wait_announce};

/// The fixed part of the library.
pub const FIXED_SOURCE: &str = include_str!("../../../shaders/vkshmem.wgsl");

/// The whole device library (generated part, then the fixed part) for `cfg`, with
/// every typed collective.
pub fn library_source(cfg: &LibraryConfig) -> String {
    library_source_for(cfg, None)
}

/// The device library for a kernel whose source is `uses`: the typed device
/// collectives it does not mention are left out (`None`: all of them).
pub fn library_source_for(cfg: &LibraryConfig, uses: Option<&str>) -> String {
    let mut s = String::new();
    s.push_str("\n// ======== vkshmem device library (generated) ========\n");
    // The job's values (this PE's number, the PE count, the heap's size, the
    // slot span and which slots are reached directly) are read from this
    // PE's control region, never compiled in: the text depends only on the
    // device and `cfg`'s shape, so one pipeline per kernel serves the jobs
    // of a device whose spans round alike (`vkshmem_host::vk::compile_turn` keys it by its SPIR-V).
    s.push_str(MY_PE_SOURCE);
    let _ = writeln!(s, "const VKS_SLOTS: u32 = {}u;", cfg.slots);
    s.push_str(&layout::wgsl());
    // The 64-bit atomic view only where a kernel uses it: its type needs
    // the device feature, and every view is one more variable to compile.
    let quad = cfg.int64_atomics && uses.map_or(true, crate::amo::uses_64bit_atomics);
    let vec4 = uses_vec4(uses);
    bindings(&mut s, cfg, quad, vec4);
    raise(&mut s, cfg);
    wait_announce(&mut s, cfg);
    poll_many(&mut s, cfg);
    if cfg.loop_cap {
        s.push_str(LOOP_CHECK);
    }
    if cfg.divergent_fences {
        s.push_str("fn vks_fence_any() { vks_fence_acq_rel(); }\n");
    } else {
        s.push_str("// llvmpipe: no fences in divergent code (see LibraryConfig::divergent_fences).\nfn vks_fence_any() {}\n");
    }
    for acc in ACCESSORS {
        accessor(&mut s, cfg, acc, true);
        // `vks_d_*`: the same without the proxy path, for code that checks
        // vks_is_direct first (the collectives' data movement): a proxied
        // path inlined at every call site makes kernels slow to compile.
        accessor(&mut s, cfg, acc, false);
    }
    if quad {
        for acc in ACCESSORS_64 {
            accessor(&mut s, cfg, acc, true);
        }
    }
    own_volatile_load(&mut s, cfg);
    vec4_copy(&mut s, cfg, vec4);
    vec4_push_all(&mut s, cfg, vec4);
    is_direct(&mut s, cfg);
    crate::proxy::ring_api(&mut s, cfg);
    for ty in TYPES {
        if (ty.needs_int64 && !cfg.int64) || (ty.needs_float64 && !cfg.float64) {
            continue;
        }
        typed(&mut s, ty);
    }
    s.push_str(&crate::amo::device_amo(quad, uses));
    s.push_str("\n// ======== vkshmem device library (fixed) ========\n");
    s.push_str(FIXED_SOURCE);
    s.push_str(&crate::collectives::library_part(cfg, uses));
    s.push_str(&crate::collectives::device_api(cfg, uses));
    s.push_str(&crate::rma::device_rma(uses));
    s
}

/// Whether a kernel whose source is `uses` (`None`: any kernel) gets the vec4
/// view and the vec4 bulk moves: where it calls a work_group(s) form (every
/// view is one more variable to compile, and the bulk loops are many), or any
/// form of broadcast, fcollect or collect (`shmem_broadcastmem`,
/// `shmem_int_fcollect`, ...): their device forms push where every kernel of
/// the job that calls them can (`vks_push_fits`), and one PE may call the
/// per-thread form where another calls a work_group form, so whether a
/// kernel has the view must not depend on the form. (The host's generic
/// kernels name `vks_broadcast_move(`, not these, and pull.)
pub(crate) fn uses_vec4(uses: Option<&str>) -> bool {
    uses.map_or(true, |u| {
        [
            "_work_group",
            "broadcast(",
            "broadcastmem",
            "collect(",
            "collectmem",
        ]
        .iter()
        .any(|k| u.contains(k))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_pushing_collective_gets_the_vec4_view() {
        // A PE may call the per-thread form where another calls a work_group
        // form: all must push (they have the view) or all pull.
        for call in [
            "shmem_broadcastmem(SHMEM_TEAM_WORLD, 0u, 0u, 64u, 0u)",
            "shmem_int_broadcast(t, d, s, n, 0u)",
            "shmem_fcollectmem(t, d, s, n)",
            "shmem_float_fcollect(t, d, s, n)",
            "shmem_collectmem(t, d, s, n)",
            "shmem_uint_collect(t, d, s, n)",
            "shmemx_broadcastmem_work_group(t, d, s, n, 0u, li, 64u)",
            "shmemx_fcollectmem_work_groups(t, d, s, n, li, 64u, g, ng)",
        ] {
            assert!(uses_vec4(Some(call)), "{call}");
        }
        // The host's generic kernels pull (one process may run them as each
        // member in turn): no view.
        for c in [
            crate::collectives::HostCollective::Broadcast,
            crate::collectives::HostCollective::Fcollect,
            crate::collectives::HostCollective::Collect,
        ] {
            assert!(!uses_vec4(Some(&c.source())), "{c:?}");
        }
        assert!(!uses_vec4(Some("shmem_int_p(0u, 1, 0u)")));
    }

    /// The library's shape for PE `me` of `n` reaching `direct`, on heaps of
    /// `heap` bytes and a device whose bindings cover `range` (a proxy where
    /// some PE is not reached directly), and the job's side.
    pub(super) fn shape(
        n: u32,
        me: u32,
        direct: &[u32],
        heap: u64,
        range: u64,
    ) -> (LibraryConfig, JobView) {
        let reach = JobView {
            my_pe: me,
            n_pes: n,
            direct: PeSet::from_pes(direct.iter().copied()),
            heap_bytes: heap,
        };
        let chunks = reach.chunks(range);
        let cfg = LibraryConfig {
            slots: reach.slots(LAVAPIPE_BINDINGS, chunks),
            chunks,
            max_binding_bytes: range,
            int64: true,
            float64: true,
            int64_atomics: true,
            divergent_fences: true,
            loop_cap: false,
            row_lanes: 0,
            proxy: reach.needs_proxy(),
            vec4_u64: false,
        };
        (cfg, reach)
    }

    /// Storage buffers per stage on lavapipe: the tightest budget the
    /// library meets.
    pub(super) const LAVAPIPE_BINDINGS: u32 = 32;

    /// The shape of PE 0 of `n` that reaches every PE.
    pub(super) fn cfg(n: u32, heap: u64, range: u64) -> LibraryConfig {
        let all: Vec<u32> = (0..n).collect();
        shape(n, 0, &all, heap, range).0
    }

    #[test]
    fn library_compiles_alone_in_every_shape() {
        for (n, heap, range, wide) in [
            (1, 1 << 20, 128 << 20, true),
            (3, 256 << 20, 128 << 20, true),
            (8, 64 << 20, 128 << 20, false),
            (12, 64 << 20, 128 << 20, true),
        ] {
            for proxy in [false, true] {
                let mut c = cfg(n, heap, range);
                c.int64 = wide;
                c.float64 = wide;
                c.int64_atomics = wide;
                if proxy {
                    // Peers on another device, reached through the proxy.
                    c.proxy = true;
                    c.loop_cap = true;
                }
                let src = format!(
                    "{}\n@compute @workgroup_size(1) fn main() {{ shmem_barrier_all(); }}",
                    library_source(&c)
                );
                if let Err(e) = crate::compile_wgsl(&src, "lib") {
                    panic!("{e}");
                }
                assert_eq!(src.contains("fn vks_px_call("), proxy);
            }
        }
    }
}
