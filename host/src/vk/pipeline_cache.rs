//! The persistent pipeline cache: one `VkPipelineCache` per [`Gpu`](super::Gpu),
//! passed to every `vkCreateComputePipelines`, loaded from a file when the device
//! is opened and saved back when it is closed, so that a driver that caches
//! compiled pipelines does not compile the host collectives' kernels again in the
//! next job.
//!
//! The file is `pipelines-<vendorID>-<deviceID>-<pipelineCacheUUID>.bin` in
//! `$XDG_CACHE_HOME/vkshmem/` (else `~/.cache/vkshmem/`);
//! [`ENV_PIPELINE_CACHE`](crate::config::ENV_PIPELINE_CACHE) names another directory, or `0` turns the cache file off. Data is checked the
//! way the Vulkan specification describes (`VkPipelineCacheHeaderVersionOne`:
//! length, version, vendor, device and cache UUID) before the driver sees it.
//! The PEs of a job save concurrently: each writes a private temporary file and
//! renames it over the cache file (atomic), after merging what another PE saved
//! since this one loaded. A file that cannot be read or written is logged
//! (`tracing::debug`) and otherwise ignored: the cache never fails a PE.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use ash::vk;

/// Bytes of `VkPipelineCacheHeaderVersionOne`.
const HEADER_BYTES: usize = 32;

/// Larger cache files are neither read nor written (the cache only grows: a new
/// heap size or PE count links new kernels); the file is removed instead, and the
/// next job starts a new one.
const MAX_FILE_BYTES: usize = 64 << 20;

/// Temporary files of a save that did not finish (a PE killed while writing)
/// older than this are removed by the next save.
const STALE_TEMP: Duration = Duration::from_secs(600);

/// What a device's pipeline cache data must start with: the fields of
/// `VkPipelineCacheHeaderVersionOne` that name the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheId {
    /// `VkPhysicalDeviceProperties::vendorID`.
    pub vendor_id: u32,
    /// `VkPhysicalDeviceProperties::deviceID`.
    pub device_id: u32,
    /// `VkPhysicalDeviceProperties::pipelineCacheUUID`.
    pub uuid: [u8; 16],
}

impl CacheId {
    /// The cache file's name for this device.
    pub fn file_name(&self) -> String {
        let uuid: String = self.uuid.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "pipelines-{:04x}-{:04x}-{uuid}.bin",
            self.vendor_id, self.device_id
        )
    }

    /// Whether `data` is pipeline cache data of this device: a
    /// `VkPipelineCacheHeaderVersionOne` (its fields least significant byte
    /// first, whatever the host's byte order) of at least 32 bytes that fits in
    /// `data`, version `VK_PIPELINE_CACHE_HEADER_VERSION_ONE`, with this
    /// vendor, device and cache UUID.
    pub fn accepts(&self, data: &[u8]) -> bool {
        if data.len() < HEADER_BYTES {
            return false;
        }
        let word = |i: usize| u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
        let header = word(0) as usize;
        (HEADER_BYTES..=data.len()).contains(&header)
            && word(4) == vk::PipelineCacheHeaderVersion::ONE.as_raw() as u32
            && word(8) == self.vendor_id
            && word(12) == self.device_id
            && data[16..32] == self.uuid
    }
}

/// The device's `VkPipelineCache` and the file it was loaded from.
pub struct PipelineCache {
    handle: vk::PipelineCache,
    id: CacheId,
    file: Option<PathBuf>,
    /// What the file held when the cache was created (empty: nothing usable).
    loaded: Vec<u8>,
}

impl std::fmt::Debug for PipelineCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipelineCache")
            .field("file", &self.file)
            .field("loaded_bytes", &self.loaded.len())
            .finish()
    }
}

impl PipelineCache {
    /// Creates the cache of `device`, from the file in `dir` when it holds data
    /// for `id`. Never fails: without a cache object (the driver refused even an
    /// empty one) the handle is null, which `vkCreateComputePipelines` takes as
    /// "no cache".
    pub(crate) fn open(device: &ash::Device, id: CacheId, dir: Option<PathBuf>) -> PipelineCache {
        let file = dir.map(|d| d.join(id.file_name()));
        let loaded = file
            .as_deref()
            .and_then(|f| read_valid(f, &id))
            .unwrap_or_default();
        let mut handle = create(device, &loaded);
        if handle.is_err() && !loaded.is_empty() {
            handle = create(device, &[]);
        }
        let handle = handle.unwrap_or_else(|r| {
            tracing::debug!("vkCreatePipelineCache: {r:?}; pipelines are built without a cache");
            vk::PipelineCache::null()
        });
        tracing::debug!(file = ?file, bytes = loaded.len(), "pipeline cache");
        PipelineCache {
            handle,
            id,
            file,
            loaded,
        }
    }

