"""The resource table: its numbers (fewest GPUs is the edge), its formats round-trip (Markdown, CSV,
xlsx, HTML, JSON), the tier view, the pictures, and one-line errors."""

import csv
import html
import io
import json
import sys

import pytest

from trainplan.cli import main
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup, resolve_gpu
from trainplan.memory import estimate_memory
from trainplan.planner.table import (
    long_rows,
    models_of_size,
    pivot_rows,
    resolve_table,
    resource_table,
    sharded_layout,
    tier_rows,
)

MODELS = "llama-2-7b,llama-2-13b,llama-2-70b"


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def table():
    return resource_table(resolve_table(JobOptions(model=None), models=tuple(MODELS.split(",")),
                                        methods=("full", "lora", "qlora")))


def test_cells_memory_and_fewest_gpus_are_the_edge(table):
    cells = table.cells
    assert len(cells) == 9
    by = {(c.model.name, c.method): c for c in cells}
    assert by[("llama-2-7b", "full")].memory_bytes > by[("llama-2-7b", "lora")].memory_bytes > \
        by[("llama-2-7b", "qlora")].memory_bytes
    for c in cells:
        req = c.setup
        one = estimate_memory(c.setup, sharded_layout(req, resolve_gpu("a100"), 1, 8), resolve_gpu("a100"))
        assert c.memory_bytes == one.device_bytes
        for g in c.per_gpu:
            gpu = resolve_gpu(g["gpu"])
            n = g["min_gpus"]
            if n is None:
                assert estimate_memory(c.setup, sharded_layout(req, gpu, 64, 8), gpu).device_bytes > g["usable_bytes"]
                continue
            assert estimate_memory(c.setup, sharded_layout(req, gpu, n, 8), gpu).fits
            if n > 1:
                smaller = {2: 1, 4: 2, 8: 4}.get(n, n - 8)
                assert not estimate_memory(c.setup, sharded_layout(req, gpu, smaller, 8), gpu).fits


def test_markdown_table(capsys):
    code, out, _ = cli(capsys, "table", "--models", MODELS, "--methods", "full,lora,qlora", "--format", "markdown")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "| model | params | full bf16 | lora bf16 | qlora bf16 |"
    assert len(lines) == 5 and all(line.count("|") == 6 for line in lines)
    assert "GiB; a100-80gb x" in out and "| llama-2-70b | 68.98B |" in out


def test_csv_round_trip(capsys, table):
    code, out, _ = cli(capsys, "table", "--models", MODELS, "--methods", "full,lora,qlora", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 9 * 3
    expected = long_rows(table.cells)
    for got, want in zip(rows, expected):
        assert got["model"] == want["model"] and got["gpu"] == want["gpu"]
        assert int(got["memory_bytes"]) == want["memory_bytes"]
        assert (got["min_gpus"] or None) == (None if want["min_gpus"] is None else str(want["min_gpus"]))


def test_xlsx_opens_with_openpyxl(capsys, tmp_path, table):
    import openpyxl
    path = tmp_path / "table.xlsx"
    code, out, _ = cli(capsys, "table", "--models", MODELS, "--methods", "full,lora,qlora", "--format", "xlsx",
                       "--output", str(path))
    assert code == 0 and str(path) in out
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["table", "data"]
    pivot, columns = pivot_rows(table)
    table = list(wb["table"].values)
    assert list(table[0]) == columns
    assert [list(r) for r in table[1:]] == [[row.get(c) for c in columns] for row in pivot]
    data = list(wb["data"].values)
    assert len(data) == 1 + 27 and "memory_bytes" in data[0]


def test_html_contains_the_cells(capsys, tmp_path, table):
    path = tmp_path / "table.html"
    code, _, _ = cli(capsys, "table", "--models", MODELS, "--methods", "full,lora,qlora", "--format", "html",
                     "--output", str(path))
    assert code == 0
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page
    pivot, columns = pivot_rows(table)
    for row in pivot:
        for c in columns:
            assert f"<td>{html.escape(str(row[c]))}</td>" in page


def test_json_and_dataset_time_and_cost(capsys):
    code, out, _ = cli(capsys, "table", "--models", "llama-2-7b", "--methods", "lora,qlora", "--samples", "10000",
                       "--gpus", "a100,h100", "--json")
    assert code == 0
    rows = json.loads(out)
    assert len(rows) == 4
    for r in rows:
        assert r["min_gpus"] == 1 and r["time_s"] > 0 and r["cost"] > 0 and r["currency"] == "USD"


def test_sizes_pick_catalog_models():
    assert {"llama-2-7b", "qwen2.5-7b"} <= set(models_of_size("7b"))
    assert "llama-2-70b" in models_of_size("70b")
    assert models_of_size("124m") == ["gpt2"]


def test_tiers_side_by_side(capsys):
    rows = tier_rows(resolve_table(JobOptions(model="llama-2-7b", samples=1000), methods=("lora",),
                                   gpus=("a100", "h100", "rtx4090")))
    assert [r["gpu"] for r in rows] == ["a100-sxm4-80gb", "h100-sxm", "rtx4090"]
    assert {"memory_gib", "bandwidth_gb_s", "peak_bf16_tflops", "fits_one_gpu", "min_gpus", "time_h", "cost"} <= set(rows[0])
    assert rows[0]["fits_one_gpu"] and rows[1]["time_h"] < rows[0]["time_h"]
    code, out, _ = cli(capsys, "table", "--model", "llama-2-7b", "--methods", "lora", "--tiers", "--format", "markdown")
    assert code == 0 and "| gpu | memory_gib |" in out


def test_qlora_in_fp32_is_not_a_cell(capsys):
    code, out, _ = cli(capsys, "table", "--models", "llama-2-7b", "--methods", "full,qlora", "--precisions",
                       "bf16,fp32", "--gpus", "a100")
    assert code == 0 and "qlora fp32" in out and "n/a" in out


def test_pictures(capsys, tmp_path):
    import matplotlib  # noqa: F401
    bars, seq = tmp_path / "bars.png", tmp_path / "seq.svg"
    code, _, _ = cli(capsys, "table", "--models", "llama-2-7b", "--methods", "full,lora,qlora", "--plot", str(bars),
                     "--plot-seq", str(seq))
    assert code == 0
    assert bars.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "<svg" in seq.read_text()


def test_missing_matplotlib_is_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    code, _, err = cli(capsys, "table", "--models", "gpt2", "--methods", "full", "--plot", str(tmp_path / "x.png"))
    assert code == 2 and "pip install 'trainplan[plot]'" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, fragment", [
    (["table", "--models", "llama-2-7b", "--format", "xlsx"], "--output"),
    (["table", "--models", "llama-2-7b", "--format", "pdf"], "--format must be one of"),
    (["table", "--models", "llama-2-7b", "--gpus", "a1000"], "unknown GPU"),
    (["table", "--sizes", "7q"], "--sizes '7q'"),
    (["table", "--models", "llama-9-7b"], "did you mean"),
    (["table"], "give --models"),
    (["table", "--models", "llama-2-7b", "--plot-seq", "x.pdf"], ".png or .svg"),
])
def test_bad_input_is_one_line(capsys, argv, fragment):
    code, _, err = cli(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("trainplan: error:") and fragment in err


def test_setup_builds_for_every_cell(table):
    for c in table.cells:
        assert c.setup == build_setup(JobOptions(model=c.model, method=c.method, precision=c.precision), c.model)
