//! The public façade: [`Context`], one PE's handle on vkshmem.
//!
//! A [`Context`] is a cheap handle (`Arc` inside) on the PE's
//! `Runtime` (`crate::runtime`), which owns the Vulkan device, the symmetric
//! heap, the allocator and the bootstrap connection. It may be shared between
//! threads; collective calls must still be made in the same order on every
//! PE, from one thread at a time per PE.
//!
//! Each method here documents the call and passes it to the runtime, where
//! the algorithm lives under the same name: `Context::sum_reduce` is
//! `Runtime::sum_reduce` in `collective/reduce.rs` (`grep -rn "fn sum_reduce"`).
//! The files follow the families: `init.rs` (join and leave), `memory.rs`,
//! `queries.rs`, `sync.rs`, `teams.rs`, `collectives.rs`, `rma.rs`,
//! `queue.rs`, `kernels.rs`; the C ABI's extra entry points are in
//! `crate::interop`.

use std::sync::Arc;

use crate::runtime::Runtime;

pub use crate::runtime::HeapWindow;

/// One PE's handle on vkshmem (OpenSHMEM's implicit library state, made explicit).
#[derive(Clone)]
pub struct Context {
    pub(crate) rt: Arc<Runtime>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("pe", &self.rt.my_pe())
            .field("npes", &self.rt.n_pes())
            .field("device", &self.rt.gpu.info.name)
            .finish()
    }
}

// A context is shared between threads (the docs say so): keep it that way.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Context>();
};

mod collectives;
mod init;
mod interop;
mod kernels;
mod memory;
mod queries;
mod queue;
mod rma;
mod sync;
mod teams;
