// The columns kernel of the axis reductions (axis.cu: the launch constants, the op policies
// and the load helpers it uses; plan in axis_plan.py).
#pragma once

// The columns kernel's row lanes combined: the head row lane's threads (rl == 0) end with the
// combination over rl of their PER columns' values. Row lanes of one warp (CG < 32) by
// butterflies over the lane bits above CG; then the warps' values by a tree in shared memory,
// all PER columns a step. Every thread of the block takes part.
template <class A, class OP, int PER>
__device__ __forceinline__ void cols_lanes(A (&acc)[PER], A (*sm)[CBS], u32 rl, u32 RL, u32 CG) {
    u32 lw = 1;  // row lanes per warp
    for (u32 m = CG; m < 32; m <<= 1, lw <<= 1)
#pragma unroll
        for (int e = 0; e < PER; ++e) acc[e] = OP::combine(acc[e], shfl_xor(acc[e], m));
    const u32 RW = RL / lw;  // row-lane groups in different warps
    if (RW == 1) return;
    const u32 rw = rl / lw, slot = rw * CG + (threadIdx.x & (CG - 1));
    const bool rep = rl % lw == 0;  // the group's representative
    if (rep)
#pragma unroll
        for (int e = 0; e < PER; ++e) sm[e][slot] = acc[e];
    __syncthreads();
    for (u32 st = RW / 2; st > 0; st >>= 1) {
        if (rep && rw < st)
#pragma unroll
            for (int e = 0; e < PER; ++e)
                sm[e][slot] = OP::combine(sm[e][slot], sm[e][slot + st * CG]);
        __syncthreads();
    }
#pragma unroll
    for (int e = 0; e < PER; ++e) acc[e] = sm[e][slot];
    __syncthreads();
}

// One thread's walk of its PER columns over rows i0, i0 + RL, ... < end (full column groups,
// 16-byte loads when VEC): COLS_UNR loads in flight, then the rest one at a time. With FENCE a
// CTA-scope fence sits between the loads and their sums, so ptxas issues every load before the
// first conversion (float32 into a float64 accumulator: 4-6 of the 8 in flight without it).
template <bool FENCE, class T, class A, class OP, bool VEC, int PER>
__device__ __forceinline__ void cols_sweep(const T* __restrict__ in, u64 ld, u64 c0, u64 i0,
                                           u64 end, u32 RL, A (&acc)[PER],
                                           const double (&k)[PER]) {
    u64 i = i0;
    for (; i + (COLS_UNR - 1) * (u64)RL < end; i += COLS_UNR * (u64)RL) {
        Pack<T, PER> q[COLS_UNR];
#pragma unroll
        for (int j = 0; j < COLS_UNR; ++j) {
            const T* p = in + (i + (u64)j * RL) * ld + c0;
            if (VEC) q[j].u = ld16<COLS_STREAM>(reinterpret_cast<const uint4*>(p));
            else q[j].v[0] = __ldg(p);
        }
        if constexpr (FENCE) asm volatile("fence.acq_rel.cta;" ::: "memory");
#pragma unroll
        for (int j = 0; j < COLS_UNR; ++j)
#pragma unroll
            for (int e = 0; e < PER; ++e) acc[e] = OP::add(acc[e], q[j].v[e], k[e]);
    }
    for (; i < end; i += RL) {
        Pack<T, PER> q;
        const T* p = in + i * ld + c0;
        if (VEC) q.u = ld16<COLS_STREAM>(reinterpret_cast<const uint4*>(p));
        else q.v[0] = __ldg(p);
#pragma unroll
        for (int e = 0; e < PER; ++e) acc[e] = OP::add(acc[e], q.v[e], k[e]);
    }
}

