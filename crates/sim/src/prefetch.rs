//! Software prefetch: large systems keep more state than the caches hold, and the simulator
//! often knows which state an event will read well before it reads it.

/// Asks the memory system for the bytes of `value` ahead of their use; reads nothing itself.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = (value as *const T).cast::<i8>();
        for offset in (0..std::mem::size_of::<T>()).step_by(64) {
            // SAFETY: a prefetch is a hint that reads nothing and cannot fault, and SSE, which
            // provides it, is part of every x86-64 processor.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
