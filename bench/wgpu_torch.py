#!/usr/bin/env python3
"""PyTorch (CUDA) on the cases of `fusegraph bench --suite wgpu`, on the same
GPU in the same run, merged with fusegraph's JSON into bench/results/wgpu.json.

Usage: wgpu_torch.py --fusegraph FUSEGRAPH_JSON --out OUT_JSON [--quick]

Each case: 5 warm-up runs, then N timed runs (CUDA events around each, the
device synchronized before reading them); median, p10 and p90 in seconds.
Results are checked against a float64 computation in the same run. The copy
bandwidth (`dst.copy_(src)`, bytes read + written) is the hardware figure
the bandwidth-bound cases are compared with; torch's sgemm (TF32 off) is the
peer for the matmul.
"""
import argparse
import json
import platform
import statistics

import torch


def stats(times):
    times = sorted(times)

    def q(p):
        pos = p * (len(times) - 1)
        lo, hi = int(pos), min(int(pos) + 1, len(times) - 1)
        return times[lo] + (times[hi] - times[lo]) * (pos - lo)

    return {"reps": len(times), "median_s": q(0.5), "p10_s": q(0.1), "p90_s": q(0.9), "min_s": times[0]}


def time_cuda(fn, reps, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(end) / 1e3)
    return stats(out)


