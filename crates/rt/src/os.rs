//! Operating-system helpers the layers share: how many cores there are,
//! pinning a thread to one, naming the calling thread for a signal, and
//! installing or restoring a signal handler. None of this is a mechanism
//! of its own: the interrupt scheme that uses signals is
//! [`crate::notify::signal`], the threads are started by the runtime.

/// Cores of the machine (not the calling thread's affinity mask, which a
/// pinned caller would have narrowed).
pub fn online_cores() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as usize
    } else {
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    }
}

/// Pins the calling thread to `core`. Failures are ignored: pinning is an
/// optimisation.
pub fn pin_to(core: usize) {
    // SAFETY: cpu_set_t is plain data, for which all zeroes is a valid
    // (empty) value; CPU_SET writes within it; the call affects only the
    // calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The calling thread's pthread id, as a number.
pub fn current_thread() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// Sends signal `sig` to thread `thread` (a pthread id from
/// [`current_thread`]) of this process.
///
/// # Safety
/// `thread` must be the id of a thread of this process that has not been
/// joined or detached-and-exited (a stale id is undefined behaviour).
pub(crate) unsafe fn signal_thread(thread: u64, sig: libc::c_int) {
    // SAFETY: the caller vouches that the thread is alive.
    unsafe { libc::pthread_kill(thread as libc::pthread_t, sig) };
}

/// Installs `handler` for `sig` (empty mask, `SA_RESTART`, so system calls
/// the interrupted thread makes are restarted rather than failed) and
/// returns the action it replaced, for [`restore_handler`].
pub(crate) fn install_handler(
    sig: libc::c_int,
    handler: extern "C" fn(libc::c_int),
) -> Result<libc::sigaction, String> {
    // SAFETY: a zeroed sigaction is a valid starting value (no handler, no
    // flags, an empty mask); we set a plain handler, an empty mask and
    // SA_RESTART, and sigaction only reads `sa` and writes `old`.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, &sa, &mut old) != 0 {
            return Err(format!("sigaction failed: {}", std::io::Error::last_os_error()));
        }
        Ok(old)
    }
}

/// Puts back an action [`install_handler`] returned.
pub(crate) fn restore_handler(sig: libc::c_int, old: &libc::sigaction) {
    // SAFETY: `old` is an action sigaction itself returned, so it is valid
    // to install again; sigaction only reads it.
    unsafe {
        libc::sigaction(sig, old, std::ptr::null_mut());
    }
}

/// The calling thread's `errno`.
pub(crate) fn errno() -> Option<i32> {
    std::io::Error::last_os_error().raw_os_error()
}

/// Sets the calling thread's `errno` (a signal handler puts back the
/// interrupted code's).
pub(crate) fn set_errno(errno: i32) {
    // SAFETY: __errno_location returns the calling thread's errno slot,
    // valid for the thread's life.
    unsafe { *libc::__errno_location() = errno };
}

/// Nanoseconds thread `tid` of this process (None: the calling thread)
/// has spent runnable but waiting for a core since it started: the
/// scheduler's run delay (`/proc/.../schedstat`, second field). None where
/// the kernel does not keep it.
pub(crate) fn run_delay_ns(tid: Option<i32>) -> Option<u64> {
    let path = match tid {
        None => "/proc/thread-self/schedstat".to_string(),
        Some(t) => format!("/proc/self/task/{t}/schedstat"),
    };
    std::fs::read_to_string(path).ok()?.split_whitespace().nth(1)?.parse().ok()
}