    /// The handle to pass to `vkCreateComputePipelines` (may be null).
    pub fn handle(&self) -> vk::PipelineCache {
        self.handle
    }

    /// The turn file of pipeline `key` ([`super::compile_turn`]); `None`
    /// without a cache directory.
    pub(crate) fn turn_file(&self, key: u64) -> Option<PathBuf> {
        super::compile_turn::turn_file(self.file.as_deref()?, key)
    }

    /// Saves the cache to its file when it holds something new, then destroys it.
    /// Called once, when the device closes (no pipeline is being created: every
    /// object built with it holds the `Gpu`).
    pub(crate) fn close(&mut self, device: &ash::Device) {
        if self.handle == vk::PipelineCache::null() {
            return;
        }
        if let Some(file) = self.file.clone() {
            self.save(device, &file);
        }
        // SAFETY: VUID-vkDestroyPipelineCache-pipelineCache-parent: a cache
        // created from `device`, not null (checked above); the specification's
        // host synchronization rule for vkDestroyPipelineCache (host access to
        // pipelineCache externally synchronized) holds: `&mut self`, and no
        // vkCreateComputePipelines can run with it any more (see above).
        unsafe { device.destroy_pipeline_cache(self.handle, None) };
        self.handle = vk::PipelineCache::null();
    }

    fn save(&self, device: &ash::Device, file: &Path) {
        let Some(mut data) = self.data(device) else {
            return;
        };
        if data == self.loaded || !self.id.accepts(&data) {
            return;
        }
        // Another PE may have saved since this one loaded: keep its pipelines too.
        if let Some(theirs) = read_valid(file, &self.id).filter(|t| *t != self.loaded) {
            if let Ok(other) = create(device, &theirs) {
                // SAFETY: VUID-vkMergePipelineCaches-dstCache-00770: `other` is not
                // the destination; both are caches of this device, and the
                // destination's host access is externally synchronized (see
                // `close`, the only caller).
                let merged = unsafe { device.merge_pipeline_caches(self.handle, &[other]) };
                // SAFETY: VUID-vkDestroyPipelineCache-pipelineCache-parent:
                // created from `device` just above, and used by no other
                // command or thread.
                unsafe { device.destroy_pipeline_cache(other, None) };
                if merged.is_ok() {
                    data = self.data(device).unwrap_or(data);
                }
            }
        }
        if data.len() > MAX_FILE_BYTES {
            tracing::debug!(
                bytes = data.len(),
                "pipeline cache over {MAX_FILE_BYTES} bytes: removing {file:?}"
            );
            let _ = std::fs::remove_file(file);
            return;
        }
        match write_atomic(file, &data) {
            Ok(()) => tracing::debug!(bytes = data.len(), "saved the pipeline cache to {file:?}"),
            Err(e) => tracing::debug!("cannot save the pipeline cache to {file:?}: {e}"),
        }
    }

    fn data(&self, device: &ash::Device) -> Option<Vec<u8>> {
        // SAFETY: a valid cache of this device
        // (VUID-vkGetPipelineCacheData-pipelineCache-parameter); ash sizes the
        // buffer from a first query, so pDataSize matches pData.
        unsafe { device.get_pipeline_cache_data(self.handle) }
            .inspect_err(|r| tracing::debug!("vkGetPipelineCacheData: {r:?}"))
            .ok()
    }
}

/// A pipeline cache of `device` starting from `data` (empty: an empty cache).
fn create(device: &ash::Device, data: &[u8]) -> std::result::Result<vk::PipelineCache, vk::Result> {
    let info = vk::PipelineCacheCreateInfo::default().initial_data(data);
    // SAFETY: VUID-VkPipelineCacheCreateInfo-initialDataSize-00768 and -00769:
    // `data` is empty, or the whole of what vkGetPipelineCacheData returned on a
    // device with this header (`CacheId::accepts`; files are replaced whole, by
    // rename, and saved only after the same check), with its own length; the
    // create info outlives the call.
    unsafe { device.create_pipeline_cache(&info, None) }
}

