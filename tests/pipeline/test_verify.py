"""``--verify``: the finished files counted again without Spark, compared with OUTPUT."""

from __future__ import annotations

from pathlib import Path

from xor_ack_dynamodb.pipeline.progress import conclusion
from xor_ack_dynamodb.pipeline.verify import verify
from xor_ack_dynamodb.spark import InputResult, TrackedReport
from xor_ack_dynamodb.spark.input_listing import list_local
from xor_ack_dynamodb.spark.paths import printable


def _run(tmp_path: Path, statuses: dict[str, str]) -> tuple[TrackedReport, Path]:
    corpus = tmp_path / "in"
    corpus.mkdir()
    (corpus / "a.txt").write_text("To be, or not\nto be\n", encoding="utf-8")
    (corpus / "b c:d.txt").write_text("Être ou ne pas\n", encoding="utf-8")
    (corpus / "late.txt").write_text("never counted\n", encoding="utf-8")
    inputs = [
        InputResult(printable(f.path), status=statuses[Path(f.path).name])  # type: ignore[arg-type]
        for f in list_local(str(corpus))
    ]
    report = TrackedReport("r", str(tmp_path / "out"), True, inputs=inputs)
    out = tmp_path / "out"
    out.mkdir()
    return report, out


def _write(out: Path, rows: dict[str, int]) -> None:
    lines = ["word,count", *(f"{w},{n}" for w, n in rows.items())]
    (out / "part-00000-x.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


EXACT = {"to": 2, "be": 2, "or": 1, "not": 1, "être": 1, "ou": 1, "ne": 1, "pas": 1}


def test_exact_output_is_verified_and_failed_files_are_left_out(tmp_path: Path) -> None:
    report, out = _run(tmp_path, {"a.txt": "acked", "b c:d.txt": "acked", "late.txt": "failed"})
    _write(out, EXACT)
    check = verify(report, str(tmp_path / "in"), str(out))
    assert check.ok and check.checked
    assert (check.files, check.words, check.distinct) == (2, 10, 8)
    assert conclusion(report, check)[-1].startswith("Verified: 2 finished files counted again")


def test_a_count_off_by_one_or_a_word_too_many_fails(tmp_path: Path) -> None:
    report, out = _run(tmp_path, {"a.txt": "acked", "b c:d.txt": "acked", "late.txt": "failed"})
    _write(out, {**EXACT, "be": 3, "never": 1})
    check = verify(report, str(tmp_path / "in"), str(out))
    assert not check.ok and check.checked
    assert check.detail.startswith("2 words differ (")
    assert "'be': 3 in OUTPUT, 2 recounted" in check.detail
    assert "'never': 1 in OUTPUT, 0 recounted" in check.detail
    assert conclusion(report, check)[-1].startswith("Verification FAILED: 2 words differ")


def test_remote_inputs_are_not_checked_and_say_so(tmp_path: Path) -> None:
    report = TrackedReport("r", str(tmp_path), True)
    check = verify(report, "s3a://bucket/in", str(tmp_path))
    assert check.ok and not check.checked
    assert conclusion(report, check)[-1] == "Not verified: not a local input or output."


def test_a_word_written_twice_is_an_error_not_a_sum(tmp_path: Path) -> None:
    report, out = _run(tmp_path, {"a.txt": "acked", "b c:d.txt": "acked", "late.txt": "failed"})
    _write(out, EXACT)
    (out / "part-00001-x.csv").write_text("word,count\nto,0\n", encoding="utf-8")
    check = verify(report, str(tmp_path / "in"), str(out))
    assert not check.ok and "'to' appears twice" in check.detail
