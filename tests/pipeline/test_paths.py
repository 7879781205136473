"""What the job does with the user's files, judged without Spark: refusals, OUTPUT, listing.

None of these start Spark: ``build_session`` is replaced by a function that fails the test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from xor_ack_dynamodb.pipeline import cli as pipeline_cli
from xor_ack_dynamodb.pipeline.errors import (
    InputEmpty,
    InputMissing,
    OutputExists,
    OutputNotOurs,
    PathsOverlap,
    ReportExists,
    ReportUnwritable,
    in_command_terms,
)
from xor_ack_dynamodb.pipeline.paths import (
    check_folders,
    check_paths,
    check_report,
    write_atomically,
)
from xor_ack_dynamodb.spark.errors import OutputUnusable
from xor_ack_dynamodb.spark.input_listing import InputFile, list_local, read_local
from xor_ack_dynamodb.spark.paths import (
    MANIFEST,
    OutputAction,
    is_remote,
    judge_output,
    local_listing,
    manifest_text,
    staging_path,
)
from xor_ack_dynamodb.spark.plan import file_tag


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root``: file bytes, link targets, folders (to prove nothing moved)."""
    seen: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            key = str(path.relative_to(root))
            if path.is_symlink():
                seen[key] = "-> " + os.readlink(path)
            elif path.is_dir():
                seen[key] = "dir"
            else:
                seen[key] = path.read_bytes()
    return seen


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "a.txt").write_text("a b\n")
    (tmp_path / "in" / "sub" / "b.txt").write_text("b c\n")
    (tmp_path / "counts").mkdir()
    (tmp_path / "counts" / "mine.csv").write_text("not the tool's\n")
    (tmp_path / "link-to-in").symlink_to(tmp_path / "in")
    (tmp_path / "in-file").write_text("a file where --report wants a folder\n")
    return tmp_path


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    from xor_ack_dynamodb.pipeline import spark as spark_module

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("Spark must not start for a refused run")

    monkeypatch.setattr(spark_module, "start_session", refuse)


# -- the CLI refuses before anything is touched ------------------------------------------


def _refusals(t: Path) -> list[tuple[list[str], str]]:
    i, c = str(t / "in"), str(t / "counts")
    return [
        ([str(t / "nope"), "-o", str(t / "o")], "InputMissing"),
        ([i, "-o", i], "is the input"),
        ([i, "-o", str(t / "in" / "sub" / "out")], "inside the input"),
        ([str(t / "in" / "sub"), "-o", i], "contains the input"),
        ([i, "-o", str(t / "link-to-in")], "is the input"),  # a symlink to INPUT
        ([str(t / "link-to-in" / "sub"), "-o", i], "contains the input"),
        ([i, "-o", c], "--overwrite"),  # exists, not empty
        ([i, "-o", c, "--overwrite"], "not written by xor-ack wordcount"),
        ([i, "-o", str(t / "in" / "a.txt")], "inside the input"),  # onto an input file
        ([i, "-o", str(t / "o"), "--report", str(t / "in" / "a.txt")], "in the input"),
        ([i, "-o", str(t / "o"), "--report", str(t / "in" / "r.json")], "in the input"),
        ([i, "-o", str(t / "o"), "--report", str(t / "o" / "r.json")], "in the output"),
        ([i, "-o", str(t / "o"), "--report", str(t / "counts" / "mine.csv")], "exists"),
        ([i, "-o", str(t / "o"), "--report", str(t / "in-file" / "r.json")], "not a folder"),
        ([i, "-o", str(t / "o"), "--report", str(t / "in-file" / "a" / "r.json")], "not a folder"),
        # a report named at a folder the run makes: found before, not after the counts
        ([i, "-o", str(t / "new" / "counts"), "--report", str(t / "new")], "writes in"),
        (
            [i, "-o", str(t / "o"), "--work-dir", str(t / "w" / "r"), "--report", str(t / "w")],
            "writes in",
        ),
        ([i, "-o", str(t / "o"), "--work-dir", str(t / "in")], "--work-dir"),
        ([i, "-o", str(t / "o"), "--work-dir", str(t / "o" / "rows")], "--work-dir"),
        ([i, "-o", str(t / "in-file" / "o")], "FolderUnwritable: output"),
        ([i, "-o", str(t / "in-file" / "a" / "o")], "is not a folder; choose another --output"),
        ([i, "-o", str(t / "o"), "--work-dir", str(t / "in-file")], "FolderUnwritable: --work"),
        ([i, "-o", str(t / "o"), "--work-dir", str(t / "in-file" / "w")], "another --work-dir"),
        ([str(t / "counts" / "empty"), "-o", str(t / "o")], "InputMissing"),
        # names the file system takes, their hidden siblings not: "OSError: [Errno 36] File
        # name too long", exit 1, after the run (for --report, after the counts were written)
        ([i, "-o", str(t / ("o" * 240))], "choose a shorter --output"),
        ([i, "-o", str(t / "o"), "--report", str(t / ("r" * 240 + ".json"))], "shorter --report"),
    ]


