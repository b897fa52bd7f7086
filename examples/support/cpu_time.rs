//! CPU-time clocks for the benchmark examples (`clock_gettime`, 64-bit Linux; `None`
//! elsewhere).
#![allow(dead_code)] // each example uses the clocks it needs

/// CPU time of this thread in seconds (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, nanosecond
/// resolution), so figures stay meaningful on a shared, oversubscribed machine; `None` off
/// 64-bit Linux. (`/proc/thread-self/schedstat`, used before, is only brought up to date at scheduler
/// ticks: 4 ms steps here, which made a 60 ms pass of 1,000 queries jump between 13,158 and
/// 16,667 QPS.)
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub(crate) fn thread_cpu_s() -> Option<f64> {
    cpu_s(3) // CLOCK_THREAD_CPUTIME_ID
}

/// `clock_gettime`'s clock for the whole process's CPU time (every thread's).
pub(crate) const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;

/// Seconds of `clock` (a CPU-time clock id of `clock_gettime`).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub(crate) fn cpu_s(clock: i32) -> Option<f64> {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec (64-bit Linux layout); the call only writes it.
    let rc = unsafe { clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9)
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub(crate) fn thread_cpu_s() -> Option<f64> {
    None
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub(crate) fn cpu_s(_clock: i32) -> Option<f64> {
    None
}
