#!/usr/bin/env python3
"""Merges the fusegraph and NumPy halves of the CPU suite into one JSON file
with machine details, per-case ratios and roofline fractions, and draws the
ratios as an SVG bar chart (hand-written SVG, no plotting library)."""

import argparse
import json
import os
import platform
import subprocess

import plots


def cmd(*args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_details():
    model, mem_kib = "unknown", 0
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem_kib = int(line.split()[1])
    except OSError:
        pass
    return {
        "cpu_model": model,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 2**20, 1),
        "kernel": platform.release(),
        "rustc": cmd("rustc", "--version"),
    }


def merge(fg, np_doc):
    np_cases = {c["name"]: c for c in np_doc["cases"]}
    m = fg["machine"]
    peak, bw = m["peak_gflops_estimate"], fg["memcpy_gbps"]
    rows = []
    for c in fg["cases"]:
        st = c["stats"]
        t = st["median_s"]
        row = {
            "name": c["name"],
            "what": c["what"],
            "reps": st["reps"],
            "fusegraph": {"median_s": t, "p10_s": st["p10_s"], "p90_s": st["p90_s"]},
            "kernels": c.get("kernels"),
            "kernels_unfused": c.get("kernels_unfused"),
            "fusegraph_check": c["check"],
        }
        for k in ("median_us", "phases_median_us", "kernel_median_us", "overhead_median_us", "build_graph_and_lookup_median_us",
                  "cache_hits_during_case", "cache_misses_during_case", "extra"):
            if k in c and c[k] != {}:
                row[k] = c[k]
        if "flops" in c:
            flops, nbytes = c["flops"], c["bytes"]
            row.update({
                "flops": flops,
                "bytes": nbytes,
                "gflops": flops / t / 1e9,
                "gbps": nbytes / t / 1e9,
                "fraction_of_peak_flops": flops / t / 1e9 / peak,
                "fraction_of_memcpy_bw": nbytes / t / 1e9 / bw,
                "fraction_of_roofline": max(flops / (peak * 1e9), nbytes / (bw * 1e9)) / t,
            })
        n = np_cases.get(c["name"])
        if n is not None:
            ns = n["stats"]
            row["numpy"] = {"median_s": ns["median_s"], "p10_s": ns["p10_s"], "p90_s": ns["p90_s"], "reps": ns["reps"]}
            row["numpy_check"] = n["check"]
            row["ratio_numpy_over_fusegraph"] = ns["median_s"] / t
            a, b = c.get("checksum"), n.get("checksum")
            if a and b:
                scale = max(a.get("scale", a["abs_sum"]), b["abs_sum"], 1e-30)
                diff = abs(a["sum"] - b["sum"]) / scale
                row["fusegraph_vs_numpy"] = {"checksum_rel_diff": diff, "ok": diff <= 1e-4,
                                             "what": "|sum(fusegraph) - sum(numpy)| / scale (sum of |result|, or of |input| for sum/mean), same input bits on both sides"}
        else:
            row["numpy"] = None
            row["ratio_numpy_over_fusegraph"] = None
        rows.append(row)
    details = machine_details()
    details.update({
        "peak_gflops_estimate": peak,
        "peak_gflops_avx2_convention": m.get("peak_gflops_avx2"),
        "flop_per_cycle": m.get("flop_per_cycle"),
        "ghz": m["ghz"],
        "peak_assumption": m["peak_assumption"],
        "memcpy_gbps": bw,
        "memcpy_method": fg["memcpy_method"],
        "fusegraph_threads": fg["threads"],
        "numpy_version": np_doc["numpy_version"],
        "python_version": np_doc["python_version"],
        "blas": np_doc["blas"],
        "loadavg_during_fusegraph_run": [fg.get("loadavg_start"), fg.get("loadavg_end")],
        "loadavg_during_numpy_run": [np_doc.get("loadavg_1_5_15_start"), np_doc.get("loadavg_1_5_15_end")],
        "load_note": "the machine has 2 cores shared with other builds; a load average above ~0.5 means timings include contention",
    })
    return {
        "suite": "cpu",
        "quick": fg["quick"],
        "method": {
            "fusegraph": fg["timing"],
            "numpy": np_doc["timing"],
            "ratio": "numpy median / fusegraph median: above 1 means fusegraph is faster",
            "fraction_of_roofline": "max(FLOPs / peak, bytes / memcpy bandwidth) / median time, with the kernels' own FLOP and byte counts",
            "inputs": "identical f32 bits on both sides: 2*frac(i*0.6180339887498949 + seed*0.1) - 1",
        },
        "machine": details,
        "cases": rows,
    }


def svg(doc):
    rows = [r for r in doc["cases"] if r.get("ratio_numpy_over_fusegraph")]
    m = doc["machine"]
    return plots.bars("fusegraph vs NumPy on the CPU: numpy time / fusegraph time (log scale)",
                      f"{m['cpu_model']}, {m['cores']} cores; right of 1 = fusegraph faster",
                      [r["name"] for r in rows], {"vs NumPy": [r["ratio_numpy_over_fusegraph"] for r in rows]})


def table(doc):
    lines = ["| case | reps | fusegraph median | p10 / p90 | numpy median | ratio | GFLOP/s | GB/s | roofline | checks |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["cases"]:
        f = r["fusegraph"]
        n = r.get("numpy")
        ok = r["fusegraph_check"].get("ok") and (r.get("numpy_check") or {}).get("ok", True) and (r.get("fusegraph_vs_numpy") or {}).get("ok", True)
        fmt = lambda s: f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"
        lines.append("| {} | {} | {} | {} / {} | {} | {} | {} | {} | {} | {} |".format(
            r["name"], r["reps"], fmt(f["median_s"]), fmt(f["p10_s"]), fmt(f["p90_s"]),
            fmt(n["median_s"]) if n else "n/a",
            f'{r["ratio_numpy_over_fusegraph"]:.2f}' if r.get("ratio_numpy_over_fusegraph") else "n/a",
            f'{r["gflops"]:.1f}' if "gflops" in r else "", f'{r["gbps"]:.1f}' if "gbps" in r else "",
            f'{r["fraction_of_roofline"] * 100:.0f}%' if "fraction_of_roofline" in r else "",
            "ok" if ok else "FAILED"))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("fusegraph_json")
    ap.add_argument("numpy_json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--svg", required=True)
    ap.add_argument("--table", help="also write the table as Markdown here")
    args = ap.parse_args()
    with open(args.fusegraph_json) as f:
        fg = json.load(f)
    with open(args.numpy_json) as f:
        np_doc = json.load(f)
    doc = merge(fg, np_doc)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    with open(args.svg, "w") as f:
        f.write(svg(doc))
    text = table(doc)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text)
    print(text)
    failed = [r["name"] for r in doc["cases"] if not r["fusegraph_check"].get("ok")
              or not (r.get("numpy_check") or {}).get("ok", True) or not (r.get("fusegraph_vs_numpy") or {}).get("ok", True)]
    if failed:
        print("checks failed:", ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
