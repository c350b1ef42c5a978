//! The machine description put in the JSON and the report.

use serde::Serialize;

/// What the numbers were measured on.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Online CPUs.
    pub cpus: usize,
    /// CPU model name from `/proc/cpuinfo` (`unknown` if absent).
    pub model: String,
    /// Kernel name and release from `uname`.
    pub kernel: String,
    /// CPUs this process may run on (affinity / cgroup limits), which may be fewer than `cpus`.
    pub usable_cpus: usize,
}

/// Describes this machine.
pub fn detect() -> Machine {
    // SAFETY: sysconf has no memory-safety preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
    Machine {
        cpus: if online > 0 { online as usize } else { usable },
        model: cpu_model().unwrap_or_else(|| "unknown".to_string()),
        kernel: kernel(),
        usable_cpus: usable,
    }
}

/// The 1-minute load average (`None` where `/proc/loadavg` is unreadable). Above the CPU count,
/// other work competed with the bench and its numbers are noisy.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        matches!(
            key.trim(),
            "model name" | "Model" | "cpu model" | "Hardware"
        )
        .then(|| value.trim().to_string())
        .filter(|v| !v.is_empty())
    })
}

fn kernel() -> String {
    // SAFETY: uname fills the zeroed struct we pass; its fields are NUL-terminated C strings.
    let uts = unsafe {
        let mut uts: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut uts) != 0 {
            return "unknown".to_string();
        }
        uts
    };
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!("{} {}", field(&uts.sysname), field(&uts.release))
}

#[cfg(test)]
mod tests {
    #[test]
    fn describes_this_machine() {
        let m = super::detect();
        assert!(m.cpus >= 1 && m.usable_cpus >= 1);
        assert!(!m.model.is_empty());
        assert!(m.kernel.starts_with("Linux "), "{}", m.kernel);
        assert!(super::load_average().is_some_and(|l| l >= 0.0));
    }
}
