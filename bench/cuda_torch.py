"""Peers for `fusegraph bench --suite cuda`: PyTorch eager, torch.compile and
CuPy on the same cases, on the same GPU, in the same run. Timing: CUDA
events around each call, 5 warm-ups, median (p10, p90) of 100 reps (as the
Rust side). Every result is checked against a float64 reference on a
sample. Writes JSON (default bench/results/cuda_peers.json)."""

import json
import os
import sys
import time

import torch

try:
    import cupy as cp
except Exception:  # noqa: BLE001 - cupy is optional
    cp = None

QUICK = "--quick" in sys.argv
OUT = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--out=")), "bench/results/cuda_peers.json")
# --only=TEXT: only the sections whose case names contain TEXT (as the Rust
# suite's --only), for a quick side-by-side of a few cases.
ONLY = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")), None)
WARMUP, REPS = 5, (10 if QUICK else 100)
dev = torch.device("cuda")


def fill(shape, seed):
    """The fusegraph bench's `measure::fill`, bit for bit (f64 then f32)."""
    n = 1
    for d in shape:
        n *= d
    i = torch.arange(n, dtype=torch.float64, device=dev)
    x = torch.frac(i * 0.6180339887498949 + seed * 0.1) * 2.0 - 1.0
    return x.to(torch.float32).reshape(shape)


def timed(fn, reps=REPS):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    ts.sort()
    q = lambda p: ts[min(len(ts) - 1, int(round(p * (len(ts) - 1))))]
    return {"median_s": q(0.5), "p10_s": q(0.1), "p90_s": q(0.9), "reps": reps, "warmup": WARMUP}


def rel_err(got, want):
    got, want = got.double(), want.double()
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-30))


TOL = {"float32": 1e-4, "tf32": 1e-2, "float16": 1e-2, "bfloat16": 3e-2}
results = []


def record(name, peer, st, err, tol, flops, nbytes):
    t = st["median_s"]
    ok = err <= tol
    results.append({"name": name, "peer": peer, "stats": st, "max_err_rel_to_max": err, "tolerance": tol,
                    "ok": ok, "tflops": flops / t / 1e12, "gbps": nbytes / t / 1e9})
    print(f"{name:<28} {peer:<14} {t*1e3:9.3f} ms  {flops/t/1e12:8.1f} TFLOP/s {nbytes/t/1e9:7.0f} GB/s  err {err:.1e} {'ok' if ok else 'FAILED'}",
          flush=True)


