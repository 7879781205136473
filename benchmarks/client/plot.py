"""``scaling.png``: stamps/s and requests/stamp against writers, one chain and distinct."""

from __future__ import annotations

from pathlib import Path

from .cases import Result
from .report import fmt


def plot(scaling: dict[str, dict[int, dict[str, Result]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharex=True)
    styles = {"seed": ("tab:red", "o", "--"), "ours": ("tab:blue", "s", "-")}
    for col, kind in enumerate(("one chain", "distinct chains")):
        per_w = scaling[kind]
        ws = sorted(per_w)
        for impl, (color, marker, line) in styles.items():
            label = (
                "seed (GetItem + conditional Put/Delete, retry)"
                if impl == "seed"
                else "ours (XorAckDynamoDB: 1 UpdateItem, coalescing)"
            )
            for row, (metric, attr) in enumerate(
                (("stamps/s", "stamps_per_s"), ("requests/stamp", "requests_per_stamp"))
            ):
                ax = axes[row][col]
                ys = [getattr(per_w[w][impl], attr) for w in ws]
                ax.plot(ws, ys, color=color, marker=marker, linestyle=line, label=label)
                below = impl == "seed" and not (row == 1 and kind == "one chain")
                for x, y in zip(ws, ys, strict=True):
                    ax.annotate(
                        fmt(y),
                        (x, y),
                        textcoords="offset points",
                        xytext=(0, -13 if below else 6),
                        ha="center",
                        fontsize=7,
                        color=color,
                    )
                ax.set_xscale("log", base=2)
                if kind == "one chain":
                    ax.set_yscale("log")
                    ax.margins(y=0.12)
                else:
                    ax.set_ylim(
                        bottom=0,
                        top=1.2
                        * max(getattr(r, attr) for r in (per_w[w][i] for w in ws for i in styles)),
                    )
                ax.set_xticks(ws, [str(w) for w in ws])
                ax.grid(True, which="both", alpha=0.3)
                ax.set_ylabel(metric)
                if row == 0:
                    ax.set_title(
                        "one chain: every writer stamps it"
                        if kind == "one chain"
                        else "distinct chains: one per writer"
                    )
                if row == 1:
                    ax.set_xlabel("concurrent writers")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    fig.suptitle("XorAckDynamoDB vs the seed algorithm on DynamoDB Local (one process, asyncio)")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
