//! The harness's own memory on small inputs: resident pages, page faults.
//!
//! When a process touches a page of a file it maps (its own binary), Linux
//! maps neighbouring pages already in the page cache with it
//! ("fault-around", up to 64 kB), and counts them all in the resident set.
//! A small check touches scattered pages of the harness's 10 MB of code,
//! and its resident set is mostly those pages: on the 100-transaction
//! dbcop history, 4.7 MB of the binary's code in a total of 7.9 MB.
//! `MADV_RANDOM` on the binary's own mappings turns fault-around off for
//! them where the kernel heeds it: 4.2 MB and 7.3 MB (what remains is the
//! pages the check runs, and whole large folios the kernel maps at once).
//! Each page is then one minor fault of its own: a few hundred more, well
//! under a millisecond. The functions a check runs are also linked
//! together (`linker/hot-symbols.txt`, see `build.rs`), which takes the
//! code mapped to 1.9 MB and the total to 4.9 MB.
//!
//! Every page the process touches for the first time is a minor fault as
//! well, and glibc's allocator makes more of them than the data needs: it
//! serves each allocation over 128 kB (at first) with a fresh `mmap`, and
//! returns it to the system when freed, so a check that builds and drops
//! vectors of a few MB touches new pages each time. [`keep_freed_memory`]
//! serves them from the heap instead, where freed memory is reused.

/// Turns fault-around off for the pages of the running binary (Linux; a
/// no-op elsewhere, or when `/proc` is not there).
pub fn no_fault_around() {
    #[cfg(target_os = "linux")]
    linux::advise_random();
}

/// Serves allocations of up to 8 MB from the heap, where freed memory is
/// reused, rather than mapping fresh pages for each and unmapping them
/// when freed (glibc; a no-op elsewhere). On AWDIT's causal history of
/// 2^16 events an rc check took 5,431–5,436 page faults and 44.5–45.9 ms
/// of CPU before, 4,848–4,992 and 43.2–43.6 ms after (`perf stat`), and
/// pc on dbcop's 10,000-transaction history 20,032–20,080 KB at peak
/// before, 19,004–19,108 KB after. (Keeping freed memory at the heap's top
/// as well, `M_TOP_PAD` 16 MB, saved a few hundred faults more but took
/// the latter to 23,632–23,948 KB.)
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets the allocator's thresholds; it is
    // called first thing in `main`, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 8 << 20);
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::path::Path;

    pub fn advise_random() {
        let (Ok(exe), Ok(maps)) = (
            std::fs::read_link("/proc/self/exe"),
            std::fs::read_to_string("/proc/self/maps"),
        ) else {
            return;
        };
        for (start, end) in own_mappings(&maps, &exe) {
            // SAFETY: `madvise` with MADV_RANDOM only changes how the
            // kernel reads ahead in a mapping of this process (the range
            // comes from /proc/self/maps); it neither unmaps nor changes
            // memory, and a failure leaves things as they were.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_RANDOM);
            }
        }
    }

    /// The address ranges of `/proc/self/maps` lines backed by `exe`.
    pub fn own_mappings(maps: &str, exe: &Path) -> Vec<(usize, usize)> {
        maps.lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let range = fields.next()?;
                // perms, offset, device, inode, then the path (which may
                // hold spaces).
                let path: Vec<&str> = fields.skip(4).collect();
                if path.is_empty() || Path::new(&path.join(" ")) != exe {
                    return None;
                }
                let (a, b) = range.split_once('-')?;
                let (a, b) = (
                    usize::from_str_radix(a, 16).ok()?,
                    usize::from_str_radix(b, 16).ok()?,
                );
                (a < b).then_some((a, b))
            })
            .collect()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn only_the_binary_s_own_mappings_are_advised() {
            let maps = "\
00400000-00c00000 r-xp 00000000 08:01 1234 /opt/my harness/harness
00c00000-00d00000 r--p 00800000 08:01 1234 /opt/my harness/harness
7f0000000000-7f0000100000 r-xp 00000000 08:01 99 /usr/lib/libc.so.6
7f0000200000-7f0000300000 rw-p 00000000 00:00 0
bad line
";
            let exe = Path::new("/opt/my harness/harness");
            assert_eq!(
                own_mappings(maps, exe),
                vec![(0x40_0000, 0xc0_0000), (0xc0_0000, 0xd0_0000)]
            );
            // This process's own maps name its binary.
            let exe = std::fs::read_link("/proc/self/exe").unwrap();
            let own = own_mappings(&std::fs::read_to_string("/proc/self/maps").unwrap(), &exe);
            assert!(!own.is_empty());
        }
    }
}
