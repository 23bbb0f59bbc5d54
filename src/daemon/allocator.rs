//! How the C allocator gives memory back: a large result's buffers return
//! to the system when they are freed.
//!
//! glibc serves a request of at least `M_MMAP_THRESHOLD` (128 KiB) with a
//! mapping of its own, unmapped when freed; but each time such a mapping is
//! freed it raises the threshold to that size, up to 32 MiB. After one
//! 4 MiB result, the next ones come from the heap arenas, which keep freed
//! memory: the daemon's resident size stayed at its peak after every large
//! call. Setting the threshold once fixes it (and turns that adjustment
//! off): a buffer of 256 KiB or more is always its own mapping, so a 20 MB
//! result costs its mappings while it is built and sent, and nothing after.
//! Smaller allocations (a page of read_output, a command's output) stay in
//! the arenas as before.

/// Allocations at least this large are mappings of their own.
const MMAP_THRESHOLD: libc::c_int = 256 * 1024;

/// Sets the allocator's mapping threshold (glibc only; other C libraries
/// are left as they are).
pub fn return_large_frees() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes the allocator's tunables; it is
        // called before the runtime's threads allocate.
        let set = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
        if set != 1 {
            tracing::warn!("mallopt(M_MMAP_THRESHOLD) refused; large frees may stay resident");
        }
    }
}
