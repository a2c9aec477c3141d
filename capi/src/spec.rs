// The C API, described once: see the module documentation in lib.rs.

/// One C type of a family: `(TYPENAME, TYPE, Rust type, in the C11 generic
/// macros)`. Fixed-width and `size_t`/`ptrdiff_t` names are typedefs of
/// the standard types, so only the standard types are in the generic macros.
pub type Ty = (&'static str, &'static str, &'static str, bool);

/// OpenSHMEM 1.5 Table 5, the standard RMA types.
pub const RMA: &[Ty] = &[
    ("float", "float", "f32", true),
    ("double", "double", "f64", true),
    ("longdouble", "long double", "crate::LongDouble", true),
    ("char", "char", "core::ffi::c_char", true),
    ("schar", "signed char", "i8", true),
    ("short", "short", "i16", true),
    ("int", "int", "i32", true),
    ("long", "long", "i64", true),
    ("longlong", "long long", "i64", true),
    ("uchar", "unsigned char", "u8", true),
    ("ushort", "unsigned short", "u16", true),
    ("uint", "unsigned int", "u32", true),
    ("ulong", "unsigned long", "u64", true),
    ("ulonglong", "unsigned long long", "u64", true),
    ("int8", "int8_t", "i8", false),
    ("int16", "int16_t", "i16", false),
    ("int32", "int32_t", "i32", false),
    ("int64", "int64_t", "i64", false),
    ("uint8", "uint8_t", "u8", false),
    ("uint16", "uint16_t", "u16", false),
    ("uint32", "uint32_t", "u32", false),
    ("uint64", "uint64_t", "u64", false),
    ("size", "size_t", "usize", false),
    ("ptrdiff", "ptrdiff_t", "isize", false),
];

/// The sized RMA forms: `{N}` is the element size in bits.
pub const SIZED: &[Ty] = &[
    ("8", "void", "u8", false),
    ("16", "void", "u16", false),
    ("32", "void", "u32", false),
    ("64", "void", "u64", false),
    ("128", "void", "[u64; 2]", false),
];

/// The standard AMO types (Table 6).
pub const AMO_STD: &[Ty] = &[
    ("int", "int", "i32", true),
    ("long", "long", "i64", true),
    ("longlong", "long long", "i64", true),
    ("uint", "unsigned int", "u32", true),
    ("ulong", "unsigned long", "u64", true),
    ("ulonglong", "unsigned long long", "u64", true),
    ("int32", "int32_t", "i32", false),
    ("int64", "int64_t", "i64", false),
    ("uint32", "uint32_t", "u32", false),
    ("uint64", "uint64_t", "u64", false),
    ("size", "size_t", "usize", false),
    ("ptrdiff", "ptrdiff_t", "isize", false),
];

/// The extended AMO types: the standard ones and the floating types
/// (fetch, set and swap only).
pub const AMO_EXT: &[Ty] = &[
    ("float", "float", "f32", true),
    ("double", "double", "f64", true),
    ("int", "int", "i32", true),
    ("long", "long", "i64", true),
    ("longlong", "long long", "i64", true),
    ("uint", "unsigned int", "u32", true),
    ("ulong", "unsigned long", "u64", true),
    ("ulonglong", "unsigned long long", "u64", true),
    ("int32", "int32_t", "i32", false),
    ("int64", "int64_t", "i64", false),
    ("uint32", "uint32_t", "u32", false),
    ("uint64", "uint64_t", "u64", false),
    ("size", "size_t", "usize", false),
    ("ptrdiff", "ptrdiff_t", "isize", false),
];

/// The bitwise AMO types. `int32_t` and `int64_t` are in the generic
/// macros: no other entry is `int` or `long`.
pub const AMO_BIT: &[Ty] = &[
    ("uint", "unsigned int", "u32", true),
    ("ulong", "unsigned long", "u64", true),
    ("ulonglong", "unsigned long long", "u64", true),
    ("int32", "int32_t", "i32", true),
    ("int64", "int64_t", "i64", true),
    ("uint32", "uint32_t", "u32", false),
    ("uint64", "uint64_t", "u64", false),
];

/// The point-to-point synchronization types (Table 9).
pub const SYNC: &[Ty] = &[
    ("short", "short", "i16", true),
    ("int", "int", "i32", true),
    ("long", "long", "i64", true),
    ("longlong", "long long", "i64", true),
    ("ushort", "unsigned short", "u16", true),
    ("uint", "unsigned int", "u32", true),
    ("ulong", "unsigned long", "u64", true),
    ("ulonglong", "unsigned long long", "u64", true),
    ("int32", "int32_t", "i32", false),
    ("int64", "int64_t", "i64", false),
    ("uint32", "uint32_t", "u32", false),
    ("uint64", "uint64_t", "u64", false),
    ("size", "size_t", "usize", false),
    ("ptrdiff", "ptrdiff_t", "isize", false),
];

/// The bitwise reduction types (and, or, xor).
pub const RED_BIT: &[Ty] = &[
    ("uchar", "unsigned char", "u8", true),
    ("ushort", "unsigned short", "u16", true),
    ("uint", "unsigned int", "u32", true),
    ("ulong", "unsigned long", "u64", true),
    ("ulonglong", "unsigned long long", "u64", true),
    ("int8", "int8_t", "i8", true),
    ("int16", "int16_t", "i16", true),
    ("int32", "int32_t", "i32", true),
    ("int64", "int64_t", "i64", true),
    ("uint8", "uint8_t", "u8", false),
    ("uint16", "uint16_t", "u16", false),
    ("uint32", "uint32_t", "u32", false),
    ("uint64", "uint64_t", "u64", false),
    ("size", "size_t", "usize", false),
];

/// The min/max reduction types (also sum and product). Rust has no
/// `long double` arithmetic: its reductions are header inlines that hand
/// `vkshmemx_reduce_bytes` a combine function compiled by the program's C
/// compiler.
pub const RED_CMP: &[Ty] = &[
    ("char", "char", "core::ffi::c_char", true),
    ("schar", "signed char", "i8", true),
    ("short", "short", "i16", true),
    ("int", "int", "i32", true),
    ("long", "long", "i64", true),
    ("longlong", "long long", "i64", true),
    ("ptrdiff", "ptrdiff_t", "isize", false),
    ("uchar", "unsigned char", "u8", true),
    ("ushort", "unsigned short", "u16", true),
    ("uint", "unsigned int", "u32", true),
    ("ulong", "unsigned long", "u64", true),
    ("ulonglong", "unsigned long long", "u64", true),
    ("int8", "int8_t", "i8", false),
    ("int16", "int16_t", "i16", false),
    ("int32", "int32_t", "i32", false),
    ("int64", "int64_t", "i64", false),
    ("uint8", "uint8_t", "u8", false),
    ("uint16", "uint16_t", "u16", false),
    ("uint32", "uint32_t", "u32", false),
    ("uint64", "uint64_t", "u64", false),
    ("size", "size_t", "usize", false),
    ("float", "float", "f32", true),
    ("double", "double", "f64", true),
    ("longdouble", "long double", "crate::LongDouble", true),
];

/// The deprecated AMOs' integer types (`shmem_int_fadd`, ...).
pub const DEP_AMO: &[Ty] = &[
    ("int", "int", "i32", true),
    ("long", "long", "i64", true),
    ("longlong", "long long", "i64", true),
];

/// The deprecated AMOs' types of swap, fetch and set.
pub const DEP_AMO_EXT: &[Ty] = &[
    ("float", "float", "f32", true),
    ("double", "double", "f64", true),
    ("int", "int", "i32", true),
    ("long", "long", "i64", true),
    ("longlong", "long long", "i64", true),
];

/// The complex types of the sum and product reductions.
pub const RED_COMPLEX: &[Ty] = &[
    ("complexd", "double _Complex", "crate::Complex<f64>", true),
    ("complexf", "float _Complex", "crate::Complex<f32>", true),
];

/// The active-set (`_to_all`) bitwise types.
pub const TOALL_BIT: &[Ty] = &[
    ("short", "short", "i16", false),
    ("int", "int", "i32", false),
    ("long", "long", "i64", false),
    ("longlong", "long long", "i64", false),
];

/// The active-set min/max, sum and product types (complex apart).
pub const TOALL_ARITH: &[Ty] = &[
    ("short", "short", "i16", false),
    ("int", "int", "i32", false),
    ("long", "long", "i64", false),
    ("longlong", "long long", "i64", false),
    ("float", "float", "f32", false),
    ("double", "double", "f64", false),
    ("longdouble", "long double", "crate::LongDouble", false),
];

/// The active-set complex types.
pub const TOALL_COMPLEX: &[Ty] = &[
    ("complexd", "double _Complex", "crate::Complex<f64>", false),
    ("complexf", "float _Complex", "crate::Complex<f32>", false),
];

/// One function, or a family of them over `types`.
pub struct Api {
    /// The C prototype (a template when `types` is set).
    pub proto: &'static str,
    /// The Rust expression that is the function's body.
    pub body: &'static str,
    /// The family's types.
    pub types: Option<&'static [Ty]>,
    /// Also a `shmem_ctx_` form.
    pub ctx: bool,
    /// The C11 type-generic macro's name, and the parameter it dispatches on.
    pub generic: Option<(&'static str, usize)>,
    /// For `long double` instances that pass or return the value itself
    /// (Rust has no `long double`, whose C ABI uses x87 registers): a C
    /// body; the function is then a `static inline` in the header over
    /// the pointer forms. `{CTX}` is `ctx_` and `{CTXA}` `ctx, ` in the
    /// context form, both empty in the plain one.
    pub inline_ld: Option<&'static str>,
}

const fn one(proto: &'static str, body: &'static str) -> Api {
    Api {
        proto,
        body,
        types: None,
        ctx: false,
        generic: None,
        inline_ld: None,
    }
}

const fn ctx1(proto: &'static str, body: &'static str) -> Api {
    Api {
        proto,
        body,
        types: None,
        ctx: true,
        generic: None,
        inline_ld: None,
    }
}

const fn fam(types: &'static [Ty], proto: &'static str, body: &'static str) -> Api {
    Api {
        proto,
        body,
        types: Some(types),
        ctx: false,
        generic: None,
        inline_ld: None,
    }
}

const fn fam_ctx(
    types: &'static [Ty],
    generic: &'static str,
    on: usize,
    proto: &'static str,
    body: &'static str,
) -> Api {
    Api {
        proto,
        body,
        types: Some(types),
        ctx: true,
        generic: Some((generic, on)),
        inline_ld: None,
    }
}

const fn fam_gen(
    types: &'static [Ty],
    generic: &'static str,
    on: usize,
    proto: &'static str,
    body: &'static str,
) -> Api {
    Api {
        proto,
        body,
        types: Some(types),
        ctx: false,
        generic: Some((generic, on)),
        inline_ld: None,
    }
}

/// Integer constants of the header: `(name, value, doc)`.
pub const CONSTANTS: &[(&str, i64, &str)] = &[
    (
        "SHMEM_MAJOR_VERSION",
        1,
        "The OpenSHMEM version this header implements.",
    ),
    ("SHMEM_MINOR_VERSION", 5, ""),
    (
        "SHMEM_MAX_NAME_LEN",
        256,
        "Bytes of shmem_info_get_name's buffer.",
    ),
    (
        "SHMEM_THREAD_SINGLE",
        0,
        "Thread levels (shmem_init_thread).",
    ),
    ("SHMEM_THREAD_FUNNELED", 1, ""),
    ("SHMEM_THREAD_SERIALIZED", 2, ""),
    ("SHMEM_THREAD_MULTIPLE", 3, ""),
    (
        "SHMEM_CMP_EQ",
        0,
        "Comparisons of the point-to-point waits.",
    ),
    ("SHMEM_CMP_NE", 1, ""),
    ("SHMEM_CMP_GT", 2, ""),
    ("SHMEM_CMP_GE", 3, ""),
    ("SHMEM_CMP_LT", 4, ""),
    ("SHMEM_CMP_LE", 5, ""),
    ("SHMEM_SIGNAL_SET", 0, "Signal operations (put_signal)."),
    ("SHMEM_SIGNAL_ADD", 1, ""),
    (
        "SHMEM_CTX_SERIALIZED",
        1,
        "Context options (accepted; every context is thread-safe).",
    ),
    ("SHMEM_CTX_PRIVATE", 2, ""),
    ("SHMEM_CTX_NOSTORE", 4, ""),
    (
        "SHMEM_TEAM_NUM_CONTEXTS",
        1,
        "shmem_team_config_t mask bits.",
    ),
    (
        "SHMEM_MALLOC_ATOMICS_REMOTE",
        1,
        "shmem_malloc_with_hints hints (accepted).",
    ),
    ("SHMEM_MALLOC_SIGNAL_REMOTE", 2, ""),
    (
        "SHMEM_SYNC_VALUE",
        0,
        "What every pSync element holds before an active-set call.",
    ),
    (
        "SHMEM_BARRIER_SYNC_SIZE",
        1,
        "Elements of the pSync arrays.",
    ),
    ("SHMEM_BCAST_SYNC_SIZE", 1, ""),
    ("SHMEM_COLLECT_SYNC_SIZE", 1, ""),
    ("SHMEM_REDUCE_SYNC_SIZE", 1, ""),
    ("SHMEM_ALLTOALL_SYNC_SIZE", 1, ""),
    ("SHMEM_ALLTOALLS_SYNC_SIZE", 1, ""),
    ("SHMEM_SYNC_SIZE", 1, ""),
    (
        "SHMEM_REDUCE_MIN_WRKDATA_SIZE",
        1,
        "Elements of pWrk at least.",
    ),
    ("_SHMEM_SYNC_VALUE", 0, "Deprecated spellings."),
    ("_SHMEM_MAJOR_VERSION", 1, ""),
    ("_SHMEM_MINOR_VERSION", 5, ""),
    ("_SHMEM_MAX_NAME_LEN", 256, ""),
    ("_SHMEM_BARRIER_SYNC_SIZE", 1, ""),
    ("_SHMEM_BCAST_SYNC_SIZE", 1, ""),
    ("_SHMEM_COLLECT_SYNC_SIZE", 1, ""),
    ("_SHMEM_REDUCE_SYNC_SIZE", 1, ""),
    ("_SHMEM_REDUCE_MIN_WRKDATA_SIZE", 1, ""),
    ("_SHMEM_CMP_EQ", 0, ""),
    ("_SHMEM_CMP_NE", 1, ""),
    ("_SHMEM_CMP_GT", 2, ""),
    ("_SHMEM_CMP_GE", 3, ""),
    ("_SHMEM_CMP_LT", 4, ""),
    ("_SHMEM_CMP_LE", 5, ""),
];

/// Handles of the predefined teams and contexts (`shmem_team_t` and
/// `shmem_ctx_t` are opaque pointers holding these numbers; 0 is INVALID).
pub const HANDLES: &[(&str, &str, usize)] = &[
    ("SHMEM_TEAM_INVALID", "shmem_team_t", 0),
    ("SHMEM_TEAM_WORLD", "shmem_team_t", 1),
    ("SHMEM_TEAM_SHARED", "shmem_team_t", 2),
    ("SHMEMX_TEAM_NODE", "shmem_team_t", 3),
    ("SHMEM_CTX_INVALID", "shmem_ctx_t", 0),
    ("SHMEM_CTX_DEFAULT", "shmem_ctx_t", 1),
];

/// C text the header carries as is (after the declarations): what has no
/// Rust form.
pub const EXTRA_C: &str = "\
/* shmem_pcontrol: the profiling control. No profiling interface: calls are
 * ignored; the symbol exists for code that takes its address. */
void shmem_pcontrol(const int level, ...);
#define shmem_pcontrol(...) ((void)0)

#ifndef __cplusplus
/* shmem_sync: the team form (1 argument, shmem_team_sync) and the
 * deprecated active-set form (4 arguments). */
#define VKSHMEM_SYNC_PICK(a1, a2, a3, a4, name, ...) name
#define shmem_sync(...) VKSHMEM_SYNC_PICK(__VA_ARGS__, (shmem_sync), \\
    vkshmem_sync_takes_1_or_4_arguments, vkshmem_sync_takes_1_or_4_arguments, \\
    shmem_team_sync, 0)(__VA_ARGS__)
#endif
";

/// C text the header carries after the declarations and before the static
/// inline functions that use it: the `long double` combine functions.
pub const PRELUDE_C: &str = "\
static inline void vkshmem_ld_sum(void *a, const void *x, size_t n) {
    long double *p = (long double *)a; const long double *q = (const long double *)x;
    for (size_t i = 0; i < n; i++) p[i] += q[i];
}
static inline void vkshmem_ld_prod(void *a, const void *x, size_t n) {
    long double *p = (long double *)a; const long double *q = (const long double *)x;
    for (size_t i = 0; i < n; i++) p[i] *= q[i];
}
static inline void vkshmem_ld_max(void *a, const void *x, size_t n) {
    long double *p = (long double *)a; const long double *q = (const long double *)x;
    for (size_t i = 0; i < n; i++) if (q[i] > p[i]) p[i] = q[i];
}
static inline void vkshmem_ld_min(void *a, const void *x, size_t n) {
    long double *p = (long double *)a; const long double *q = (const long double *)x;
    for (size_t i = 0; i < n; i++) if (q[i] < p[i]) p[i] = q[i];
}
";

