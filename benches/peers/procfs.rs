//! What `/proc` says about a server process: CPU time and memory.
//!
//! CPU time comes two ways. `/proc/PID/stat` utime + stime count whole
//! clock ticks (10 ms here), too coarse for an idle budget of 0.5 ms per
//! 10 s. `/proc/PID/task/TID/schedstat` gives each thread's time on a CPU in
//! nanoseconds; [`CpuSample`] keeps both, and the nanosecond sum is the
//! figure the bench judges. A thread that exits between two samples takes
//! its time since the first sample with it (stat keeps it; schedstat cannot):
//! a worker pool that retires an idle thread makes the figure a little low,
//! never high.

use std::collections::HashMap;

/// CPU time of one process at one moment.
#[derive(Clone, Debug)]
pub struct CpuSample {
    /// Per thread: nanoseconds on a CPU (`schedstat`).
    threads: HashMap<u32, u64>,
    /// utime + stime in clock ticks (`stat`).
    ticks: u64,
}

impl CpuSample {
    /// Samples `pid` now.
    pub fn take(pid: u32) -> anyhow::Result<CpuSample> {
        let mut threads = HashMap::new();
        for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
            let entry = entry?;
            let Ok(tid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            // A thread may exit between the listing and the read.
            if let Ok(s) = std::fs::read_to_string(entry.path().join("schedstat"))
                && let Some(ns) = s.split_whitespace().next().and_then(|f| f.parse().ok())
            {
                threads.insert(tid, ns);
            }
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // Fields after the parenthesised command name (which may hold spaces):
        // state is field 3, utime 14, stime 15.
        let rest = stat
            .rsplit_once(')')
            .map(|(_, r)| r)
            .ok_or_else(|| anyhow::anyhow!("odd /proc/{pid}/stat"))?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field =
            |n: usize| -> u64 { fields.get(n - 3).and_then(|f| f.parse().ok()).unwrap_or(0) };
        Ok(CpuSample {
            threads,
            ticks: field(14) + field(15),
        })
    }

    /// CPU seconds from `self` to `later`: (schedstat sum, stat ticks).
    pub fn seconds_until(&self, later: &CpuSample) -> (f64, f64) {
        let ns: u64 = later
            .threads
            .iter()
            .map(|(tid, &ns)| ns.saturating_sub(self.threads.get(tid).copied().unwrap_or(0)))
            .sum();
        let ticks = later.ticks.saturating_sub(self.ticks);
        (ns as f64 / 1e9, ticks as f64 / clock_ticks_per_second())
    }
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// A `Vm*` line of `/proc/PID/status` in KiB (`VmHWM` peak RSS, `VmRSS`).
pub fn vm_kib(pid: u32, key: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no {key} in /proc/{pid}/status"))
}

/// Resets the peak resident set (`VmHWM`) of `pid` to what is resident
/// now (`/proc/PID/clear_refs`, Linux 4.0 and later): the peak read after
/// it is that of what ran since, not of the process's start.
pub fn reset_peak(pid: u32) -> anyhow::Result<()> {
    use anyhow::Context;
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
        .with_context(|| format!("resetting the peak RSS of {pid}"))
}

/// Raises this process's soft open-file limit to the hard limit; returns
/// (soft before, soft now).
pub fn raise_nofile() -> (u64, u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write `lim`.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return (0, 0);
        }
        let before = lim.rlim_cur;
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return (before, before);
            }
        }
        (before, lim.rlim_cur)
    }
}
