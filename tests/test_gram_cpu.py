"""CPU tests of the tensor-core Gram kernels (``families/corr/gram*.py``, ``gram.cu``).

No GPU here, so the kernel's index arithmetic is checked by a NumPy model that repeats the
formulas of ``gram.cu`` and ``gram_mma.cuh`` line by line (block order, cp.async copies into
the shared-memory ring, fragment reads, the PTX ISA fragment layouts of m8n8k4 .f64 and
m16n8k8 .tf32, the epilogue):
every product of every tile must be formed exactly once and every element of C written once.
Plus: launch plans, TF32 rounding, the NumPy reference and the stated error bounds, bad input.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warplab.core.errors import DeviceUnavailableError
from warplab.families.corr import gram_cuda as gc
from warplab.families.corr.gram import (
    GRAM_PRECISIONS,
    gram,
    gram_available,
    gram_error_bound,
    gram_reference,
    tf32_round,
)

# --- the PTX ISA fragment layouts (lane l, g = l >> 2, t = l & 3), as gram.cu's comment states ---


def frag_f64(lane: np.ndarray) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """m8n8k4 .f64: (row, col) of each register of A (8x4), B (4x8), C (8x8)."""
    g, t = lane >> 2, lane & 3
    return {"a": [(g, t)], "b": [(t, g)], "c": [(g, 2 * t + i) for i in range(2)]}


@functools.cache
def frag_m16(k: int):
    """m16n8kK (.tf32 with K = 8; .f64 with K = 4, 8, 16): (row, col) of each register of A
    (16xK), B (Kx8), C (16x8)."""
    def frag(lane: np.ndarray) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
        g, t = lane >> 2, lane & 3
        return {"a": [(g + 8 * (i % 2), t + 4 * (i // 2)) for i in range(k // 2)],
                "b": [(t + 4 * i, g) for i in range(k // 4)],
                "c": [(g + 8 * (i // 2), 2 * t + i % 2) for i in range(4)]}
    return frag


frag_tf32 = frag_m16(8)


def test_m16_layouts_match_the_ptx_isa_f64_formulas() -> None:
    """PTX ISA, m16n8k16 .f64: a_i row g (i even) / g + 8, column 2i + t (i even) / 2i - 2 + t;
    b_i row t + 4i; the generic formulas above say the same."""
    g, t = LANES >> 2, LANES & 3
    f = frag_m16(16)(LANES)
    for i, (r, c) in enumerate(f["a"]):
        assert (r == (g if i % 2 == 0 else g + 8)).all()
        assert (c == (2 * i + t if i % 2 == 0 else 2 * i - 2 + t)).all()
    for i, (r, c) in enumerate(f["b"]):
        assert (r == t + 4 * i).all() and (c == g).all()


LANES = np.arange(32)
CONFIG_NAMES = tuple(gc.CONFIGS)


def mma_shape(cfg: gc.GramConfig, mode: int):
    """(M, N, K, layout) of a configuration's mma instruction in ``mode``."""
    m, n, k = cfg.mma(mode)
    return m, n, k, (frag_f64 if m == 8 else frag_m16(k))