/// C11 generic macros that are other names of generic macros: the
/// deprecated AMO names, over every type of their new names.
pub const GENERIC_ALIASES: &[(&str, &str)] = &[
    ("shmem_fadd", "shmem_atomic_fetch_add"),
    ("shmem_finc", "shmem_atomic_fetch_inc"),
    ("shmem_add", "shmem_atomic_add"),
    ("shmem_inc", "shmem_atomic_inc"),
    ("shmem_cswap", "shmem_atomic_compare_swap"),
    ("shmem_swap", "shmem_atomic_swap"),
    ("shmem_fetch", "shmem_atomic_fetch"),
    ("shmem_set", "shmem_atomic_set"),
];

/// Every function of the API.
pub const API: &[Api] = &[
    // Library setup and queries.
    one("void shmem_init(void)", "crate::setup::init(\"shmem_init\")"),
    one("int shmem_init_thread(int requested, int *provided)", "crate::setup::init_thread(requested, provided)"),
    one("void shmem_query_thread(int *provided)", "crate::setup::query_thread(provided)"),
    one("void shmem_finalize(void)", "crate::setup::finalize()"),
    one("void shmem_global_exit(int status)", "crate::setup::global_exit(status)"),
    one("int shmem_my_pe(void)", "crate::setup::my_pe({F})"),
    one("int shmem_n_pes(void)", "crate::setup::n_pes({F})"),
    one("void start_pes(int npes)", "{ let _ = npes; crate::setup::init(\"start_pes\") }"),
    one("int _my_pe(void)", "crate::setup::my_pe({F})"),
    one("int _num_pes(void)", "crate::setup::n_pes({F})"),
    one("int shmem_pe_accessible(int pe)", "crate::setup::pe_accessible(pe)"),
    one("int shmem_addr_accessible(const void *addr, int pe)", "crate::setup::addr_accessible(addr, pe)"),
    one("void *shmem_ptr(const void *dest, int pe)", "crate::setup::ptr(dest, pe)"),
    one("void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)", "crate::setup::team_ptr(team, dest, pe)"),
    one("void shmem_info_get_version(int *major, int *minor)", "crate::setup::version(major, minor)"),
    one("void shmem_info_get_name(char *name)", "crate::setup::name(name)"),
    // Symmetric heap.
    one("void *shmem_malloc(size_t size)", "crate::heap::alloc({F}, size, 0, false)"),
    one("void *shmem_malloc_with_hints(size_t size, long hints)", "{ let _ = hints; crate::heap::alloc({F}, size, 0, false) }"),
    one("void *shmem_calloc(size_t count, size_t size)", "crate::heap::calloc(count, size)"),
    one("void *shmem_align(size_t alignment, size_t size)", "crate::heap::alloc({F}, size, alignment, false)"),
    one("void *shmem_realloc(void *ptr, size_t size)", "crate::heap::realloc(ptr, size)"),
    one("void shmem_free(void *ptr)", "crate::heap::free(ptr)"),
    one("void *shmalloc(size_t size)", "crate::heap::alloc({F}, size, 0, false)"),
    one("void *shmemalign(size_t alignment, size_t size)", "crate::heap::alloc({F}, size, alignment, false)"),
    one("void *shrealloc(void *ptr, size_t size)", "crate::heap::realloc(ptr, size)"),
    one("void shfree(void *ptr)", "crate::heap::free(ptr)"),
    // Teams.
    one("int shmem_team_my_pe(shmem_team_t team)", "crate::team::my_pe(team)"),
    one("int shmem_team_n_pes(shmem_team_t team)", "crate::team::n_pes(team)"),
    one("int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)", "crate::team::get_config(team, config_mask, config)"),
    one("int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)", "crate::team::translate(src_team, src_pe, dest_team)"),
    one("int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size, const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team)", "crate::team::split_strided(parent_team, start, stride, size, config, config_mask, new_team)"),
    one("int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team)", "crate::team::split_2d(parent_team, xrange, xaxis_config, xaxis_mask, xaxis_team, yaxis_config, yaxis_mask, yaxis_team)"),
    one("void shmem_team_destroy(shmem_team_t team)", "crate::team::destroy(team)"),
    one("int shmem_team_sync(shmem_team_t team)", "crate::team::sync(team)"),
    // Contexts.
    one("int shmem_ctx_create(long options, shmem_ctx_t *ctx)", "crate::team::ctx_create(crate::SHMEM_TEAM_WORLD, options, ctx)"),
    one("int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)", "crate::team::ctx_create(team, options, ctx)"),
    one("void shmem_ctx_destroy(shmem_ctx_t ctx)", "crate::team::ctx_destroy(ctx)"),
    one("int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)", "crate::team::ctx_get_team(ctx, team)"),
    // Memory ordering and synchronization.
    ctx1("void shmem_fence(void)", "crate::rma::fence({F}, ctx)"),
    ctx1("void shmem_quiet(void)", "crate::rma::quiet({F}, ctx)"),
    one("void shmem_barrier_all(void)", "crate::coll::barrier_all({F})"),
    one("void shmem_sync_all(void)", "crate::coll::sync_all({F})"),
    one("void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)", "crate::coll::barrier_active({F}, PE_start, logPE_stride, PE_size, pSync, true)"),
    one("void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync)", "crate::coll::barrier_active({F}, PE_start, logPE_stride, PE_size, pSync, false)"),
    // RMA.
    fam_ctx(RMA, "shmem_put", 0, "void shmem_{N}_put(TYPE *dest, const TYPE *source, size_t nelems, int pe)", "crate::rma::put::<{R}>({F}, ctx, dest, source, nelems, pe)"),
    fam_ctx(RMA, "shmem_put_nbi", 0, "void shmem_{N}_put_nbi(TYPE *dest, const TYPE *source, size_t nelems, int pe)", "crate::rma::put::<{R}>({F}, ctx, dest, source, nelems, pe)"),
    fam_ctx(RMA, "shmem_get", 0, "void shmem_{N}_get(TYPE *dest, const TYPE *source, size_t nelems, int pe)", "crate::rma::get::<{R}>({F}, ctx, dest, source, nelems, pe)"),
    fam_ctx(RMA, "shmem_get_nbi", 0, "void shmem_{N}_get_nbi(TYPE *dest, const TYPE *source, size_t nelems, int pe)", "crate::rma::get::<{R}>({F}, ctx, dest, source, nelems, pe)"),
    Api {
        inline_ld: Some("{ shmem_{CTX}longdouble_put({CTXA}dest, &value, 1, pe); }"),
        ..fam_ctx(RMA, "shmem_p", 0, "void shmem_{N}_p(TYPE *dest, TYPE value, int pe)", "crate::rma::put::<{R}>({F}, ctx, dest, &value, 1, pe)")
    },
    Api {
        inline_ld: Some("{ long double v; shmem_{CTX}longdouble_get({CTXA}&v, source, 1, pe); return v; }"),
        ..fam_ctx(RMA, "shmem_g", 0, "TYPE shmem_{N}_g(const TYPE *source, int pe)", "crate::rma::g::<{R}>({F}, ctx, source, pe)")
    },
    fam_ctx(RMA, "shmem_iput", 0, "void shmem_{N}_iput(TYPE *dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)", "crate::rma::iput::<{R}>({F}, ctx, dest, source, dst, sst, nelems, pe)"),
    fam_ctx(RMA, "shmem_iget", 0, "void shmem_{N}_iget(TYPE *dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)", "crate::rma::iget::<{R}>({F}, ctx, dest, source, dst, sst, nelems, pe)"),
    Api { types: Some(SIZED), ctx: true, generic: None, inline_ld: None, proto: "void shmem_put{N}(void *dest, const void *source, size_t nelems, int pe)", body: "crate::rma::put::<{R}>({F}, ctx, dest.cast(), source.cast(), nelems, pe)" },
    Api { types: Some(SIZED), ctx: true, generic: None, inline_ld: None, proto: "void shmem_put{N}_nbi(void *dest, const void *source, size_t nelems, int pe)", body: "crate::rma::put::<{R}>({F}, ctx, dest.cast(), source.cast(), nelems, pe)" },
    Api { types: Some(SIZED), ctx: true, generic: None, inline_ld: None, proto: "void shmem_get{N}(void *dest, const void *source, size_t nelems, int pe)", body: "crate::rma::get::<{R}>({F}, ctx, dest.cast(), source.cast(), nelems, pe)" },
    Api { types: Some(SIZED), ctx: true, generic: None, inline_ld: None, proto: "void shmem_get{N}_nbi(void *dest, const void *source, size_t nelems, int pe)", body: "crate::rma::get::<{R}>({F}, ctx, dest.cast(), source.cast(), nelems, pe)" },
    Api { types: Some(SIZED), ctx: true, generic: None, inline_ld: None, proto: "void shmem_iput{N}(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)", body: "crate::rma::iput::<{R}>({F}, ctx, dest.cast(), source.cast(), dst, sst, nelems, pe)" },
    Api { types: Some(SIZED), ctx: true, generic: None, inline_ld: None, proto: "void shmem_iget{N}(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)", body: "crate::rma::iget::<{R}>({F}, ctx, dest.cast(), source.cast(), dst, sst, nelems, pe)" },
    ctx1("void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)", "crate::rma::put::<u8>({F}, ctx, dest.cast(), source.cast(), nelems, pe)"),
    ctx1("void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe)", "crate::rma::put::<u8>({F}, ctx, dest.cast(), source.cast(), nelems, pe)"),
    ctx1("void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)", "crate::rma::get::<u8>({F}, ctx, dest.cast(), source.cast(), nelems, pe)"),
    ctx1("void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe)", "crate::rma::get::<u8>({F}, ctx, dest.cast(), source.cast(), nelems, pe)"),
    // Signals.
    fam_ctx(RMA, "shmem_put_signal", 0, "void shmem_{N}_put_signal(TYPE *dest, const TYPE *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)", "crate::rma::put_signal::<{R}>({F}, ctx, dest, source, nelems, sig_addr, signal, sig_op, pe)"),
    fam_ctx(RMA, "shmem_put_signal_nbi", 0, "void shmem_{N}_put_signal_nbi(TYPE *dest, const TYPE *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)", "crate::rma::put_signal::<{R}>({F}, ctx, dest, source, nelems, sig_addr, signal, sig_op, pe)"),
    Api { types: Some(SIZED), ctx: true, generic: None, inline_ld: None, proto: "void shmem_put{N}_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)", body: "crate::rma::put_signal::<{R}>({F}, ctx, dest.cast(), source.cast(), nelems, sig_addr, signal, sig_op, pe)" },
    Api { types: Some(SIZED), ctx: true, generic: None, inline_ld: None, proto: "void shmem_put{N}_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)", body: "crate::rma::put_signal::<{R}>({F}, ctx, dest.cast(), source.cast(), nelems, sig_addr, signal, sig_op, pe)" },
    ctx1("void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)", "crate::rma::put_signal::<u8>({F}, ctx, dest.cast(), source.cast(), nelems, sig_addr, signal, sig_op, pe)"),
    ctx1("void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)", "crate::rma::put_signal::<u8>({F}, ctx, dest.cast(), source.cast(), nelems, sig_addr, signal, sig_op, pe)"),
    one("uint64_t shmem_signal_fetch(const uint64_t *sig_addr)", "crate::wait::signal_fetch({F}, sig_addr)"),
    one("uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)", "crate::wait::signal_wait_until({F}, sig_addr, cmp, cmp_value)"),
    // Atomics.
    fam_ctx(AMO_EXT, "shmem_atomic_fetch", 0, "TYPE shmem_{N}_atomic_fetch(const TYPE *source, int pe)", "crate::amo::fetch::<{R}>({F}, ctx, source, pe)"),
    fam_ctx(AMO_EXT, "shmem_atomic_set", 0, "void shmem_{N}_atomic_set(TYPE *dest, TYPE value, int pe)", "crate::amo::set::<{R}>({F}, ctx, dest, value, pe)"),
    fam_ctx(AMO_EXT, "shmem_atomic_swap", 0, "TYPE shmem_{N}_atomic_swap(TYPE *dest, TYPE value, int pe)", "crate::amo::swap::<{R}>({F}, ctx, dest, value, pe)"),
    fam_ctx(AMO_STD, "shmem_atomic_compare_swap", 0, "TYPE shmem_{N}_atomic_compare_swap(TYPE *dest, TYPE cond, TYPE value, int pe)", "crate::amo::compare_swap::<{R}>({F}, ctx, dest, cond, value, pe)"),
    fam_ctx(AMO_STD, "shmem_atomic_fetch_inc", 0, "TYPE shmem_{N}_atomic_fetch_inc(TYPE *dest, int pe)", "crate::amo::fetch_add::<{R}>({F}, ctx, dest, crate::amo::one(), pe)"),
    fam_ctx(AMO_STD, "shmem_atomic_inc", 0, "void shmem_{N}_atomic_inc(TYPE *dest, int pe)", "{ crate::amo::fetch_add::<{R}>({F}, ctx, dest, crate::amo::one(), pe); }"),
    fam_ctx(AMO_STD, "shmem_atomic_fetch_add", 0, "TYPE shmem_{N}_atomic_fetch_add(TYPE *dest, TYPE value, int pe)", "crate::amo::fetch_add::<{R}>({F}, ctx, dest, value, pe)"),
    fam_ctx(AMO_STD, "shmem_atomic_add", 0, "void shmem_{N}_atomic_add(TYPE *dest, TYPE value, int pe)", "{ crate::amo::fetch_add::<{R}>({F}, ctx, dest, value, pe); }"),
    fam_ctx(AMO_BIT, "shmem_atomic_fetch_and", 0, "TYPE shmem_{N}_atomic_fetch_and(TYPE *dest, TYPE value, int pe)", "crate::amo::bitwise::<{R}>({F}, ctx, dest, value, pe, crate::amo::Bit::And)"),
    fam_ctx(AMO_BIT, "shmem_atomic_and", 0, "void shmem_{N}_atomic_and(TYPE *dest, TYPE value, int pe)", "{ crate::amo::bitwise::<{R}>({F}, ctx, dest, value, pe, crate::amo::Bit::And); }"),
    fam_ctx(AMO_BIT, "shmem_atomic_fetch_or", 0, "TYPE shmem_{N}_atomic_fetch_or(TYPE *dest, TYPE value, int pe)", "crate::amo::bitwise::<{R}>({F}, ctx, dest, value, pe, crate::amo::Bit::Or)"),
    fam_ctx(AMO_BIT, "shmem_atomic_or", 0, "void shmem_{N}_atomic_or(TYPE *dest, TYPE value, int pe)", "{ crate::amo::bitwise::<{R}>({F}, ctx, dest, value, pe, crate::amo::Bit::Or); }"),
    fam_ctx(AMO_BIT, "shmem_atomic_fetch_xor", 0, "TYPE shmem_{N}_atomic_fetch_xor(TYPE *dest, TYPE value, int pe)", "crate::amo::bitwise::<{R}>({F}, ctx, dest, value, pe, crate::amo::Bit::Xor)"),
    fam_ctx(AMO_BIT, "shmem_atomic_xor", 0, "void shmem_{N}_atomic_xor(TYPE *dest, TYPE value, int pe)", "{ crate::amo::bitwise::<{R}>({F}, ctx, dest, value, pe, crate::amo::Bit::Xor); }"),
    fam_ctx(AMO_EXT, "shmem_atomic_fetch_nbi", 0, "void shmem_{N}_atomic_fetch_nbi(TYPE *fetch, const TYPE *source, int pe)", "crate::amo::nbi(fetch, crate::amo::fetch::<{R}>({F}, ctx, source, pe))"),
    fam_ctx(AMO_EXT, "shmem_atomic_swap_nbi", 0, "void shmem_{N}_atomic_swap_nbi(TYPE *fetch, TYPE *dest, TYPE value, int pe)", "crate::amo::nbi(fetch, crate::amo::swap::<{R}>({F}, ctx, dest, value, pe))"),
    fam_ctx(AMO_STD, "shmem_atomic_compare_swap_nbi", 0, "void shmem_{N}_atomic_compare_swap_nbi(TYPE *fetch, TYPE *dest, TYPE cond, TYPE value, int pe)", "crate::amo::nbi(fetch, crate::amo::compare_swap::<{R}>({F}, ctx, dest, cond, value, pe))"),
    fam_ctx(AMO_STD, "shmem_atomic_fetch_inc_nbi", 0, "void shmem_{N}_atomic_fetch_inc_nbi(TYPE *fetch, TYPE *dest, int pe)", "crate::amo::nbi(fetch, crate::amo::fetch_add::<{R}>({F}, ctx, dest, crate::amo::one(), pe))"),
    fam_ctx(AMO_STD, "shmem_atomic_fetch_add_nbi", 0, "void shmem_{N}_atomic_fetch_add_nbi(TYPE *fetch, TYPE *dest, TYPE value, int pe)", "crate::amo::nbi(fetch, crate::amo::fetch_add::<{R}>({F}, ctx, dest, value, pe))"),
    fam_ctx(AMO_BIT, "shmem_atomic_fetch_and_nbi", 0, "void shmem_{N}_atomic_fetch_and_nbi(TYPE *fetch, TYPE *dest, TYPE value, int pe)", "crate::amo::nbi(fetch, crate::amo::bitwise::<{R}>({F}, ctx, dest, value, pe, crate::amo::Bit::And))"),
    fam_ctx(AMO_BIT, "shmem_atomic_fetch_or_nbi", 0, "void shmem_{N}_atomic_fetch_or_nbi(TYPE *fetch, TYPE *dest, TYPE value, int pe)", "crate::amo::nbi(fetch, crate::amo::bitwise::<{R}>({F}, ctx, dest, value, pe, crate::amo::Bit::Or))"),
    fam_ctx(AMO_BIT, "shmem_atomic_fetch_xor_nbi", 0, "void shmem_{N}_atomic_fetch_xor_nbi(TYPE *fetch, TYPE *dest, TYPE value, int pe)", "crate::amo::nbi(fetch, crate::amo::bitwise::<{R}>({F}, ctx, dest, value, pe, crate::amo::Bit::Xor))"),
    // Point-to-point synchronization.
    fam_gen(SYNC, "shmem_wait_until", 0, "void shmem_{N}_wait_until(TYPE *ivar, int cmp, TYPE cmp_value)", "{ crate::wait::wait_until::<{R}>({F}, ivar, cmp, cmp_value); }"),
    fam_gen(SYNC, "shmem_wait", 0, "void shmem_{N}_wait(TYPE *ivar, TYPE cmp_value)", "{ crate::wait::wait_until::<{R}>({F}, ivar, crate::wait::CMP_NE, cmp_value); }"),
    fam_gen(SYNC, "shmem_test", 0, "int shmem_{N}_test(TYPE *ivar, int cmp, TYPE cmp_value)", "crate::wait::test::<{R}>({F}, ivar, cmp, cmp_value)"),
    fam_gen(SYNC, "shmem_wait_until_all", 0, "void shmem_{N}_wait_until_all(TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value)", "{ crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::One(cmp_value), crate::wait::How::All, core::ptr::null_mut(), true); }"),
    fam_gen(SYNC, "shmem_wait_until_any", 0, "size_t shmem_{N}_wait_until_any(TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value)", "crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::One(cmp_value), crate::wait::How::Any, core::ptr::null_mut(), true)"),
    fam_gen(SYNC, "shmem_wait_until_some", 0, "size_t shmem_{N}_wait_until_some(TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE cmp_value)", "crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::One(cmp_value), crate::wait::How::Some, indices, true)"),
    fam_gen(SYNC, "shmem_wait_until_all_vector", 0, "void shmem_{N}_wait_until_all_vector(TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values)", "{ crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::Each(cmp_values), crate::wait::How::All, core::ptr::null_mut(), true); }"),
    fam_gen(SYNC, "shmem_wait_until_any_vector", 0, "size_t shmem_{N}_wait_until_any_vector(TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values)", "crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::Each(cmp_values), crate::wait::How::Any, core::ptr::null_mut(), true)"),
    fam_gen(SYNC, "shmem_wait_until_some_vector", 0, "size_t shmem_{N}_wait_until_some_vector(TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE *cmp_values)", "crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::Each(cmp_values), crate::wait::How::Some, indices, true)"),
    fam_gen(SYNC, "shmem_test_all", 0, "int shmem_{N}_test_all(TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value)", "crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::One(cmp_value), crate::wait::How::All, core::ptr::null_mut(), false) as i32"),
    fam_gen(SYNC, "shmem_test_any", 0, "size_t shmem_{N}_test_any(TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value)", "crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::One(cmp_value), crate::wait::How::Any, core::ptr::null_mut(), false)"),
    fam_gen(SYNC, "shmem_test_some", 0, "size_t shmem_{N}_test_some(TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE cmp_value)", "crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::One(cmp_value), crate::wait::How::Some, indices, false)"),
    fam_gen(SYNC, "shmem_test_all_vector", 0, "int shmem_{N}_test_all_vector(TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values)", "crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::Each(cmp_values), crate::wait::How::All, core::ptr::null_mut(), false) as i32"),
    fam_gen(SYNC, "shmem_test_any_vector", 0, "size_t shmem_{N}_test_any_vector(TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values)", "crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::Each(cmp_values), crate::wait::How::Any, core::ptr::null_mut(), false)"),
    fam_gen(SYNC, "shmem_test_some_vector", 0, "size_t shmem_{N}_test_some_vector(TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE *cmp_values)", "crate::wait::many::<{R}>({F}, ivars, nelems, status, cmp, crate::wait::Vals::Each(cmp_values), crate::wait::How::Some, indices, false)"),
    one("void shmem_wait(long *ivar, long cmp_value)", "{ crate::wait::wait_until::<i64>({F}, ivar, crate::wait::CMP_NE, cmp_value); }"),
    one("void shmem_wait_until(long *ivar, int cmp, long cmp_value)", "{ crate::wait::wait_until::<i64>({F}, ivar, cmp, cmp_value); }"),
    // Deprecated atomics (still in 1.5's C bindings).
    fam(DEP_AMO, "TYPE shmem_{N}_fadd(TYPE *dest, TYPE value, int pe)", "crate::amo::fetch_add::<{R}>({F}, crate::SHMEM_CTX_DEFAULT, dest, value, pe)"),
    fam(DEP_AMO, "TYPE shmem_{N}_finc(TYPE *dest, int pe)", "crate::amo::fetch_add::<{R}>({F}, crate::SHMEM_CTX_DEFAULT, dest, crate::amo::one(), pe)"),
    fam(DEP_AMO, "void shmem_{N}_add(TYPE *dest, TYPE value, int pe)", "{ crate::amo::fetch_add::<{R}>({F}, crate::SHMEM_CTX_DEFAULT, dest, value, pe); }"),
    fam(DEP_AMO, "void shmem_{N}_inc(TYPE *dest, int pe)", "{ crate::amo::fetch_add::<{R}>({F}, crate::SHMEM_CTX_DEFAULT, dest, crate::amo::one(), pe); }"),
    fam(DEP_AMO, "TYPE shmem_{N}_cswap(TYPE *dest, TYPE cond, TYPE value, int pe)", "crate::amo::compare_swap::<{R}>({F}, crate::SHMEM_CTX_DEFAULT, dest, cond, value, pe)"),
    fam(DEP_AMO_EXT, "TYPE shmem_{N}_swap(TYPE *dest, TYPE value, int pe)", "crate::amo::swap::<{R}>({F}, crate::SHMEM_CTX_DEFAULT, dest, value, pe)"),
    fam(DEP_AMO_EXT, "TYPE shmem_{N}_fetch(const TYPE *source, int pe)", "crate::amo::fetch::<{R}>({F}, crate::SHMEM_CTX_DEFAULT, source, pe)"),
    fam(DEP_AMO_EXT, "void shmem_{N}_set(TYPE *dest, TYPE value, int pe)", "crate::amo::set::<{R}>({F}, crate::SHMEM_CTX_DEFAULT, dest, value, pe)"),
    one("long shmem_swap(long *dest, long value, int pe)", "crate::amo::swap::<i64>({F}, crate::SHMEM_CTX_DEFAULT, dest, value, pe)"),
    // Locks.
    one("void shmem_set_lock(long *lock)", "crate::lock::set(lock)"),
    one("void shmem_clear_lock(long *lock)", "crate::lock::clear(lock)"),
    one("int shmem_test_lock(long *lock)", "crate::lock::test(lock)"),
    // Team collectives.
    fam_gen(RMA, "shmem_broadcast", 1, "int shmem_{N}_broadcast(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems, int PE_root)", "crate::coll::broadcast::<{R}>({F}, crate::coll::On::Team(team), dest, source, nelems, PE_root)"),
    one("int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root)", "crate::coll::broadcast::<u8>({F}, crate::coll::On::Team(team), dest.cast(), source.cast(), nelems, PE_root)"),
    fam_gen(RMA, "shmem_collect", 1, "int shmem_{N}_collect(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems)", "crate::coll::collect::<{R}>({F}, crate::coll::On::Team(team), dest, source, nelems, false)"),
    one("int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)", "crate::coll::collect::<u8>({F}, crate::coll::On::Team(team), dest.cast(), source.cast(), nelems, false)"),
    fam_gen(RMA, "shmem_fcollect", 1, "int shmem_{N}_fcollect(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems)", "crate::coll::collect::<{R}>({F}, crate::coll::On::Team(team), dest, source, nelems, true)"),
    one("int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)", "crate::coll::collect::<u8>({F}, crate::coll::On::Team(team), dest.cast(), source.cast(), nelems, true)"),
    fam_gen(RMA, "shmem_alltoall", 1, "int shmem_{N}_alltoall(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nelems)", "crate::coll::alltoalls::<{R}>({F}, crate::coll::On::Team(team), dest, source, 1, 1, nelems)"),
    one("int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems)", "crate::coll::alltoalls::<u8>({F}, crate::coll::On::Team(team), dest.cast(), source.cast(), 1, 1, nelems)"),
    fam_gen(RMA, "shmem_alltoalls", 1, "int shmem_{N}_alltoalls(shmem_team_t team, TYPE *dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems)", "crate::coll::alltoalls::<{R}>({F}, crate::coll::On::Team(team), dest, source, dst, sst, nelems)"),
    one("int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems)", "crate::coll::alltoalls::<u8>({F}, crate::coll::On::Team(team), dest.cast(), source.cast(), dst, sst, nelems)"),
    fam_gen(RED_BIT, "shmem_and_reduce", 1, "int shmem_{N}_and_reduce(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce)", "crate::coll::reduce::<{R}>({F}, crate::coll::On::Team(team), vkshmem_host::ReduceOp::And, dest, source, nreduce)"),
    fam_gen(RED_BIT, "shmem_or_reduce", 1, "int shmem_{N}_or_reduce(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce)", "crate::coll::reduce::<{R}>({F}, crate::coll::On::Team(team), vkshmem_host::ReduceOp::Or, dest, source, nreduce)"),
    fam_gen(RED_BIT, "shmem_xor_reduce", 1, "int shmem_{N}_xor_reduce(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce)", "crate::coll::reduce::<{R}>({F}, crate::coll::On::Team(team), vkshmem_host::ReduceOp::Xor, dest, source, nreduce)"),
    Api {
        inline_ld: Some("{ return vkshmemx_reduce_bytes(team, 0, 0, 0, NULL, dest, source, nreduce, sizeof(long double), vkshmem_ld_max); }"),
        ..fam_gen(RED_CMP, "shmem_max_reduce", 1, "int shmem_{N}_max_reduce(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce)", "crate::coll::reduce::<{R}>({F}, crate::coll::On::Team(team), vkshmem_host::ReduceOp::Max, dest, source, nreduce)")
    },
    Api {
        inline_ld: Some("{ return vkshmemx_reduce_bytes(team, 0, 0, 0, NULL, dest, source, nreduce, sizeof(long double), vkshmem_ld_min); }"),
        ..fam_gen(RED_CMP, "shmem_min_reduce", 1, "int shmem_{N}_min_reduce(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce)", "crate::coll::reduce::<{R}>({F}, crate::coll::On::Team(team), vkshmem_host::ReduceOp::Min, dest, source, nreduce)")
    },
    Api {
        inline_ld: Some("{ return vkshmemx_reduce_bytes(team, 0, 0, 0, NULL, dest, source, nreduce, sizeof(long double), vkshmem_ld_sum); }"),
        ..fam_gen(RED_CMP, "shmem_sum_reduce", 1, "int shmem_{N}_sum_reduce(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce)", "crate::coll::reduce::<{R}>({F}, crate::coll::On::Team(team), vkshmem_host::ReduceOp::Sum, dest, source, nreduce)")
    },
    Api {
        inline_ld: Some("{ return vkshmemx_reduce_bytes(team, 0, 0, 0, NULL, dest, source, nreduce, sizeof(long double), vkshmem_ld_prod); }"),
        ..fam_gen(RED_CMP, "shmem_prod_reduce", 1, "int shmem_{N}_prod_reduce(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce)", "crate::coll::reduce::<{R}>({F}, crate::coll::On::Team(team), vkshmem_host::ReduceOp::Prod, dest, source, nreduce)")
    },
    fam_gen(RED_COMPLEX, "shmem_sum_reduce", 1, "int shmem_{N}_sum_reduce(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce)", "crate::coll::reduce::<{R}>({F}, crate::coll::On::Team(team), vkshmem_host::ReduceOp::Sum, dest, source, nreduce)"),
    fam_gen(RED_COMPLEX, "shmem_prod_reduce", 1, "int shmem_{N}_prod_reduce(shmem_team_t team, TYPE *dest, const TYPE *source, size_t nreduce)", "crate::coll::reduce::<{R}>({F}, crate::coll::On::Team(team), vkshmem_host::ReduceOp::Prod, dest, source, nreduce)"),
    // Reductions of types Rust cannot compute (long double): the combine
    // function comes from the header (compiled by the program's compiler).
    one("int vkshmemx_reduce_bytes(shmem_team_t team, int PE_start, int logPE_stride, int PE_size, long *pSync, void *dest, const void *source, size_t nreduce, size_t elem_size, vkshmem_combine_fn combine)", "crate::coll::reduce_bytes(team, PE_start, logPE_stride, PE_size, pSync, dest, source, nreduce, elem_size, combine)"),
    // Active-set collectives (deprecated in 1.5, still in use).
    one("void shmem_broadcast32(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync)", "{ crate::coll::broadcast::<u32>({F}, crate::coll::On::Set(PE_start, logPE_stride, PE_size, pSync), dest.cast(), source.cast(), nelems, PE_root); }"),
    one("void shmem_broadcast64(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync)", "{ crate::coll::broadcast::<u64>({F}, crate::coll::On::Set(PE_start, logPE_stride, PE_size, pSync), dest.cast(), source.cast(), nelems, PE_root); }"),
    one("void shmem_collect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)", "{ crate::coll::collect::<u32>({F}, crate::coll::On::Set(PE_start, logPE_stride, PE_size, pSync), dest.cast(), source.cast(), nelems, false); }"),
    one("void shmem_collect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)", "{ crate::coll::collect::<u64>({F}, crate::coll::On::Set(PE_start, logPE_stride, PE_size, pSync), dest.cast(), source.cast(), nelems, false); }"),
    one("void shmem_fcollect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)", "{ crate::coll::collect::<u32>({F}, crate::coll::On::Set(PE_start, logPE_stride, PE_size, pSync), dest.cast(), source.cast(), nelems, true); }"),
    one("void shmem_fcollect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)", "{ crate::coll::collect::<u64>({F}, crate::coll::On::Set(PE_start, logPE_stride, PE_size, pSync), dest.cast(), source.cast(), nelems, true); }"),
    one("void shmem_alltoall32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)", "{ crate::coll::alltoalls::<u32>({F}, crate::coll::On::Set(PE_start, logPE_stride, PE_size, pSync), dest.cast(), source.cast(), 1, 1, nelems); }"),
    one("void shmem_alltoall64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)", "{ crate::coll::alltoalls::<u64>({F}, crate::coll::On::Set(PE_start, logPE_stride, PE_size, pSync), dest.cast(), source.cast(), 1, 1, nelems); }"),
    one("void shmem_alltoalls32(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)", "{ crate::coll::alltoalls::<u32>({F}, crate::coll::On::Set(PE_start, logPE_stride, PE_size, pSync), dest.cast(), source.cast(), dst, sst, nelems); }"),
    one("void shmem_alltoalls64(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)", "{ crate::coll::alltoalls::<u64>({F}, crate::coll::On::Set(PE_start, logPE_stride, PE_size, pSync), dest.cast(), source.cast(), dst, sst, nelems); }"),
    fam(TOALL_BIT, "void shmem_{N}_and_to_all(TYPE *dest, const TYPE *source, int nreduce, int PE_start, int logPE_stride, int PE_size, TYPE *pWrk, long *pSync)", "{ crate::coll::to_all::<{R}>({F}, vkshmem_host::ReduceOp::And, dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync); }"),
    fam(TOALL_BIT, "void shmem_{N}_or_to_all(TYPE *dest, const TYPE *source, int nreduce, int PE_start, int logPE_stride, int PE_size, TYPE *pWrk, long *pSync)", "{ crate::coll::to_all::<{R}>({F}, vkshmem_host::ReduceOp::Or, dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync); }"),
    fam(TOALL_BIT, "void shmem_{N}_xor_to_all(TYPE *dest, const TYPE *source, int nreduce, int PE_start, int logPE_stride, int PE_size, TYPE *pWrk, long *pSync)", "{ crate::coll::to_all::<{R}>({F}, vkshmem_host::ReduceOp::Xor, dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync); }"),
    Api {
        inline_ld: Some("{ (void)pWrk; vkshmemx_reduce_bytes(SHMEM_TEAM_INVALID, PE_start, logPE_stride, PE_size, pSync, dest, source, nreduce < 0 ? (size_t)-1 : (size_t)nreduce, sizeof(long double), vkshmem_ld_max); }"),
        ..fam(TOALL_ARITH, "void shmem_{N}_max_to_all(TYPE *dest, const TYPE *source, int nreduce, int PE_start, int logPE_stride, int PE_size, TYPE *pWrk, long *pSync)", "{ crate::coll::to_all::<{R}>({F}, vkshmem_host::ReduceOp::Max, dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync); }")
    },
    Api {
        inline_ld: Some("{ (void)pWrk; vkshmemx_reduce_bytes(SHMEM_TEAM_INVALID, PE_start, logPE_stride, PE_size, pSync, dest, source, nreduce < 0 ? (size_t)-1 : (size_t)nreduce, sizeof(long double), vkshmem_ld_min); }"),
        ..fam(TOALL_ARITH, "void shmem_{N}_min_to_all(TYPE *dest, const TYPE *source, int nreduce, int PE_start, int logPE_stride, int PE_size, TYPE *pWrk, long *pSync)", "{ crate::coll::to_all::<{R}>({F}, vkshmem_host::ReduceOp::Min, dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync); }")
    },
    Api {
        inline_ld: Some("{ (void)pWrk; vkshmemx_reduce_bytes(SHMEM_TEAM_INVALID, PE_start, logPE_stride, PE_size, pSync, dest, source, nreduce < 0 ? (size_t)-1 : (size_t)nreduce, sizeof(long double), vkshmem_ld_sum); }"),
        ..fam(TOALL_ARITH, "void shmem_{N}_sum_to_all(TYPE *dest, const TYPE *source, int nreduce, int PE_start, int logPE_stride, int PE_size, TYPE *pWrk, long *pSync)", "{ crate::coll::to_all::<{R}>({F}, vkshmem_host::ReduceOp::Sum, dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync); }")
    },
    Api {
        inline_ld: Some("{ (void)pWrk; vkshmemx_reduce_bytes(SHMEM_TEAM_INVALID, PE_start, logPE_stride, PE_size, pSync, dest, source, nreduce < 0 ? (size_t)-1 : (size_t)nreduce, sizeof(long double), vkshmem_ld_prod); }"),
        ..fam(TOALL_ARITH, "void shmem_{N}_prod_to_all(TYPE *dest, const TYPE *source, int nreduce, int PE_start, int logPE_stride, int PE_size, TYPE *pWrk, long *pSync)", "{ crate::coll::to_all::<{R}>({F}, vkshmem_host::ReduceOp::Prod, dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync); }")
    },
    fam(TOALL_COMPLEX, "void shmem_{N}_sum_to_all(TYPE *dest, const TYPE *source, int nreduce, int PE_start, int logPE_stride, int PE_size, TYPE *pWrk, long *pSync)", "{ crate::coll::to_all::<{R}>({F}, vkshmem_host::ReduceOp::Sum, dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync); }"),
    fam(TOALL_COMPLEX, "void shmem_{N}_prod_to_all(TYPE *dest, const TYPE *source, int nreduce, int PE_start, int logPE_stride, int PE_size, TYPE *pWrk, long *pSync)", "{ crate::coll::to_all::<{R}>({F}, vkshmem_host::ReduceOp::Prod, dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync); }"),
];
