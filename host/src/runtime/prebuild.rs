//! The background builds of a context's host kernels
//! (`crate::kernels::prebuild` builds them).

use super::Runtime;
use crate::config;
use crate::kernels::library::{FirstKernels, KernelShape};
use crate::kernels::prebuild::{self, Plan};

impl Runtime {
    /// Starts building, on the process's builder thread, the host collectives'
    /// kernels this program is likely to call (see `VKSHMEM_PREBUILD`): the
    /// profile's, or else those `first` declares. Called once, at the end
    /// of `init`; returns at once. A failure to start is logged and leaves
    /// every kernel to its first call.
    pub(crate) fn prebuild_host_kernels(&self, first: FirstKernels) {
        let mode = config::prebuild(config::env);
        if mode == config::Prebuild::Off || self.builds().is_some() {
            return;
        }
        let cfg = match self.library_config() {
            Ok(cfg) => cfg,
            Err(e) => {
                tracing::debug!("no kernels built in the background: {e}");
                return;
            }
        };
        let plan = Plan {
            npes: self.n_pes(),
            wide_workgroup: self.wide_workgroup(),
            wide_unit: self.wide_unit(),
            world_staged: (0..self.n_pes()).any(|p| !self.heap.reachable(p)),
            guesses: first(&KernelShape {
                size: self.n_pes(),
                cfg: &cfg,
                wg: self.wide_workgroup(),
                all: mode == config::Prebuild::All,
            }),
            cfg,
        };
        prebuild::start(plan, mode, self.gpu.clone(), &self.submit);
    }

    pub(crate) fn wait_background_builds(&self) {
        prebuild::wait_ended(&self.submit);
    }
}
