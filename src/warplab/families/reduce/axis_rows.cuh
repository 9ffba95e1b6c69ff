// The rows_adaptive kernels of the axis reductions (axis.cu: the launch constants, the op
// policies and the load helpers they use; plans in axis_plan.py): a group of lanes per row,
// packed rows, rows staged through shared memory, long rows split over blocks.
#pragma once

// =============================================================================================
// rows_adaptive, short and medium rows: a group of G lanes (G = 1..32, a power of two) per row.
// The warps walk the rows 32/G at a time (a warp-uniform loop, so the group's xor shuffles
// always see the whole warp; the plan launches a warp per step, so each walks once); lane 0 of
// each group stores the row's result.
// =============================================================================================
template <class T, class A, class R, class OP, int G, bool VEC>
__global__ void __launch_bounds__(BS)
axis_rows_group(const T* __restrict__ in, u64 rows, u64 cols, u64 ld, R* __restrict__ out,
                double ddof, u64 out2) {
    axis_start<4>();  // launched to overlap the stream's previous kernel
    static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G: a power of two up to 32");
    constexpr u32 GPW = 32 / G;  // rows per warp and step
    const u32 lane = threadIdx.x & 31u;
    const u32 sub = lane & (G - 1);
    const u64 warp = ((u64)blockIdx.x * BS + threadIdx.x) >> 5;
    const u64 step = ((u64)gridDim.x * BS >> 5) * GPW;
    for (u64 r0 = warp * GPW; r0 < rows; r0 += step) {
        const u64 r = r0 + lane / G;
        A acc = OP::template identity<A>();
        double k = 0.0;
        if (r < rows) {
            const T* row = in + r * ld;
            if (OP::SHIFT) k = shift_of(row);
            acc = range_acc<T, A, OP, VEC, UNR, GROUP_STREAM>(row, 0, cols, sub, G, k);
        }
#pragma unroll
        for (int m = G / 2; m > 0; m >>= 1) acc = OP::combine(acc, shfl_xor(acc, m));
        if (r < rows && sub == 0) OP::store(out, r, acc, cols, k, ddof, out2);
    }
}

// =============================================================================================
// rows_adaptive, packed short rows: every row is exactly L 16-byte words (L = 1..16, a power of
// two) and the rows lie back to back (ld == cols, 16-byte aligned base), so together they are
// one run of words. A warp step takes UNR * 32 consecutive words: load j of lane l is word
// w0 + 32 j + l, so every warp instruction reads one whole 512-byte segment (the group kernel's
// G lanes per row read 16 rows' words at a stride instead). The L lanes holding a row's words
// combine by xor shuffles and the first of them stores the row's result.
// =============================================================================================
template <class T, class A, class R, class OP, int L>
__global__ void __launch_bounds__(BS)
axis_rows_packed(const T* __restrict__ in, u64 rows, u64 cols, R* __restrict__ out, double ddof,
                 u64 out2) {
    axis_start<1>();  // launched to overlap the stream's previous kernel
    static_assert(L >= 1 && L <= 16 && (L & (L - 1)) == 0, "L: a power of two up to 16");
    constexpr int PER = 16 / sizeof(T);
    const u32 lane = threadIdx.x & 31u;
    const u64 words = rows * L;
    const uint4* __restrict__ v = reinterpret_cast<const uint4*>(in);
    const u64 warp = ((u64)blockIdx.x * BS + threadIdx.x) >> 5;
    const u64 step = ((u64)gridDim.x * BS >> 5) * (32u * UNR);
    for (u64 w0 = warp * (32u * UNR); w0 < words; w0 += step) {
        Pack<T, PER> q[UNR];
#pragma unroll
        for (int j = 0; j < UNR; ++j) {
            const u64 w = w0 + 32u * j + lane;
            q[j].u = w < words ? ld_stream(v + w) : make_uint4(0u, 0u, 0u, 0u);
        }
#pragma unroll
        for (int j = 0; j < UNR; ++j) {
            const u64 w = w0 + 32u * j + lane;  // words is a multiple of L: a row's L lanes
            const u64 r = w / L;                // are all in range or all out
            A acc = OP::template identity<A>();
            double k = 0.0;
            if (w < words) {
                if (OP::SHIFT) k = shift_of(in + r * cols);
#pragma unroll
                for (int e = 0; e < PER; ++e) acc = OP::add(acc, q[j].v[e], k);
            }
#pragma unroll
            for (int m = L / 2; m > 0; m >>= 1) acc = OP::combine(acc, shfl_xor(acc, m));
            if (w < words && (lane & (L - 1)) == 0) OP::store(out, r, acc, cols, k, ddof, out2);
        }
    }
}