def wall(fn, reps):
    """Wall-clock median (host data in and out: CUDA events cannot see it)."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    q = lambda p: ts[min(len(ts) - 1, int(round(p * (len(ts) - 1))))]
    return {"median_s": q(0.5), "p10_s": q(0.1), "p90_s": q(0.9), "reps": reps, "warmup": WARMUP}


def runs(*prefixes):
    """Whether a section whose case names start with one of `prefixes` runs."""
    return ONLY is None or any(ONLY in p or p in ONLY for p in prefixes)


def compiled(f):
    return torch.compile(f, dynamic=False)


# Copy bandwidth: a device-to-device copy of 256 MiB (bytes read + written).
if runs('copy_64m_f32'):
    n = 64 << 20
    src = fill([n], 1)
    dst = torch.empty_like(src)
    st = timed(lambda: dst.copy_(src))
    record("copy_64m_f32", "torch", st, rel_err(dst[:1 << 16], src[:1 << 16]), 0.0, 0.0, 8.0 * n)

# Matmuls.
if runs('matmul_'):
    sizes = [512, 1024] if QUICK else [512, 1024, 2048, 4096]
    mm_cases = [(s, "float32") for s in sizes]
    for s in ([1024] if QUICK else [4096, 8192]):
        mm_cases += [(s, "tf32"), (s, "float16"), (s, "bfloat16")]
    for s, label in mm_cases:
        dt = {"float32": torch.float32, "tf32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[label]
        a, b = fill([s, s], 11).to(dt), fill([s, s], 12).to(dt)
        torch.backends.cuda.matmul.allow_tf32 = label == "tf32"
        want = a[:4].double() @ b.double()
        out = torch.matmul(a, b)
        st = timed(lambda: torch.matmul(a, b))
        name = f"matmul_{s}_{'tf32' if label == 'tf32' else {'float32': 'f32', 'float16': 'f16', 'bfloat16': 'bf16'}[label]}"
        record(name, "torch", st, rel_err(out[:4], want), TOL[label], 2.0 * s**3, 3.0 * s * s * a.element_size())
        if cp is not None and label in ("float32", "float16"):  # no CuPy bf16; CUPY_TF32 is read at import
            ca, cb = cp.asarray(a), cp.asarray(b)
            co = cp.matmul(ca, cb)
            st = timed(lambda: cp.matmul(ca, cb))
            record(name, "cupy", st, rel_err(torch.as_tensor(co[:4], device=dev), want), TOL[label], 2.0 * s**3, 3.0 * s * s * a.element_size())
        del a, b, out
    torch.backends.cuda.matmul.allow_tf32 = False

# bmm.
if runs('bmm_'):
    nb = 100 if QUICK else 1000
    a, b = fill([nb, 128, 128], 13), fill([nb, 128, 128], 14)
    out = torch.bmm(a, b)
    st = timed(lambda: torch.bmm(a, b))
    record(f"bmm_{nb}x128x128_f32", "torch", st, rel_err(out[:2], a[:2].double() @ b[:2].double()), 1e-4,
           2.0 * nb * 128**3, 12.0 * nb * 128 * 128)

# Fused elementwise.
if runs('fused_'):
    n = (1 << 22) if QUICK else (64 << 20)
    x, y, z = fill([n], 1), fill([n], 2), fill([n], 3)
    for relu in (False, True):
        f = (lambda a, b, c: torch.relu(a * b + c)) if relu else (lambda a, b, c: a * b + c)
        name = f"fused_{'relu_' if relu else ''}64m_f32"
        h = 1 << 16
        want = f(x[:h].double(), y[:h].double(), z[:h].double())
        for peer, g in (("torch", f), ("torch.compile", compiled(f))):
            o = g(x, y, z)
            st = timed(lambda: g(x, y, z))
            record(name, peer, st, rel_err(o[:h], want), 1e-5, (3.0 if relu else 2.0) * n, 16.0 * n)
        if cp is not None:
            cx, cy, cz = cp.asarray(x), cp.asarray(y), cp.asarray(z)
            k = cp.ElementwiseKernel("float32 a, float32 b, float32 c", "float32 o",
                                     "o = max(a * b + c, 0.0f)" if relu else "o = a * b + c", "fg_fused")
            co = k(cx, cy, cz)
            st = timed(lambda: k(cx, cy, cz))
            record(name, "cupy", st, rel_err(torch.as_tensor(co[:h], device=dev), want), 1e-5, (3.0 if relu else 2.0) * n, 16.0 * n)
    del x, y, z

# The 10-op chain (x*1.01+s, five times): torch eager runs 10 kernels
# (fusegraph's "unfused" row does the same), torch.compile fuses it.
if runs('chain_10op'):
    def chain10(t):
        y = t
        for i in range(10):
            y = y * 1.01 if i % 2 == 0 else y + t
        return y

    n = (1 << 22) if QUICK else (64 << 20)
    s16 = fill([n], 7)
    h = 1 << 16
    want = chain10(s16[:h].double())
    for peer, g in (("torch", chain10), ("torch.compile", compiled(chain10))):
        o = g(s16)
        st = timed(lambda: g(s16))
        for variant in ("fused", "unfused"):
            record(f"chain_10op_64m_f32_{variant}", peer, st, rel_err(o[:h], want), 1e-5, 10.0 * n,
                   (25.0 if variant == "unfused" else 2.0) * 4.0 * n)
    del s16

# The CPU suite's broadcast adds and full reductions.
if runs('bcast_', 'sum_', 'mean_', 'max_'):
    for xs, rs in (((1024, 1024), (1024,)), ((1024, 1024, 3), (3,)), ((64, 1024, 1024), (64, 1, 1))):
        bx, by = fill(list(xs), 4), fill(list(rs), 5)
        ne = bx.numel()
        o = bx + by
        st = timed(lambda: bx + by)
        name = f"bcast_{'x'.join(map(str, xs))}_plus_{'x'.join(map(str, rs))}"
        ys = by[:1] if by.dim() == bx.dim() else by
        record(name, "torch", st, rel_err(o[:1], bx[:1].double() + ys.double()), 1e-5, ne, 8.0 * ne)
        del bx, by, o
    rx = fill([1024, 1024], 6)
    abs_sum = float(rx.double().abs().sum())
    for op, f, want, scale in (("sum", torch.sum, rx.double().sum(), abs_sum),
                               ("mean", torch.mean, rx.double().mean(), abs_sum / rx.numel()),
                               ("max", torch.max, rx.double().max(), None)):
        o = f(rx)
        st = timed(lambda: f(rx))
        err = float((o.double() - want).abs() / (scale if scale else want.abs()))
        record(f"{op}_1024x1024_f32", "torch", st, err, 1e-5, rx.numel(), 4.0 * rx.numel())
    del rx

# A transposed right operand at 4096: view, .contiguous() in the timed call, stored contiguous.
if runs('matmul_4096_f32_rhs_t'):
    if not QUICK:
        nt = 4096
        a, bt = fill([nt, nt], 11), fill([nt, nt], 12)
        phys = bt.t().contiguous()
        want = a[:4].double() @ bt.t().double()
        for label, f in (("view", lambda: a @ bt.t()), ("contiguous", lambda: a @ bt.t().contiguous()), ("physical", lambda: a @ phys)):
            o = f()
            st = timed(f)
            record(f"matmul_{nt}_f32_rhs_t_{label}", "torch", st, rel_err(o[:4], want), 1e-4, 2.0 * nt**3, 12.0 * nt * nt)
        del a, bt, phys

# Softmax and layer_norm.
if runs('softmax_', 'layer_norm_'):
    for r in ([1024] if QUICK else [4096, 32768]):
        for dt, label in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
            s = fill([r, 4096], 21).to(dt)
            w, bias = fill([4096], 22).to(dt), fill([4096], 23).to(dt)
            tol = 1e-4 if label == "f32" else 3e-2
            ne = r * 4096
            sm = lambda t: torch.softmax(t, -1)
            ln = lambda t: torch.nn.functional.layer_norm(t, (4096,), w, bias, 1e-5)
            want_sm = torch.softmax(s[:8].double(), -1)
            want_ln = torch.nn.functional.layer_norm(s[:8].double(), (4096,), w.double(), bias.double(), 1e-5)
            for op, f, want, fl in (("softmax", sm, want_sm, 5.0), ("layer_norm", ln, want_ln, 8.0)):
                for peer, g in (("torch", f), ("torch.compile", compiled(f))):
                    o = g(s)
                    st = timed(lambda: g(s))
                    record(f"{op}_{r}x4096_{label}", peer, st, rel_err(o[:8], want), tol, fl * ne, 2.0 * ne * s.element_size())

# SVD, QR, Cholesky of 512x512 f32 on the CPU suite's inputs (cpu_numpy.noise).
if runs('svd_', 'qr_', 'cholesky_'):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cpu_numpy import noise  # noqa: E402

    nd = 512
    a = torch.from_numpy(noise((nd, nd), 31)).to(dev)
    xs = torch.from_numpy(noise((nd, nd), 32)).double()
    spd = (xs @ xs.T / nd + torch.eye(nd, dtype=torch.float64)).float().to(dev)
    a64, spd64 = a.double(), spd.double()

    def recon(r, want):
        return float((r - want).abs().max() / want.abs().max())

    u, sv, vt = torch.linalg.svd(a, full_matrices=False)
    # The same SVD computed in float64 and rounded back, and with the QR-iteration
    # driver: both for accuracy against gesvdj's f32 result.
    u6, s6, v6 = (t.float() for t in torch.linalg.svd(a.double(), full_matrices=False))
    ug, sg, vg = torch.linalg.svd(a, full_matrices=False, driver="gesvd")
    q, rr = torch.linalg.qr(a)
    lc = torch.linalg.cholesky(spd).double()
    for name, f, err, fl, reps in (
        ("svd_512_f32", lambda: torch.linalg.svd(a, full_matrices=False)[1],
         recon(u.double() * sv.double() @ vt.double(), a64), 22.0 * nd**3, 20),
        ("svd_512_f32_via_f64", lambda: torch.linalg.svd(a.double(), full_matrices=False)[1].float(),
         recon(u6.double() * s6.double() @ v6.double(), a64), 22.0 * nd**3, 20),
        ("svd_512_f32_gesvd", lambda: torch.linalg.svd(a, full_matrices=False, driver="gesvd")[1],
         recon(ug.double() * sg.double() @ vg.double(), a64), 22.0 * nd**3, 20),
        ("qr_512_f32", lambda: torch.linalg.qr(a)[1].abs(), recon(q.double() @ rr.double(), a64), 8.0 / 3.0 * nd**3, 50),
        ("cholesky_512_f32", lambda: torch.linalg.cholesky(spd), recon(lc @ lc.T, spd64), nd**3 / 3.0, 100),
    ):
        st = timed(f, min(reps, REPS))
        record(name, "torch", st, err, 1e-4, fl, 8.0 * nd * nd)
    del a, xs, spd, a64, spd64, u, sv, vt, u6, s6, v6, ug, sg, vg, q, rr, lc

# Eager dispatch and graph replay: 1000 dependent `x + 1` on 1024 f32.
if runs('graph_1000_small_kernels'):
    x0 = fill([1024], 41)

    def chain():
        t = x0
        for _ in range(1000):
            t = t + 1.0
        return t

    st = timed(chain, 30)
    results.append({"name": "graph_1000_small_kernels", "peer": "torch", "eager": st,
                    "eager_us_per_op": st["median_s"] / 1000 * 1e6})
    g = torch.cuda.CUDAGraph()
    s_ = torch.cuda.Stream()
    s_.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s_):
        chain()
    torch.cuda.current_stream().wait_stream(s_)
    with torch.cuda.graph(g):
        gout = chain()
    st_g = timed(g.replay)
    ok = bool(torch.allclose(gout, x0 + 1000.0))
    results[-1].update({"graph_replay": st_g, "graph_speedup": st["median_s"] / st_g["median_s"], "check_ok": ok})
    print(f"torch eager {st['median_s']/1000*1e6:.2f} us/op; CUDA graph {st_g['median_s']*1e3:.3f} ms vs {st['median_s']*1e3:.3f} ms", flush=True)




# CPU/GPU crossover: f32 matmul n x n from host tensors to a host result.
if runs('crossover'):
    cross = []
    for n in ([64, 256, 512] if QUICK else [64, 128, 192, 256, 384, 512, 768, 1024, 2048]):
        reps = 20 if n >= 1024 else 50
        a, b = fill([n, n], 51).cpu(), fill([n, n], 52).cpu()
        cpu = wall(lambda: a @ b, reps)
        gpu = wall(lambda: (a.to(dev) @ b.to(dev)).cpu(), reps)
        ga, gb = a.to(dev), b.to(dev)
        res = timed(lambda: ga @ gb, reps)
        err = rel_err((a.to(dev) @ b.to(dev)).cpu(), a.double() @ b.double())
        cross.append({"n": n, "cpu": cpu, "gpu_end_to_end": gpu, "gpu_resident": res, "max_err_rel_to_max": err,
                      "ok": err <= TOL["float32"], "gpu_wins_end_to_end": gpu["median_s"] < cpu["median_s"]})
        print(f"torch crossover {n:>5}: cpu {cpu['median_s']*1e3:.3f} ms, gpu end to end {gpu['median_s']*1e3:.3f} ms, "
              f"resident {res['median_s']*1e3:.3f} ms", flush=True)
    n_cross = None
    for r in cross:
        if r["gpu_wins_end_to_end"] and n_cross is None:
            n_cross = r["n"]
        elif not r["gpu_wins_end_to_end"]:
            n_cross = None
    results.append({"name": "crossover", "peer": "torch", "rows": cross, "crossover_n": n_cross,
                    "cpu_threads": torch.get_num_threads()})
    del a, b, ga, gb

# 1000 separate 128x128 matmuls vs one bmm.
if runs('matmuls_vs_bmm'):
    nb = 100 if QUICK else 1000
    A, B = fill([nb, 128, 128], 61), fill([nb, 128, 128], 62)
    pairs = [(A[i], B[i]) for i in range(nb)]
    sep = timed(lambda: [x @ y for x, y in pairs], 30)
    bm = timed(lambda: torch.bmm(A, B), 90)
    err = rel_err(torch.bmm(A, B)[-1], A[-1].double() @ B[-1].double())
    results.append({"name": "matmuls_vs_bmm", "peer": "torch", "separate": sep, "bmm": bm,
                    "bmm_speedup": sep["median_s"] / bm["median_s"], "max_err_rel_to_max": err, "ok": err <= TOL["float32"]})
    print(f"torch {nb} separate matmuls {sep['median_s']*1e3:.3f} ms vs bmm {bm['median_s']*1e3:.3f} ms", flush=True)
    del A, B, pairs

# Streams: chunked upload -> relu(x @ W) -> read back, blocking pageable copies
# vs pinned buffers on two side streams (torch's documented overlap recipe:
# non_blocking copies, wait_stream, record_stream).
if runs('streams'):
    chunks, rows, kk, nn = (4, 512, 1024, 1024) if QUICK else (16, 2048, 4096, 4096)
    sreps = 5 if QUICK else 20
    W = fill([kk, nn], 71)
    xs = [fill([rows, kk], 100 + c).cpu() for c in range(chunks)]
    last_block = [None]

    def blocking():
        for x in xs:
            last_block[0] = torch.relu(x.to(dev) @ W).cpu()

    xs_pin = [x.pin_memory() for x in xs]
    outs_pin = [torch.empty(rows, nn, pin_memory=True) for _ in range(chunks)]
    s_up, s_down = torch.cuda.Stream(), torch.cuda.Stream()

    def overlapped():
        main = torch.cuda.current_stream()
        for x_pin, y_pin in zip(xs_pin, outs_pin):
            with torch.cuda.stream(s_up):
                xd = x_pin.to(dev, non_blocking=True)
            main.wait_stream(s_up)
            xd.record_stream(main)
            y = torch.relu(xd @ W)
            s_down.wait_stream(main)
            with torch.cuda.stream(s_down):
                y_pin.copy_(y, non_blocking=True)
            y.record_stream(s_down)

    resident = [x.to(dev) for x in xs]
    st_block = wall(blocking, sreps)
    st_over = wall(overlapped, sreps)
    st_comp = wall(lambda: [torch.relu(x @ W) for x in resident], sreps)
    st_h2d = wall(lambda: [x.to(dev, non_blocking=True) for x in xs_pin], sreps)
    ys = [torch.relu(x @ W) for x in resident]
    st_d2h = wall(lambda: [o.copy_(y, non_blocking=True) for o, y in zip(outs_pin, ys)], sreps)
    overlapped()
    torch.cuda.synchronize()
    want = torch.relu(xs[-1][:2].double() @ W.cpu().double())
    err = max(rel_err(outs_pin[-1][:2], want), rel_err(last_block[0][:2], want))
    ideal = max(st_comp["median_s"], st_h2d["median_s"], st_d2h["median_s"])
    results.append({"name": "streams", "peer": "torch", "blocking": st_block, "overlapped": st_over,
                    "compute_only": st_comp, "h2d_pinned_only": st_h2d, "d2h_pinned_only": st_d2h,
                    "ideal_s": ideal, "overlapped_over_ideal": st_over["median_s"] / ideal,
                    "speedup": st_block["median_s"] / st_over["median_s"],
                    "max_err_rel_to_max": err, "ok": err <= TOL["float32"]})
    print(f"torch streams: blocking {st_block['median_s']*1e3:.2f} ms, overlapped {st_over['median_s']*1e3:.2f} ms "
          f"({st_block['median_s']/st_over['median_s']:.2f}x); compute {st_comp['median_s']*1e3:.2f}, "
          f"h2d {st_h2d['median_s']*1e3:.2f}, d2h {st_d2h['median_s']*1e3:.2f} ms", flush=True)
    del xs, xs_pin, outs_pin, resident, ys, W

props = torch.cuda.get_device_properties(0)
doc = {
    "peers": {"torch": torch.__version__, "cuda": torch.version.cuda, "cupy": getattr(cp, "__version__", None),
              "triton": __import__("triton").__version__},
    "gpu": {"name": props.name, "sms": props.multi_processor_count, "memory_bytes": props.total_memory},
    "driver": os.popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader").read().strip(),
    "timing": "CUDA events around each call; 5 warm-ups; median/p10/p90 of the reps listed",
    "results": results,
    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
}
os.makedirs(os.path.dirname(OUT) or ".", exist_ok=True)
with open(OUT, "w") as fh:
    json.dump(doc, fh, indent=2)
print("wrote", OUT)
