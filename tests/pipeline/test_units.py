"""The pure parts: words, keyed stamps, faults, corpus, tags."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xor_ack_dynamodb.pipeline.corpus import UNICODE_WORDS, generate
from xor_ack_dynamodb.pipeline.errors import SampleExists
from xor_ack_dynamodb.spark.examples.words import count_lines, count_words
from xor_ack_dynamodb.spark.faults import MAX_DROPPED, FaultConfig, InjectedFault
from xor_ack_dynamodb.spark.keyed import Keyed, canonical
from xor_ack_dynamodb.spark.plan import file_tag


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_whole_text_counts_equal_line_by_line_counts(text: str) -> None:
    assert count_words(text) == count_lines(text.splitlines())


def test_words_are_lowercased_unicode_word_runs() -> None:
    text = "Café, CAFÉ! naïve--Straße\nΟΔΟΣ x_1 42\n"  # noqa: RUF001
    assert count_words(text) == Counter(
        {"café": 2, "naïve": 1, "straße": 1, "οδος": 1, "x_1": 1, "42": 1}
    )


def test_keyed_stamps_are_deterministic_and_distinct() -> None:
    a, b = Keyed("run-1"), Keyed("run-1")
    tag = "run-1/file:/x#1"
    assert a.file_stamp(tag) == b.file_stamp(tag)
    assert len(a.file_stamp(tag)) == 16 and any(a.file_stamp(tag))
    entries = [("b", 2), ("a", 1)]
    assert a.bucket_stamp(tag, 3, entries) == b.bucket_stamp(tag, 3, list(reversed(entries)))
    values = {
        a.file_stamp(tag),
        Keyed("run-2").file_stamp(tag),
        a.file_stamp(tag.replace("#1", "#2")),
        a.bucket_stamp(tag, 3, entries),
        a.bucket_stamp(tag, 2, entries),
        a.bucket_stamp(tag, 3, [("a", 1), ("b", 3)]),
        a.bucket_stamp(tag, 3, [("a", 1)]),
        a.bucket_stamp(tag, 3, [("a", 1), ("a", 1), ("b", 2)]),
        a.bucket_stamp(tag, 3, []),
        a.split_token(tag, b"\x01" * 16),
        a.count_token(tag, 3, b"\x01" * 16),
    }
    assert len(values) == 11


def test_fields_cannot_be_confused_by_concatenation() -> None:
    k = Keyed("r")
    assert k.hash("ab", "c") != k.hash("a", "bc")
    assert k.hash(1) != k.hash("1")
    assert canonical([("a", 1), ("b", 1)]) != canonical([("a", 11)])


def test_faults_are_reproducible_per_attempt() -> None:
    config = FaultConfig.rate(0.5, seed=7)
    draws = [config.for_task(1, 2, p, a) for p in range(20) for a in range(3)]
    again = [config.for_task(1, 2, p, a) for p in range(20) for a in range(3)]
    assert [(d.crash, d.crash_after_stamp, d.drop) for d in draws] == [
        (d.crash, d.crash_after_stamp, d.drop) for d in again
    ]
    assert any(d.crash for d in draws) and any(not d.crash for d in draws)
    assert any(d.drop for d in draws) and any(not d.drop for d in draws)


def test_crash_happens_once_at_its_point() -> None:
    faults = FaultConfig(crash_rate=1.0).for_task(1, 1, 0, 0)
    before, after = not faults.crash_after_stamp, faults.crash_after_stamp
    if before:
        with pytest.raises(InjectedFault):
            faults.crash_now(stamped=False)
    else:
        faults.crash_now(stamped=False)
        assert after
        with pytest.raises(InjectedFault):
            faults.crash_now(stamped=True)


def test_max_attempt_limits_faults_to_first_attempts() -> None:
    config = FaultConfig(crash_rate=1.0, drop_rate=1.0, max_attempt=1)
    assert config.for_task(1, 1, 0, 0).crash and config.for_task(1, 1, 0, 0).drop
    later = config.for_task(1, 1, 0, 1)
    assert not later.crash and not later.drop


def test_lose_drops_one_to_three_records() -> None:
    faults = FaultConfig(drop_rate=1.0, seed=3).for_task(1, 2, 0, 0)
    records = list(range(50))
    kept, lost = faults.lose(records)
    assert 1 <= lost <= MAX_DROPPED and len(kept) == 50 - lost
    assert set(kept) < set(records)
    assert FaultConfig().for_task(1, 2, 0, 0).lose(records) == (records, 0)


def test_fault_rates_are_validated() -> None:
    with pytest.raises(ValueError):
        FaultConfig(crash_rate=1.5)


def test_corpus_is_deterministic(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", files=7, lines=6, seed=5, invalid=1)
    b = generate(tmp_path / "b", files=7, lines=6, seed=5)
    c = generate(tmp_path / "c", files=7, lines=6, seed=6)
    files_a = sorted(p.relative_to(a.root) for p in a.root.rglob("*.txt"))
    assert len(files_a) == 8
    for rel in (p.relative_to(b.root) for p in b.root.rglob("*.txt")):
        assert (a.root / rel).read_bytes() == (b.root / rel).read_bytes()
    assert (a.root / "part-00/doc-00000.txt").read_bytes() != (
        c.root / "part-00/doc-00000.txt"
    ).read_bytes()
    broken = next((a.root / "broken").iterdir())
    with pytest.raises(UnicodeDecodeError):
        broken.read_bytes().decode("utf-8")
    words = sum(len(re.findall(r"\w+", p.read_text("utf-8"))) for p in b.root.rglob("*.txt"))
    assert words == b.words


def test_corpus_has_non_ascii_words(tmp_path: Path) -> None:
    info = generate(tmp_path, files=20, lines=40, seed=0)
    text = " ".join(p.read_text("utf-8").lower() for p in info.root.rglob("*.txt"))
    assert sum(1 for w in UNICODE_WORDS if w.lower() in text) >= 6


def test_tags_name_the_attempt_and_stay_short() -> None:
    assert file_tag("r", "file:/a b.txt", 2) == "r/file:/a b.txt#2"
    long = file_tag("r", "s3a://b/" + "x" * 3000, 1)
    assert long.startswith("r/sha256:") and long.endswith("#1") and len(long) < 100


def _snapshot(root: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in root.rglob("*")
    }


def test_sample_is_written_only_where_nothing_of_the_user_stands(tmp_path: Path) -> None:
    first = generate(tmp_path / "c", files=3, lines=4, seed=1)
    before = _snapshot(first.root)
    again = generate(tmp_path / "c", files=3, lines=4, seed=1)  # the same sample: reused
    assert again.words == first.words and _snapshot(first.root) == before
    with pytest.raises(SampleExists):  # another sample over it would mix the two
        generate(tmp_path / "c", files=4, lines=4, seed=1)
    (first.root / "mine.txt").write_text("the user's own\n")
    with pytest.raises(SampleExists):
        generate(tmp_path / "c", files=3, lines=4, seed=1)
    theirs = tmp_path / "theirs"
    (theirs / "part-00").mkdir(parents=True)
    (theirs / "part-00" / "doc-00000.txt").write_text("not a sample\n")
    snapshot = _snapshot(theirs)
    with pytest.raises(SampleExists):
        generate(theirs, files=3, lines=4, seed=1)
    assert _snapshot(theirs) == snapshot  # refused before writing anything
    assert generate(tmp_path / "empty", files=1, lines=1).files == 1  # a new folder is fine


def test_a_sample_cut_short_takes_back_what_it_wrote_so_the_same_command_can_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    (tmp_path / "c").mkdir()  # the user's empty folder stays; what the sample wrote goes
    real_write = Path.write_text

    def full_at_the_third_file(self: Path, *args: Any, **kwargs: Any) -> int:
        if self.name == "doc-00002.txt":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_at_the_third_file)
    for root in (tmp_path / "c", tmp_path / "new" / "c"):
        with pytest.raises(OSError, match="No space"):
            generate(root, files=60, lines=2, seed=1)
    assert _snapshot(tmp_path) == {"c": None}
    monkeypatch.setattr(Path, "write_text", real_write)
    assert generate(tmp_path / "c", files=60, lines=2, seed=1).files == 60
