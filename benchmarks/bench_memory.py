"""Benchmark: the in-memory ``Ack`` against the seed (npm ``ack`` 0.1.0 on node).

    python benchmarks/bench_memory.py                 # the table of docs/trackers.md
    python benchmarks/bench_memory.py --nbytes 64 --chains 200000 --blocks 2

Workload (the issue's): per chain, ``add(tag, s0)``, ``stamp(tag, s0 ^ w1 ^ w2)``,
``stamp(tag, w1)``, ``stamp(tag, w2)`` -- "add a chain, then three stamps that
complete it"; each add and each stamp counts as one operation (4 per chain).
Stamps and tags are made before the clock starts, on both sides.

Both sides register an ``acked`` and a ``failed`` listener and check after every
round that every chain was acked and none failed.  Our ``Ack`` runs with
timeouts on (``timeout=30``: the rotating buckets, and ``tick()`` called every
10,000 chains as a timer would) and its counters (including the add-to-ack
time) on: nothing is switched off for speed.  The seed has no timeouts.

The seed is installed with npm into a cache directory on first use
(``$XDG_CACHE_HOME/xor-ack-dynamodb/ack-0.1.0``) and driven by
``bench_ack_seed.js`` (same workload, one JIT warm-up round not reported).

The machine may be shared, so the implementations run in alternating blocks
(seed, C, pure Python, seed, ...) and the table reports the best and the
median round of each.  ``Ack`` is the C core when the extension is built (``pip
install -e .``), else the pure-Python ``PyAck``; both are measured when present.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from xor_ack_dynamodb.memory import CAck, PyAck

HERE = Path(__file__).resolve().parent
SEED_PACKAGE = "ack@0.1.0"
TICK_EVERY = 10_000

Workload = list[tuple[str, bytes, bytes, bytes, bytes]]


@dataclass
class Series:
    name: str
    rates: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        return max(self.rates)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)


def make_workload(chains: int, nbytes: int) -> Workload:
    work: Workload = []
    for i in range(chains):
        s0, w1, w2 = os.urandom(nbytes), os.urandom(nbytes), os.urandom(nbytes)
        s1 = (
            int.from_bytes(s0, "big") ^ int.from_bytes(w1, "big") ^ int.from_bytes(w2, "big")
        ).to_bytes(nbytes, "big")
        work.append((f"chain-{i}", s0, s1, w1, w2))
    return work


def python_round(ack_class: Callable[..., PyAck], work: Workload) -> float:
    """One round over the whole workload; returns operations per second."""
    ack = ack_class(timeout=30.0)
    acked = 0

    def on_acked(tag: str) -> None:
        nonlocal acked
        acked += 1

    def on_failed(tag: str, reason: str) -> None:
        raise AssertionError(f"{tag} failed ({reason})")

    ack.on("acked", on_acked)
    ack.on("failed", on_failed)
    chunks = [work[i : i + TICK_EVERY] for i in range(0, len(work), TICK_EVERY)]
    start = time.perf_counter()
    for chunk in chunks:
        for tag, s0, s1, s2, s3 in chunk:
            ack.add(tag, s0)
            ack.stamp(tag, s1)
            ack.stamp(tag, s2)
            ack.stamp(tag, s3)
        ack.tick()
    seconds = time.perf_counter() - start
    stats = ack.stats
    if acked != len(work) or stats.acked != len(work) or stats.pending or stats.failed:
        raise AssertionError(f"expected {len(work)} acked chains, got {stats}")
    return 4 * len(work) / seconds


def floor_round(work: Workload) -> float:
    """The least any pure-Python tracker must do: a dict of ints, from_bytes, XOR, delete.

    No class, no method calls, no validation, no events, no timeouts, no
    counters -- the ceiling of a pure-Python design, for comparison.
    """
    state: dict[str, int] = {}
    from_bytes = int.from_bytes
    start = time.perf_counter()
    for tag, s0, s1, s2, s3 in work:
        state[tag] = from_bytes(s0, "big")
        state[tag] ^= from_bytes(s1, "big")
        state[tag] ^= from_bytes(s2, "big")
        value = state[tag] ^ from_bytes(s3, "big")
        if not value:
            del state[tag]
    seconds = time.perf_counter() - start
    if state:
        raise AssertionError("the bare loop left chains behind")
    return 4 * len(work) / seconds


def install_seed() -> Path | None:
    """The seed's package directory (installed with npm on first use), or None."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        print("node/npm not found: the seed is not measured", file=sys.stderr)
        return None
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    prefix = cache / "xor-ack-dynamodb" / "ack-0.1.0"
    package = prefix / "node_modules" / "ack"
    if not (package / "package.json").exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(prefix),
                "--no-save",
                "--no-audit",
                "--no-fund",
                "--no-package-lock",
                SEED_PACKAGE,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    version = json.loads((package / "package.json").read_text())["version"]
    if version != "0.1.0":
        raise RuntimeError(f"expected ack 0.1.0 in {package}, found {version}")
    return package


