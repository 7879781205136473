"""Client benchmark: the seed's algorithm against ``XorAckDynamoDB``, side by side.

The benchmark lives in the ``client`` package beside this file (``benchmarks/client/``);
this file is its entry point: ``python benchmarks/bench_client.py --help``.
"""

from __future__ import annotations

import sys
from pathlib import Path

# ``client`` and ``seed_baseline`` are found beside this file, however it is started.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from client.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
