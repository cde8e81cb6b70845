"""Joins train_bench's figures (fusegraph) with train_torch.py's (PyTorch,
same GPU, same run) into one JSON: per model, each case's median step time
and the ratios the training issue asks for.

  python3 bench/train/merge.py FUSEGRAPH.json TORCH.json GPU.txt OUT.json

GPU.txt is `nvidia-smi --query-gpu=name,driver_version,memory.total
--format=csv` output. Ratios are speed-ups: `vs_x = x's time / our time`
(above 1: fusegraph is faster).
"""

import json
import sys

# Dense bf16 tensor-core peak from the datasheet, per GPU name prefix.
BF16_PEAK_TFLOPS = {"NVIDIA H200": 989.4, "NVIDIA H100 80GB HBM3": 989.4}


def by_name(cases):
    return {c["name"]: c for c in cases}


def main():
    ours_path, torch_path, gpu_path, out_path = sys.argv[1:5]
    ours = json.load(open(ours_path))
    peer = json.load(open(torch_path))
    lines = [l.strip() for l in open(gpu_path) if l.strip()]
    name, driver, memory = [s.strip() for s in lines[1].split(",")][:3]
    peak = next((v for k, v in BF16_PEAK_TFLOPS.items() if name.startswith(k)), None)
    o, t = by_name(ours["cases"]), by_name(peer["cases"])
    summary = {}
    for model in ["mlp", "resnet18"]:
        f32 = o.get(f"{model} f32")
        graph = o.get(f"{model} bf16 autocast + cuda graph")
        compiled = t.get(f"{model} bf16 autocast torch.compile")
        if not (f32 and graph):
            continue
        s = {
            "ours_f32_eager_ms": f32["median_ms"],
            "ours_bf16_eager_ms": o[f"{model} bf16 autocast"]["median_ms"],
            "ours_bf16_graph_ms": graph["median_ms"],
            "graph_speedup_over_our_f32_eager": f32["median_ms"] / graph["median_ms"],
            "bf16_graph_tflops": graph["tflops"],
        }
        if peak:
            s["bf16_graph_fraction_of_bf16_peak"] = graph["tflops"] / peak
        for k, c in t.items():
            if k.startswith(model + " "):
                s[f"torch {k[len(model) + 1:]} ms"] = c["median_ms"]
        if compiled:
            s["vs_torch_compile"] = compiled["median_ms"] / graph["median_ms"]
        graphs = t.get(f"{model} bf16 autocast torch.compile reduce-overhead")
        if graphs:
            s["vs_torch_compile_reduce_overhead"] = graphs["median_ms"] / graph["median_ms"]
        eager = t.get(f"{model} bf16 autocast eager")
        if eager:
            s["vs_torch_bf16_eager"] = eager["median_ms"] / graph["median_ms"]
        summary[model] = s
    out = {
        "machine": {
            "gpu": name,
            "driver": driver,
            "memory": memory,
            "bf16_dense_peak_tflops": peak,
            "fusegraph_backend": ours.get("describe"),
            "torch": peer["machine"],
        },
        "summary": summary,
        "fusegraph": ours,
        "torch": peer,
    }
    json.dump(out, open(out_path, "w"), indent=2)
    for model, s in summary.items():
        print(model, json.dumps(s, indent=1))


if __name__ == "__main__":
    main()