def seed_rounds(package: Path, chains: int, rounds: int, nbytes: int) -> list[float]:
    out = subprocess.run(
        [
            "node",
            "--no-deprecation",
            str(HERE / "bench_ack_seed.js"),
            str(package),
            str(chains),
            str(rounds),
            str(nbytes),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return [json.loads(line)["ops_per_s"] for line in out.stdout.splitlines() if line.strip()]


def node_version() -> str:
    try:
        return subprocess.run(
            ["node", "--version"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "absent"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chains", type=int, default=300_000, help="chains per round")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per block")
    parser.add_argument("--blocks", type=int, default=3, help="alternating blocks")
    parser.add_argument("--nbytes", type=int, default=16, help="stamp length in bytes")
    parser.add_argument("--no-seed", action="store_true", help="skip the node side")
    parser.add_argument("--json", type=Path, help="also write the raw rates here")
    args = parser.parse_args(argv)

    print(
        f"python {platform.python_version()}, node {node_version()}, {cpu_model()}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{args.chains} chains x 4 ops, {args.nbytes}-byte stamps, "
        f"{args.blocks} blocks x {args.rounds} rounds"
    )
    package = None if args.no_seed else install_seed()
    work = make_workload(args.chains, args.nbytes)

    contenders: list[tuple[Series, Callable[[], list[float]]]] = []
    seed_series = c_series = None
    if package is not None:
        seed_series = Series("npm ack 0.1.0 (node, no timeouts)")
        contenders.append(
            (seed_series, lambda: seed_rounds(package, args.chains, args.rounds, args.nbytes))
        )
    c_class: Callable[..., PyAck] | None = CAck  # type: ignore[assignment]
    if c_class is not None:
        c_series = Series("Ack, C core (timeouts, counters on)")
        run_c = c_class
        contenders.append(
            (c_series, lambda: [python_round(run_c, work) for _ in range(args.rounds)])
        )
        python_round(c_class, work[:TICK_EVERY])  # warm-up, not reported
    else:
        print(
            "the C extension is not built: only the pure-Python core is measured", file=sys.stderr
        )
    py_series = Series("PyAck, pure Python (timeouts, counters on)")
    floor_series = Series("bare Python loop: dict + from_bytes + xor, nothing else")
    contenders.append((floor_series, lambda: [floor_round(work) for _ in range(args.rounds)]))
    contenders.append(
        (py_series, lambda: [python_round(PyAck, work) for _ in range(max(1, args.rounds // 2))])
    )

    for block in range(args.blocks):
        for series, run in contenders:
            gc.collect()
            series.rates.extend(run())
            print(
                f"  block {block + 1}: {series.name}: best so far {series.best / 1e6:.2f} M ops/s",
                flush=True,
            )

    print()
    print("| implementation | best | median | rounds |")
    print("|---|---:|---:|---:|")
    for series, _ in contenders:
        print(
            f"| {series.name} | {series.best / 1e6:.2f} M ops/s | "
            f"{series.median / 1e6:.2f} M ops/s | {len(series.rates)} |"
        )
    if seed_series is not None and c_series is not None:
        print()
        print(
            f"C core / seed: best {c_series.best / seed_series.best:.2f}x, "
            f"median {c_series.median / seed_series.median:.2f}x"
        )
    if args.json:
        args.json.write_text(json.dumps({s.name: s.rates for s, _ in contenders}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
