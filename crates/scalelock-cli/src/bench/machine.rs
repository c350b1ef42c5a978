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

/// The commit this binary was built from: `git rev-parse HEAD` of its source tree at build time,
/// `-dirty` appended when the sources it was built from differed from that commit, or `unknown`
/// where it was built outside a git checkout (see the crate's build script). It names the code
/// a results file measured, whichever directory the bench runs in.
pub fn commit() -> String {
    env!("SCALELOCK_BUILD_COMMIT").to_string()
}

/// `t` as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_date(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
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

    #[test]
    fn dates_are_utc_calendar_dates() {
        use std::time::{Duration, UNIX_EPOCH};
        assert_eq!(super::utc_date(UNIX_EPOCH), "1970-01-01 00:00 UTC");
        // 2000-02-29 12:34 UTC (a leap day).
        let t = UNIX_EPOCH + Duration::from_secs(951_827_640);
        assert_eq!(super::utc_date(t), "2000-02-29 12:34 UTC");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(super::utc_date(t), "2026-11-18 11:06 UTC");
    }

    #[test]
    fn commit_is_a_hash_or_unknown() {
        let c = super::commit();
        assert!(
            c == "unknown" || c.trim_end_matches("-dirty").len() == 40,
            "{c}"
        );
    }
}
