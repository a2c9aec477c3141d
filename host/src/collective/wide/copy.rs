//! The wide pulls and pushes: copies of members' blocks into this PE's
//! dest, and pushes of this PE's share into every member's.

use super::*;

impl Runtime {
    /// The launches that copy `block` bytes at byte offset `src` of each PE
    /// in `from` into consecutive blocks at `dst` of PE `to`, on the wide
    /// path; `None` when the call must take the generic path (which then
    /// writes the whole dest again). A launch takes a group of blocks
    /// ([`blocks_per_copy`]: up to [`WIDE_REDUCE_MAX_MEMBERS`] whose dest
    /// window fits the device's largest binding, one on llvmpipe); blocks
    /// past [`piece_bytes`] go one at a time, in pieces of that size (all
    /// launches take the wide path or none does).
    pub(crate) fn copy_wide(
        &self,
        to: u32,
        from: &[u32],
        block: u64,
        src: u64,
        dst: u64,
    ) -> Result<Option<Vec<Planned>>> {
        let mut plans = Vec::new();
        let mut add = |p: Option<Vec<Planned>>| p.map(|p| plans.extend(p)).is_some();
        let piece = self.wide_piece();
        if block > piece {
            for (j, &pe) in from.iter().enumerate() {
                for (at, b) in chunks(block, piece) {
                    let to_at = dst + j as u64 * block + at;
                    if !add(self.copy_wide_launch(to, &[pe], b, src + at, to_at)?) {
                        return Ok(None);
                    }
                }
            }
            return Ok(Some(plans));
        }
        let info = self.device_info();
        let fit = blocks_per_copy(
            block,
            info.max_storage_buffer_range,
            info.min_storage_offset_alignment,
            info.is_llvmpipe(),
        );
        for (i, group) in from.chunks(fit).enumerate() {
            let at = (i * fit) as u64 * block;
            if !add(self.copy_wide_launch(to, group, block, src, dst + at)?) {
                return Ok(None);
            }
        }
        Ok(Some(plans))
    }

    /// The launch of one group of at most [`WIDE_REDUCE_MAX_MEMBERS`] of
    /// `Runtime::copy_wide`: in vec4s (blocks and objects equally off
    /// 16-byte alignment start inside their vec4 0, `WideCopyArgs::lead`),
    /// else word by word (sources and dests off alignment unlike each other,
    /// or several blocks off whole vec4s); `None` when it cannot take the
    /// wide path (not whole words, or past the heap or the binding limits).
    /// In vec4s, the edge vec4s' launches follow where the unit leaves them
    /// ([`wide_launches`]).
    fn copy_wide_launch(
        &self,
        to: u32,
        from: &[u32],
        block: u64,
        src: u64,
        dst: u64,
    ) -> Result<Option<Vec<Planned>>> {
        let info = self.device_info();
        let blocks = from.len() as u32;
        let align = info.min_storage_offset_alignment;
        let b = Bounds {
            heap: self.heap_size(),
            max_range: info.max_storage_buffer_range,
        };
        let (p, words) = match copy_plan(16, blocks, block, src, dst, align, b) {
            Some(p) => (p, false),
            None => match copy_plan(4, blocks, block, src, dst, align, b) {
                Some(p) => (p, true),
                None => return Ok(None),
            },
        };
        let library = self.library_config()?.binding_count() as u64;
        if library + from.len() as u64 + 1 > info.max_storage_buffers_per_stage as u64 {
            return Ok(None);
        }
        let wg = self.wide_workgroup();
        let k = if words {
            let k = LibraryKernel::WideCopyWords { blocks, wg };
            let words = WideUnit::Vec4U32;
            let k = self.library_kernel(&k.name(words), || k.source(words))?;
            k.map(|main| WideKernel {
                main,
                stores_edges: true,
                edges: None,
            })
        } else {
            let a = p.args;
            let edges = !edge_ranges(a.first, a.end, a.words, a.lead).is_empty();
            self.wide_kernel(LibraryKernel::WideCopy { blocks, wg }, edges)?
        };
        let Some(k) = k else {
            return Ok(None);
        };
        let w: Vec<HeapWindow> = windows(from.iter().copied(), p.src)
            .chain([heap_window(to, p.dst)])
            .collect();
        let items = copy_items(words, &p.args);
        let groups = self.wide_groups(items, w.len(), wg);
        wide_launches(&k, groups, w, p.args, items).map(Some)
    }

