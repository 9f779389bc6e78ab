"""``inspector report --job JOB.json``: the report of a job, from the view rank 0 saved; a bad file costs one line."""

from __future__ import annotations

import json
import os

from tests.rpc.test_rpc_job_compare import three_ranks
from tests.test_cli import run


def test_the_report_shows_the_jobs_picture_from_the_saved_view_and_checks_the_plan_too(tmp_path) -> None:
    three_ranks().save(tmp_path / "job.json")
    result = run("report", str(tmp_path / "out.html"), "--job", str(tmp_path / "job.json"))
    assert result.returncode == 0 and "wrote" in result.stdout, result.stderr
    text = (tmp_path / "out.html").read_text()
    assert "This job, rank by rank" in text and "rank 2 is the straggler" in text
    assert "init_rpc would accept this topology." in text  # the planner's sections follow


def test_a_job_file_that_is_not_a_view_is_one_line_and_exit_two_and_nothing_is_written(tmp_path) -> None:
    altered = three_ranks().to_dict()
    altered["ranks"][1]["records"][0]["values"]["torch"] = ["not", "a", "scalar"]
    (tmp_path / "altered.json").write_text(json.dumps(altered))
    os.mkfifo(tmp_path / "fifo")
    for name, why in (
        ("altered.json", "view.ranks[1].records[0].values['torch']: must be a string"),
        ("fifo", "it is a FIFO"),
        ("missing.json", "No such file or directory"),
    ):
        result = run("report", str(tmp_path / "out.html"), "--job", str(tmp_path / name))
        assert result.returncode == 2, result
        assert result.stderr.startswith(f"inspector report: cannot read --job {tmp_path / name}: ")
        assert why in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out.html").exists()
