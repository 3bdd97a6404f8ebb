"""The resource table's printable outputs (HTML with assumptions and price sources, XLSX with a
formatted table sheet and a typed data sheet, Markdown, CSV, a terminal table <= 120 columns, JSON on
stdout with --output), in Chinese, and the ledger's corrections: a recorded run turns its cell into
"ran" with its measurement, a calibration changes the cells and says so; no ledger is ever created.

`table` runs through trainplan.cli.table."""

import csv
import io
import json
import re

import pytest

from trainplan import __version__
from trainplan.cli import main
from trainplan.job.options import JobOptions
from trainplan.planner.table import long_rows, resolve_table, resource_table
from trainplan.report.tables import display_width

MODELS = "llama-2-7b,llama-2-13b,llama-2-70b,qwen2.5-7b,qwen2.5-14b,qwen2.5-72b"
MUST_SHOW = ["table", "--models", MODELS, "--methods", "full,lora,qlora", "--gpus", "a100,a800,h800,4090"]


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def html_page(tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "table.html"
    assert main(MUST_SHOW + ["--format", "html", "--output", str(path)]) == 0
    return path.read_text(encoding="utf-8")


def test_html_carries_the_assumptions(html_page):
    page = html_page
    assert page.startswith("<!DOCTYPE html>") and '<html lang="en">' in page
    block = page[page.index('<dl class="assumptions">'):page.index("</dl>")]
    for label, value in (("sequence length", "2048 tokens per sequence"), ("global batch", "32 sequences per optimizer step"),
                         ("gradient checkpointing", "off, or on where it is needed or faster"),
                         ("framework", "hf: HF Trainer"), ("headroom", "10% of each GPU&#x27;s memory kept free"),
                         ("micro-batch", "the largest that fits"), ("run", "10,000 samples x 1 epoch(s)")):
        assert f"<dt>{label}</dt><dd>{value}" in block, label
    assert re.search(rf"generated \d{{4}}-\d\d-\d\d \d\d:\d\d UTC by trainplan {re.escape(__version__)}", page)
    assert "@page{size:A4 landscape" in page and "@media print" in page


def test_html_one_gpu_per_sub_row_with_fit_colours_and_prices(html_page):
    page = html_page
    assert page.count('<td class="gpu">') == 6 * 4
    assert page.count('<tr class="model-start">') == 6
    assert 'class="cell one"' in page and 'class="cell many"' in page
    prices = page[page.index('<table class="prices">'):]
    row = re.search(r"<tr><td>rtx4090</td><td>([\d.]+)</td><td>USD</td><td>(\w+)</td>.*?<td>(\d{4}-\d\d-\d\d)</td></tr>",
                    prices)
    assert row and float(row.group(1)) > 0 and row.group(3)        # a price, its provider and its date
    assert "<tr><td>a800-sxm4-80gb</td><td>-</td>" in prices       # no on-demand USD offer: said, not invented
    assert "no price for a800-sxm4-80gb, h800-sxm" in page


def test_html_qlora_70b_cells_ask_for_one_gpu(html_page):
    body = html_page[html_page.index("<tbody>"):html_page.index("</tbody>")]
    rows = body.split("<tr")
    for model in ("llama-2-70b", "qwen2.5-72b"):
        start = next(i for i, r in enumerate(rows) if f">{model}</th>" in r)
        for r in rows[start:start + 3]:          # a100, a800, h800 (80 GB)
            qlora = re.findall(r'<td class="cell [^"]*">(.*?)</td>', r)[2]
            assert re.match(r'<div class="n">x1, ', qlora), qlora


def test_xlsx_sheets_frozen_panes_and_typed_numbers(capsys, tmp_path):
    import openpyxl
    path = tmp_path / "table.xlsx"
    code, out, _ = cli(capsys, *MUST_SHOW, "--format", "xlsx", "--output", str(path))
    assert code == 0 and out.strip() == f"wrote {path}"
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["table", "data", "assumptions"]
    ws = wb["table"]
    assert ws.freeze_panes == "D4" and ws.print_title_rows == "$3:$3"
    assert ws.page_setup.orientation == "landscape" and ws.page_setup.fitToWidth == 1
    assert ws.sheet_properties.pageSetUpPr.fitToPage
    assert [c.value for c in ws[3]] == ["model", "params", "GPU", "full bf16", "lora bf16", "qlora nf4 bf16"]
    assert ws["A4"].value == "llama-2-7b" and ws["C4"].value == "a100-80gb"
    assert ws["D4"].alignment.wrap_text and ws["D4"].value.startswith("x2, ")
    assert ws["F7"].value.startswith("x1, ")                      # 7B QLoRA on one 4090
    data = wb["data"]
    assert data.freeze_panes == "B2" and data.auto_filter.ref
    head = [c.value for c in data[1]]
    for name in ("memory per GPU (GiB)", "time (h)", "cost (USD)", "step (s)", "fits", "price source",
                 "price as_of", "GPUs"):
        assert name in head, name
    rows = [dict(zip(head, (c.value for c in r))) for r in data.iter_rows(min_row=2)]
    assert len(rows) == 6 * 3 * 4
    number = (int, float)
    for r in rows:
        assert isinstance(r["fits"], bool)
        if r["fits"]:
            assert isinstance(r["memory per GPU (GiB)"], number) and isinstance(r["GPUs"], int)
            assert isinstance(r["step (s)"], number) and isinstance(r["time (h)"], number)
    priced = [r for r in rows if r["GPU"] == "rtx4090" and r["fits"]]
    assert priced and all(isinstance(r["cost (USD)"], number) and r["price as_of"] for r in priced)
    seven = next(r for r in rows if (r["model"], r["method"], r["GPU"]) == ("llama-2-7b", "qlora", "rtx4090"))
    assert seven["GPUs"] == 1 and 0 < seven["memory per GPU (GiB)"] < 21.6
    about = [r[0] for r in wb["assumptions"].values]
    assert "sequence length" in about and "Price sources" in about


def test_markdown_and_csv(capsys):
    code, out, _ = cli(capsys, *MUST_SHOW, "--format", "markdown")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "| model | params | GPU | full bf16 | lora bf16 | qlora nf4 bf16 |"
    assert lines[2].startswith("| llama-2-7b | 6.7B | a100-80gb | x2, ")
    assert "**Assumptions**" in out and "- sequence length: 2048 tokens per sequence" in out
    code, out, _ = cli(capsys, *MUST_SHOW, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 72
    want = long_rows(resource_table(resolve_table(JobOptions(model=None), models=tuple(MODELS.split(",")),
                                                  gpus=("a100", "a800", "h800", "4090"))).cells)
    for got, exp in zip(rows, want):
        assert (got["model"], got["gpu"], got["status"]) == (exp["model"], exp["gpu"], exp["status"])
        assert int(got["memory_bytes"]) == exp["memory_bytes"] and float(got["gib_per_gpu"]) == exp["gib_per_gpu"]


@pytest.mark.parametrize("extra", [[], ["--quants", "nf4,int8"], ["--lang", "zh"], ["--quants", "nf4,int8",
                                                                                   "--lang", "zh"]])
def test_terminal_fits_120_columns(capsys, extra):
    code, out, _ = cli(capsys, *MUST_SHOW, *extra)
    assert code == 0
    assert max(display_width(line) for line in out.splitlines()) <= 120
    assert out.count("\n") > 6 * 4 * 2          # one GPU type per sub-row, wrapped


def test_json_on_stdout_with_output(capsys, tmp_path):
    path = tmp_path / "t.html"
    code, out, _ = cli(capsys, "table", "--models", "llama-2-7b", "--methods", "qlora", "--gpus", "4090",
                       "--format", "html", "--output", str(path), "--json")
    assert code == 0
    rows = json.loads(out)
    assert rows[0]["gpu"] == "rtx4090" and rows[0]["num_gpus"] == 1 and rows[0]["fits"] is True
    assert path.read_text().startswith("<!DOCTYPE html>")
    code, out, _ = cli(capsys, "table", "--models", "llama-2-7b", "--methods", "qlora", "--gpus", "4090",
                       "--output", str(tmp_path / "t.json"), "--json")
    assert json.loads(out) == json.loads((tmp_path / "t.json").read_text())


def test_chinese_html(capsys, tmp_path):
    path = tmp_path / "zh.html"
    code, _, _ = cli(capsys, *MUST_SHOW, "--format", "html", "--output", str(path), "--lang", "zh")
    assert code == 0
    page = path.read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in page and "大模型训练资源表" in page
    for word in ("<h2>假设</h2>", "<dt>序列长度</dt><dd>每条序列 2048 个 token</dd>", "<dt>全局批大小</dt>",
                 "<dt>梯度检查点</dt>", "<dt>显存冗余</dt><dd>每张卡预留 10% 显存", "<th>全参微调 bf16</th>",
                 "<th>QLoRA 微调 nf4 bf16</th>", "价格来源", "由 trainplan", "单卡", "放不下"):
        assert word in page, word
    code, out, _ = cli(capsys, *MUST_SHOW, "--format", "html", "--lang", "en")
    assert "大模型" not in out and "<th>full bf16</th>" in out


def _record(capsys, db, *extra):
    code, _out, err = cli(capsys, "record", "--model", "llama-2-7b", "--method", "lora", "--gpu", "4090",
                         "--batch-size", "1", "--seq-len", "2048", "--source", "test", "--db", str(db), *extra)
    assert code == 0, err


def test_a_recorded_run_turns_its_cell_into_ran(capsys, tmp_path, monkeypatch):
    db = tmp_path / "ledger.sqlite"
    base = ["table", "--models", "llama-2-7b", "--methods", "lora", "--gpus", "4090", "--grad-ckpt", "none",
            "--batch-size", "1", "--json"]
    code, out, _ = cli(capsys, *base)
    before = json.loads(out)[0]
    assert before["status"] == "fits" and before["num_gpus"] > 1      # the model: 26.0 GiB on one 4090, no fit
    _record(capsys, db, "--device-gib", "22.4", "--step-s", "9.5")
    code, out, _ = cli(capsys, *base, "--db", str(db))
    ran = json.loads(out)[0]
    assert ran["status"] == "ran" and ran["fits"] and ran["num_gpus"] == 1
    assert ran["gib_per_gpu"] == 22.4 and re.fullmatch(r"\d{4}-\d\d-\d\d", ran["measured_at"])
    assert ran["estimate_gib_per_gpu"] > 21.6 > ran["gib_per_gpu"] * 0.9   # the estimate said no; it ran
    monkeypatch.setenv("TRAINPLAN_DB", str(db))                       # a plain path, as most people write it
    code, out, _ = cli(capsys, *base[:-1])
    assert "ran: x1, 22.4 GiB measured" in out and "ran: 1 cell(s) recorded as run in the ledger" in out
    code, out, _ = cli(capsys, *base, "--no-calibration")             # the raw model
    assert json.loads(out)[0]["status"] == "fits"
    monkeypatch.delenv("TRAINPLAN_DB")
    code, out, _ = cli(capsys, *base, "--seq-len", "4096", "--db", str(db))   # another sequence: not the same setup
    assert code == 0 and json.loads(out)[0]["status"] != "ran"


def test_no_ledger_is_created(capsys, tmp_path, monkeypatch):
    import os
    data = os.environ["TRAINPLAN_DATA_DIR"]
    code, _, _ = cli(capsys, "table", "--models", "llama-2-7b", "--methods", "lora", "--gpus", "4090",
                     "--db", str(tmp_path / "missing.sqlite"))
    assert code == 0 and not (tmp_path / "missing.sqlite").exists()
    code, _, _ = cli(capsys, "table", "--models", "llama-2-7b", "--methods", "lora", "--gpus", "4090")
    assert code == 0 and not os.path.exists(os.path.join(data, "ledger.sqlite"))


def test_a_calibration_changes_the_cells_and_says_so(capsys, tmp_path, monkeypatch):
    from trainplan.ledger.calibration import Calibration, Group, Term, save

    cal = Calibration(groups=(Group(level=("framework", "gpu", "method"), key=("hf", "rtx4090", "lora"),
                                    terms={"alloc_scale": Term(value=1.25, sigma=0.02, n=3, sources=("t",)),
                                           "time_factor": Term(value=0.5, sigma=0.02, n=3, sources=("t",))}),),
                      provenance={"created_at": "2026-11-30", "runs_used": 3})
    path = tmp_path / "calibration.json"
    save(cal, str(path))
    argv = ["table", "--models", "llama-2-7b", "--methods", "lora", "--gpus", "4090,a100", "--json"]
    code, out, _ = cli(capsys, *argv)
    raw = json.loads(out)
    monkeypatch.setenv("TRAINPLAN_CALIBRATION", str(path))
    code, out, _ = cli(capsys, *argv)
    got = json.loads(out)
    g4090, a100 = got
    assert g4090["calibrated"] and not a100["calibrated"] and a100 == raw[1]     # only the matching group
    assert g4090["gib_per_gpu"] > g4090["estimate_gib_per_gpu"]                  # 25% more allocated
    assert g4090["step_s"] > raw[0]["step_s"] * 1.5 or g4090["num_gpus"] != raw[0]["num_gpus"]
    code, out, _ = cli(capsys, *argv[:-1])
    assert "(calibrated)" in out and "calibrated: 1 cell(s) use `trainplan calibrate`'s corrections" in out
    assert "fitted 2026-11-30" in out
    code, out, _ = cli(capsys, *argv, "--no-calibration")
    assert code == 0 and json.loads(out) == raw
