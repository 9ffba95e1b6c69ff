"""The C launch (the extension ``warplab.core._launch``, ``core/launch.c``, built with the
package) on the CPU: where it is built, it runs against a fake ``libcuda.so.1`` whose
``cuLaunchKernel`` records what it was given (and whose ``cuMemcpyDtoHAsync_v2`` copies
from host addresses), in a subprocess (``dlopen`` reads ``LD_LIBRARY_PATH`` at process
start). Checks the packing of every format letter, the grid and block forms, the errors and
their driver codes; and, with or without the extension, that the Python side launches
through CuPy where there is no C launch, and tells a thread without a context by the driver's
code."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

from warplab.core import extensions, launch

BUILT = importlib.util.find_spec(launch.EXTENSION) is not None

FAKE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
static uint64_t rec[16];
static unsigned char params[16][16];
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned smem, void *stream, void **p, void **extra) {
    (void)extra;
    if ((uintptr_t)f == 0xbad) return 400;
    uint64_t v[] = {(uintptr_t)f, gx, gy, gz, bx, by, bz, smem, (uintptr_t)stream};
    memcpy(rec, v, sizeof v);
    if (smem == 64)  /* the call with nine arguments */
        for (int k = 0; k < 9; k++) memcpy(params[k], p[k], 16);
    return 0;
}
typedef struct { int id; char pad[4]; union { char b[64]; int v; void *a; } value; } attr_t;
typedef struct {
    unsigned gx, gy, gz, bx, by, bz, smem;
    void *stream;
    attr_t *attrs;
    unsigned n;
} cfg_t;
static uint64_t ex_rec[16];
/* refuses the handle 0xf00 as a device without the attribute would */
int cuLaunchKernelEx(const cfg_t *c, void *f, void **p, void **extra) {
    (void)extra;
    if ((uintptr_t)f == 0xf00) return 801;
    uint64_t v[] = {(uintptr_t)f, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->smem,
                    (uintptr_t)c->stream, c->n, c->n ? (uint64_t)c->attrs[0].id : 0,
                    c->n ? (uint64_t)c->attrs[0].value.v : 0, *(uint64_t *)p[0]};
    memcpy(ex_rec, v, sizeof v);
    return 0;
}
void fake_ex_record(uint64_t *out) { memcpy(out, ex_rec, sizeof ex_rec); }
int cuGetErrorName(int rc, const char **name) {
    *name = rc == 400 ? "CUDA_ERROR_INVALID_HANDLE" : rc == 700 ? "CUDA_ERROR_ILLEGAL_ADDRESS" : "?";
    return 0;
}
static uint64_t synced = 0;
/* "device" addresses are host addresses here: the copy is a memcpy */
int cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t n, void *stream) {
    (void)stream;
    if (src == 0xbad) return 700;
    memcpy(dst, (void *)(uintptr_t)src, n);
    return 0;
}
int cuStreamSynchronize(void *stream) { synced = (uintptr_t)stream; return 0; }
static int staged = 0;
int cuMemHostAlloc(void **p, size_t n, unsigned flags) { staged++; *p = malloc(n + flags); return 0; }
int cuMemFreeHost(void *p) { free(p); return 0; }
int fake_staged(void) { return staged; }
uint64_t fake_synced(void) { return synced; }
void fake_record(uint64_t *out) { memcpy(out, rec, sizeof rec); }
void fake_param(int k, unsigned char *out) { memcpy(out, params[k], 16); }
"""

