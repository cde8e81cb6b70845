#!/usr/bin/env python3
"""The CPU suite's cases in NumPy, timed the same way as `fusegraph bench --suite cpu`.

Inputs are the same bits as on the Rust side (see `fill`), so the driver can
compare checksums of the two results. Every result is also checked against
the same computation in float64. Writes one JSON file.
"""

import argparse
import json
import os
import platform
import sys
import time

import numpy as np
from threadpoolctl import threadpool_info

GOLDEN = 0.6180339887498949


def fill(shape, seed):
    """2 * frac(i * GOLDEN + seed * 0.1) - 1 in float64, rounded to float32 (as `measure::fill`)."""
    n = int(np.prod(shape))
    x = np.arange(n, dtype=np.float64) * GOLDEN + seed * 0.1
    return (np.modf(x)[0] * 2.0 - 1.0).astype(np.float32).reshape(shape)


def noise(shape, seed):
    """Uniform [-1, 1) from splitmix64 of (index ^ seed << 32), rounded to float32 (as `measure::noise`)."""
    n = int(np.prod(shape))
    with np.errstate(over="ignore"):
        z = (np.arange(n, dtype=np.uint64) ^ np.uint64(seed << 32)) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    u = (z >> np.uint64(11)).astype(np.float64) * (1.0 / 2**53)
    return (u * 2.0 - 1.0).astype(np.float32).reshape(shape)


def recon_err(recon, a):
    """max |recon - a| / max |a| in float64."""
    a = a.astype(np.float64)
    return float(np.abs(recon - a).max() / np.abs(a).max())


def decomp_cases(r):
    n = 512
    a = noise((n, n), 31)
    x = noise((n, n), 32).astype(np.float64)
    spd = (x @ x.T / n + np.eye(n)).astype(np.float32)
    w = lambda t: t.astype(np.float64)

    def svd_check(_):
        u, s, vt = np.linalg.svd(a, full_matrices=False)
        return recon_err(w(u) * w(s) @ w(vt), a)

    def qr_check(_):
        q, rr = np.linalg.qr(a)
        return recon_err(w(q) @ w(rr), a)

    def chol_check(_):
        l = w(np.linalg.cholesky(spd))
        return recon_err(l @ l.T, spd)

    return [
        ("svd_512", r(20), lambda: np.linalg.svd(a, full_matrices=False)[1], svd_check, 1e-4),
        ("qr_512", r(50), lambda: np.abs(np.linalg.qr(a)[1]), qr_check, 1e-4),
        ("cholesky_512", r(100), lambda: np.linalg.cholesky(spd), chol_check, 1e-4),
    ]


