"""The overview's two charts as SVG geometry: acks per minute, and the latency histogram.

Computed here, in numbers, so the templates only place rectangles (SVG attributes, no
inline styles: the Content-Security-Policy allows no ``style=``) and no chart library
or script is needed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from .windows import Bin

WIDTH = 1080
HEIGHT = 170
LEFT = 44  #: room for the y axis labels
BOTTOM = 20  #: room for the x axis labels


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    #: The acked part (from the top of the failed part up) and the failed part (from 0).
    acked_y: float
    acked_height: float
    failed_y: float
    failed_height: float
    title: str


@dataclass(frozen=True)
class Chart:
    bars: list[Bar]
    top: int  #: the value of the top gridline
    labels: list[tuple[float, str, str]]  #: x, text, text-anchor
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    plot_height: int = HEIGHT - BOTTOM


def _nice(value: int) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50... at least ``value``."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= value:
                return step * factor
        step *= 10


def datetime_label(minute: float) -> str:
    return dt.datetime.fromtimestamp(minute, dt.UTC).strftime("%H:%M")


def per_minute(series: list[tuple[float, int, int]]) -> Chart:
    """Bars of acked (and failed, below them) chains per minute, oldest left."""
    top = _nice(max([acked + failed for _, acked, failed in series] + [1]))
    plot = HEIGHT - BOTTOM
    slot = (WIDTH - LEFT) / max(1, len(series))
    bars = []
    labels = []
    for i, (minute, acked, failed) in enumerate(series):
        failed_height = plot * failed / top
        acked_height = plot * acked / top
        when = datetime_label(minute)
        bars.append(
            Bar(
                x=LEFT + i * slot + 1,
                width=max(1.0, slot - 2),
                acked_y=plot - failed_height - acked_height,
                acked_height=acked_height,
                failed_y=plot - failed_height,
                failed_height=failed_height,
                title=f"{when} UTC: {acked} acked, {failed} failed",
            )
        )
        if i % 10 == 0 and i < len(series) - 5:
            labels.append((LEFT + i * slot + slot / 2, when, "middle"))
    if series:
        last = datetime_label(series[-1][0])
        labels.append((float(WIDTH), f"{last} (now)", "end"))
    return Chart(bars, top, labels)


@dataclass(frozen=True)
class HistogramBar:
    label: str
    count: int
    width: float
    y: float


def histogram(bins: list[Bin], width: int = 360, row: int = 18) -> tuple[list[HistogramBar], int]:
    """Horizontal bars, one per latency bin; and the SVG's height."""
    most = max([b.count for b in bins] + [1])
    bars = [
        HistogramBar(b.label, b.count, width * b.count / most, i * row) for i, b in enumerate(bins)
    ]
    return bars, row * len(bins)