    /// Whether every block of `pushes` (the whole call's, every member's) can
    /// take the wide push to `dests` dest PEs: decided from the agreed
    /// arguments, the heap size and the device's limits only, so every
    /// member of a call decides alike (a push writes the other members'
    /// dests: all push or none does). Builds the kernels it needs, so that a
    /// kernel that fails to build fails the call before anything moves.
    pub(crate) fn push_possible(&self, pushes: &[Push], dests: usize) -> Result<bool> {
        if dests == 0 || pushes.iter().all(|p| p.bytes == 0) {
            return Ok(false);
        }
        let info = self.device_info();
        let heap = self.heap_size();
        let fits = pushes.iter().all(|p| {
            p.bytes == 0
                || chunks(p.bytes, self.wide_piece()).all(|(at, b)| {
                    push_plan(
                        b,
                        p.src + at,
                        p.dst + at,
                        0,
                        1,
                        heap,
                        info.max_storage_buffer_range,
                    )
                    .is_some()
                })
        });
        let edges = pushes
            .iter()
            .any(|p| p.bytes > 0 && has_edges(p.src, p.bytes));
        Ok(fits && self.push_kernels(dests, edges)?)
    }

    /// Builds the wide push kernels for `dests` dest PEs (a launch per group
    /// of [`WIDE_REDUCE_MAX_MEMBERS`]), with the kernels for the edges where
    /// the objects have `edges`; `false` when the device cannot bind
    /// that many windows beside the library's own bindings (the same answer on
    /// every PE of a device).
    pub(crate) fn push_kernels(&self, dests: usize, edges: bool) -> Result<bool> {
        let group = dests.min(WIDE_REDUCE_MAX_MEMBERS as usize);
        let library = self.library_config()?.binding_count() as usize;
        if group == 0
            || library + 1 + group > self.device_info().max_storage_buffers_per_stage as usize
        {
            return Ok(false);
        }
        let mut sizes = vec![group];
        if dests % group != 0 {
            sizes.push(dests % group);
        }
        for d in sizes {
            if self.push_kernel(d, edges)?.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn push_kernel(&self, dests: usize, edges: bool) -> Result<Option<WideKernel>> {
        let k = LibraryKernel::WidePush {
            dests: dests as u32,
            wg: self.wide_workgroup(),
        };
        self.wide_kernel(k, edges)
    }

    /// The launches of share `part` of `parts` of the wide push `p` to the
    /// PEs `to` (after `Runtime::push_possible` said yes for the whole
    /// call): one per piece of [`piece_bytes`] and per group of
    /// [`WIDE_REDUCE_MAX_MEMBERS`] dests. They write disjoint bytes and read
    /// only the source: one step.
    pub(crate) fn push_wide(
        &self,
        p: &Push,
        to: &[u32],
        part: u32,
        parts: u32,
    ) -> Result<Vec<Planned>> {
        let info = self.device_info();
        let mut launches = Vec::new();
        for (at, bytes) in chunks(p.bytes, self.wide_piece()).filter(|&(_, b)| b > 0) {
            let plan = push_plan(
                bytes,
                p.src + at,
                p.dst + at,
                part,
                parts,
                self.heap_size(),
                info.max_storage_buffer_range,
            )
            .ok_or_else(|| {
                crate::error::Error::InvalidArgument(format!(
                    "wide push of {bytes} bytes at {} to {}: no plan (push_possible said yes)",
                    p.src + at,
                    p.dst + at
                ))
            })?;
            let items = (plan.args.end - plan.args.first) as u64;
            if items == 0 {
                continue;
            }
            launches.extend(self.push_share(
                heap_window(p.from, plan.src),
                to,
                plan.dst,
                plan.args,
            )?);
        }
        Ok(launches)
    }

    /// The launches of the wide push of the share `args.first..args.end`
    /// from the window `source` into the window `dst` of each PE of `to`, one
    /// per group of [`WIDE_REDUCE_MAX_MEMBERS`] (the push kernels built
    /// already: `Runtime::push_kernels`).
    pub(super) fn push_share(
        &self,
        source: HeapWindow,
        to: &[u32],
        dst: (u64, u64),
        args: WideArgs,
    ) -> Result<Vec<Planned>> {
        let edges = !edge_ranges(args.first, args.end, args.words, args.lead).is_empty();
        let mut launches = Vec::new();
        for group in to.chunks(WIDE_REDUCE_MAX_MEMBERS as usize) {
            let k = self.push_kernel(group.len(), edges)?.ok_or_else(|| {
                crate::error::Error::InvalidArgument(format!(
                    "wide push to {} dests: no kernel (push_kernels built it)",
                    group.len()
                ))
            })?;
            let mut w = vec![source];
            w.extend(windows(group.iter().copied(), dst));
            let vecs = loop_vecs(args.first, args.end, args.words);
            let groups = self.wide_groups(vecs, w.len(), self.wide_workgroup());
            launches.extend(wide_launches(&k, groups, w, args, vecs)?);
        }
        Ok(launches)
    }
}
