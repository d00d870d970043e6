"""The report's charts as inline SVG: no script, no library, no network; a file that opens
anywhere. Each chart is an ``<svg role="img">`` with a title, its marks carry a class
(``point``, ``box``, ``bar``) and a ``<title>`` (the exact figure, shown on hover)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["PALETTE", "bars", "boxes", "scatter"]

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1")
_W, _H = 560, 320
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 28, 48


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _svg(name: str, title: str, body: list[str], height: int = _H) -> str:
    """The chart in a figure captioned with its title."""
    return (
        f'<figure><figcaption>{escape(title)}</figcaption><svg class="chart" id="{escape(name)}" '
        f'role="img" aria-label="{escape(title)}" viewBox="0 0 {_W} {height}" width="{_W}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" '
        f'font-size="11"><title>{escape(title)}</title>' + "".join(body) + "</svg></figure>"
    )


def _tick(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        return [low]
    step = (high - low) / (count - 1)
    return [low + i * step for i in range(count)]


def _axes(x_label: str, y_label: str, height: int = _H) -> list[str]:
    bottom = height - _BOTTOM
    return [
        f'<line x1="{_LEFT}" y1="{bottom}" x2="{_W - _RIGHT}" y2="{bottom}" stroke="#333"/>',
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{bottom}" stroke="#333"/>',
        f'<text x="{(_LEFT + _W - _RIGHT) / 2}" y="{height - 10}" text-anchor="middle">'
        f"{escape(x_label)}</text>",
        f'<text transform="translate(14 {(_TOP + bottom) / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>',
    ]


def scatter(
    name: str, title: str, points: Sequence[tuple[str, float, float]], x_label: str, y_label: str
) -> str:
    """One labelled point per (label, x, y); y is a share (0 to 1), drawn as a percentage."""
    xs = [x for _, x, _ in points]
    x_high = max(xs, default=1.0) * 1.15 or 1.0
    bottom = _H - _BOTTOM
    width, height = _W - _LEFT - _RIGHT, bottom - _TOP

    def px(x: float) -> float:
        return _LEFT + width * x / x_high

    def py(y: float) -> float:
        return bottom - height * y

    body = _axes(x_label, y_label)
    for tick in _ticks(0.0, 1.0):
        body.append(
            f'<text x="{_LEFT - 6}" y="{py(tick) + 4:.1f}" text-anchor="end">{tick:.0%}</text>'
        )
    for tick in _ticks(0.0, x_high):
        body.append(
            f'<text x="{px(tick):.1f}" y="{bottom + 16}" text-anchor="middle">{_tick(tick)}</text>'
        )
    for i, (label, x, y) in enumerate(points):
        body.append(
            f'<g class="point"><circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="7" '
            f'fill="{colour(i)}"><title>{escape(label)}: {y:.1%} at {x:.4g}</title></circle>'
            f'<text x="{px(x) + 10:.1f}" y="{py(y) - 8:.1f}">{escape(label)}</text></g>'
        )
    return _svg(name, title, body)


def _quantile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def boxes(name: str, title: str, series: Sequence[tuple[str, Sequence[float]]], unit: str) -> str:
    """A horizontal box (quartiles, whiskers to min and max, the median marked) per series,
    with every value as a dot."""
    row = 44
    height = _TOP + _BOTTOM + row * max(len(series), 1)
    bottom = height - _BOTTOM
    high = max((max(v) for _, v in series if v), default=1.0) * 1.1 or 1.0
    width = _W - _LEFT - _RIGHT - 40

    def px(x: float) -> float:
        return _LEFT + 40 + width * x / high

    body = _axes(f"run duration ({unit})", "", height)
    for tick in _ticks(0.0, high):
        body.append(
            f'<text x="{px(tick):.1f}" y="{bottom + 16}" text-anchor="middle">{_tick(tick)}</text>'
        )
    for i, (label, values) in enumerate(series):
        mid = _TOP + row * i + row / 2
        body.append(
            f'<text x="{_LEFT + 36}" y="{mid + 4:.1f}" text-anchor="end">{escape(label)}</text>'
        )
        if not values:
            continue
        ordered = sorted(values)
        q1, q2, q3 = (_quantile(ordered, q) for q in (0.25, 0.5, 0.75))
        lo, hi = ordered[0], ordered[-1]
        summary = f"{label}: n={len(ordered)}, min {lo:.3g}, median {q2:.3g}, max {hi:.3g} {unit}"
        body.append(
            f'<g class="box"><title>{escape(summary)}</title>'
            f'<line x1="{px(lo):.1f}" y1="{mid}" x2="{px(hi):.1f}" y2="{mid}" stroke="#555"/>'
            f'<rect x="{px(q1):.1f}" y="{mid - 12}" width="{max(px(q3) - px(q1), 2):.1f}" '
            f'height="24" fill="{colour(i)}" fill-opacity="0.5" stroke="{colour(i)}"/>'
            f'<line x1="{px(q2):.1f}" y1="{mid - 12}" x2="{px(q2):.1f}" y2="{mid + 12}" '
            'stroke="#222" stroke-width="2"/>'
            + "".join(
                f'<circle cx="{px(v):.1f}" cy="{mid}" r="2" fill="#222" fill-opacity="0.4"/>'
                for v in ordered
            )
            + "</g>"
        )
    return _svg(name, title, body, height)


def bars(
    name: str,
    title: str,
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
) -> str:
    """Grouped vertical bars: for each group (a category), one bar per series (a variant),
    its height a share (0 to 1); ``None`` draws no bar."""
    bottom = _H - _BOTTOM
    height = bottom - _TOP
    slot = (_W - _LEFT - _RIGHT) / max(len(groups), 1)
    bar = min(36.0, slot * 0.8 / max(len(series), 1))
    body = _axes("category", "accuracy")
    for tick in _ticks(0.0, 1.0):
        y = bottom - height * tick
        body.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:.0%}</text>')
    for g, group in enumerate(groups):
        left = _LEFT + slot * g + (slot - bar * len(series)) / 2
        body.append(
            f'<text x="{_LEFT + slot * (g + 0.5):.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{escape(group)}</text>"
        )
        for s, (label, values) in enumerate(series):
            value = values[g]
            if value is None:
                continue
            top = bottom - height * value
            body.append(
                f'<rect class="bar" x="{left + bar * s:.1f}" y="{top:.1f}" width="{bar:.1f}" '
                f'height="{max(bottom - top, 1):.1f}" fill="{colour(s)}">'
                f"<title>{escape(label)}, {escape(group)}: {value:.1%}</title></rect>"
            )
    legend = [
        f'<rect x="{_LEFT + 110 * s}" y="6" width="10" height="10" fill="{colour(s)}"/>'
        f'<text x="{_LEFT + 110 * s + 14}" y="15">{escape(label)}</text>'
        for s, (label, _) in enumerate(series)
    ]
    return _svg(name, title, body + legend)
