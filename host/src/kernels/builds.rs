//! The kernels of one context built, or being built, on more than one thread.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use vkshmem_device::LibraryConfig;

use super::DeviceKernel;
use crate::lock::lock;

/// A kernel's cache key: (source, entry point).
pub(crate) type KernelKey = (String, Option<String>);

/// Kernels of one context built, or being built, on more than one thread (the
/// caller's and the background builder's, `super::prebuild`): a
/// kernel is built once, and a call that needs one still being built waits for
/// it instead of building it again.
pub(crate) struct Builds {
    /// The library configuration the kernels here were linked for.
    pub(crate) cfg: LibraryConfig,
    /// The wide copies' and pushes' workgroup size (`Context::wide_workgroup`).
    pub(crate) wide_workgroup: u32,
    slots: Mutex<HashMap<KernelKey, Slot>>,
    /// Signalled when a slot is filled or given up.
    changed: Condvar,
    /// Set when the context goes: the background builder starts nothing more.
    pub(crate) cancel: AtomicBool,
    /// The host kernels the program used, in order (for its prebuild profile).
    used: Mutex<Vec<String>>,
}

enum Slot {
    Building,
    Built(Arc<DeviceKernel>),
}

/// The right to build the kernel of one key: [`Claim::done`] publishes it;
/// dropping the claim without (a failed build) frees the key for another
/// builder and wakes those waiting for it.
pub(crate) struct Claim<'a> {
    builds: &'a Builds,
    key: Option<KernelKey>,
}

impl Claim<'_> {
    /// Publishes the kernel built for this claim's key.
    pub(crate) fn done(mut self, kernel: Arc<DeviceKernel>) {
        if let Some(key) = self.key.take() {
            lock(&self.builds.slots).insert(key, Slot::Built(kernel));
            self.builds.changed.notify_all();
        }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            lock(&self.builds.slots).remove(&key);
            self.builds.changed.notify_all();
        }
    }
}

impl Builds {
    /// Nothing built yet, for kernels linked with `cfg`, the wide copies and
    /// pushes in workgroups of `wide_workgroup`.
    pub(crate) fn new(cfg: LibraryConfig, wide_workgroup: u32) -> Builds {
        Builds {
            cfg,
            wide_workgroup,
            slots: Mutex::new(HashMap::new()),
            changed: Condvar::new(),
            cancel: AtomicBool::new(false),
            used: Mutex::new(Vec::new()),
        }
    }

    /// Notes that the program used the kernel `name`.
    pub(crate) fn note(&self, name: &str) {
        let mut used = lock(&self.used);
        if !used.iter().any(|n| n == name) {
            used.push(name.to_string());
        }
    }

    /// The kernels noted, in order.
    pub(crate) fn used(&self) -> Vec<String> {
        lock(&self.used).clone()
    }

    /// The kernel of `key` if it is built (waiting while another thread builds
    /// it), else the claim to build it.
    pub(crate) fn get_or_claim(
        &self,
        key: &KernelKey,
    ) -> std::result::Result<Arc<DeviceKernel>, Claim<'_>> {
        let mut slots = lock(&self.slots);
        loop {
            match slots.get(key) {
                Some(Slot::Built(k)) => return Ok(k.clone()),
                Some(Slot::Building) => {
                    slots = self.changed.wait(slots).unwrap_or_else(|p| p.into_inner());
                }
                None => {
                    slots.insert(key.clone(), Slot::Building);
                    return Err(Claim {
                        builds: self,
                        key: Some(key.clone()),
                    });
                }
            }
        }
    }

    /// The claim to build `key` when no thread has built or is building it.
    pub(crate) fn claim_new(&self, key: &KernelKey) -> Option<Claim<'_>> {
        let mut slots = lock(&self.slots);
        if slots.contains_key(key) {
            return None;
        }
        slots.insert(key.clone(), Slot::Building);
        Some(Claim {
            builds: self,
            key: Some(key.clone()),
        })
    }

    /// Whether the context is going.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}
