//! A helper thread on a core of its own.
//!
//! Linux usually wakes a thread on an idle core. The scheduler of the
//! 2-vCPU virtual machine the benchmarks run on (its kernel is booted with
//! `sched_vcpu_pack`) often does not: a thread woken by another ran on the
//! waker's core, behind it, while the other core stayed idle for 10 ms
//! and more (`perf record -a -e sched:sched_switch` of an rc check of
//! AWDIT's causal history of 2^16 events). A helper thread woken to run
//! beside the thread that woke it therefore first moves off the waker's
//! core ([`leave`]), then lets the scheduler place it anywhere again: a
//! thread is not moved off a core that stays allowed to it, so it keeps
//! the core it moved to until it sleeps. On an ordinary scheduler the move
//! costs two system calls.
//!
//! Only the checking thread does so, woken once the thread that decides
//! cc ahead has built the index ([`check`](crate::check)). When that
//! thread was the one woken, and moved, the threads that parse, index and
//! certify, moved too, made the same check slower (alternating `perf stat
//! -r 20` blocks: 0.0242–0.0249 s with only the cc thread moved,
//! 0.0259–0.0276 s with every helper thread moved).

/// The core the calling thread runs on, when the system says.
pub(crate) fn here() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: no arguments; it returns -1 on failure.
        let c = unsafe { libc::sched_getcpu() };
        usize::try_from(c).ok()
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Moves the calling thread off core `from` (when another core is allowed
/// to it), then allows it every core it was allowed before; says which
/// core it moved to.
pub(crate) fn leave(from: Option<usize>) -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        let from = from.filter(|&c| c < libc::CPU_SETSIZE as usize)?;
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: `cpu_set_t` is plain bits, valid all zero; the calls only
        // read or write the sets given, of the size given.
        unsafe {
            let mut allowed: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, size, &mut allowed) != 0 {
                return None;
            }
            let mut others = allowed;
            libc::CPU_CLR(from, &mut others);
            if libc::CPU_COUNT(&others) == 0 || libc::sched_setaffinity(0, size, &others) != 0 {
                return None;
            }
            // The call has moved this thread before it returns.
            let to = here();
            libc::sched_setaffinity(0, size, &allowed);
            to
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = from;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn leaving_a_core_moves_off_it_when_another_is_allowed() {
        let cores = allowed_count();
        std::thread::scope(|s| {
            s.spawn(|| {
                let from = here().expect("sched_getcpu works on Linux");
                let to = leave(Some(from));
                if cores > 1 {
                    assert!(to.is_some_and(|c| c != from), "{from} -> {to:?}");
                } else {
                    assert_eq!(to, None);
                }
                assert_eq!(allowed_count(), cores);
            });
        });
    }

    fn allowed_count() -> usize {
        #[cfg(target_os = "linux")]
        unsafe {
            let mut allowed: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed),
                0
            );
            libc::CPU_COUNT(&allowed) as usize
        }
        #[cfg(not(target_os = "linux"))]
        1
    }
}
