"""The README and docs/fleet.md say one thing of how often a continuation runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
SENTENCE = (
    "The continuation runs at least once per acked job and never before its ack; it runs a "
    "second time only if its process dies between its effect and its `done` marker or two "
    "copies race there, and every run gets the same `continuation_id` to deduplicate its "
    "effect on."
)


def flat(path: Path) -> str:
    """The text with its line breaks and list indents as single spaces."""
    return re.sub(r"\s+", " ", path.read_text())


def test_the_continuation_sentence_is_the_same_in_the_readme_and_the_fleet_docs() -> None:
    assert SENTENCE in flat(ROOT / "README.md")
    assert flat(ROOT / "docs" / "fleet.md").count(SENTENCE) == 2  # the intro, the guarantee
    for path in (ROOT / "README.md", ROOT / "docs" / "fleet.md"):
        assert "runs once per acked job" not in flat(path)
        assert "It can run twice only" not in flat(path)
