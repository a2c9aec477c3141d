//! Which Vulkan device a PE takes: pure logic over a list of candidates.

/// What kind of device a candidate is (VkPhysicalDeviceType, simplified).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A discrete GPU.
    Discrete,
    /// An integrated GPU.
    Integrated,
    /// A virtual GPU.
    Virtual,
    /// A CPU implementation (lavapipe).
    Cpu,
    /// Anything else.
    Other,
}

/// One physical device as the selector sees it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Index in `vkEnumeratePhysicalDevices` order.
    pub index: usize,
    /// `deviceName`.
    pub name: String,
    /// Device type.
    pub kind: Kind,
    /// `Err(why)` when the device lacks something vkshmem needs.
    pub usable: Result<(), String>,
}

/// Chooses a device for the PE with node-local number `local_pe`.
///
/// `wanted` is `VKSHMEM_DEVICE`: an index, or a case-insensitive name substring
/// (several matches are shared round-robin). Without it, PEs spread round-robin over
/// the usable GPUs; without GPUs they take the CPU device. Returns the index and a
/// sentence saying why.
pub fn choose(
    cands: &[Candidate],
    wanted: Option<&str>,
    local_pe: u32,
) -> Result<(usize, String), String> {
    let usable: Vec<&Candidate> = cands.iter().filter(|c| c.usable.is_ok()).collect();
    let list = || {
        cands
            .iter()
            .map(|c| match &c.usable {
                Ok(()) => format!("[{}] {}", c.index, c.name),
                Err(why) => format!("[{}] {} (unusable: {why})", c.index, c.name),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let pick = |set: &[&Candidate], what: &str| -> (usize, String) {
        let c = set[local_pe as usize % set.len()];
        (
            c.index,
            format!(
                "{what}: {} of {} (local PE {local_pe} round-robin)",
                (local_pe as usize % set.len()) + 1,
                set.len()
            ),
        )
    };
    if let Some(w) = wanted.map(str::trim).filter(|w| !w.is_empty()) {
        if let Ok(i) = w.parse::<usize>() {
            let c = cands
                .iter()
                .find(|c| c.index == i)
                .ok_or_else(|| format!("VKSHMEM_DEVICE={w}: no device {i}; devices: {}", list()))?;
            c.usable
                .clone()
                .map_err(|why| format!("VKSHMEM_DEVICE={w}: {} is unusable: {why}", c.name))?;
            return Ok((i, format!("VKSHMEM_DEVICE={w} names it")));
        }
        let lw = w.to_lowercase();
        let matching: Vec<&Candidate> = usable
            .iter()
            .copied()
            .filter(|c| c.name.to_lowercase().contains(&lw))
            .collect();
        if matching.is_empty() {
            return Err(format!(
                "VKSHMEM_DEVICE={w}: no usable device's name contains it; devices: {}",
                list()
            ));
        }
        return Ok(pick(&matching, &format!("VKSHMEM_DEVICE={w} matches")));
    }
    let gpus: Vec<&Candidate> = usable
        .iter()
        .copied()
        .filter(|c| matches!(c.kind, Kind::Discrete | Kind::Integrated | Kind::Virtual))
        .collect();
    if !gpus.is_empty() {
        return Ok(pick(&gpus, "GPU"));
    }
    if let Some(cpu) = usable.iter().find(|c| c.kind == Kind::Cpu) {
        return Ok((cpu.index, "no usable GPU; CPU device".into()));
    }
    if !usable.is_empty() {
        return Ok(pick(&usable, "usable device"));
    }
    Err(format!("no usable Vulkan device; devices: [{}]", list()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(index: usize, name: &str, kind: Kind, ok: bool) -> Candidate {
        Candidate {
            index,
            name: name.into(),
            kind,
            usable: if ok {
                Ok(())
            } else {
                Err("no external memory".into())
            },
        }
    }

    #[test]
    fn round_robin_over_gpus_then_cpu() {
        let devs = [
            c(0, "llvmpipe", Kind::Cpu, true),
            c(1, "NVIDIA H100", Kind::Discrete, true),
            c(2, "NVIDIA H100", Kind::Discrete, true),
            c(3, "Old GPU", Kind::Discrete, false),
        ];
        let got: Vec<usize> = (0..4)
            .map(|pe| choose(&devs, None, pe).unwrap().0)
            .collect();
        assert_eq!(got, [1, 2, 1, 2]);
        assert_eq!(choose(&devs[..1], None, 5).unwrap().0, 0);
        assert_eq!(choose(&devs, Some("llvm"), 3).unwrap().0, 0);
        assert_eq!(choose(&devs, Some("h100"), 1).unwrap().0, 2);
        assert_eq!(choose(&devs, Some("2"), 0).unwrap().0, 2);
        assert!(choose(&devs, Some("3"), 0)
            .unwrap_err()
            .contains("unusable"));
        assert!(choose(&devs, Some("9"), 0).is_err());
        assert!(choose(&devs, Some("radeon"), 0).is_err());
        assert!(choose(&devs[3..], None, 0).is_err());
    }
}