def rel_err(got, want):
    got, want = got.double(), want.double()
    return float((got - want).abs().max() / want.abs().max().clamp_min(1e-300))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fusegraph", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False  # sgemm, as the WGSL kernel computes in f32
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    big = (1 << 22) if args.quick else (64 << 20)
    mm = 1024 if args.quick else 4096
    g = torch.Generator(device=dev).manual_seed(0)
    x, y, z = (torch.randn(big, device=dev, generator=g) for _ in range(3))
    dst = torch.empty_like(x)
    a, b = (torch.randn(mm, mm, device=dev, generator=g) for _ in range(2))
    s = torch.randn(mm, mm, device=dev, generator=g)
    tiny = torch.randn(16, device=dev, generator=g)
    reps = (lambda n: max(3, n // 10)) if args.quick else (lambda n: n)

    def chain(t):
        for i in range(100):
            t = [lambda v: v * 0.9, lambda v: v + 0.1, torch.tanh, lambda v: v - 0.05][i % 4](t)
        return t

    torch_cases = {}
    st = time_cuda(lambda: dst.copy_(x), reps(100))
    copy_gbps = 8.0 * big / st["median_s"] / 1e9
    torch_cases["copy"] = {"what": "dst.copy_(src), 64M f32", "stats": st, "gbps": copy_gbps,
                           "check_rel_err": rel_err(dst, x)}
    st = time_cuda(lambda: torch.relu(x * y + z), reps(100))
    torch_cases["fused3_64m_f32"] = {"what": "torch.relu(x * y + z) eager (3 kernels)", "stats": st,
                                     "gbps": 16.0 * big / st["median_s"] / 1e9,
                                     "check_rel_err": rel_err(torch.relu(x * y + z)[:65536],
                                                              torch.relu(x.double() * y.double() + z.double())[:65536])}
    st = time_cuda(lambda: torch.softmax(s, -1), reps(100))
    torch_cases["softmax_4096x4096_f32"] = {"what": "torch.softmax(s, -1)", "stats": st,
                                            "gbps": 8.0 * mm * mm / st["median_s"] / 1e9,
                                            "check_rel_err": rel_err(torch.softmax(s, -1)[:8], torch.softmax(s[:8].double(), -1))}
    st = time_cuda(lambda: a @ b, reps(50))
    torch_cases["matmul_4096_f32"] = {"what": "a @ b, f32, TF32 off (cuBLAS sgemm)", "stats": st,
                                      "tflops": 2.0 * mm ** 3 / st["median_s"] / 1e12,
                                      "check_rel_err": rel_err((a @ b)[:8], a[:8].double() @ b.double())}
    st = time_cuda(lambda: chain(tiny), reps(100))
    torch_cases["chain100_tiny"] = {"what": "100 eager ops on 16 f32 (100 launches)", "stats": st,
                                    "check_rel_err": rel_err(chain(tiny), chain(tiny.double()))}

    with open(args.fusegraph) as f:
        fg = json.load(f)
    by = {c["name"]: c for c in fg["cases"]}
    # Compare GPU time with GPU time: fusegraph's pipelined figure (ops back to
    # back, one synchronize) against CUDA-event timings; the end-to-end
    # latency (one synchronize per op) is kept beside it.
    for c in by.values():
        if "pipelined" in c:
            c["e2e_median_s"] = c["stats"]["median_s"]
            c["gbps_e2e"] = c["gbps"]
            c["gbps"] = c["pipelined"]["gbps"]
    def gpu_time(name, key, scale=1.0):
        # The kernels' own time from timestamp queries, over `scale` (None without them).
        g = by.get(name, {}).get("gpu_time")
        return g[key] / scale if g else None

    summary = {}
    if "matmul_4096_f32" in by:
        t = by["matmul_4096_f32"].get("pipelined", by["matmul_4096_f32"]["stats"])["median_s"]
        tf = 2.0 * mm ** 3 / t / 1e12
        summary["matmul_4096_f32"] = {"fusegraph_tflops": tf, "torch_sgemm_tflops": torch_cases["matmul_4096_f32"]["tflops"],
                                      "ratio_vs_sgemm": tf / torch_cases["matmul_4096_f32"]["tflops"],
                                      "fusegraph_tflops_gpu_time": gpu_time("matmul_4096_f32", "gflops", 1e3),
                                      "target": ">= 25 TFLOP/s and >= 50% of sgemm"}
    for name, target in [("fused3_64m_f32", ">= 80% of copy bandwidth"), ("softmax_4096x4096_f32", ">= 70% of copy bandwidth")]:
        if name in by:
            gb = by[name]["gbps"]
            summary[name] = {"fusegraph_gbps": gb, "torch_gbps": torch_cases[name]["gbps"], "copy_gbps": copy_gbps,
                             "fusegraph_gbps_e2e": by[name].get("gbps_e2e"),
                             "fraction_of_copy": gb / copy_gbps, "ratio_vs_torch": gb / torch_cases[name]["gbps"],
                             "target": target}
            g = gpu_time(name, "gbps")
            if g:
                summary[name].update({"fusegraph_gbps_gpu_time": g, "fraction_of_copy_gpu_time": g / copy_gbps,
                                      "ratio_vs_torch_gpu_time": g / torch_cases[name]["gbps"]})
    if "copy_64m_f32" in by:
        summary["copy_64m_f32"] = {"fusegraph_gbps": by["copy_64m_f32"]["gbps"], "fusegraph_gbps_e2e": by["copy_64m_f32"].get("gbps_e2e"), "torch_copy_gbps": copy_gbps,
                                   "fraction_of_copy": by["copy_64m_f32"]["gbps"] / copy_gbps,
                                   "fusegraph_gbps_gpu_time": gpu_time("copy_64m_f32", "gbps"),
                                   "fraction_of_copy_gpu_time": gpu_time("copy_64m_f32", "gbps", copy_gbps)}
    if "chain100_tiny" in by:
        summary["chain100_tiny"] = {"fusegraph_ms": by["chain100_tiny"]["stats"]["median_s"] * 1e3,
                                    "fusegraph_pipelined_ms": by["chain100_tiny"].get("pipelined", {}).get("median_s", float("nan")) * 1e3,
                                    "torch_eager_ms": torch_cases["chain100_tiny"]["stats"]["median_s"] * 1e3,
                                    "target": "<= 2 ms"}
    props = torch.cuda.get_device_properties(0)
    doc = {
        "suite": "wgpu",
        "machine": {"gpu": props.name, "gpu_memory_bytes": props.total_memory, "sm_count": props.multi_processor_count,
                    "host": platform.node(), "python": platform.python_version(), "torch": torch.__version__,
                    "cuda": torch.version.cuda},
        "summary": summary,
        "fusegraph": fg,
        "torch": {"timing": "CUDA events around each call; 5 warm-up runs; median, p10, p90", "cases": torch_cases},
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    for k, v in summary.items():
        print(k, json.dumps(v))


if __name__ == "__main__":
    main()
