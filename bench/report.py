#!/usr/bin/env python3
"""Writes BENCHMARKS.md from the result files in bench/results/ (no
measurement here: every figure is read from a JSON file a benchmark run
wrote). Usage: python3 bench/report.py [--out BENCHMARKS.md]"""

import argparse
import json
import os

import plots

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def load(name):
    path = os.path.join(RESULTS, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def ms(s):
    if s is None:
        return "n/a"
    return f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


def ratio(x):
    return "n/a" if x is None else f"{x:.2f}×"


def pct(x):
    return "" if x is None else f"{x * 100:.0f}%"


def figure(name, svg, alt):
    """Writes bench/results/<name> and returns the Markdown that shows it."""
    with open(os.path.join(RESULTS, name), "w") as f:
        f.write(svg)
    return f"![{alt}](bench/results/{name})"


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def fusion_and_transpose(cases, t_of, peer_of, peer, chain, mm, views):
    """One paragraph each on fusion (the 10-op chain fused vs fusion off)
    and on a transposed right operand (view vs copy vs contiguous), from
    the rows of one suite. `t_of`/`peer_of` read a row's median times."""
    by = {c["name"]: c for c in cases}
    out = []
    f, u = by.get(chain + "_fused"), by.get(chain + "_unfused")
    if f and u:
        out.append(f"Fusion, a 10-op elementwise chain (x * 1.01 + s, five times): fused {ms(t_of(f))} (1 kernel), fusion off "
                   f"{ms(t_of(u))} (10 kernels): {t_of(u) / t_of(f):.1f}x faster fused; "
                   f"{peer} {ms(peer_of(u))} (fused row over it: {peer_of(u) / t_of(f):.2f}x).")
    rows = [(label, by.get(name)) for label, name in views]
    if all(r for _, r in rows):
        parts = [f"{label} {ms(t_of(r))}" + (f" ({peer} {ms(peer_of(r))})" if peer_of(r) else "") for label, r in rows]
        out.append(f"A transposed right operand ({mm}): " + "; ".join(parts) + ".")
    return "\n\n".join(out)


def cpu_section(d):
    m = d.get("machine", {})
    rows = []
    for c in d["cases"]:
        fg = c["fusegraph"]
        ok = c["fusegraph_check"].get("ok")
        np_ok = (c.get("numpy_check") or {}).get("ok")
        rows.append([
            c["name"], ms(fg["median_s"]), f"{ms(fg['p10_s'])} / {ms(fg['p90_s'])}",
            ms((c.get("numpy") or {}).get("median_s")), ratio(c.get("ratio_numpy_over_fusegraph")),
            f"{c['gflops']:.1f}" if c.get("gflops") else "", f"{c['gbps']:.1f}" if c.get("gbps") else "",
            pct(c.get("fraction_of_roofline")), "ok" if ok and np_ok is not False else "FAILED",
        ])
    return "\n\n".join([
        "## CPU: fusegraph vs NumPy",
        f"Machine: {m.get('cpu_model', '?')}, {m.get('cores', '?')} cores; "
        f"{m.get('numpy', {}).get('version', '') if isinstance(m.get('numpy'), dict) else ''}"
        "ratio = NumPy time / fusegraph time (above 1: fusegraph is faster), measured one after the other in one run. "
        "Roofline = the larger of FLOP/s over the estimated peak and bytes/s over measured memcpy bandwidth.",
        table(["case", "fusegraph", "p10 / p90", "NumPy", "ratio", "GFLOP/s", "GB/s", "roofline", "checks"], rows),
        "![CPU ratios](bench/results/cpu.svg)" if os.path.exists(os.path.join(RESULTS, "cpu.svg")) else "",
        fusion_and_transpose(
            d["cases"], lambda c: c["fusegraph"]["median_s"], lambda c: (c.get("numpy") or {}).get("median_s"), "NumPy",
            "chain_10op_16m", "f32 1024",
            [("as a strided view", "matmul_1024_transposed_rhs"),
             ("made contiguous by a copy kernel first", "matmul_1024_copied_rhs"),
             ("a contiguous operand", "matmul_1024")]),
        "Reproduce: `bench/run_cpu.sh` (writes cpu.json, cpu.svg, cpu.md).",
    ])


def cuda_section(d):
    gpu = d.get("gpu") or {}
    gpu = {"name": gpu} if isinstance(gpu, str) else gpu
    peers = d.get("peers") or {}
    rows = []
    for c in d["cases"]:
        peer_cols = []
        for p in ("torch", "torch.compile", "cupy"):
            peer_cols.append(ratio(c.get(f"speedup_vs_{p}")))
        tf = c.get("tflops")
        rows.append([
            c["name"], ms(c.get("fusegraph_s")), *peer_cols,
            f"{tf:.1f}" if tf else "", f"{c['gbps']:.0f}" if c.get("gbps") else "",
            "ok" if (c.get("check") or {}).get("ok") else "FAILED",
        ])
    extra = ""
    for c in d["cases"]:
        chk = c.get("check") or {}
        if chk and not chk.get("ok"):
            peer = "; torch's result fails the same check" if c.get("torch_ok") is False else ""
            extra += (f"{c['name']} FAILED its check: error {chk.get('max_err_rel_to_max', float('nan')):.2g} "
                      f"(relative to the largest value) over the tolerance {chk.get('tolerance', float('nan')):.2g}{peer}. ")
    copy = d.get("copy_bandwidth_gbps")
    if copy:
        extra += f"Copy bandwidth (torch, 64M f32, same run): {copy:.0f} GB/s. "
    g = d.get("dispatch_and_graph") or {}
    fg, tg = g.get("fusegraph") or {}, g.get("torch") or {}
    if fg:
        extra += (f"Eager dispatch: {fg['eager_us_per_op']:.2f} us/op (torch {tg.get('eager_us_per_op', float('nan')):.2f}); "
                  f"{fg['graph_nodes']} small kernels replayed as one CUDA graph: {fg['graph_replay']['median_s'] * 1e3:.3f} ms, "
                  f"{fg['graph_speedup']:.1f}x faster than eager (torch {tg.get('graph_speedup', float('nan')):.1f}x). ")
        b = fg.get("eager_host_breakdown_us_per_op")
        if b:
            extra += (f"Host time of one eager op ({b['of']}): building the lazy op {b['build_op']:.2f} us, graph walk and "
                      f"schedule-cache lookup {b['walk_and_lookup']:.2f} us, the CUDA backend's launch {b['backend_execute']:.2f} us.")
    cross = crossover_table(d)
    peer_names = {"torch": "vs torch eager", "torch.compile": "vs torch.compile", "cupy": "vs CuPy"}
    plot = figure("cuda.svg", plots.bars(
        "fusegraph on CUDA: peer time / fusegraph time (log scale)",
        f"{gpu.get('name', '?')}, same run; right of 1 = fusegraph faster",
        [c["name"] for c in d["cases"]],
        {label: [c.get(f"speedup_vs_{p}") for c in d["cases"]] for p, label in peer_names.items()}),
        "CUDA speed-ups")
    return "\n\n".join([
        "## CUDA: fusegraph vs PyTorch, torch.compile, CuPy",
        f"GPU: {gpu.get('name', '?')}; peers: {', '.join(f'{k} {v}' for k, v in peers.items())}. "
        "Columns are speed-ups (peer time / fusegraph time; above 1: fusegraph is faster), same GPU, same run.",
        table(["case", "fusegraph", "vs torch", "vs torch.compile", "vs CuPy", "TFLOP/s", "GB/s", "checks"], rows),
        plot,
        extra,
        fusion_and_transpose(
            d["cases"], lambda c: c["fusegraph_s"], lambda c: c.get("torch_s"), "torch eager",
            "chain_10op_64m_f32", "f32 4096",
            [("as a view (a cuBLASLt transpose flag)", "matmul_4096_f32_rhs_t_view"),
             (".contiguous() then the matmul", "matmul_4096_f32_rhs_t_contiguous"),
             ("stored contiguous beforehand", "matmul_4096_f32_rhs_t_physical")]),
        cross,
        streams_table(d),
        "Reproduce: `./scripts/gpu-test.sh` here, then `OUT=$OUT bash .gpu-bin/cuda/run.sh` on the GPU machine "
        "(DEVELOPERS.md).",
    ])


def crossover_table(d):
    """The CPU/GPU crossover (what Device::Auto's threshold comes from) and 1000 matmuls vs bmm."""
    c = d.get("crossover") or {}
    fc, tc = c.get("fusegraph") or {}, c.get("torch") or {}
    if not fc:
        return ""
    trows = {r["n"]: r for r in tc.get("rows", [])}
    rows = []
    for r in fc["rows"]:
        t = trows.get(r["n"], {})
        tm = lambda k: ms(t[k]["median_s"]) if k in t else ""
        rows.append([str(r["n"]), ms(r["cpu"]["median_s"]), ms(r["gpu_end_to_end"]["median_s"]),
                     ms(r["gpu_resident"]["median_s"]), f"{ms(r['auto_end_to_end']['median_s'])} ({r['auto_ran_on']})",
                     f"{r['auto_over_best']:.2f}", tm("cpu"), tm("gpu_end_to_end"),
                     "ok" if r.get("check_ok") else "FAILED"])
    out = ["### CPU/GPU crossover and Device::Auto",
           "f32 matmul n x n from host inputs to a host result (times in ms): the CPU (all host cores), the GPU "
           "(upload, matmul, read back), the GPU with resident inputs, and Device::Auto (its ratio to the better of "
           "CPU and GPU); torch's CPU and GPU end to end in the same run.",
           table(["n", "cpu", "gpu end to end", "gpu resident", "auto", "auto / best", "torch cpu",
                  "torch gpu end to end", "checks"], rows),
           f"GPU faster end to end from n = {fc.get('crossover_n')} (torch: n = {tc.get('crossover_n')}); "
           f"Auto's threshold in this run: {fc.get('auto_min_gpu_flops', 0):.3g} FLOP."]
    pts = lambda rows, k: [(r["n"], r[k]["median_s"] * 1e3) for r in rows if k in r]
    out.append(figure("cuda_crossover.svg", plots.lines(
        "CPU/GPU crossover: f32 matmul n x n, host data in, host result out",
        "median time per call (log-log); Device::Auto should follow the lower of CPU and GPU",
        "n", "ms", {"fusegraph CPU": pts(fc["rows"], "cpu"), "fusegraph GPU": pts(fc["rows"], "gpu_end_to_end"),
                    "Device::Auto": pts(fc["rows"], "auto_end_to_end"), "torch CPU": pts(tc.get("rows", []), "cpu"),
                    "torch GPU": pts(tc.get("rows", []), "gpu_end_to_end")}), "crossover"))
    m = d.get("matmuls_vs_bmm") or {}
    fm, tm_ = m.get("fusegraph") or {}, m.get("torch") or {}
    if fm:
        out.append(f"{fm['batch']} separate 128x128 f32 matmuls, each realized: {fm['separate']['median_s'] * 1e3:.3f} ms "
                   f"(torch {tm_.get('separate', {}).get('median_s', float('nan')) * 1e3:.3f} ms); one bmm over the same data "
                   f"{fm['bmm']['median_s'] * 1e3:.3f} ms, {fm['bmm_speedup']:.0f}x faster (torch {tm_.get('bmm_speedup', float('nan')):.0f}x).")
    return "\n\n".join(out)


def streams_table(d):
    """Chunked upload -> compute -> read back: blocking copies vs pinned copy streams."""
    st = d.get("streams") or {}
    fs, ts = st.get("fusegraph") or {}, st.get("torch") or {}
    if not fs:
        return ""
    keys = [("blocking", "blocking (pageable, each copy waits)"), ("overlapped", "overlapped (pinned, two copy streams)"),
            ("compute_only", "compute alone"), ("h2d_pinned_only", "uploads alone"), ("d2h_pinned_only", "downloads alone")]
    rows = [[label, ms(fs[k]["median_s"]), ms((ts.get(k) or {}).get("median_s")),
             ratio((ts.get(k) or {}).get("median_s", 0) / fs[k]["median_s"] if ts.get(k) else None)] for k, label in keys]
    plot = figure("cuda_streams.svg", plots.bars(
        "Streams: chunked upload -> relu(x @ W) -> read back", "median time of the whole pipeline, ms (shorter is better)",
        [label for _, label in keys],
        {"fusegraph": [fs[k]["median_s"] * 1e3 for k, _ in keys],
         "torch": [(ts.get(k) or {}).get("median_s", 0) * 1e3 or None for k, _ in keys]}, log=False, unit=" ms"),
        "streams")
    return "\n\n".join([
        "### Streams: non-blocking copies vs blocking",
        f"{fs['what']}. Times of the whole pipeline; ratio = torch time / fusegraph time.",
        table(["pipeline", "fusegraph", "torch", "ratio"], rows),
        f"Overlap speed-up over blocking: {fs['speedup']:.2f}x (torch {ts.get('speedup', float('nan')):.2f}x). "
        f"Overlapped time over its slowest part alone (1.00 = perfect overlap): {fs['overlapped_over_ideal']:.2f} "
        f"(torch {ts.get('overlapped_over_ideal', float('nan')):.2f}). Pinned copy bandwidth: "
        f"{fs['h2d_gbps']:.1f} GB/s up, {fs['d2h_gbps']:.1f} GB/s down. Checks: {'ok' if fs.get('check_ok') else 'FAILED'}.",
        plot,
    ])


def wgpu_section(d):
    fg = d["fusegraph"]
    ad = fg.get("adapter", {})
    def gpu(c, key, fmt):
        g = c.get("gpu_time")
        return fmt(g[key]) if g else "-"

    rows = [[c["name"], ms(c.get("e2e_median_s", c["stats"]["median_s"])),
             ms(c["pipelined"]["median_s"]) if "pipelined" in c else "-",
             gpu(c, "median_s", ms),
             f"{c['pipelined']['gflops'] / 1e3:.2f}" if "pipelined" in c else "-",
             f"{c['pipelined']['gbps']:.0f}" if "pipelined" in c else "-",
             gpu(c, "gbps", lambda v: f"{v:.0f}"),
             "ok" if c["check"]["ok"] else "FAILED"] for c in fg["cases"]]
    srows = []
    for k, v in d.get("summary", {}).items():
        srows.append([k, ", ".join(f"{a} = {b:.3g}" if isinstance(b, float) else f"{a} = {b}" for a, b in v.items())])
    return "\n\n".join([
        "## wgpu (Vulkan) on the GPU machine",
        f"Adapter: {ad if isinstance(ad, str) else json.dumps(ad)}.",
        "End to end: build, realize and wait, one op at a time. Pipelined: ten realizations back to back, "
        "one wait, per op (this still holds wgpu's per-submission host work, 20-40 µs per op on these hosts). "
        "GPU time: the kernels' own time from timestamp queries, the figure to set beside a peer's CUDA-event time. "
        "TFLOP/s and the first GB/s are of the pipelined time. Each case ran after 1 s of back-to-back load "
        "(the Vulkan driver lowers the clocks while the host checks the previous case).",
        table(["case", "end to end", "pipelined", "GPU time", "TFLOP/s", "GB/s", "GB/s (GPU time)", "checks"], rows),
        "Against the targets (PyTorch on the same GPU in the same run):",
        table(["case", "figures"], srows),
        wgpu_plot(d),
        "Reproduce: `bench/run_wgpu_gpu.sh --build` here, then `OUT=$OUT bash bench/run_wgpu_gpu.sh` on the GPU machine.",
    ])


def wgpu_plot(d):
    """Each target case as a fraction of its peer figure (sgemm, copy bandwidth)."""
    sm = d.get("summary", {})
    keys = [k for k, v in sm.items() if v.get("ratio_vs_sgemm") or v.get("fraction_of_copy")]
    if not keys:
        return ""

    def frac(v, gpu_time):
        if "ratio_vs_sgemm" in v:
            t = v.get("fusegraph_tflops_gpu_time") if gpu_time else v["fusegraph_tflops"]
            return (t or 0) / v["torch_sgemm_tflops"]
        return (v.get("fraction_of_copy_gpu_time") if gpu_time else v["fraction_of_copy"]) or 0

    return figure("wgpu.svg", plots.bars(
        "wgpu on Vulkan: fraction of the GPU's peer figure (log scale)",
        "matmul: of cuBLAS sgemm's TFLOP/s; elementwise and softmax: of the copy bandwidth (same GPU, same run)",
        keys, {"pipelined": [frac(sm[k], False) for k in keys],
               "GPU time": [frac(sm[k], True) for k in keys]}), "wgpu fractions")


def wasm_section(d):
    def med(r, key):
        # bench.mjs records milliseconds.
        s = r.get(key)
        return ms(s["median_ms"] / 1e3) if isinstance(s, dict) and "median_ms" in s else "n/a"

    rows = []
    for r in d["results"]:
        rows.append([r["case"], f"{med(r, 'fusegraph_e2e')} / {med(r, 'fusegraph_compute')}",
                     f"{ratio(r.get('ratio_vs_tfjs_e2e'))} / {ratio(r.get('ratio_vs_tfjs_compute'))}",
                     ratio(r.get("ratio_vs_ort_e2e")),
                     f"{med(r, 'fusegraph_e2e_into')} ({ratio(r.get('ratio_vs_tfjs_e2e_into'))})",
                     f"{r['fusegraph_gflops_compute']:.1f}" if r.get("fusegraph_gflops_compute") else "",
                     "ok" if r.get("ok") else "FAILED"])
    m = d.get("machine", {})
    v = d.get("versions", {})
    return "\n\n".join([
        "## wasm (Node, one thread): fusegraph vs tfjs-backend-wasm and onnxruntime-web",
        f"Machine: {m.get('cpu', '?')}, Node {m.get('node', '?')}; versions: {', '.join(f'{a} {b}' for a, b in v.items())}. "
        "Ratios are peer time / fusegraph time; e2e = typed arrays in, a fresh typed array out; compute = inputs already "
        "in the library; e2e into = fusegraph's e2e reading into one array the caller reuses (`toArraySync(into)`), "
        "against tfjs's e2e, which has no such read (not like for like).",
        table(["case", "fusegraph e2e / compute", "vs tfjs-wasm e2e / compute", "vs onnxruntime-web e2e",
               "fusegraph e2e into (vs tfjs e2e)", "GFLOP/s", "checks"], rows),
        figure("wasm.svg", plots.bars(
            "wasm in Node: peer time / fusegraph time, end to end (log scale)", "right of 1 = fusegraph faster",
            [r["case"] for r in d["results"]],
            {"vs tfjs-wasm": [r.get("ratio_vs_tfjs_e2e") for r in d["results"]],
             "vs onnxruntime-web": [r.get("ratio_vs_ort_e2e") for r in d["results"]]}), "wasm ratios"),
        "Reproduce: see bench/wasm/ (`node bench/wasm/bench.mjs`).",
    ])


INTRO_TRAIN = (
    "One step = forward, backward and optimizer update. Eager: the step's graph "
    'is built, looked up in the schedule cache and launched every time. CUDA '
    'graph: the step is recorded once with `fusegraph::cuda::capture` and '
    'replayed; it keeps its state in place (`Optimizer::step_in_place`, '
    '`Tensor::assign`, `BatchNorm2d::set_running_stats`), so each replay reads '
    "the previous step's parameters. Benchmark: `native/examples/train_bench` "
    '(MLP 784-2048-2048-10 with Adam; ResNet-18 CIFAR stem, NHWC, SGD momentum '
    '0.9, lr 0.1; batch 256); peer: `bench/train/train_torch.py`; both run in '
    'one device call by `bench/train/run_gpu.sh` (build here, run there). '
).strip()

def train_section(d):
    """The training-step table from bench/train/merge.py's train.json, then
    the hand-written notes in bench/train/NOTES.md."""
    ours = {c["name"]: c for c in d["fusegraph"]["cases"]}
    torch = {c["name"]: c for c in d["torch"]["cases"]}

    def cell(table_, name, bold=False):
        c = table_.get(name)
        if c is None:
            return "n/a"
        text = f"{c['median_ms']:.3g} ms"
        return f"**{text}** ({c['tflops']:.1f} TFLOP/s)" if bold else text

    rows = []
    for label, key in (("MLP 784-2048-2048-10, Adam", "mlp"), ("ResNet-18 (CIFAR), SGD momentum", "resnet18")):
        graph = ours.get(f"{key} bf16 autocast + cuda graph")
        compiled = torch.get(f"{key} bf16 autocast torch.compile")
        vs = ratio(compiled["median_ms"] / graph["median_ms"]) if graph and compiled else "n/a"
        rows.append([label, cell(ours, f"{key} f32"), cell(ours, f"{key} bf16 autocast"),
                     cell(ours, f"{key} bf16 autocast + cuda graph", True), cell(torch, f"{key} f32 eager"),
                     cell(torch, f"{key} bf16 autocast eager"), cell(torch, f"{key} bf16 autocast torch.compile"),
                     f"**{vs}**"])
    m = d["machine"]
    notes_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train", "NOTES.md")
    notes = ""
    if os.path.exists(notes_path):
        with open(notes_path) as f:
            notes = "\n".join(line for line in f.read().splitlines() if not line.startswith("<!--")).strip()
    return "\n\n".join(p for p in [
        "## Training steps on CUDA",
        INTRO_TRAIN,
        f"Measured on an {m.get('gpu', '?')} (driver {m.get('driver', '?')}), fusegraph and PyTorch "
        f"{m.get('torch', {}).get('torch', '?')} one after the other in one device call; medians after 5 warm-ups. "
        "Results: [`bench/results/train.json`](bench/results/train.json).",
        table(["step, batch 256", "fusegraph f32 eager", "fusegraph bf16 eager", "fusegraph bf16 + CUDA graph",
               "torch f32 eager", "torch bf16 eager", "torch bf16 torch.compile", "ours (graph) vs torch.compile"], rows),
        notes,
    ] if p)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="BENCHMARKS.md")
    args = ap.parse_args()
    parts = [
        "# fusegraph benchmarks",
        "Every table is generated by `python3 bench/report.py` from the JSON files in `bench/results/`, which the "
        "benchmark programs write (machine details, medians, p10/p90, checks against a reference in the same run). "
        "Method: 5 warm-ups, then 100 timed repetitions (fewer for slow cases), median reported, device synchronized "
        "before the clock stops, every result checked. Peers run side by side in the same run; speeds are given as "
        "ratios to them. Shared machines are noisy: compare ratios, not absolute times across runs.",
    ]
    for name, render in (("cpu.json", cpu_section), ("cuda.json", cuda_section), ("wgpu.json", wgpu_section),
                         ("wasm.json", wasm_section), ("train.json", train_section)):
        d = load(name)
        if d is None:
            parts.append(f"## {name}\n\nNot measured yet.")
            continue
        try:
            parts.append(render(d))
        except (KeyError, TypeError) as e:
            parts.append(f"## {name}\n\nCould not render ({e!r}); see bench/results/{name}.")
    known = {"cpu.json", "cuda.json", "wgpu.json", "wasm.json", "train.json"}
    others = sorted(f for f in os.listdir(RESULTS) if f.endswith(".json") and f not in known and not f.startswith("cuda_"))
    if others:
        parts.append("## Other results\n\n" + "\n".join(f"- [`bench/results/{f}`](bench/results/{f})" for f in others))
    with open(args.out, "w") as f:
        f.write("\n\n".join(p for p in parts if p) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