def timed(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(max(reps, 1)):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    ts = np.array(ts)
    return {
        "warmup": warmup,
        "reps": len(ts),
        "median_s": float(np.median(ts)),
        "p10_s": float(np.percentile(ts, 10)),
        "p90_s": float(np.percentile(ts, 90)),
        "min_s": float(ts.min()),
    }


def err(got, want, scale=None):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    scale = float(np.abs(want).max()) if scale is None else scale
    return float(np.abs(got - want).max() / scale) if scale > 0 else float(np.abs(got - want).max())


def chain(s):
    y = s
    for i in range(10):
        y = y * np.float32(1.01) if i % 2 == 0 else y + s
    return y


# The cross-check's scale for sums that cancel: the input's sum (or mean) of magnitudes.
SCALES = {}


def cases(quick):
    r = (lambda full: max(full // 10, 3)) if quick else (lambda full: full)
    out = []
    for n, reps, seeds in [(512, r(100), (11, 12)), (1024, r(100), (11, 12)), (2048, r(20), (11, 12)), (4096, r(10), (11, 12))]:
        a, b = fill((n, n), seeds[0]), fill((n, n), seeds[1])
        out.append((f"matmul_{n}", reps, lambda a=a, b=b: a @ b, lambda y, a=a, b=b: err(y[:8], a[:8].astype(np.float64) @ b.astype(np.float64)), 1e-4))
    n = 16 << 20
    a, b, c = fill((n,), 1), fill((n,), 2), fill((n,), 3)
    out.append(("fused_mul_add_relu_16m", r(100), lambda a=a, b=b, c=c: np.maximum(a * b + c, np.float32(0)),
                lambda y, a=a, b=b, c=c: err(y, np.maximum(a.astype(np.float64) * b + c, 0)), 1e-4))
    # NumPy has no fusion: both rows run the same ten ops with a temporary each.
    s16 = fill((n,), 7)
    for name in ("chain_10op_16m_fused", "chain_10op_16m_unfused"):
        out.append((name, r(30), lambda s16=s16: chain(s16),
                    lambda y, s16=s16: err(y[:1 << 16], chain(s16[:1 << 16].astype(np.float64))), 1e-4))
    for name, xs, rs, reps in [
        ("bcast_1024x1024_plus_1024", (1024, 1024), (1024,), r(100)),
        ("bcast_1024x1024x3_plus_3", (1024, 1024, 3), (3,), r(100)),
        ("bcast_64x1024x1024_plus_64x1x1", (64, 1024, 1024), (64, 1, 1), r(30)),
    ]:
        x, y = fill(xs, 4), fill(rs, 5)
        out.append((name, reps, lambda x=x, y=y: x + y, lambda z, x=x, y=y: err(z, x.astype(np.float64) + y), 1e-4))
    x = fill((1024, 1024), 6)
    x64 = x.astype(np.float64)
    abs_sum = float(np.abs(x64).sum())
    SCALES.update({"sum_1024x1024": abs_sum, "mean_1024x1024": abs_sum / x64.size})
    out.append(("sum_1024x1024", r(100), lambda x=x: x.sum(), lambda y, x64=x64: err(y, x64.sum(), abs_sum), 1e-5))
    out.append(("mean_1024x1024", r(100), lambda x=x: x.mean(), lambda y, x64=x64: err(y, x64.mean(), abs_sum / x64.size), 1e-5))
    out.append(("max_1024x1024", r(100), lambda x=x: x.max(), lambda y, x64=x64: err(y, x64.max()), 1e-5))
    a, bt = fill((1024, 1024), 13), fill((1024, 1024), 14)
    out.append(("matmul_1024_transposed_rhs", r(100), lambda: a @ bt.T,
                lambda y: err(y[:8], a[:8].astype(np.float64) @ bt.T.astype(np.float64)), 1e-4))
    out.append(("matmul_1024_copied_rhs", r(100), lambda: a @ np.ascontiguousarray(bt.T),
                lambda y: err(y[:8], a[:8].astype(np.float64) @ bt.T.astype(np.float64)), 1e-4))
    ba, bb = fill((1000, 128, 128), 15), fill((1000, 128, 128), 16)
    out.append(("bmm_1000x128x128", r(50), lambda: np.matmul(ba, bb),
                lambda y: err(y[:4], np.matmul(ba[:4].astype(np.float64), bb[:4].astype(np.float64))), 1e-4))
    s = fill((8,), 21)
    tiny = 100 if quick else 1000
    out.append(("cached_10op_chain", tiny, lambda: chain(s), lambda y: err(y, chain(s.astype(np.float64))), 1e-4))
    out.extend(decomp_cases(r))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    warmup = 2 if args.quick else 5
    load_start = os.getloadavg()
    results = []
    ok = True
    for name, reps, fn, check, tol in cases(args.quick):
        st = timed(fn, warmup, reps)
        y = np.asarray(fn())
        e = check(y)
        ok &= e <= tol
        y64 = y.astype(np.float64)
        results.append({
            "name": name,
            "stats": st,
            "check": {"against": "the same computation in float64", "max_err_rel": e, "tolerance": tol, "ok": e <= tol},
            "checksum": {"sum": float(y64.sum()), "abs_sum": float(np.abs(y64).sum())},
            "checksum_scale": SCALES.get(name),
        })
        print(f"numpy {name:<32} {st['median_s'] * 1e3:10.3f} ms  ({st['reps']} reps)  err {e:.1e} {'ok' if e <= tol else 'FAILED'}", file=sys.stderr)
    blas = [
        {k: v for k, v in info.items() if k in ("user_api", "internal_api", "prefix", "version", "architecture", "num_threads", "threading_layer")}
        for info in threadpool_info()
    ]
    doc = {
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "blas": blas,
        "loadavg_1_5_15_start": load_start,
        "loadavg_1_5_15_end": os.getloadavg(),
        "timing": f"{warmup} warm-up calls, then the reps listed per case; median, p10, p90 of time.perf_counter",
        "cases": results,
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