def stored_column(c: int, t: np.ndarray, k: int) -> np.ndarray:
    """The k pairing (gram.cu): mma column t + 4c of a step is stored column
    8 (c / 2) + 2t + (c % 2); the m8n8k4 / m16n8k4 steps read column t as it is."""
    return t if k == 4 else 8 * (c // 2) + 2 * t + c % 2


@pytest.mark.parametrize("m,k", [(8, 4), (16, 4), (16, 8), (16, 16)])
def test_fragment_layouts_are_bijections(m: int, k: int) -> None:
    n, frag = 8, (frag_f64 if m == 8 else frag_m16(k))
    f = frag(LANES)
    for name, dims in (("a", (m, k)), ("b", (k, n)), ("c", (m, n))):
        seen = np.zeros(dims, int)
        for rows, cols in f[name]:
            np.add.at(seen, (rows, cols), 1)
        assert (seen == 1).all(), name


@functools.cache
def lane_layout(frag, m: int, n: int, k: int):
    """``frag(LANES)`` for an (m, n, k) mma, with A's and B's cells as flat indices in register
    order. Checked here, once per layout, where the model's mma calls would check it every
    time: every cell of A and B is some register's, and no two registers share one (so that
    a NaN left in an assembled operand can only be a value read from the padding)."""
    layout = frag(LANES)
    flat = {}
    for name, cols in (("a", k), ("b", n)):
        idx = np.concatenate([np.asarray(r) * cols + np.asarray(c) for r, c in layout[name]])
        rows = m if name == "a" else k
        assert sorted(idx.tolist()) == list(range(rows * cols)), name  # each cell exactly once
        flat[name] = idx
    return layout, flat["a"], flat["b"]


def mma(frag, regs_a, regs_b, dims) -> list[np.ndarray]:
    """The warp-wide mma: assemble A and B from the lanes' registers by the PTX layout (each
    cell exactly once: ``lane_layout``), multiply, hand each lane its C registers. Each
    register is an (I, 32) array for A (one row per lane) and (J, 32) for B: the I A and J B
    fragments of a warp's tiles at one k step, every (i, j) pair multiplied as the warp's
    I x J mma instructions do; C's registers are (I, J, 32)."""
    m, n, k = dims
    layout, ia, ib = lane_layout(frag, m, n, k)
    ra, rb = np.concatenate(regs_a, axis=-1), np.concatenate(regs_b, axis=-1)
    fa, fb = np.empty((len(ra), m * k)), np.empty((len(rb), k * n))
    fa[:, ia], fb[:, ib] = ra, rb
    assert not np.isnan(fa).any() and not np.isnan(fb).any()  # no padding was read
    d = fa.reshape(-1, 1, m, k) @ fb.reshape(1, -1, k, n)
    return [d[:, :, r, c] for r, c in layout["c"]]


def test_k_pairing_is_a_bijection_of_each_step() -> None:
    t = np.arange(4)
    for k in (4, 8, 16):
        cols = np.concatenate([stored_column(c, t, k) for c in range(k // 4)])
        assert sorted(cols) == list(range(k))


def block_tile(sym: bool, L: int, tiles_m: int, tiles_n: int) -> tuple[int, int]:
    """block_tile (gram_mma.cuh)."""
    if sym:
        r = int((math.sqrt(8.0 * L + 1.0) - 1.0) * 0.5)
        while r * (r + 1) // 2 > L:
            r -= 1
        while (r + 1) * (r + 2) // 2 <= L:
            r += 1
        return L - r * (r + 1) // 2, r
    group = gc.DEFAULT.group
    per_group = group * tiles_n
    first = (L // per_group) * group
    rows_here = min(tiles_m - first, group)
    in_group = L % per_group
    return first + in_group % rows_here, in_group // rows_here


def kernel_model(mode: int, A: np.ndarray, B: np.ndarray | None, vec: bool,
                 stages: int = 3, config: str = "default") -> tuple[np.ndarray, np.ndarray]:
    """gram_mma in NumPy (float64 arithmetic, TF32 rounding of the operands as the kernel's
    cvt.rna) for the build ``config``. Returns (C, how often each element of C was written)."""
    cfg = gc.CONFIGS[config]
    sym = B is None
    B = A if sym else B
    itemsize = A.dtype.itemsize
    m_, n_, k_, frag = mma_shape(cfg, mode)
    bk = cfg.slice_depth(mode)
    lds = cfg.row_stride(mode)
    tile = cfg.tile
    wm_, wn_ = cfg.warp_grid(mode)
    threads = cfg.threads(mode)
    WM, WN = tile // wm_, tile // wn_
    MT, NT = WM // m_, WN // n_
    ch = 16 // itemsize if vec else 1
    copies = tile * bk // ch // threads
    assert copies * ch * threads == tile * bk
    ma, n = A.shape
    mb = B.shape[0]
    tiles_m, tiles_n = gc.tiles(ma, tile), gc.tiles(mb, tile)
    C = np.full((ma, mb), np.nan)
    writes = np.zeros((ma, mb), int)
    g, t = LANES >> 2, LANES & 3
    per = m_ * n_ // 32
    # the shared-memory column of each A and B register of an mma step (stored_column)
    cols_a = [stored_column(e // 2, t, k_) for e in range(k_ // 2)]
    cols_b = [stored_column(e, t, k_) for e in range(k_ // 4)]
    for L in range(gc.block_count(ma, mb, sym, tile)):
        bi, bj = block_tile(sym, L, tiles_m, tiles_n)
        row0, col0 = bi * tile, bj * tile
        As = np.full((stages, tile, lds), np.nan)   # padding is never read: NaN proves it
        Bs = np.full((stages, tile, lds), np.nan)

        def load_slice(stage: int, kt: int, As=As, Bs=Bs, row0=row0, col0=col0) -> None:
            k0 = kt * bk
            for p in range(copies):
                idx = np.arange(threads) + p * threads
                r, c = idx // (bk // ch), (idx % (bk // ch)) * ch
                k_ok = k0 + c < n
                for src, dst, rows, lim in ((A, As, row0 + r, ma), (B, Bs, col0 + r, mb)):
                    ok = k_ok & (rows < lim)
                    for e in range(ch):
                        vals = np.zeros(threads)
                        vals[ok] = src[rows[ok], k0 + c[ok] + e]
                        dst[stage, r, c + e] = vals

        acc = np.zeros((wm_ * wn_, MT, NT, per, 32))
        slices = -(-n // bk)
        for s in range(stages - 1):
            if s < slices:
                load_slice(s, s)
        for kt in range(slices):
            nxt = kt + stages - 1
            if nxt < slices:
                assert nxt % stages != kt % stages  # never refill the stage being computed
                load_slice(nxt % stages, nxt)
            as_, bs_ = As[kt % stages], Bs[kt % stages]
            dims = (m_, n_, k_)
            for w in range(wm_ * wn_):
                wm0, wn0 = (w // wn_) * WM, (w % wn_) * WN
                # the smem row of each lane's registers in the warp's tiles: A's tile i (the
                # m16 layouts' odd registers 8 rows below), B's tile j; one row per tile
                rows_a = wm0 + m_ * np.arange(MT)[:, None] + g
                rows_b = wn0 + 8 * np.arange(NT)[:, None] + g
                for ks in range(0, bk, k_):
                    # the registers of every tile at once, each (MT or NT, 32): tile i's are
                    # as_[wm0 + i * m_ + g (+ 8), ks + column], tile j's bs_[wn0 + j * 8 + g, ...]
                    if m_ == 8:
                        ra = [as_[rows_a, ks + t]]
                    else:  # register e: row g + 8 (e % 2), mma column group e / 2
                        ra = [as_[rows_a + 8 * (e % 2), ks + cols_a[e]] for e in range(k_ // 2)]
                    rb = [bs_[rows_b, ks + cols_b[e]] for e in range(k_ // 4)]
                    if mode == 0:
                        d = mma(frag, ra, rb, dims)
                    else:  # cvt.rna to TF32 (the 3xTF32 split: the value left over, rounded)
                        ah, bh = [tf32_round(x) for x in ra], [tf32_round(x) for x in rb]
                        if mode == 2:
                            d = mma(frag, ah, bh, dims)
                        else:
                            al = [tf32_round(x - h) for x, h in zip(ra, ah)]
                            bl = [tf32_round(x - h) for x, h in zip(rb, bh)]
                            d = [x + y + z for x, y, z in zip(mma(frag, al, bh, dims),
                                                              mma(frag, ah, bl, dims),
                                                              mma(frag, ah, bh, dims))]
                    for e in range(per):  # every tile (i, j) of the warp
                        acc[w, :, :, e] += d[e]
        for w in range(wm_ * wn_):
            wm0, wn0 = (w // wn_) * WM, (w % wn_) * WN
            for i in range(MT):
                for j in range(NT):
                    for e in range(per):
                        gi = row0 + wm0 + i * m_ + g + 8 * (e // 2)
                        gj = col0 + wn0 + j * n_ + 2 * t + e % 2
                        ok = (gi < ma) & (gj < mb)
                        if sym:
                            ok &= gi <= gj
                        v = acc[w, i, j, e]
                        C[gi[ok], gj[ok]] = v[ok]
                        np.add.at(writes, (gi[ok], gj[ok]), 1)
                        if sym:
                            off = ok & (gi != gj)
                            C[gj[off], gi[off]] = v[off]
                            np.add.at(writes, (gj[off], gi[off]), 1)
    return C, writes


def _exact(mode: int, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """What the model must give: float64 sums of each mode's rounded products."""
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    if mode == 0:
        return a64 @ b64.T
    a32, b32 = A.astype(np.float32), B.astype(np.float32)
    if mode == 2:
        return tf32_round(a32).astype(np.float64) @ tf32_round(b32).astype(np.float64).T
    ah, bh = tf32_round(a32), tf32_round(b32)
    al, bl = tf32_round(a32 - ah), tf32_round(b32 - bh)
    f = [v.astype(np.float64) for v in (ah, al, bh, bl)]
    return f[0] @ f[3].T + f[1] @ f[2].T + f[0] @ f[2].T


# (ma, mb, n): edges in every dimension, a single row and column, N below, at and above a
# slice, N a multiple of every chunk (16-byte copies) and not, two tiles in each direction.
MODEL_CASES = [(1, 1, 1), (1, 2, 5), (3, 3, 3), (17, 33, 36), (130, 129, 40), (129, 257, 7)]


MODEL_SYM_CASES = [(1, 1, 1), (3, 3, 3), (130, 130, 40)]


@pytest.mark.parametrize("mode,dtype", [(0, np.float64), (0, np.float32), (1, np.float32),
                                        (2, np.float32)])
@pytest.mark.parametrize("ma,mb,n,sym", [c + (False,) for c in MODEL_CASES]
                         + [c + (True,) for c in MODEL_SYM_CASES])
def test_kernel_model_forms_every_product_once(mode, dtype, ma, mb, n, sym) -> None:
    rng = np.random.default_rng(ma * 1000 + mb + n)
    A = rng.standard_normal((ma, n)).astype(dtype)
    B = None if sym else rng.standard_normal((mb, n)).astype(dtype)
    vec = gc.vector_copies_ok(n, np.dtype(dtype).itemsize, 0)
    for v in {vec, False}:
        C, writes = kernel_model(mode, A, B, v, stages=2 if v else 3)
        expect = _exact(mode, A, A if sym else B)
        assert (writes == 1).all()
        np.testing.assert_allclose(C, expect, rtol=1e-12, atol=1e-12)
        if sym:
            assert (C == C.T).all()


@pytest.mark.parametrize("config", [c for c in CONFIG_NAMES if c != "default"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("ma,mb,n,sym", [(17, 33, 36, False), (129, 257, 40, False),
                                         (3, 3, 3, True), (130, 130, 40, True)])
def test_float64_configs_form_every_product_once(config, dtype, ma, mb, n, sym) -> None:
    """Every configuration's "float64" kernel (other DMMA shapes, warp grids, ring depths) in
    the model: each product once, each element of C written once, exact float64 sums."""
    rng = np.random.default_rng(ma * 1000 + mb + n)
    A = rng.standard_normal((ma, n)).astype(dtype)
    B = None if sym else rng.standard_normal((mb, n)).astype(dtype)
    stages = gc.CONFIGS[config].stages
    for v in {gc.vector_copies_ok(n, np.dtype(dtype).itemsize, 0), False}:
        C, writes = kernel_model(0, A, B, v, stages=stages, config=config)
        assert (writes == 1).all()
        np.testing.assert_allclose(C, _exact(0, A, A if sym else B), rtol=1e-12, atol=1e-12)
        if sym:
            assert (C == C.T).all()


def conflict_free(words: np.ndarray, width: int) -> bool:
    """A warp's shared-memory load of ``width`` 4-byte words per lane at word offsets ``words``
    takes the fewest wavefronts: 4-byte loads hit 32 distinct banks; 8-byte loads (served per
    half-warp) 16 distinct bank pairs in each half; 16-byte loads (per quarter-warp) 8
    distinct 16-byte slots of the 128-byte bank row in each quarter."""
    if width == 1:
        return len(set(words % 32)) == 32
    assert (words % width == 0).all()  # aligned
    per = 32 // width
    return all(len(set((words[q:q + per] // width) % per)) == per for q in range(0, 32, per))


@pytest.mark.parametrize("config", CONFIG_NAMES)
def test_fragment_reads_are_bank_conflict_free(config: str) -> None:
    """The fragment reads (gram_mma.cuh) with rows of ``row_stride`` elements (banks of 4 bytes)."""
    cfg = gc.CONFIGS[config]
    g, t = LANES >> 2, LANES & 3
    lds = cfg.row_stride(0)
    if cfg.f64_mma[0] == 8:
        assert conflict_free(g * lds + t, 1)                # float32 input, "float64" mode
        assert conflict_free(2 * (g * lds + t), 2)          # float64 input
    else:                                                   # pairs 8p + 2t, rows g, g + 8
        for row in (g, g + 8):
            for p in range(cfg.f64_mma[1] // 8):
                assert conflict_free(row * lds + 8 * p + 2 * t, 2)           # float
                assert conflict_free(2 * (row * lds + 8 * p + 2 * t), 4)     # double
    lds = cfg.row_stride(1)
    assert lds == cfg.row_stride(2)
    for row in (g, g + 8):                              # A rows g, g + 8; B row g
        assert conflict_free(row * lds + 2 * t, 2)      # the column pair 2t, 2t + 1
    assert not conflict_free(g * (cfg.tf32_bk + 4) + 2 * t, 2)  # the pad the pairing needs
    assert not conflict_free(2 * (g * (cfg.f64_bk + 4) + 2 * t), 4)  # and the f64 pairs'


@pytest.mark.parametrize("t", [1, 2, 3, 7, 64, 300])
def test_triangular_block_order_covers_upper_tiles_once(t: int) -> None:
    got = [block_tile(True, L, t, t) for L in range(t * (t + 1) // 2)]
    assert sorted(got) == [(i, j) for i in range(t) for j in range(t) if i <= j]


def test_triangular_block_order_at_large_indices() -> None:
    for r in (46339, 65535, 65536):  # T(T+1)/2 near 2^31: the float sqrt is corrected
        for L in (r * (r + 1) // 2, r * (r + 1) // 2 + r, r * (r + 1) // 2 + r // 2):
            bi, bj = block_tile(True, L, 0, 0)
            assert (bi, bj) == (L - r * (r + 1) // 2, r)


@pytest.mark.parametrize("tm,tn", [(1, 1), (1, 9), (9, 1), (8, 8), (17, 5), (3, 20)])
def test_grouped_block_order_covers_every_tile_once(tm: int, tn: int) -> None:
    got = sorted(block_tile(False, L, tm, tn) for L in range(tm * tn))
    assert got == [(i, j) for i in range(tm) for j in range(tn)]


# --- launch plans ---------------------------------------------------------------------------

def test_plan_shapes_and_shared_memory() -> None:
    p = gc.plan("float64", np.float64, 8192, 8192, 8192, sym=True)
    assert (p.mode, p.stages, p.vec, p.sym, p.threads) == (0, 3, True, True, 256)
    assert p.blocks == 64 * 65 // 2
    assert p.smem == 3 * 2 * 128 * 20 * 8
    assert gc.plan("tf32", np.float32, 8, 8, 8, sym=True).smem == 3 * 2 * 128 * 40 * 4
    assert p.expression == "gram_mma<0, double, 3, true, true>"
    q = gc.plan("float32", np.float32, 100, 300, 33, sym=False, pointers=(0, 16))
    assert (q.mode, q.vec, q.blocks, q.threads) == (1, False, 1 * 3, 512)
    assert q.expression == "gram_mma<1, float, 3, false, false>"
    # 99 KiB opt-in (sm_86 / sm_89): a two-stage ring
    assert gc.plan("float64", np.float64, 10, 10, 8, sym=True, smem_limit=99 * 1024).stages == 2
    assert gc.plan("tf32", np.float32, 10, 10, 8, sym=True, smem_limit=99 * 1024).stages == 2
    with pytest.raises(ValueError, match="shared memory"):
        gc.plan("float64", np.float64, 10, 10, 8, sym=True, smem_limit=48 * 1024)
    with pytest.raises(ValueError, match="float32 input"):
        gc.plan("tf32", np.float64, 10, 10, 8, sym=True)


def test_vector_copies_need_aligned_rows() -> None:
    assert gc.vector_copies_ok(8, 4, 0, 256)
    assert not gc.vector_copies_ok(6, 4, 0)       # rows of 24 bytes
    assert gc.vector_copies_ok(6, 8, 0)           # rows of 48 bytes
    assert not gc.vector_copies_ok(5, 8, 0)
    assert not gc.vector_copies_ok(8, 4, 8)       # base not 16-byte aligned


def test_plans_of_the_configurations() -> None:
    """The float64 candidates at 8192^2 on an H100 (227 KiB, sm_90): DMMA shape, threads,
    ring depth, shared memory; refused below sm_90; the default unchanged."""
    expect = {"default": (256, 3, 3 * 2 * 128 * 20 * 8), "dmma_k8": (256, 3, 3 * 2 * 128 * 24 * 8),
              "dmma_k16": (256, 3, 3 * 2 * 128 * 24 * 8),
              "dmma_k8_w16": (512, 3, 3 * 2 * 128 * 24 * 8),
              "dmma_k16_s4": (256, 4, 4 * 2 * 128 * 24 * 8)}
    assert set(expect) == set(gc.CONFIGS)
    for name, (threads, stages, smem) in expect.items():
        p = gc.plan("float64", np.float64, 8192, 8192, 8192, sym=True, config=name)
        assert (p.threads, p.stages, p.smem, p.config) == (threads, stages, smem, name)
        assert p.blocks == 64 * 65 // 2 and p.smem <= 227 * 1024
        assert p.expression == f"gram_mma<0, double, {stages}, true, true>"
        if gc.CONFIGS[name].min_cc > 80:
            with pytest.raises(ValueError, match="compute capability 9.0"):
                gc.plan("float64", np.float64, 10, 10, 8, sym=True, config=name, cc=80)
    assert gc.plan("float64", np.float64, 10, 10, 8, sym=True, cc=80).config == "default"
    # 4 stages of m16n8k16 on a 99 KiB device: the ring shrinks to 2
    assert gc.plan("float64", np.float64, 10, 10, 8, sym=True, config="dmma_k16_s4",
                   smem_limit=99 * 1024).stages == 2
    with pytest.raises(ValueError, match="unknown gram config"):
        gc.plan("float64", np.float64, 10, 10, 8, sym=True, config="fastest")


def test_configuration_registers_fit_the_launch_bounds() -> None:
    """The float64 accumulators (2 registers a double) leave at least a third of the register
    budget that threads x min_blocks allow (64 Ki registers per SM, at most 255 a thread) for
    fragments and addresses; warp tiles split into mma tiles."""
    for cfg in gc.CONFIGS.values():
        m, n, _ = cfg.mma(0)
        wm, wn = cfg.warps
        acc_regs = 2 * (cfg.tile // wm) * (cfg.tile // wn) // 32
        budget = min(255, 65536 // (cfg.threads(0) * cfg.min_blocks))
        assert acc_regs <= 2 * budget // 3
        assert (cfg.tile // wm) % m == 0 and (cfg.tile // wn) % n == 0


def test_defines_hold_every_constant() -> None:
    d = gc.DEFAULT
    assert set(gc.DEFINES.values()) <= {d.tile, *d.warps, *d.f32_warps, d.f64_bk, d.tf32_bk,
                                        d.f64_pad, d.tf32_pad, d.group, *d.f64_mma, d.min_blocks}
    assert len(gc.DEFINES) == 13
    assert gc.DEFAULT == gc.GramConfig() and (d.f64_mma, d.stages) == ((8, 4), 3)
    for cfg in gc.CONFIGS.values():
        assert set(cfg.defines) == set(gc.DEFINES)


# --- TF32 rounding, the reference and the bounds -------------------------------------------------

def _tf32_by_frexp(x: np.ndarray) -> np.ndarray:
    """Independent model: 11 significant bits, to nearest, ties away from zero."""
    m, e = np.frexp(x.astype(np.float64))
    q = np.sign(m) * np.floor(np.abs(m) * 2.0**11 + 0.5)
    return np.ldexp(q / 2.0**11, e).astype(np.float32)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False,
                          allow_subnormal=False, min_value=-2.0**120, max_value=2.0**120),
                min_size=1, max_size=50))
def test_tf32_round_matches_an_independent_model(values) -> None:
    x = np.array(values, np.float32)
    r = tf32_round(x)
    assert (r.view(np.uint32) & 0x1FFF == 0).all()
    np.testing.assert_array_equal(r, _tf32_by_frexp(x))


def test_tf32_round_ties_away_and_specials() -> None:
    x = np.array([1 + 2.0**-11, -(1 + 2.0**-11), 1 + 2.0**-12, np.inf, -np.inf, 0.0],
                 np.float32)
    r = tf32_round(x)
    np.testing.assert_array_equal(r[:4], [1 + 2.0**-10, -(1 + 2.0**-10), 1.0, np.inf])
    assert r[4] == -np.inf and r[5] == 0.0
    assert np.isnan(tf32_round(np.array([np.nan], np.float32)))[0]


def _unit_rows(rng: np.random.Generator, m: int, n: int, walk: bool) -> np.ndarray:
    x = rng.standard_normal((m, n))
    if walk:
        x = np.cumsum(x, axis=1)
    x -= x.mean(axis=1, keepdims=True)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 20), st.integers(1, 20), st.integers(2, 400), st.booleans(),
       st.sampled_from(GRAM_PRECISIONS), st.integers(0, 2**32 - 1))
def test_reference_stays_within_the_stated_bound(ma, mb, n, walk, precision, seed) -> None:
    rng = np.random.default_rng(seed)
    a = (_unit_rows(rng, ma, n, walk) * rng.uniform(0.5, 3.0, (ma, 1))).astype(np.float32)
    b = (_unit_rows(rng, mb, n, walk) * rng.uniform(0.5, 3.0, (mb, 1))).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    got = gram_reference(a, b, precision)
    assert got.dtype == (np.float64 if precision == "float64" else np.float32)
    bound = gram_error_bound(precision, n, np.linalg.norm(a.astype(np.float64), axis=1),
                             np.linalg.norm(b.astype(np.float64), axis=1))
    assert (np.abs(got - exact) <= bound).all()


def test_reference_modes_are_distinct_and_symmetric() -> None:
    rng = np.random.default_rng(5)
    a = _unit_rows(rng, 30, 500, True).astype(np.float32)
    exact = a.astype(np.float64) @ a.astype(np.float64).T
    errs = {p: np.abs(gram_reference(a, None, p) - exact).max() for p in GRAM_PRECISIONS}
    assert errs["float64"] < 1e-15 < errs["float32"] < 1e-6 < errs["tf32"] < 2e-3
    for p in GRAM_PRECISIONS:
        c = gram_reference(a, precision=p)
        assert (c == c.T).all()
    with pytest.raises(ValueError, match="precision"):
        gram_reference(a, precision="float16")
    with pytest.raises(ValueError, match="equal columns"):
        gram_reference(a, a[:, :3])


def test_error_bounds_scale_with_norms_and_length() -> None:
    b1 = gram_error_bound("float64", 8192, [1.0], [1.0])
    assert b1.shape == (1, 1) and b1[0, 0] < 1e-9
    assert gram_error_bound("float32", 8192, [1.0], [1.0])[0, 0] <= 2e-6
    assert gram_error_bound("tf32", 8192, [2.0, 1.0], [3.0])[0, 0] == pytest.approx(
        6 * gram_error_bound("tf32", 8192, [1.0], [1.0])[0, 0])
    assert gram_error_bound("tf32", 8192, [1], [1]) > gram_error_bound("tf32", 64, [1], [1])


# --- the public function without a GPU ---------------------------------------------------------

def test_gram_refuses_without_a_capable_gpu() -> None:
    with pytest.raises(ValueError, match="unknown precision"):
        gram(np.zeros((2, 2)), precision="fp16")
    if not gram_available():
        with pytest.raises(DeviceUnavailableError, match="compute capability 8.0"):
            gram(np.zeros((2, 2), np.float32))
