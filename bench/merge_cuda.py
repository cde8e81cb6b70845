"""Joins `fusegraph bench --suite cuda` (cuda_fusegraph.json) with the peers
(cuda_peers.json) into bench/results/cuda.json: for every case the
fusegraph time, each peer's time, and `speedup_vs_<peer>` = peer time /
fusegraph time (above 1: fusegraph is faster), plus the fraction of the
copy bandwidth measured in the same run for the elementwise cases."""

import json
import sys

fg_path, peers_path, out_path = (sys.argv[1:4] + [None] * 3)[:3]
fg_path = fg_path or "bench/results/cuda_fusegraph.json"
peers_path = peers_path or "bench/results/cuda_peers.json"
out_path = out_path or "bench/results/cuda.json"
fg = json.load(open(fg_path))
peers = json.load(open(peers_path))

by_name = {}
for r in peers["results"]:
    by_name.setdefault(r["name"], {})[r["peer"]] = r
copy = by_name.get("copy_64m_f32", {}).get("torch")
copy_gbps = copy["gbps"] if copy else None

rows = []
for c in fg["cases"]:
    t = c["stats"]["median_s"]
    row = {"name": c["name"], "what": c["what"], "fusegraph_s": t, "fusegraph_p10_s": c["stats"]["p10_s"],
           "fusegraph_p90_s": c["stats"]["p90_s"], "tflops": c["tflops"], "gbps": c["gbps"],
           "check": c["check"]}
    for peer, r in by_name.get(c["name"], {}).items():
        row[f"{peer}_s"] = r["stats"]["median_s"]
        row[f"{peer}_ok"] = r["ok"]
        row[f"speedup_vs_{peer}"] = r["stats"]["median_s"] / t
    if c["name"].startswith(("fused", "chain")) and copy_gbps:
        row["fraction_of_copy_bandwidth"] = c["gbps"] / copy_gbps
    rows.append(row)

g = fg.get("graph", {})
tg = by_name.get("graph_1000_small_kernels", {}).get("torch", {})
doc = {
    "suite": "cuda",
    "device": fg.get("device"),
    "gpu": peers.get("gpu"),
    "driver": peers.get("driver"),
    "peers": peers.get("peers"),
    "copy_bandwidth_gbps": copy_gbps,
    "timing": {"fusegraph": fg.get("timing"), "peers": peers.get("timing")},
    "nvrtc": fg.get("nvrtc"),
    "cases": rows,
    "dispatch_and_graph": {"fusegraph": g, "torch": tg},
    "crossover": {"fusegraph": fg.get("crossover"), "torch": by_name.get("crossover", {}).get("torch")},
    "matmuls_vs_bmm": {"fusegraph": fg.get("matmuls_vs_bmm"), "torch": by_name.get("matmuls_vs_bmm", {}).get("torch")},
    "streams": {"fusegraph": fg.get("streams"), "torch": by_name.get("streams", {}).get("torch")},
    "date": peers.get("date"),
}
json.dump(doc, open(out_path, "w"), indent=2)

print(f"{'case':<28} {'fusegraph ms':>12} {'torch':>8} {'compile':>8} {'cupy':>8}")
for r in rows:
    f = lambda k: f"{r[k]:8.2f}" if k in r else "       -"
    print(f"{r['name']:<28} {r['fusegraph_s']*1e3:12.3f} {f('speedup_vs_torch')} {f('speedup_vs_torch.compile')} {f('speedup_vs_cupy')}"
          + (f"  {r['fraction_of_copy_bandwidth']*100:.0f}% of copy" if "fraction_of_copy_bandwidth" in r else "")
          + ("" if r["check"]["ok"] else "  CHECK FAILED"))
if g:
    print(f"eager dispatch {g.get('eager_us_per_op', 0):.2f} us/op (torch {tg.get('eager_us_per_op', 0):.2f}); "
          f"graph replay {g.get('graph_speedup', 0):.1f}x faster than eager (torch {tg.get('graph_speedup', 0):.1f}x)")
print("wrote", out_path)
fc, tc = doc["crossover"]["fusegraph"] or {}, doc["crossover"]["torch"] or {}
if fc:
    print(f"CPU/GPU crossover (end to end from host data): fusegraph n = {fc.get('crossover_n')}, torch n = {tc.get('crossover_n')}")
fb, tb = doc["matmuls_vs_bmm"]["fusegraph"] or {}, doc["matmuls_vs_bmm"]["torch"] or {}
if fb and tb:
    print(f"1000 separate matmuls: fusegraph {fb['separate']['median_s']*1e3:.3f} ms (torch {tb['separate']['median_s']*1e3:.3f}, "
          f"{tb['separate']['median_s']/fb['separate']['median_s']:.2f}x); bmm speed-up {fb['bmm_speedup']:.1f}x (torch {tb['bmm_speedup']:.1f}x)")
fs, ts = doc["streams"]["fusegraph"] or {}, doc["streams"]["torch"] or {}
if fs and ts:
    ms = lambda r, k: r[k]["median_s"] * 1e3
    print(f"streams: overlapped {ms(fs, 'overlapped'):.2f} ms (torch {ms(ts, 'overlapped'):.2f}, "
          f"{ts['overlapped']['median_s']/fs['overlapped']['median_s']:.2f}x), blocking {ms(fs, 'blocking'):.2f} ms "
          f"(torch {ms(ts, 'blocking'):.2f}); overlap speed-up {fs['speedup']:.2f}x (torch {ts['speedup']:.2f}x); "
          f"overlapped/ideal {fs['overlapped_over_ideal']:.2f} (torch {ts['overlapped_over_ideal']:.2f})")
