//! Gives back the pages of the binary that starting up touched and an
//! idle daemon never runs again.
//!
//! Starting reads the config, builds every tool's schemas, compiles the
//! presets' regexes, opens the ports, binds the listeners: code spread over
//! the whole binary. Each page of it the CPU reads is mapped into the
//! process, with its neighbours (the kernel maps up to 64 KiB around a
//! fault from the page cache), and stays counted in the resident size for
//! as long as the daemon runs: 11 of the 20 MiB of a release build's text
//! after start, for one idle port. Those pages are clean copies of the
//! file, so once the daemon is ready it asks the kernel to take them back
//! (`MADV_PAGEOUT`, Linux 5.4 and later); what it runs afterwards is mapped
//! again on first use, from the page cache. Pages another process maps too
//! (a second daemon, `serialgate simulate`) are left alone by the kernel.
//! Nothing is written: the mappings are the binary's read-only ones.

/// How long after readiness the pages are given back. Asked at once, the
/// kernel took back about 1 MiB of a release build's 15 MiB; asked 5 s
/// later, it took them all (7.7 MiB resident in all after). Why it did
/// not at once was not found; pages just mapped sitting in the kernel's
/// per-CPU lists, where reclaim cannot take them, is the likeliest.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

/// Gives back the binary's startup pages [`SETTLE`] after it is called,
/// in a task of its own.
pub fn release_startup_code_soon() {
    crate::task::spawn(async {
        tokio::time::sleep(SETTLE).await;
        release_startup_code();
    });
}

/// Asks the kernel to unmap the binary's read-only pages from this
/// process; logged and otherwise ignored where it cannot (a kernel before
/// 5.4, no `/proc`).
fn release_startup_code() {
    #[cfg(target_os = "linux")]
    {
        let Ok(exe) = std::fs::read_link("/proc/self/exe") else {
            return;
        };
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return;
        };
        let mut released = 0usize;
        for (start, len) in read_only_mappings_of(&maps, &exe.to_string_lossy()) {
            // SAFETY: the range is one of this process's own mappings of
            // its binary, read-only (not writable), as /proc/self/maps
            // lists it; MADV_PAGEOUT only drops clean pages from the page
            // tables, and the next access maps them again from the file.
            let done =
                unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_PAGEOUT) };
            if done == 0 {
                released += len;
            } else {
                tracing::debug!(
                    "madvise(MADV_PAGEOUT) on the binary's pages refused: {}",
                    std::io::Error::last_os_error()
                );
                return;
            }
        }
        tracing::debug!(
            "the binary's startup pages given back ({} KiB of mappings)",
            released / 1024
        );
    }
}

/// The start and length of each mapping of `exe` in `maps` (the text of
/// `/proc/self/maps`) that holds clean copies of the file: not writable,
/// and not the relocated read-only data just before the writable data
/// (RELRO), whose pages the loader wrote and a page-out would swap.
fn read_only_mappings_of(maps: &str, exe: &str) -> Vec<(usize, usize)> {
    let mappings: Vec<(usize, usize, bool)> = maps
        .lines()
        .filter_map(|line| {
            // address perms offset dev inode path; the path may hold
            // spaces (" (deleted)" after an upgrade replaced the file).
            let mut rest = line;
            let mut fields = [""; 5];
            for field in &mut fields {
                let (this, after) = rest.trim_start().split_once(' ')?;
                *field = this;
                rest = after;
            }
            let [range, perms, ..] = fields;
            if rest.trim() != exe {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = usize::from_str_radix(start, 16).ok()?;
            let end = usize::from_str_radix(end, 16).ok()?;
            (end > start).then_some((start, end, perms.contains('w')))
        })
        .collect();
    mappings
        .iter()
        .enumerate()
        .filter(|&(i, &(_, end, writable))| {
            let relro = mappings
                .get(i + 1)
                .is_some_and(|&(next, _, next_writable)| next == end && next_writable);
            !writable && !relro
        })
        .map(|(_, &(start, end, _))| (start, end - start))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::read_only_mappings_of;

    #[test]
    fn only_the_binarys_read_only_mappings_are_named() {
        // A PIE binary as ld.so maps it: headers and constants, code, the
        // relocated constants (RELRO), data; then the heap, a library,
        // and the same path once its file was replaced.
        let maps = "\
55d0c0000000-55d0c0100000 r--p 00000000 fe:01 123 /usr/bin/serialgate
55d0c0100000-55d0c1500000 r-xp 00100000 fe:01 123 /usr/bin/serialgate
55d0c1500000-55d0c1580000 r--p 01500000 fe:01 123 /usr/bin/serialgate
55d0c1580000-55d0c1600000 rw-p 01580000 fe:01 123 /usr/bin/serialgate
55d0c1600000-55d0c1700000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000100000 r-xp 00000000 fe:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000200000-7f0000300000 r-xp 00000000 fe:01 789 /usr/bin/serialgate (deleted)
";
        assert_eq!(
            read_only_mappings_of(maps, "/usr/bin/serialgate"),
            vec![(0x55d0c0000000, 0x100000), (0x55d0c0100000, 0x1400000)]
        );
    }
}