SCRIPT = r"""
import ctypes, json
import numpy as np
from warplab.core import launch
fn = launch.function()
class Arr:
    class data:
        ptr = 0xDEAD0
out = {"status": launch.status()}
fn(0x1234, (2, 3), 128, 64, 7, b"aQqiIfdbp", Arr(), np.uint64(2**63 + 5), -3, np.int32(-7),
   9, 1.5, np.float64(2.25), np.array([1, 2, 3, 4], np.uint32), 0xBEEF)
lib = ctypes.CDLL("libcuda.so.1")
rec = (ctypes.c_uint64 * 16)()
lib.fake_record(rec)
out["record"] = list(rec)[:9]
raw = []
for k in range(9):
    b = (ctypes.c_ubyte * 16)()
    lib.fake_param(k, b)
    raw.append(bytes(b).hex())
out["params"] = raw
fn(0x1234, 5, (32, 2), 0, 0, b"")
lib.fake_record(rec)
out["dims"] = list(rec)[:9]
def caught(calls):  # name -> None, or [exception type, message] of each call
    got = {}
    for name, call in calls:
        try:
            call()
            got[name] = None
        except Exception as e:
            got[name] = [type(e).__name__, str(e), getattr(e, "code", None)]
    return got
out["errors"] = caught([
        ("letter", lambda: fn(1, 1, 1, 0, 0, b"z", 1)),
        ("count", lambda: fn(1, 1, 1, 0, 0, b"qq", 1)),
        ("int32", lambda: fn(1, 1, 1, 0, 0, b"i", 2**31)),
        ("uint32", lambda: fn(1, 1, 1, 0, 0, b"I", -1)),
        ("grid", lambda: fn(1, (1, 2, 3, 4), 1, 0, 0, b"")),
        ("float", lambda: fn(1, 1, 1, 0, 0, b"f", "x")),
        ("driver", lambda: fn(0xbad, 1, 1, 0, 0, b"")),
        ("args", lambda: fn(1, 1))])
mod = launch._module()
out["can_after"] = mod.can_launch_after()
mod.launch_after(0x5678, (4, 1), (256,), 0, 9, b"Q", np.uint64(77))
ex = (ctypes.c_uint64 * 16)()
lib.fake_ex_record(ex)
out["ex"] = list(ex)[:13]
mod.launch_after(0xf00, 3, 32, 0, 5, b"Q", np.uint64(1))  # refused: the plain launch
lib.fake_record(rec)
out["ex_fallback"] = list(rec)[:9]
read = launch.reader()
values = {}
for dt, v in [("int8", -5), ("uint8", 250), ("int16", -300), ("uint16", 65000), ("int32", -7),
              ("uint32", 2**32 - 1), ("int64", -2**62), ("uint64", 2**64 - 1),
              ("float32", 1.1), ("float64", -2.5e300), ("bool", True)]:
    a = np.array(v, dtype=dt)
    got = read(a.ctypes.data, 33, a.dtype.char)
    values[dt] = [type(got).__name__, got == a.item(), type(got) is type(a.item())]
lib.fake_synced.restype = ctypes.c_uint64
out["synced"] = lib.fake_synced()
out["staged"] = lib.fake_staged()  # one staging buffer for this thread, however many reads
out["values"] = values
copy = launch.copier()
into = {}
for n in (1, 24, 256, 1000, 5000):  # the staging buffer grows at 1000 (512 -> 1024) and 5000
    src = np.arange(n, dtype=np.uint8) ^ 0x5A
    dst = np.zeros(n, np.uint8)
    into[str(n)] = [copy(src.ctypes.data, 44, dst) is None, bool((dst == src).all())]
out["into"] = into
out["into_synced"] = lib.fake_synced()
out["into_staged"] = lib.fake_staged()
f = np.zeros((2, 3), np.float64)
copy(np.arange(6.0).ctypes.data, 44, f)
out["into_shape"] = f.tolist()
out["into_errors"] = caught([("args", lambda: copy(1, 0)),
                             ("readonly", lambda: copy(1, 0, b"abcd")),
                             ("strided", lambda: copy(1, 0, np.zeros(8)[::2])),
                             ("driver", lambda: copy(0xbad, 0, np.zeros(2)))])
out["into_empty"] = copy(0xbad, 0, np.zeros(0)) is None  # nothing to copy: no driver call
out["read_errors"] = caught([("kind", lambda: read(1, 0, "e")),
                             ("kind_len", lambda: read(1, 0, "ff")),
                             ("driver", lambda: read(0xbad, 0, "d"))])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not BUILT:
        pytest.skip(f"{launch.EXTENSION} is not built here: {launch.status()}")
    if shutil.which("cc") is None:
        pytest.skip("no C compiler for the fake libcuda")
    tmp = tmp_path_factory.mktemp("fakecuda")
    src = tmp / "fake.c"
    src.write_text(FAKE)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(tmp / "libcuda.so.1"), str(src)],
                   check=True, capture_output=True)
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp), WARPLAB_C_LAUNCH="1",
               PYTHONPATH=os.pathsep.join([str(Path(launch.__file__).parents[2]),
                                           os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT)], env=env, check=False,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_built_extension_reports_the_c_launch(launched: dict) -> None:
    want = f"C launch: cuLaunchKernel from the built extension {launch.EXTENSION}"
    assert launched["status"] == want


def test_launch_after_asks_for_programmatic_serialization(launched: dict) -> None:
    assert launched["can_after"] is True
    # handle, grid, block, shared memory, stream, one attribute: id 6 (programmatic stream
    # serialization) set to 1, then the first argument's bytes
    assert launched["ex"] == [0x5678, 4, 1, 1, 256, 1, 1, 0, 9, 1, 6, 1, 77]
    # where the driver refuses it, the same launch the plain way
    assert launched["ex_fallback"] == [0xF00, 3, 1, 1, 32, 1, 1, 0, 5]


def test_launch_geometry(launched: dict) -> None:
    assert launched["record"] == [0x1234, 2, 3, 1, 128, 1, 1, 64, 7]
    assert launched["dims"] == [0x1234, 5, 1, 1, 32, 2, 1, 0, 0]


def test_every_format_letter_packs_its_bytes(launched: dict) -> None:
    got = [bytes.fromhex(h) for h in launched["params"]]
    assert int.from_bytes(got[0][:8], "little") == 0xDEAD0          # a: .data.ptr
    assert int.from_bytes(got[1][:8], "little") == 2**63 + 5         # Q: NumPy uint64
    assert int.from_bytes(got[2][:8], "little", signed=True) == -3  # q
    assert int.from_bytes(got[3][:4], "little", signed=True) == -7  # i: NumPy int32
    assert int.from_bytes(got[4][:4], "little") == 9                # I
    assert np.frombuffer(got[5][:4], np.float32)[0] == 1.5          # f
    assert np.frombuffer(got[6][:8], np.float64)[0] == 2.25         # d: NumPy float64
    assert np.array_equal(np.frombuffer(got[7], np.uint32), [1, 2, 3, 4])  # b: the bytes
    assert int.from_bytes(got[8][:8], "little") == 0xBEEF           # p


def test_errors_are_python_exceptions(launched: dict) -> None:
    e = launched["errors"]
    assert e["letter"][0] == "TypeError" and "'z'" in e["letter"][1]
    assert e["count"][0] == "TypeError" and "2 letters for 1 arguments" in e["count"][1]
    assert e["int32"][0] == "OverflowError"
    assert e["uint32"][0] == "OverflowError"
    assert e["grid"][0] == "TypeError"
    assert e["float"][0] == "TypeError"
    assert e["driver"] == ["DriverError",
                           "cuLaunchKernel failed: CUDA_ERROR_INVALID_HANDLE (400)", 400]
    assert e["args"][0] == "TypeError"
    assert all(v is None or v[0] == "DriverError" or v[2] is None for v in e.values())


def test_read_gives_what_item_gives(launched: dict) -> None:
    assert launched["values"] and all(ok and same for _, ok, same in launched["values"].values())
    assert launched["synced"] == 33  # the stream it was given is synchronised
    assert launched["staged"] == 1
    e = launched["read_errors"]
    assert e["kind"][0] == "TypeError" and "'e'" in e["kind"][1]
    assert e["kind_len"][0] == "TypeError"
    assert e["driver"] == ["DriverError",
                           "cuMemcpyDtoHAsync failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)", 700]


def test_read_into_copies_every_byte(launched: dict) -> None:
    assert launched["into"] and all(ok and same for ok, same in launched["into"].values())
    assert launched["into_synced"] == 44
    assert launched["into_staged"] == 3  # 256 bytes first, grown for 1000 and for 5000
    assert launched["into_shape"] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    e = launched["into_errors"]
    assert e["args"][0] == "TypeError" and e["readonly"][0] in ("TypeError", "BufferError")
    assert e["strided"][0] in ("ValueError", "BufferError", "TypeError")
    assert e["driver"] == ["DriverError",
                           "cuMemcpyDtoHAsync failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)", 700]
    assert launched["into_empty"]


def test_format_of_sample_arguments() -> None:
    sample = (launch.ARRAY, np.uint64(1), np.int64(2), np.int32(3), np.uint32(4),
              np.float32(5), np.float64(6), 7, 8.0, np.zeros(3, np.uint64), np.int16(1))
    assert launch.format_of(sample) == b"aQqiIfdqdbb"
    with pytest.raises(TypeError, match="bool"):
        launch.format_of((True,))
    with pytest.raises(TypeError, match="str"):
        launch.format_of(("x",))


def _kernel(calls: list) -> object:
    """A stand-in for a CuPy RawKernel: its compiled function's handle, and a call that
    records CuPy's launch."""

    def kernel(grid: tuple, block: tuple, args: tuple, **kw: int) -> None:
        calls.append((grid, block, args, kw))

    kernel.kernel = types.SimpleNamespace(ptr=0x1234)  # type: ignore[attr-defined]
    return kernel


