//! The numbers of a benchmark row (pure): statistics over repetitions and the
//! bandwidths as nccl-tests defines them.

/// Median, minimum and maximum of `samples` (seconds), in microseconds.
pub fn stats_us(samples: &[f64]) -> (f64, f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mut v: Vec<f64> = samples.iter().map(|s| s * 1e6).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    let mid = v.len() / 2;
    let median = if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    };
    (median, v[0], v[v.len() - 1])
}

/// nccl-tests' bus-bandwidth factor of a collective on `n` PEs: allreduce-type
/// reductions 2(n-1)/n; collect, fcollect and alltoall(s) (n-1)/n; broadcast 1;
/// barrier and sync none.
pub fn bus_factor(collective: &str, n: u32) -> Option<f64> {
    let n = n as f64;
    match collective {
        "reduce" => Some(2.0 * (n - 1.0) / n),
        "collect" | "fcollect" | "alltoall" | "alltoalls" => Some((n - 1.0) / n),
        "broadcast" => Some(1.0),
        _ => None,
    }
}

/// The size nccl-tests divides by the time for `collective` on `n` PEs, from
/// the sweep's `bytes` (one PE's source, one block of an alltoall): a PE's
/// whole output for collect and fcollect (nccl-tests' allgather counts the
/// receive buffer), a PE's whole send buffer for alltoall(s), `bytes`
/// otherwise. With it, busbw = size / time x factor is comparable with
/// nccl-tests' and across collectives.
pub fn nccl_bytes(collective: &str, bytes: u64, n: u32) -> u64 {
    match collective {
        "collect" | "fcollect" | "alltoall" | "alltoalls" => bytes * u64::from(n),
        _ => bytes,
    }
}

/// Algorithm bandwidth in GB/s: `bytes` ([`nccl_bytes`]) over `time_us`.
pub fn algbw_gbps(bytes: u64, time_us: f64) -> f64 {
    if time_us <= 0.0 {
        0.0
    } else {
        bytes as f64 / (time_us * 1e3)
    }
}

/// The sizes of a sweep: from `min` to `max` bytes, each `factor` times the last
/// (at least one step), every size rounded down to a multiple of `elem` (and at
/// least one element).
pub fn sizes(min: u64, max: u64, factor: u64, elem: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut b = min.max(elem);
    while b <= max {
        let r = (b / elem).max(1) * elem;
        if out.last() != Some(&r) {
            out.push(r);
        }
        b = b.saturating_mul(factor.max(2));
    }
    out
}

/// Parses a byte count with an optional K, M or G suffix (powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mul) = match s.char_indices().last() {
        Some((i, 'K' | 'k')) => (&s[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&s[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| format!("{s:?} is not a byte count (e.g. 4096, 64K, 1M)"))
}

/// A byte count as [`parse_bytes`] reads it back where it can: the largest
/// of G, M and K (powers of 1024) that divides it, else one decimal of the
/// largest that it reaches (`1.5K`), else the plain number.
pub fn format_bytes(b: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    if let Some((u, s)) = UNITS.iter().find(|(u, _)| b >= *u && b % u == 0) {
        return format!("{}{s}", b / u);
    }
    match UNITS.iter().find(|(u, _)| b >= *u) {
        Some((u, s)) => format!("{:.1}{s}", b as f64 / *u as f64),
        None => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics() {
        assert_eq!(stats_us(&[3e-6, 1e-6, 2e-6]), (2.0, 1.0, 3.0));
        assert_eq!(stats_us(&[4e-6, 1e-6, 2e-6, 3e-6]), (2.5, 1.0, 4.0));
    }

    #[test]
    fn nccl_factors() {
        assert_eq!(bus_factor("reduce", 4), Some(1.5));
        assert_eq!(bus_factor("fcollect", 4), Some(0.75));
        assert_eq!(bus_factor("broadcast", 8), Some(1.0));
        assert_eq!(bus_factor("barrier", 8), None);
        assert!((algbw_gbps(1 << 30, 1e6) - 1.073741824).abs() < 1e-9);
        assert_eq!(nccl_bytes("alltoall", 1 << 20, 4), 4 << 20);
        assert_eq!(nccl_bytes("fcollect", 8, 3), 24);
        assert_eq!(nccl_bytes("reduce", 1 << 20, 4), 1 << 20);
        assert_eq!(nccl_bytes("broadcast", 64, 8), 64);
    }

    #[test]
    fn sweeps_and_sizes() {
        assert_eq!(sizes(4, 64, 2, 4), [4, 8, 16, 32, 64]);
        assert_eq!(sizes(1, 10, 2, 8), [8]);
        assert_eq!(sizes(0, 0, 2, 4), Vec::<u64>::new());
        assert_eq!(parse_bytes("1M"), Ok(1 << 20));
        assert_eq!(parse_bytes("64k"), Ok(65536));
        assert!(parse_bytes("x").is_err());
    }

    #[test]
    fn byte_counts_read_back() {
        assert_eq!(format_bytes(0), "0");
        assert_eq!(format_bytes(1000), "1000");
        assert_eq!(format_bytes(131072), "128K");
        assert_eq!(format_bytes(3 << 20), "3M");
        assert_eq!(format_bytes(1 << 30), "1G");
        assert_eq!(format_bytes(1536), "1.5K");
        assert_eq!(format_bytes((1 << 20) + (1 << 10)), "1025K");
        for b in [8, 4096, 65536, 1 << 20] {
            assert_eq!(parse_bytes(&format_bytes(b)), Ok(b));
        }
    }
}
