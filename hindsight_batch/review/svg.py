"""The timeline chart: chunks per week per bank, as inline SVG (stacked bars; no script, no network)."""

from __future__ import annotations

from datetime import date, timedelta
from html import escape

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")
_MAX_WEEKS = 260  # five years of weeks; older ones are folded into the first bar's label range


def _weeks(first: date, last: date) -> list[date]:
    weeks: list[date] = []
    day = first
    while day <= last and len(weeks) < _MAX_WEEKS:
        weeks.append(day)
        day += timedelta(days=7)
    return weeks


def timeline_svg(points: list[tuple[str, str, int]]) -> str:
    """``points`` are (bank, ISO date of the week's Monday, chunks). Empty weeks between the first and the last
    are drawn empty, so gaps show."""
    if not points:
        return '<p class="muted">No dates known for these chunks.</p>'
    banks = sorted({bank for bank, _, _ in points})
    counts: dict[tuple[str, str], int] = {(bank, week): n for bank, week, n in points}
    days = sorted({date.fromisoformat(week) for _, week, _ in points})
    weeks = _weeks(days[0], days[-1]) if len(days) > 1 else days
    if days[-1] not in weeks:  # past _MAX_WEEKS: show the latest span
        weeks = _weeks(days[-1] - timedelta(days=7 * (_MAX_WEEKS - 1)), days[-1])
    totals = [sum(counts.get((b, w.isoformat()), 0) for b in banks) for w in weeks]
    top = max(totals) or 1
    width, height, left, bottom, legend = 760, 220, 44, 28, 18 * len(banks) + 10
    bar = min(40.0, max(1.0, (width - left - 10) / len(weeks)))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="chunks per week per bank" '
             f'viewBox="0 0 {width} {height + legend}" width="{width}" height="{height + legend}">',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - 5}" y2="{height - bottom}" stroke="#888"/>',
             f'<text x="{left - 6}" y="14" text-anchor="end" class="axis">{top}</text>',
             f'<text x="{left - 6}" y="{height - bottom}" text-anchor="end" class="axis">0</text>']
    scale = (height - bottom - 10) / top
    for i, week in enumerate(weeks):
        x, y = left + i * bar, float(height - bottom)
        for b, bank in enumerate(banks):
            n = counts.get((bank, week.isoformat()), 0)
            if n:
                h = n * scale
                y -= h
                parts.append(f'<rect x="{x + 0.5:.1f}" y="{y:.1f}" width="{max(bar - 1, 0.5):.1f}" height="{h:.1f}" '
                             f'fill="{PALETTE[b % len(PALETTE)]}"><title>{escape(bank)}, week of {week}: {n} '
                             f'chunk(s)</title></rect>')
    for i in sorted({0, len(weeks) - 1, *range(0, len(weeks), max(1, len(weeks) // 6))}):
        parts.append(f'<text x="{left + i * bar:.1f}" y="{height - 10}" class="axis">{weeks[i]}</text>')
    for b, bank in enumerate(banks):
        y = height + 4 + 18 * b
        parts.append(f'<rect x="{left}" y="{y}" width="12" height="12" fill="{PALETTE[b % len(PALETTE)]}"/>'
                     f'<text x="{left + 18}" y="{y + 11}">{escape(bank)}</text>')
    parts.append("</svg>")
    return "".join(parts)
