// Helpers of the measurement harness.
//
// hold_stream: one thread spins until the host writes a non-zero value into a mapped pinned
// word (or a timeout passes). Launched before a timed phase, it keeps the stream busy while the
// host enqueues the phase's start event, launches and end event, so that host launch overhead
// does not land between the events (the "blocking kernel" of nvbench).

typedef unsigned long long u64;

__device__ __forceinline__ u64 global_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void hold_stream(const volatile int* flag, u64 timeout_ns) {
    const u64 start = global_ns();
    while (*flag == 0) {
        if (global_ns() - start > timeout_ns) break;
        __nanosleep(500);
    }
}