/// The contents of `file` when it is pipeline cache data for `id`.
fn read_valid(file: &Path, id: &CacheId) -> Option<Vec<u8>> {
    let read = || -> std::io::Result<Vec<u8>> {
        let meta = std::fs::metadata(file)?;
        if meta.len() > MAX_FILE_BYTES as u64 {
            return Err(std::io::Error::other(format!(
                "{} bytes, over {MAX_FILE_BYTES}",
                meta.len()
            )));
        }
        std::fs::read(file)
    };
    match read() {
        Ok(data) if id.accepts(&data) => Some(data),
        Ok(data) => {
            tracing::debug!(
                bytes = data.len(),
                "{file:?} is not pipeline cache data of this device: ignored"
            );
            None
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            tracing::debug!("cannot read the pipeline cache {file:?}: {e}");
            None
        }
    }
}

/// Temporary file names: a process may save several times (one device per
/// context), several processes at once.
static SAVES: AtomicU64 = AtomicU64::new(0);

/// Writes `data` to a new temporary file beside `file` and renames it over
/// `file`: readers see the old or the new contents, never a mix, and the last of
/// several concurrent writers wins. The temporary file is removed on any error.
pub(crate) fn write_atomic(file: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    std::fs::create_dir_all(dir)?;
    remove_stale_temps(dir, &name);
    let n = SAVES.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&temp)?;
        f.write_all(data)?;
        // On disk before the rename makes it the cache: a crash leaves the old
        // file or the whole new one.
        f.sync_data()?;
        std::fs::rename(&temp, file)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Removes temporary files of `name` older than [`STALE_TEMP`] from `dir` (left
/// by a process killed while saving).
fn remove_stale_temps(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    let now = SystemTime::now();
    for e in entries.flatten() {
        let n = e.file_name();
        let n = n.to_string_lossy();
        if !(n.starts_with(&prefix) && n.ends_with(".tmp")) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > STALE_TEMP);
        if old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: CacheId = CacheId {
        vendor_id: 0x10005,
        device_id: 0,
        uuid: *b"0123456789abcdef",
    };

    fn header(id: &CacheId, size: u32, version: u32) -> Vec<u8> {
        let mut h = Vec::new();
        for w in [size, version, id.vendor_id, id.device_id] {
            h.extend_from_slice(&w.to_le_bytes());
        }
        h.extend_from_slice(&id.uuid);
        h
    }

    #[test]
    fn headers_are_checked_like_the_specification_says() {
        let good = header(&ID, 32, 1);
        assert!(ID.accepts(&good));
        let mut more = good.clone();
        more.extend_from_slice(&[7; 100]);
        assert!(ID.accepts(&more));
        // Too short, header length out of range, other version, device or UUID.
        assert!(!ID.accepts(&good[..31]));
        assert!(!ID.accepts(&header(&ID, 16, 1)));
        assert!(!ID.accepts(&header(&ID, 33, 1)));
        assert!(!ID.accepts(&header(&ID, 32, 2)));
        let other = CacheId { device_id: 1, ..ID };
        assert!(!ID.accepts(&header(&other, 32, 1)));
        let other = CacheId {
            uuid: *b"0123456789abcdeF",
            ..ID
        };
        assert!(!ID.accepts(&header(&other, 32, 1)));
        assert!(!ID.accepts(&[]));
    }

    #[test]
    fn saves_replace_the_file_and_leave_no_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub").join(ID.file_name());
        let a = header(&ID, 32, 1);
        write_atomic(&file, &a).unwrap();
        assert_eq!(read_valid(&file, &ID), Some(a.clone()));
        let mut b = a.clone();
        b.extend_from_slice(b"more");
        write_atomic(&file, &b).unwrap();
        assert_eq!(read_valid(&file, &ID), Some(b));
        let names: Vec<_> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(ID.file_name())]);
        // Data of another device is not read; a failed save leaves nothing.
        std::fs::write(&file, header(&CacheId { vendor_id: 1, ..ID }, 32, 1)).unwrap();
        assert_eq!(read_valid(&file, &ID), None);
        let blocked = dir.path().join("blocked");
        std::fs::write(&blocked, b"a file, not a directory").unwrap();
        assert!(write_atomic(&blocked.join("x.bin"), &a).is_err());
        let stray = dir.path().join("missing").join("x.bin");
        std::fs::create_dir(dir.path().join("missing")).unwrap();
        std::fs::create_dir(&stray).unwrap(); // rename over a directory fails
        assert!(write_atomic(&stray, &a).is_err());
        let left: Vec<_> = std::fs::read_dir(dir.path().join("missing"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("x.bin")]);
    }
}