// =============================================================================================
// columns: reduce each column of an (nred x ncols) view. A block is CG column threads (a power
// of two up to CBS) x CBS / CG row lanes: thread (rl, cg) owns PER adjacent columns (16-byte
// loads when VEC: the host checks the base and ld * sizeof(T) are 16-byte multiples) and walks
// every (CBS / CG)-th row of the block's row range with COLS_UNR loads in flight, so a warp
// always reads whole 32-byte sectors, however few the columns. The row lanes are then combined
// (cols_lanes). Grid (column blocks, S): with S > 1 each row range leaves partials, and the last
// block of a column block (one ticket each) combines the S partials of its columns, every
// thread of it taking part (row lane rl takes partials rl, rl + RL, ..., COLS_FIN_BYTES of them
// in flight). The 16-byte loads carry the L2::256B prefetch hint with COLS_STREAM (off in the
// library: axis_plan.COLS_STREAM). SHORT: the short-walk form (axis_plan.COLS_SHORT_STEPS),
// which compiles the fenced walk beside the plain one and takes it for walks of one step.
// =============================================================================================
template <class T, class A, class R, class OP, bool VEC, bool SHORT>
__global__ void __launch_bounds__(CBS)
axis_cols(const T* __restrict__ in, u64 nred, u64 ncols, u64 ld, u32 CG, u32 S, u64 chunk,
          A* partials, u32* tickets, R* __restrict__ out, double ddof, u64 out2) {
    axis_start<16>();  // launched to overlap the stream's previous kernel
    constexpr int PER = VEC ? 16 / sizeof(T) : 1;
    __shared__ A sm[PER][CBS];
    __shared__ bool last;
    const u32 cg = threadIdx.x & (CG - 1), rl = threadIdx.x / CG, RL = CBS / CG;
    const u64 c0 = ((u64)blockIdx.x * CG + cg) * PER;
    const int nc = c0 >= ncols ? 0 : (ncols - c0 >= (u64)PER ? PER : (int)(ncols - c0));
    u64 begin = (u64)blockIdx.y * chunk;
    if (begin > nred) begin = nred;
    const u64 end = nred - begin < chunk ? nred : begin + chunk;
    A acc[PER];
    double k[PER];
#pragma unroll
    for (int e = 0; e < PER; ++e) {
        acc[e] = OP::template identity<A>();
        k[e] = (OP::SHIFT && e < nc) ? shift_of(in + c0 + e) : 0.0;
    }
    if (nc == PER) {  // the short-walk form: the fenced walk for one unrolled step
        if (SHORT && end - begin <= (u64)COLS_UNR * RL)
            cols_sweep<true, T, A, OP, VEC, PER>(in, ld, c0, begin + rl, end, RL, acc, k);
        else
            cols_sweep<false, T, A, OP, VEC, PER>(in, ld, c0, begin + rl, end, RL, acc, k);
    } else {  // the last, partial column group (fewer than PER columns): scalar loads
        for (u64 i = begin + rl; i < end; i += RL)
#pragma unroll
            for (int e = 0; e < PER; ++e)
                if (e < nc) acc[e] = OP::add(acc[e], __ldg(in + i * ld + c0 + e), k[e]);
    }
    if (RL > 1) cols_lanes<A, OP, PER>(acc, sm, rl, RL, CG);
    const bool head = rl == 0;  // the row lane that holds its columns' results
    if (S == 1) {
#pragma unroll
        for (int e = 0; e < PER; ++e)
            if (head && e < nc) OP::store(out, c0 + e, acc[e], nred, k[e], ddof, out2);
        return;
    }
#pragma unroll
    for (int e = 0; e < PER; ++e)
        if (head && e < nc) partials[(u64)blockIdx.y * ncols + c0 + e] = acc[e];
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicInc(tickets + blockIdx.x, S - 1) == S - 1;
    __syncthreads();
    if (!last) return;  // the whole last block combines: row lane rl takes partials rl, rl + RL..
    __threadfence();
    // The finish is L2 round trips: FIN splits of all PER columns in flight per thread
    // (COLS_FIN_BYTES of partials), ceil(S / (FIN * RL)) round trips in all.
    constexpr int FIN_ = COLS_FIN_BYTES / (PER * (int)sizeof(A));
    constexpr int FIN = FIN_ > 1 ? FIN_ : 1;
#pragma unroll
    for (int e = 0; e < PER; ++e) acc[e] = OP::template identity<A>();
    for (u32 j = rl; j < S; j += FIN * RL) {
        A y[FIN][PER];
#pragma unroll
        for (int f = 0; f < FIN; ++f)
#pragma unroll
            for (int e = 0; e < PER; ++e)
                y[f][e] = e < nc && j + f * RL < S
                              ? load_cg(partials + (u64)(j + f * RL) * ncols + c0 + e)
                              : OP::template identity<A>();
#pragma unroll
        for (int f = 0; f < FIN; ++f)
#pragma unroll
            for (int e = 0; e < PER; ++e) acc[e] = OP::combine(acc[e], y[f][e]);
    }
    if (RL > 1) cols_lanes<A, OP, PER>(acc, sm, rl, RL, CG);
#pragma unroll
    for (int e = 0; e < PER; ++e)
        if (head && e < nc) OP::store(out, c0 + e, acc[e], nred, k[e], ddof, out2);
}