def test_refusals_exit_2_with_one_line_and_touch_nothing(tree: Path, no_spark: None) -> None:
    before = snapshot(tree)
    for args, expected in _refusals(tree):
        result = CliRunner().invoke(pipeline_cli.main, ["wordcount", *args])
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 2, (args, result.output)
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, result.output)
        assert expected in lines[0], (args, lines[0])
        assert snapshot(tree) == before, args


def test_an_empty_or_all_hidden_input_is_refused(tmp_path: Path, no_spark: None) -> None:
    (tmp_path / "in" / "_logs").mkdir(parents=True)
    (tmp_path / "in" / ".hidden.txt").write_text("x\n")
    (tmp_path / "in" / "_logs" / "a.txt").write_text("x\n")
    result = CliRunner().invoke(
        pipeline_cli.main, ["wordcount", str(tmp_path / "in"), "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "InputEmpty" in result.output and "no file to count" in result.output
    assert not (tmp_path / "o").exists()


# -- the rules, one by one -----------------------------------------------------------------


def test_overlap_is_judged_on_real_paths(tree: Path) -> None:
    check_paths(str(tree / "in"), str(tree / "out"), tree / "report.json", str(tree / "work"))
    check_paths(str(tree / "in"), str(tree / "in-2"))  # a shared prefix is not containment
    with pytest.raises(PathsOverlap):
        check_paths(str(tree / "in"), "file:" + str(tree / "in"))
    with pytest.raises(PathsOverlap):
        check_paths(str(tree / "link-to-in" / "."), str(tree / "in" / "x"))
    assert is_remote("s3a://bucket/x") and not is_remote("http:x") and not is_remote("file:/x")
    with pytest.raises(PathsOverlap):
        check_paths("s3a://bucket/in", "s3a://bucket/in/out")


def _ours(folder: Path, names: list[str]) -> None:
    folder.mkdir()
    for name in names:
        (folder / name).write_text("x")
    (folder / MANIFEST).write_text(manifest_text("run", "file:/in", names))


def test_output_is_replaced_only_when_it_is_all_ours(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert judge_output(str(out), local_listing(str(out)), False) is OutputAction.CREATE
    out.mkdir()
    assert judge_output(str(out), local_listing(str(out)), False) is OutputAction.REPLACE_EMPTY
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputExists, match="is a file"):
        judge_output(str(tmp_path / "f"), local_listing(str(tmp_path / "f")), True)

    ours = tmp_path / "ours"
    _ours(ours, ["_SUCCESS", "part-0.csv", ".part-0.csv.crc"])
    with pytest.raises(OutputExists):
        judge_output(str(ours), local_listing(str(ours)), False)
    assert judge_output(str(ours), local_listing(str(ours)), True) is OutputAction.REPLACE_OURS
    (ours / "notes.txt").write_text("the user's")
    with pytest.raises(OutputNotOurs, match=r"notes\.txt"):
        judge_output(str(ours), local_listing(str(ours)), True)

    other = tmp_path / "other"
    other.mkdir()
    (other / MANIFEST).write_text(json.dumps({"tool": "something else", "files": []}))
    with pytest.raises(OutputNotOurs):
        judge_output(str(other), local_listing(str(other)), True)


def test_a_file_put_inside_a_folder_of_our_output_stops_overwrite(tmp_path: Path) -> None:
    ours = tmp_path / "ours"
    (ours / "j=1").mkdir(parents=True)
    (ours / "j=1" / "part-0.csv").write_text("x")
    (ours / "j=1" / ".part-0.csv.crc").write_text("x")
    written = ["j=1/", "j=1/part-0.csv", "j=1/.part-0.csv.crc"]
    (ours / MANIFEST).write_text(manifest_text("run", "", written))
    listing = local_listing(str(ours), tree=True)
    assert judge_output(str(ours), listing, True) is OutputAction.REPLACE_OURS
    (ours / "j=1" / "notes.txt").write_text("the user's")
    (ours / "j=1" / "mine").mkdir()
    with pytest.raises(OutputNotOurs, match=r"j=1/mine/.*j=1/notes\.txt") as refused:
        judge_output(str(ours), local_listing(str(ours), tree=True), True)
    assert refused.value.extra == ("j=1/mine/", "j=1/notes.txt")


def test_a_manifest_naming_top_level_entries_only_proves_a_folder_without_folders(
    tmp_path: Path,
) -> None:
    def former(names: list[str]) -> str:  # an earlier version's manifest: format 2
        return json.dumps({"package": "xor-ack-dynamodb", "format": 2, "files": names})

    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "part-0.csv").write_text("x")
    (flat / MANIFEST).write_text(former(["part-0.csv", MANIFEST]))
    listing = local_listing(str(flat), tree=True)
    assert judge_output(str(flat), listing, True) is OutputAction.REPLACE_OURS
    nested = tmp_path / "nested"
    (nested / "j=1").mkdir(parents=True)
    (nested / "j=1" / "part-0.csv").write_text("x")
    (nested / MANIFEST).write_text(former(["j=1", MANIFEST]))
    with pytest.raises(OutputNotOurs, match="names only its top-level entries") as refused:
        judge_output(str(nested), local_listing(str(nested), tree=True), True)
    assert refused.value.extra == ("j=1/part-0.csv",)


def test_an_output_that_cannot_be_listed_or_is_a_symbolic_link_is_refused_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (tmp_path / "link").symlink_to(folder)  # to an empty folder: the commit's rename fails
    with pytest.raises(OutputUnusable, match="is a symbolic link") as refused:
        judge_output(str(tmp_path / "link"), local_listing(str(tmp_path / "link")), False)
    assert in_command_terms(refused.value) is refused.value  # no option of either is named
    (folder / "j=1").mkdir()
    scandir = os.scandir

    def denied(path: Any = ".") -> Any:
        if str(path).endswith("j=1"):
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", denied)  # a folder inside it that cannot be listed
    with pytest.raises(OutputUnusable, match=r"cannot read output .*\(Permission denied"):
        local_listing(str(folder), tree=True)
    monkeypatch.setattr(os, "listdir", denied)
    with pytest.raises(OutputUnusable, match=r"cannot read output .*\(Permission denied"):
        local_listing(str(folder / "j=1"))


def test_the_report_is_replaced_only_when_it_is_ours(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    check_report(report, False)
    report.write_text(json.dumps({"run_id": "x", "inputs": [], "totals": {}}))
    with pytest.raises(ReportExists):
        check_report(report, False)
    check_report(report, True)
    report.write_text("the user's notes")
    with pytest.raises(ReportExists, match="not a report"):
        check_report(report, True)
    with pytest.raises(ReportExists, match="folder"):
        check_report(tmp_path, True)
    write_atomically(tmp_path / "new" / "r.json", "{}\n")
    assert (tmp_path / "new" / "r.json").read_text() == "{}\n"
    assert os.listdir(tmp_path / "new") == ["r.json"]


def test_a_report_under_a_folder_that_cannot_be_written_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xor_ack_dynamodb.pipeline import paths

    check_report(tmp_path / "new" / "deeper" / "r.json", False)  # folders to be made: fine
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ReportUnwritable, match="is not a folder"):
        check_report(tmp_path / "gone" / "r.json", False)
    writable = {str(tmp_path): False}
    monkeypatch.setattr(paths.os, "access", lambda p, mode: writable.get(str(p), True))
    with pytest.raises(ReportUnwritable, match=f"the folder {tmp_path} is not writable"):
        check_report(tmp_path / "new" / "r.json", False)
    assert os.listdir(tmp_path) == ["gone"]


def test_an_output_or_work_dir_under_a_folder_that_cannot_be_written_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xor_ack_dynamodb.pipeline import paths
    from xor_ack_dynamodb.pipeline.errors import FolderUnwritable

    check_folders(str(tmp_path / "new" / "o"), str(tmp_path / "new" / "rows"))  # to be made
    check_folders("s3a://bucket/o", "s3a://bucket/rows")  # judged by the job, through Hadoop
    writable = {str(tmp_path / "ro"): False}
    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(paths.os, "access", lambda p, mode: writable.get(str(p), True))
    with pytest.raises(FolderUnwritable, match=f"the folder {tmp_path / 'ro'} is not writable"):
        check_folders(str(tmp_path / "ro" / "o"), None)
    with pytest.raises(FolderUnwritable, match="choose another --work-dir"):
        check_folders(str(tmp_path / "o"), str(tmp_path / "ro"))
    assert os.listdir(tmp_path) == ["ro"]


def test_staging_is_a_hidden_sibling_of_output(tmp_path: Path) -> None:
    assert staging_path(str(tmp_path / "counts"), "r1") == f"file:{tmp_path}/.counts.xor-ack-r1"
    assert staging_path("s3a://b/x/counts/", "r1") == "s3a://b/x/.counts.xor-ack-r1"


# Every name a POSIX file system allows (but '/' and NUL), a few that look like URIs.
ODD_NAMES = [
    "a:b.txt",
    "sp ace.txt",
    "100%.txt",
    "%41.txt",
    "#hash",
    "what?",
    "[b]",
    "*star",
    "ünïcødé.txt",
    "-dash",
    "http:x",
    "file:y",
    "we,ird {b} [c]*?.txt",
    "back\\slash",
    "new\nline",
]
BYTES_NAME = b"latin1-\xe9.txt"  # not UTF-8


def test_listing_policies(tmp_path: Path) -> None:
    root = tmp_path / "in"
    (root / "deep" / "er").mkdir(parents=True)
    for name in ODD_NAMES:
        (root / name).write_text(f"{name}\n")
    (Path(os.fsdecode(bytes(root) + b"/" + BYTES_NAME))).write_text("bytes name\n")
    (root / "deep" / "er" / "nested.txt").write_text("nested\n")
    (root / "empty.txt").write_bytes(b"")
    (root / "_skipped.txt").write_text("hidden\n")
    (root / ".skipped").write_text("hidden\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    (root / "link.txt").symlink_to(tmp_path / "outside.txt")
    (root / "broken").symlink_to(tmp_path / "missing")
    (root / "deep" / "loop").symlink_to(root)
    os.mkfifo(root / "fifo")
    files = {f.path.removeprefix("file:" + str(root) + "/"): f for f in list_local(str(root))}
    readable = {name for name, f in files.items() if f.problem is None}
    assert readable == {
        *ODD_NAMES,
        os.fsdecode(BYTES_NAME),
        "deep/er/nested.txt",
        "empty.txt",
        "link.txt",
    }
    assert files["broken"].problem is not None and files["broken"].problem.startswith(
        "broken-symlink"
    )
    assert files["fifo"].problem is not None
    assert files["fifo"].problem.startswith("not-a-regular-file")
    assert read_local(files["link.txt"].path) == b"outside\n"
    assert read_local(files["a:b.txt"].path) == b"a:b.txt\n"
    assert read_local("file:" + str(root / "gone")) == "No such file or directory"
    # A name that is not UTF-8 still gets a chain key DynamoDB accepts.
    tag = file_tag("run", files[os.fsdecode(BYTES_NAME)].path, 1)
    assert tag.startswith("run/sha256:") and tag.encode("utf-8")


def test_a_single_file_and_missing_inputs(tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_text("x\n")
    assert [f.path for f in list_local(str(tmp_path / "one.txt"))] == [f"file:{tmp_path}/one.txt"]
    with pytest.raises(InputMissing):
        list_local(str(tmp_path / "none"))
    (tmp_path / "dangling").symlink_to(tmp_path / "none")
    with pytest.raises(InputMissing, match="broken symbolic link"):
        list_local(str(tmp_path / "dangling"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputEmpty):
        list_local(str(tmp_path / "empty"))
    assert InputFile("file:/x", 0).problem is None


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--table", ""),
        ("--endpoint-url", "nope"),
        ("--region", "x y"),
        ("--partition-key", ""),
        # each passed, started Spark and ended in exit 1 in the library's words, or another's:
        ("--timeout", "1e9"),  # "InvalidArgument: round_timeout=...", track()'s name
        ("--partitions", str(2**31)),  # "Py4JError: Method repartition([class Long])"
        ("--output-partitions", str(2**31)),  # "FinishFailed: Sink(finish=...)"
        ("--master", "bogus"),  # "JAVA_GATEWAY_EXITED", naming no option
    ],
)
def test_bad_options_are_usage_errors_before_anything(
    tree: Path, no_spark: None, option: str, value: str
) -> None:
    from xor_ack_dynamodb.cli import cli

    before = snapshot(tree)
    args = ["wordcount", str(tree / "in"), "-o", str(tree / "o"), option, value]
    result = CliRunner().invoke(cli, args)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and f"Invalid value for '{option}'" in lines[0], result.output
    assert snapshot(tree) == before


def test_a_local_input_spelled_with_two_leading_slashes_is_read(tmp_path: Path) -> None:
    """POSIX keeps two leading slashes ("//tmp/inbox"); listed as "file://tmp/..." each
    file read as a URI with host "tmp" (a path under the working folder): every file
    ended unreadable."""
    (tmp_path / "a.txt").write_text("one two\n")
    (listed,) = list_local("//" + str(tmp_path).lstrip("/"))
    assert listed.path == "file:" + str(tmp_path / "a.txt")
    assert read_local(listed.path) == b"one two\n"