// =============================================================================================
// rows_adaptive, short rows back to back that are no packed case (rows of 33 floats, of 100
// doubles, a base off the 16-byte grid): block b stages tile b, rows [b * RT, (b + 1) * RT),
// into shared memory as the 16-byte words that hold them, every warp instruction one 512-byte
// segment (as the packed kernel); then G lanes per row reduce the tile's rows from shared
// memory and the first lane of each group stores. The first and last word of a tile, where
// they hold bytes outside the tile, are read element by element (no byte outside the array is
// read). RT: the most whole rows whose words fit the tile of BS * U words (host plan: 16 KiB
// at U = 4, 32 KiB at U = 8 for rows under 512 bytes).
// =============================================================================================
template <class T, class A, class R, class OP, int G, int U = STAGE_UNR>
__global__ void __launch_bounds__(BS)
axis_rows_staged(const T* __restrict__ in, u64 rows, u64 cols, u64 RT, R* __restrict__ out,
                 double ddof, u64 out2) {
    axis_start<2>();  // launched to overlap the stream's previous kernel
    static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G: a power of two up to 32");
    constexpr u32 PER = 16 / sizeof(T);
    static_assert(U >= 1 && U <= 8, "U: 16-byte words a thread stages, up to 8 (32 KiB)");
    __shared__ uint4 tile[BS * U];
    T* st = reinterpret_cast<T*>(tile);
    const u32 sub = threadIdx.x & (G - 1);
    const u64 tiles = (rows + RT - 1) / RT;
    for (u64 b = blockIdx.x; b < tiles; b += gridDim.x) {
        const u64 r0 = b * RT;
        const u64 nr = rows - r0 < RT ? rows - r0 : RT;
        const T* first = in + r0 * cols;
        const u64 ne = nr * cols;
        const u32 lead = (u32)(((u64)first & 15u) / sizeof(T));  // elements before `first`
        const u64 nw = (lead + ne + PER - 1) / PER;                 // words holding the tile
        const bool tail_whole = (lead + ne) % PER == 0;
        const uint4* __restrict__ src = reinterpret_cast<const uint4*>(first - lead);
        uint4 q[U];
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const u64 w = threadIdx.x + (u64)j * BS;
            const bool whole = w < nw && (w > 0 || lead == 0) && (w + 1 < nw || tail_whole);
            q[j] = whole ? ld_stream(src + w) : make_uint4(0u, 0u, 0u, 0u);
            if constexpr (STAGE_HOIST) {  // a boundary word: its elements inside the tile now
                if (!whole && w < nw) {    // (zeros elsewhere: outside the rows read below)
                    Pack<T, PER> p;
                    p.u = q[j];
#pragma unroll
                    for (u32 e = 0; e < PER; ++e) {
                        const i64 idx = (i64)(w * PER + e) - (i64)lead;
                        if (idx >= 0 && idx < (i64)ne) p.v[e] = first[idx];
                    }
                    q[j] = p.u;
                }
            }
        }
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const u64 w = threadIdx.x + (u64)j * BS;
            if (w >= nw) continue;
            if (STAGE_HOIST || ((w > 0 || lead == 0) && (w + 1 < nw || tail_whole))) {
                tile[w] = q[j];
            } else {  // a word that holds bytes outside the tile: its elements inside it
#pragma unroll
                for (u32 e = 0; e < PER; ++e) {
                    const i64 idx = (i64)(w * PER + e) - (i64)lead;
                    if (idx >= 0 && idx < (i64)ne) st[w * PER + e] = first[idx];
                }
            }
        }
        __syncthreads();
        for (u64 i0 = 0; i0 < nr; i0 += BS / G) {  // uniform in the block: whole groups shuffle
            const u64 i = i0 + threadIdx.x / G;
            A acc = OP::template identity<A>();
            double k = 0.0;
            if (i < nr) {
                const T* row = st + lead + i * cols;
                if (OP::SHIFT) k = double(row[0]);
                for (u64 j = sub; j < cols; j += G) acc = OP::add(acc, row[j], k);
            }
#pragma unroll
            for (int m = G / 2; m > 0; m >>= 1) acc = OP::combine(acc, shfl_xor(acc, m));
            if (i < nr && sub == 0) OP::store(out, r0 + i, acc, cols, k, ddof, out2);
        }
        __syncthreads();  // the tile is reused
    }
}

// =============================================================================================
// rows_adaptive, long rows (or too few rows for the group kernel): S blocks per row (grid
// rows * S; S = 1, a block per row, when the rows alone fill the GPU), block s reads elements
// [s * chunk, (s + 1) * chunk) of its row; with S > 1 each block leaves a partial, and the
// block that draws a row's last ticket (atomicInc wraps the row's counter back to 0) combines
// the row's S partials and stores the result: one launch, every SM busy.
// =============================================================================================
template <class T, class A, class R, class OP, bool VEC>
__global__ void __launch_bounds__(BS)
axis_rows_split(const T* __restrict__ in, u64 rows, u64 cols, u64 ld, u32 S, u64 chunk,
                A* partials, u32* tickets, R* __restrict__ out, double ddof, u64 out2) {
    axis_start<8>();  // launched to overlap the stream's previous kernel
    __shared__ A wsum[BS / 32];
    __shared__ bool last;
    const u64 r = blockIdx.x / S;
    const u32 s = blockIdx.x % S;
    const T* row = in + r * ld;
    const double k = OP::SHIFT ? shift_of(row) : 0.0;
    u64 begin = (u64)s * chunk;
    if (begin > cols) begin = cols;
    const u64 end = cols - begin < chunk ? cols : begin + chunk;
    A x = range_acc<T, A, OP, VEC, SPLIT_UNR, SPLIT_STREAM>(row, begin, end, threadIdx.x, BS, k);
    x = block_reduce<BS, A, OP>(x, wsum);
    if (S == 1) {
        if (threadIdx.x == 0) OP::store(out, r, x, cols, k, ddof, out2);
        return;
    }
    if (!last_of_row(partials, tickets, r, s, S, x, last)) return;
    A y = OP::template identity<A>();
    for (u32 j = threadIdx.x; j < S; j += BS) y = OP::combine(y, load_cg(partials + r * S + j));
    __syncthreads();  // wsum is reused
    y = block_reduce<BS, A, OP>(y, wsum);
    if (threadIdx.x == 0) OP::store(out, r, y, cols, k, ddof, out2);
}
