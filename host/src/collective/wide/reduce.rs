//! The wide reductions: one launch over up to `WIDE_REDUCE_MAX_MEMBERS`
//! sources, or steps of accumulation into this PE's dest for larger teams.

use super::*;

impl Runtime {
    /// The wide kernels and the split when the call qualifies (`None`:
    /// the generic path). Called before the agreement, so that a kernel that
    /// fails to build fails the call on every member through it, instead of
    /// leaving this member's share unwritten. Whether a call qualifies depends
    /// on the arguments (agreed before anything moves), the heap size and this
    /// device's storage-binding limit (every PE of a job is on one device).
    pub(crate) fn wide_prepare(
        &self,
        m: &Members,
        kind: &Kind,
        op: ReduceOp,
        dest: u64,
        source: u64,
        n: u64,
    ) -> Result<Option<(WideReduce, Split)>> {
        let size = m.shape.size;
        if !collectives::wide_kind_available(&self.library_config()?, kind) {
            return Ok(None);
        }
        let es = kind.bytes as u64;
        let Some(sp) = split_words(dest, source, n * es, es) else {
            return Ok(None);
        };
        // Whether a plan exists depends only on the object, not on the
        // member (`push_plan`): each member's own comes with its part, a
        // plan per piece.
        let (d, s) = (dest + sp.head, source + sp.head);
        let b = Bounds {
            heap: self.heap_size(),
            max_range: self.wide_window(),
        };
        if !chunks(sp.mid, piece_bytes(b.max_range))
            .all(|(at, n)| plan(kind.bytes, size, m.me, d + at, s + at, n / es, b).is_some())
        {
            return Ok(None);
        }
        let library = self.library_config()?.binding_count() as u64;
        let most = self.device_info().max_storage_buffers_per_stage as u64;
        let edges = has_edges(d, sp.mid);
        if size > WIDE_REDUCE_MAX_MEMBERS {
            // Groups of up to 8 sources and this PE's dest per step, then a
            // push to up to 8 dests per launch.
            let max = WIDE_REDUCE_MAX_MEMBERS as u64;
            if library + max + 1 > most || !self.push_kernels(size as usize - 1, edges)? {
                return Ok(None);
            }
            let steps = self.accumulate_kernels(kind, op, &chained_groups(size), edges)?;
            return Ok(steps.map(|steps| (WideReduce::Chained(steps), sp)));
        }
        // Every team size binds the kernel's 8 members' windows.
        if library + 2 * WIDE_REDUCE_MAX_MEMBERS as u64 > most {
            return Ok(None);
        }
        let k = LibraryKernel::WideReduce { kind: *kind, op };
        let k = self.wide_kernel(k, edges)?;
        Ok(k.map(|k| (WideReduce::Direct(k), sp)))
    }

