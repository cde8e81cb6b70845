"""SVG plots for the benchmark tables, written with no plotting library (the
bench machines need nothing beyond Python's standard library). Two kinds:

- `bars`: horizontal bars, one group per case and one bar per series, on a
  log scale around a reference value (1 for speed-up ratios: right of it,
  fusegraph is faster) or on a linear scale from 0 (times).
- `lines`: series of (x, y) points on log-log axes (times against size).
"""

import math

COLORS = ["#2a7", "#36c", "#c83", "#a4c", "#777", "#d54"]


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _header(width, height, title, subtitle):
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
            '<rect width="100%" height="100%" fill="white"/>',
            f'<text x="10" y="22" font-size="15" font-weight="bold">{esc(title)}</text>',
            f'<text x="10" y="42" fill="#555">{esc(subtitle)}</text>']


def _legend(names, x, y):
    out = []
    for i, name in enumerate(names):
        out.append(f'<rect x="{x}" y="{y + i * 18}" width="12" height="12" fill="{COLORS[i % len(COLORS)]}"/>')
        out.append(f'<text x="{x + 18}" y="{y + i * 18 + 11}">{esc(name)}</text>')
    return out


def bars(title, subtitle, labels, series, log=True, ref=1.0, unit="x"):
    """`series`: {name: [value or None per label]}. `log`: log2 axis around
    `ref` (ratios); else a linear axis from 0 (values in `unit`)."""
    names = list(series)
    vals = [v for vs in series.values() for v in vs if v]
    if not vals:
        vals = [ref]
    bar, gap, top, left, width = 14, 10, 60, 260, 520
    group = bar * len(names) + gap
    height = top + len(labels) * group + 50
    if log:
        lo = min(-2.0, math.floor(math.log2(min(vals) / ref)))
        hi = max(2.0, math.ceil(math.log2(max(vals) / ref)))
        x = lambda v: left + (math.log2(v / ref) - lo) / (hi - lo) * width
        ticks = [(ref * 2.0 ** e, f"{ref * 2.0 ** e:g}{unit}", e == 0) for e in range(int(lo), int(hi) + 1)]
        base = x(ref)
    else:
        top_v = max(vals) * 1.1
        step = 10 ** math.floor(math.log10(top_v))
        if top_v / step < 3:
            step /= 2
        x = lambda v: left + v / top_v * width
        ticks = [(i * step, f"{i * step:g}{unit}", i == 0) for i in range(int(top_v / step) + 1)]
        base = x(0)
    out = _header(left + width + 170, height, title, subtitle)
    for v, label, major in ticks:
        gx = x(v)
        out.append(f'<line x1="{gx:.1f}" y1="{top - 6}" x2="{gx:.1f}" y2="{height - 40}" stroke="{"#000" if major else "#ddd"}"/>')
        out.append(f'<text x="{gx:.1f}" y="{height - 24}" text-anchor="middle" fill="#555">{esc(label)}</text>')
    for i, label in enumerate(labels):
        y0 = top + i * group
        out.append(f'<text x="{left - 8}" y="{y0 + group / 2}" text-anchor="end">{esc(label)}</text>')
        for j, name in enumerate(names):
            v = series[name][i]
            if not v:
                continue
            y = y0 + j * bar
            x0, x1 = sorted((base, x(v)))
            out.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{bar - 2}" fill="{COLORS[j % len(COLORS)]}"/>')
            right = v >= ref if log else True
            tx, anchor = (x1 + 4, "start") if right else (x0 - 4, "end")
            text = f"{v:.2f}{unit}" if log else f"{v:.3g}{unit}"
            out.append(f'<text x="{tx:.1f}" y="{y + bar - 4}" text-anchor="{anchor}" font-size="10">{esc(text)}</text>')
    out += _legend(names, left + width + 30, top)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def lines(title, subtitle, xlabel, ylabel, series):
    """`series`: {name: [(x, y), ...]} with positive x and y, log-log axes."""
    pts = [p for ps in series.values() for p in ps if p[0] > 0 and p[1] > 0]
    left, top, width, plot_h = 70, 60, 560, 320
    height = top + plot_h + 60
    out = _header(left + width + 200, height, title, subtitle)
    if not pts:
        out.append("</svg>")
        return "\n".join(out) + "\n"
    xlo, xhi = math.log10(min(p[0] for p in pts)), math.log10(max(p[0] for p in pts))
    ylo, yhi = math.floor(math.log10(min(p[1] for p in pts))), math.ceil(math.log10(max(p[1] for p in pts)))
    xhi = max(xhi, xlo + 1e-9)
    yhi = max(yhi, ylo + 1)
    px = lambda v: left + (math.log10(v) - xlo) / (xhi - xlo) * width
    py = lambda v: top + plot_h - (math.log10(v) - ylo) / (yhi - ylo) * plot_h
    for e in range(int(ylo), int(yhi) + 1):
        gy = py(10.0 ** e)
        out.append(f'<line x1="{left}" y1="{gy:.1f}" x2="{left + width}" y2="{gy:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{gy + 4:.1f}" text-anchor="end" fill="#555">{10.0 ** e:g}</text>')
    xs = sorted({p[0] for p in pts})
    for v in xs:
        gx = px(v)
        out.append(f'<line x1="{gx:.1f}" y1="{top}" x2="{gx:.1f}" y2="{top + plot_h}" stroke="#eee"/>')
        out.append(f'<text x="{gx:.1f}" y="{top + plot_h + 16}" text-anchor="middle" fill="#555">{v:g}</text>')
    out.append(f'<text x="{left + width / 2}" y="{top + plot_h + 36}" text-anchor="middle">{esc(xlabel)}</text>')
    out.append(f'<text x="14" y="{top + plot_h / 2}" transform="rotate(-90 14 {top + plot_h / 2})" text-anchor="middle">{esc(ylabel)}</text>')
    for i, (name, ps) in enumerate(series.items()):
        ps = [p for p in ps if p[0] > 0 and p[1] > 0]
        c = COLORS[i % len(COLORS)]
        if len(ps) > 1:
            d = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in ps)
            out.append(f'<polyline points="{d}" fill="none" stroke="{c}" stroke-width="2"/>')
        for a, b in ps:
            out.append(f'<circle cx="{px(a):.1f}" cy="{py(b):.1f}" r="3" fill="{c}"/>')
    out += _legend(list(series), left + width + 20, top)
    out.append("</svg>")
    return "\n".join(out) + "\n"