def test_overlap_launches_after_only_from_sm90(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Prepared(overlap=True)`` takes the C ``launch_after`` on compute capability 9.0 and
    later where the driver has it; the plain C launch elsewhere, and without ``overlap``."""
    calls: list = []
    ext = types.SimpleNamespace(driver=lambda: None, can_launch_after=lambda: True,
                                launch=lambda *a: calls.append("plain"),
                                launch_after=lambda *a: calls.append("after"))
    monkeypatch.setattr(launch, "_ext", ext)
    kernel = _kernel([])
    for cc in ("80", "90", "100"):
        device = types.SimpleNamespace(compute_capability=cc)
        stream = types.SimpleNamespace(ptr=0)
        monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=types.SimpleNamespace(
            Device=lambda d=device: d, get_current_stream=lambda s=stream: s)))
        launch.Prepared(kernel, 1, 32, (np.uint64(1),), overlap=True)(np.uint64(1))
        launch.Prepared(kernel, 1, 32, (np.uint64(1),))(np.uint64(1))
    assert calls == ["plain", "plain", "after", "plain", "after", "plain"]
    calls.clear()
    ext.can_launch_after = lambda: False  # a driver without cuLaunchKernelEx
    launch.Prepared(kernel, 1, 32, (np.uint64(1),), overlap=True)(np.uint64(1))
    assert calls == ["plain"]


def test_without_c_the_launch_is_cupys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch, "_ext", None)
    assert launch.function() is None and launch.reader() is None and launch.copier() is None
    assert launch.status().startswith("CuPy's launch (fallback)")
    calls: list = []
    kernel = _kernel(calls)
    p = launch.Prepared(kernel, 4, (64,), (launch.ARRAY, 0), shared=128)
    assert not p.c
    p("x", 5)
    p.at((2, 2), "y", 6)
    p.on(1, 32, "z", 7)
    p.on_stream(9, 3, "w", 8)
    assert calls == [((4,), (64,), ("x", 5), {"shared_mem": 128}),
                     ((2, 2), (64,), ("y", 6), {"shared_mem": 128}),
                     ((1,), (32,), ("z", 7), {"shared_mem": 128}),
                     ((3,), (64,), ("w", 8), {"shared_mem": 128})]
    first = launch.by_args(kernel, (1,), (8,))
    first((launch.ARRAY, np.uint32(1)))
    assert calls[-1] == ((1,), (8,), (launch.ARRAY, np.uint32(1)), {})


def test_status_says_why_there_is_no_c_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    def absent(name: str) -> None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    monkeypatch.setattr(extensions.importlib, "import_module", absent)
    ext, why = launch._import()
    assert ext is None and "is not built" in why and "compiler" in why
    monkeypatch.setattr(launch, "_ext", None)
    monkeypatch.setattr(launch, "_WHY", why)
    assert launch.status() == f"CuPy's launch (fallback): {why}"
    monkeypatch.setenv("WARPLAB_C_LAUNCH", "0")  # the debugging switch, read at import
    assert launch._import() == (None, "WARPLAB_C_LAUNCH=0")
    fake = types.SimpleNamespace(driver=lambda: "no CUDA driver (libcuda.so.1: not found)")
    monkeypatch.setattr(launch, "_ext", fake)
    assert launch.function() is None
    assert launch.status() == ("CuPy's launch (fallback): the extension warplab.core._launch "
                               "is built, but no CUDA driver (libcuda.so.1: not found)")


class _FakeDriverError(RuntimeError):
    """An error of the C launch's kind: a message and the driver's code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _driver_errors() -> list:
    makers = [_FakeDriverError]
    if BUILT:
        ext = importlib.import_module(launch.EXTENSION)

        def real(message: str, code: int) -> RuntimeError:
            e = ext.DriverError(message)
            e.code = code
            return e

        makers.append(real)
    return makers


@pytest.mark.parametrize("make", _driver_errors())
def test_no_context_is_told_by_the_drivers_code(make, monkeypatch: pytest.MonkeyPatch) -> None:
    """A launch the driver refuses with CUDA_ERROR_INVALID_CONTEXT goes through CuPy once; any
    other code raises, whatever the message says."""
    launched: list = []
    refusal: list = []

    def c_launch(function: int, grid, block, shared: int, stream: int, fmt: bytes, *args):
        if refusal:
            raise refusal.pop()
        launched.append((function, grid, block, shared, stream, fmt, args))

    fake = types.SimpleNamespace(driver=lambda: None, launch=c_launch)
    monkeypatch.setattr(launch, "_ext", fake)
    monkeypatch.setattr(launch, "_stream", lambda: 7)
    calls: list = []
    p = launch.Prepared(_kernel(calls), 2, 32, (launch.ARRAY, np.int32(0)))
    assert p.c and launch.function() is c_launch
    p("x", np.int32(1))
    assert launched == [(0x1234, 2, 32, 0, 7, b"ai", ("x", np.int32(1)))] and not calls
    assert launch.CUDA_ERROR_INVALID_CONTEXT == 201
    refusal.append(make("cuLaunchKernel failed: CUDA_ERROR_INVALID_CONTEXT (201)", 201))
    p.at(3, "y", np.int32(2))
    assert calls == [((3,), (32,), ("y", np.int32(2)), {})]
    refusal.append(make("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (1)", 1))
    with pytest.raises(RuntimeError) as got:
        p.on(1, 64, "z", np.int32(3))
    assert got.value.code == 1
    refusal.append(RuntimeError("a message that says (201) but carries no code"))
    with pytest.raises(RuntimeError, match="carries no code"):
        p.on_stream(5, 1, "w", np.int32(4))
    assert len(calls) == 1


def test_extension_imports_where_built() -> None:
    if not BUILT:
        pytest.skip(f"{launch.EXTENSION} is not built here: {launch.status()}")
    ext = importlib.import_module(launch.EXTENSION)
    assert issubclass(ext.DriverError, RuntimeError)
    assert all(callable(getattr(ext, f)) for f in ("driver", "launch", "read", "read_into"))
    missing = ext.driver()
    assert missing is None or "CUDA driver" in missing or "cuLaunchKernel" in missing
    assert ext.driver() == missing  # answered once, kept
    if missing is not None:  # no driver here: the C functions refuse instead of crashing
        with pytest.raises(RuntimeError, match="libcuda is not open"):
            ext.launch(1, 1, 1, 0, 0, b"")
        with pytest.raises(RuntimeError, match="libcuda is not open"):
            ext.read(1, 0, "d")


def test_the_library_runs_no_compiler() -> None:
    """The library never builds anything at run time: no subprocess and no compiler lookup in
    ``src/warplab`` outside the lab (the C helpers are built with the package)."""
    root = Path(launch.__file__).parents[1]
    lab = root / "lab"
    found = []
    for path in root.rglob("*.py"):
        if lab in path.parents:
            continue
        text = path.read_text()
        if re.search(r"^\s*(import|from)\s+subprocess\b|shutil\.which|\bcache_dir\(\).*\.so",
                     text, re.M):
            found.append(str(path.relative_to(root)))
    assert not found