    /// Member `me`'s part of a reduction of `bytes` (whole words, both
    /// objects 16-byte aligned or equally off it in whole words) of
    /// elements of `es` bytes at `source` into
    /// `dest` on the wide path: one plan per piece of [`piece_bytes`]
    /// (no window past [`window_max`]), the pieces' steps side by
    /// side (they touch disjoint bytes).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reduce_wide(
        &self,
        m: &Members,
        me: u32,
        w: &WideReduce,
        es: u32,
        dest: u64,
        source: u64,
        bytes: u64,
    ) -> Result<Part> {
        let mut parts = Vec::new();
        let bounds = Bounds {
            heap: self.heap_size(),
            max_range: self.wide_window(),
        };
        for (at, b) in chunks(bytes, piece_bytes(bounds.max_range)).filter(|&(_, b)| b > 0) {
            let (d, s) = (dest + at, source + at);
            let n = b / es as u64;
            let p = plan(es, m.shape.size, me, d, s, n, bounds).ok_or_else(|| {
                crate::error::Error::InvalidArgument(format!(
                    "reduce: no wide plan for member {me} at {s} (wide_prepare found one)"
                ))
            })?;
            parts.push(self.reduce_piece(m, me, w, &p)?);
        }
        Ok(crate::collective::part::side_by_side(parts))
    }

    /// Member `me`'s part of one piece of a reduction on the wide path (`p`:
    /// its plan, [`plan`]).
    fn reduce_piece(&self, m: &Members, me: u32, w: &WideReduce, p: &WidePlan) -> Result<Part> {
        let items = (p.args.end - p.args.first) as u64;
        if items == 0 {
            return Ok(Vec::new());
        }
        // Each launch's shape for the windows it walks.
        let vecs = loop_vecs(p.args.first, p.args.end, p.args.words);
        // `streams`: the windows the launch walks (not its padding).
        let launch = |k: &WideKernel, w: Vec<HeapWindow>, args: WideArgs, streams: usize| {
            let groups = self.wide_groups(vecs, streams, WIDE_REDUCE_WORKGROUP);
            wide_launches(k, groups, w, args, vecs)
        };
        let steps = match w {
            WideReduce::Direct(k) => {
                // The kernel binds 8 members' sources and dests: those past
                // the team repeat its first member's, and it touches them not.
                let size = m.shape.size;
                let padded = || {
                    let members = m.shape.members().collect::<Vec<_>>();
                    (0..WIDE_REDUCE_MAX_MEMBERS).map(move |i| members[i.min(size - 1) as usize])
                };
                let w: Vec<HeapWindow> = windows(padded(), p.src)
                    .chain(windows(padded(), p.dst))
                    .collect();
                let args = WideArgs {
                    members: size,
                    ..p.args
                };
                return Ok(vec![Step::Wide(launch(k, w, args, 2 * size as usize)?)]);
            }
            WideReduce::Chained(steps) => steps,
        };
        // The member's share, group by group into its own dest: its own
        // source first (in place, the dest is the source, whose share only
        // this member reads), then the others in team order from the next one.
        let size = m.shape.size;
        let order: Vec<u32> = (0..size).map(|i| m.shape.member((me + i) % size)).collect();
        let own = heap_window(m.shape.member(me), p.dst);
        let mut part = Vec::new();
        for (k, group) in steps
            .iter()
            .zip(order.chunks(WIDE_REDUCE_MAX_MEMBERS as usize))
        {
            let mut w = padded(windows(group.iter().copied(), p.src).collect());
            w.push(own);
            let args = WideArgs {
                members: group.len() as u32,
                ..p.args
            };
            part.push(Step::Wide(launch(k, w, args, group.len() + 1)?));
        }
        // Then the share from the member's dest into the others' (only this
        // member writes that share of any dest).
        let pushes = self.push_share(
            own,
            &order[1..],
            p.dst,
            WideArgs {
                s0: p.args.d0,
                ..p.args
            },
        )?;
        part.push(Step::Wide(pushes));
        Ok(part)
    }

    /// The `wide_accumulate_source` kernels of a chained reduction, one per
    /// group of `groups` sources (the first without the dest's running
    /// result, the later ones onto it; each group's size an immediate,
    /// `WideArgs::members`); `None` where `kind` or `op` has none.
    fn accumulate_kernels(
        &self,
        kind: &Kind,
        op: ReduceOp,
        groups: &[u32],
        edges: bool,
    ) -> Result<Option<Vec<WideKernel>>> {
        let mut kernels = Vec::new();
        for g in 0..groups.len() {
            let k = LibraryKernel::WideAccumulate {
                kind: *kind,
                op,
                accumulate: g > 0,
            };
            let Some(k) = self.wide_kernel(k, edges)? else {
                return Ok(None);
            };
            kernels.push(k);
        }
        Ok(Some(kernels))
    }

    /// The launches that fold `bytes` (whole 32-bit words) of elements of
    /// `kind` at byte offset `sources[i]` of PE `pes[i]`'s heap, in that
    /// order, with `op` into PE `to`'s heap at byte offset `dest`: groups
    /// of up to [`WIDE_REDUCE_MAX_MEMBERS`] sources per step
    /// (`wide_accumulate_source`, the later groups onto the dest's running
    /// result), pieces of [`piece_bytes`] side by side. For UCC's folds
    /// (`collective::ucc`), whose sources sit at each member's own offset.
    /// `None` where the call must fold on the host: the kind has no wide
    /// kernel on this device, the bytes are not whole words, a source is
    /// not as far off 16-byte alignment as the dest or not as far off the
    /// device's storage-offset alignment as the first source (one `s0`
    /// serves every source window), or a window passes the heap or the
    /// binding limits. Every PE of `pes` and `to` must be bound directly
    /// (`Transport::Direct`: the caller checks).
    pub(crate) fn fold_wide(
        &self,
        kind: &Kind,
        op: ReduceOp,
        pes: &[u32],
        sources: &[u64],
        (to, dest): (u32, u64),
        bytes: u64,
    ) -> Result<Option<Part>> {
        let es = kind.bytes as u64;
        let info = self.device_info();
        let align = info.min_storage_offset_alignment.max(16);
        let aligned = |a: u64| a % 16 == dest % 16 && a % align == sources[0] % align;
        if pes.is_empty()
            || pes.len() != sources.len()
            || bytes == 0
            || bytes % 4 != 0
            || dest % 4 != 0
            || (es == 8 && dest % 8 != 0)
            || !sources.iter().all(|&s| aligned(s))
            || !collectives::wide_kind_available(&self.library_config()?, kind)
        {
            return Ok(None);
        }
        let max = WIDE_REDUCE_MAX_MEMBERS as usize;
        let library = self.library_config()?.binding_count() as u64;
        // Every step binds 8 sources' windows (padded) and the dest.
        if library + max as u64 + 1 > info.max_storage_buffers_per_stage as u64 {
            return Ok(None);
        }
        let edges = has_edges(dest, bytes);
        let groups: Vec<u32> = pes.chunks(max).map(|g| g.len() as u32).collect();
        let Some(kernels) = self.accumulate_kernels(kind, op, &groups, edges)? else {
            return Ok(None);
        };
        let (heap, range) = (self.heap_size(), self.wide_window());
        let mut parts = Vec::new();
        for (at, b) in chunks(bytes, piece_bytes(range)) {
            let d = dest + at;
            let lead = (d % 16) / 4;
            let words = lead + b / 4;
            let units = words.div_ceil(4);
            // Each object from the start of its vec4 0 to the end of its
            // last (the kernels read no further than the object's words).
            let bind = |a: u64| window(a - a % 16, units * 16, heap, align, range);
            let Some(dw) = bind(d) else {
                return Ok(None);
            };
            let Some(sw) = sources
                .iter()
                .map(|&s| bind(s + at))
                .collect::<Option<Vec<_>>>()
            else {
                return Ok(None);
            };
            let s0 = ((sources[0] + at) / 16 * 16 - sw[0].0) / 16;
            let (Ok(end), Ok(words)) = (u32::try_from(units), u32::try_from(words)) else {
                return Ok(None);
            };
            let args = WideArgs {
                first: 0,
                end,
                words,
                s0: s0 as u32,
                d0: ((d / 16 * 16 - dw.0) / 16) as u32,
                per: 0,
                lead: lead as u32,
                members: 0,
            };
            let vecs = loop_vecs(args.first, args.end, args.words);
            let mut part = Vec::new();
            for ((k, group), wins) in kernels.iter().zip(pes.chunks(max)).zip(sw.chunks(max)) {
                let mut w = padded(
                    group
                        .iter()
                        .zip(wins)
                        .map(|(&pe, &win)| heap_window(pe, win))
                        .collect(),
                );
                w.push(heap_window(to, dw));
                let args = WideArgs {
                    members: group.len() as u32,
                    ..args
                };
                let groups = self.wide_groups(vecs, group.len() + 1, WIDE_REDUCE_WORKGROUP);
                part.push(Step::Wide(wide_launches(k, groups, w, args, vecs)?));
            }
            parts.push(part);
        }
        Ok(Some(crate::collective::part::side_by_side(parts)))
    }
}

/// A group's source windows padded to the [`WIDE_REDUCE_MAX_MEMBERS`] that
/// every wide accumulation binds, with its first (which the kernel reads
/// only below `WideArgs::members`).
fn padded(mut w: Vec<HeapWindow>) -> Vec<HeapWindow> {
    if let Some(&first) = w.first() {
        w.resize(WIDE_REDUCE_MAX_MEMBERS as usize, first);
    }
    w
}
