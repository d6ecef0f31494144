# SPDX-License-Identifier: MIT
"""The SVG of memory.timeline(): bytes per tier over steps, events marked.

No script, no external file: one <svg> that any browser (or rsvg-convert)
renders. Lines: bytes on the device (after each step, and the
most seen during it), in host memory, in the spill tier, and the device
budget (dashed); under the plot, bars of
the migrations each step made; marks on the steps that saw refusals
(ENOMEM, red) or pressure (orange).
"""

from xml.sax.saxutils import escape

W, H = 980, 430
LEFT, RIGHT, TOP, BOTTOM = 80, 175, 40, 95
COLORS = {"device": "#1f77b4", "device_peak": "#9ecae1", "host": "#2ca02c",
          "spill": "#9467bd", "budget": "#d62728"}
MARKS = {"nomem": "#d62728", "pressure": "#ff7f0e", "error": "#8c564b"}


def _mib(n):
    return n / float(1 << 20)


def _per_step(hist):
    """For each sample: (migrations, {mark type: count}) since the last."""
    out, start = [], 0
    for s in hist.samples:
        chunk = hist.events[start:s["events"]]
        start = s["events"]
        moves = sum(1 for e in chunk if e["action"] == "migrated")
        marks = {}
        for e in chunk:
            if e["action"] in MARKS:
                marks[e["action"]] = marks.get(e["action"], 0) + 1
        out.append((moves, marks))
    return out


def render(hist, title):
    samples = hist.samples
    n = max(len(samples), 1)
    top = max([max(s["device_peak"], s["host"], s["spill"], s["budget"])
               for s in samples] + [1 << 20])
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(i):
        return LEFT + (pw * i / (n - 1) if n > 1 else pw / 2)

    def y(v):
        return TOP + ph - ph * v / top

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">'
           % (W, H, W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15">%s</text>'
           % (LEFT, escape(title))]
    for k in range(5):		# grid and y labels
        v = top * k / 4
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" '
                   'stroke="#ddd"/>' % (LEFT, LEFT + pw, y(v), y(v)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.0f MiB</text>'
                   % (LEFT - 6, y(v) + 4, _mib(v)))
    ticks = max(1, n // 10)
    for i in range(0, n, ticks):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>'
                   % (x(i), TOP + ph + 16, samples[i]["step"] if samples
                      else 0))
    out.append('<text x="%d" y="%d" text-anchor="middle">step</text>'
               % (LEFT + pw // 2, TOP + ph + 32))
    for key in ("budget", "device_peak", "device", "host", "spill"):
        pts = " ".join("%.1f,%.1f" % (x(i), y(s[key]))
                       for i, s in enumerate(samples))
        dash = ' stroke-dasharray="6,4"' if key == "budget" else ""
        out.append('<polyline fill="none" stroke="%s" stroke-width="2"%s '
                   'points="%s"><title>%s</title></polyline>'
                   % (COLORS[key], dash, pts, key))
    per = _per_step(hist)
    most = max([m for m, _ in per] + [1])
    base = TOP + ph + 40
    for i, (moves, marks) in enumerate(per):
        bh = 36.0 * moves / most
        out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" '
                   'fill="#aaa"><title>step %d: %d migrations</title></rect>'
                   % (x(i) - max(pw / n / 2 - 0.5, 0.5), base + 36 - bh,
                      max(pw / n - 1, 1), bh, samples[i]["step"], moves))
        for j, (kind, count) in enumerate(sorted(marks.items())):
            out.append('<circle cx="%.1f" cy="%d" r="4" fill="%s">'
                       '<title>step %d: %d %s</title></circle>'
                       % (x(i), TOP + 8 + 10 * j, MARKS[kind],
                          samples[i]["step"], count, kind))
    out.append('<text x="%d" y="%d" text-anchor="end">migrations</text>'
               '<text x="%d" y="%d" text-anchor="end">per step</text>'
               % (LEFT - 6, base + 16, LEFT - 6, base + 30))
    legend = [("device_peak", "device, step's peak"),
              ("device", "on the device"), ("host", "in host memory"),
              ("spill", "in the spill tier"), ("budget", "device budget")]
    for j, (key, label) in enumerate(legend):
        ly = TOP + 10 + 20 * j
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" '
                   'stroke-width="3"/><text x="%d" y="%d">%s</text>'
                   % (W - RIGHT + 12, W - RIGHT + 32, ly, ly, COLORS[key],
                      W - RIGHT + 38, ly + 4, label))
    for j, (kind, color) in enumerate(sorted(MARKS.items())):
        ly = TOP + 120 + 20 * j
        out.append('<circle cx="%d" cy="%d" r="4" fill="%s"/>'
                   '<text x="%d" y="%d">%s</text>'
                   % (W - RIGHT + 22, ly, color, W - RIGHT + 38, ly + 4,
                      kind))
    out.append("</svg>")
    return "\n".join(out)
