"""The CLI in Chinese and English (issue 16, item 5): --lang, $TRAINPLAN_LANG and the locale choose
the language of the text for people; --json, numbers and units never change."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from trainplan import i18n
from trainplan.cli import COMMANDS, build_parser, main
from trainplan.report.tables import display_width, render_table

ROOT = pathlib.Path(__file__).parents[1]
ESTIMATE = ("estimate", "--model", "llama-2-7b", "--method", "full", "--gpu", "a100")
LANG_VARIABLES = ("TRAINPLAN_LANG", "LC_ALL", "LC_MESSAGES", "LANG")


@pytest.fixture(autouse=True)
def english_environment(monkeypatch):
    for name in LANG_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def english_headings(text: str) -> list[str]:
    """The English output's own words: section headings (unindented lines ending with ':', up to
    the first parenthesis or ':'), table header cells, the verdict and the labelled lines."""
    found = set()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line and not line.startswith(" ") and line.endswith(":"):
            found.add(re.split(r" \(|:", line)[0])
        if i + 1 < len(lines) and set(lines[i + 1]) <= {"-", " "} and "-" in lines[i + 1]:
            found |= {cell for cell in re.split(r"\s{2,}", line.strip()) if cell not in ("GiB", "")}
    found |= {"DOES NOT FIT", "peak allocated", "peak reserved", "GPU capacity", "Parameters", "margin",
              "CPU RAM per node"}
    return sorted(found)


def test_estimate_text_in_chinese_has_no_english_heading(capsys):
    code, english, _ = run_cli(capsys, *ESTIMATE)
    assert code == 0
    headings = english_headings(english)
    assert {"Memory per GPU at the peak", "Changes that lower the peak", "Time and cost, step by step",
            "Assumptions and notes", "component", "share", "change", "what it costs", "step", "formula"} <= set(headings)
    code, chinese, _ = run_cli(capsys, *ESTIMATE, "--lang", "zh")
    assert code == 0
    left = [h for h in headings if re.search(rf"(?<![\w-]){re.escape(h)}(?![\w-])", chinese)]   # not in --max-steps
    assert left == []
    for label in ("每 GPU 显存", "优化器状态", "激活值（为反向传播保存）", "梯度", "权重", "放不下", "可降低峰值的改动",
                  "时间与费用", "步长时间", "每步 token 数", "每 GPU 小时价格", "假设与说明", "重试系数 1（默认：没有失败重跑）",
                  "未给出 --samples（或 --max-steps）：只计算每步时间", "GPU 显存容量 79.20 GiB"):
        assert label in chinese, label
    # the numbers and units are the English output's: 102.69 GiB allocated, 0.6649 s step, flags as typed
    for same in re.findall(r"\d[\d,.]* (?:GiB|s|FLOP/s|USD/GPU-h)\b", english):
        assert same in chinese
    assert "--grad-ckpt full" in chinese and "sdpa  [hf]" in chinese


def test_chinese_tables_line_up_on_a_terminal(capsys):
    _, chinese, _ = run_cli(capsys, *ESTIMATE, "--lang", "zh")
    lines = chinese.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("组成部分")))
    table = lines[start:start + 8]
    ends = {display_width(line) for line in table if line.strip()}
    assert len(ends) == 1, table        # GiB and share right-aligned: every row ends in the same column
    assert display_width("优化器状态 ab") == 13
    assert render_table([{"a": "权重", "b": 1}], headers=["组成", "GiB"]).splitlines() == ["组成  GiB", "----  ---",
                                                                                          "权重    1"]


def test_json_is_the_same_in_every_language(capsys):
    outputs = [run_cli(capsys, *ESTIMATE, "--json", *lang)[1] for lang in ((), ("--lang", "zh"), ("--lang", "en"))]
    assert outputs[0] == outputs[1] == outputs[2]
    assert json.loads(outputs[1])["notes"][0].startswith("framework profile: HF Trainer")
    models = [run_cli(capsys, "models", "llama-2", "--json", *lang)[1] for lang in ((), ("--lang", "zh"))]
    assert models[0] == models[1]


@pytest.mark.parametrize("variable,value", [("TRAINPLAN_LANG", "zh"), ("LANG", "zh_CN.UTF-8"), ("LC_ALL", "zh_TW")])
def test_environment_selects_chinese(capsys, monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    code, out, _ = run_cli(capsys, *ESTIMATE)
    assert code == 0 and "放不下" in out and "DOES NOT FIT" not in out
    code, out, _ = run_cli(capsys, *ESTIMATE, "--lang", "en")       # the flag wins
    assert "DOES NOT FIT" in out and "放不下" not in out


def test_main_leaves_the_language_as_it_found_it(capsys):
    i18n.set_language("en")
    run_cli(capsys, *ESTIMATE, "--lang", "zh")
    assert i18n.language() == "en"
    assert i18n.gettext("DOES NOT FIT") == "DOES NOT FIT"


@pytest.mark.parametrize("argv", [ESTIMATE + ("--lang", "fr"), ("models", "--lang=fr"), ("gpus", "--lang", "klingon")])
def test_unknown_language_is_one_line_exit_2(capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith("trainplan: error: --lang must be one of en, zh, got '")


def test_every_command_takes_lang():
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert set(commands) == set(COMMANDS)
    missing = [name for name, p in commands.items() if "--lang" not in p._option_string_actions]
    assert missing == []


@pytest.mark.parametrize("argv,expected", [
    (("estimate", "--model", "llama-2-7x"),
     "trainplan: error: 未知的模型 'llama-2-7x'；您是否想输入 llama-2-7b"),
    (("estimate", "--model", "llama-2-7b", "--gpu", "a1000"), "trainplan: error: 未知的GPU 'a1000'；您是否想输入 a100"),
    (("estimate", "--model", "llama-2-7b", "--batch-size", "0"),
     "trainplan: error: --batch-size 须为正整数（至多 1,048,576），实际为 0"),
    (("estimate", "--model", "llama-2-7b", "--headroom", "2"),
     "trainplan: error: --headroom 须为 [0, 1) 内的有限数，实际为 2.0"),
    (("estimate", "--model", "llama-2-7b", "--method", "xx"),
     "trainplan: error: --method 'xx' 不在可选值中：full, lora, qlora, freeze"),
    (("estimate", "--model", "llama-2-7b", "--batch-size", "x"),
     "trainplan: error: trainplan estimate：参数 --batch-size：无效的整数值：'x'"),
])
def test_common_errors_in_chinese_keep_the_ascii_prefix(capsys, argv, expected):
    code, _, err = run_cli(capsys, *argv, "--lang", "zh")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(expected), err
    code, _, err = run_cli(capsys, *argv)                          # and in English, unchanged
    assert code == 2 and err.isascii() and err.startswith("trainplan: error: ")


def test_translate_fills_templates_and_leaves_the_unknown_in_english():
    assert i18n.translate("retry factor 1.5 (default: no failed attempts)", lang="zh") == "重试系数 1.5（默认：没有失败重跑）"
    assert i18n.translate("--seq-len must be a positive integer (at most 33,554,432), got 100000000", lang="zh") \
        == "--seq-len 须为正整数（至多 33,554,432），实际为 100000000"
    assert i18n.translate("backward (loss), pipeline stage 1", lang="zh") == "反向（损失），流水线第 1 阶段"
    assert i18n.translate("a sentence nobody wrote a template for", lang="zh") == "a sentence nobody wrote a template for"
    assert i18n.translate("retry factor 1.5 (default: no failed attempts)", lang="en") \
        == "retry factor 1.5 (default: no failed attempts)"


def test_every_msgstr_keeps_the_fields_of_its_msgid():
    from test_i18n import compile_catalogs

    field = re.compile(i18n._FIELD)
    entries = compile_catalogs.parse_po((ROOT / "src/trainplan/locale/zh/LC_MESSAGES/trainplan.po").read_text("utf-8"))
    assert len(entries) > 150
    wrong = [k for k, v in entries.items() if k and sorted(set(field.findall(k))) != sorted(set(field.findall(v)))]
    assert wrong == []


def test_trace_text_in_chinese():
    from trainplan.job.options import JobOptions
    from trainplan.job.resolve import build_setup
    from trainplan.report.trace_text import render

    setup = build_setup(JobOptions(model="gpt2"))
    result = SimpleNamespace(wall_s=1.25, mode="exact", peak_allocated_bytes=3 * 2**30,
                             breakdown_bytes={"weights": 2**30, "activations": 2 * 2**30}, peak_phase="backward (loss)",
                             peak_module="lm_head", peak_in_recompute=True, peak_cuda_allocated_bytes=3 * 2**30,
                             per_module={"h.0": {"activations": 2**30}}, notes=["does not fit"])
    i18n.set_language("zh")
    try:
        text = render(setup, result)
    finally:
        i18n.set_language("en")
    assert text.startswith(f"{setup.model.name}  full  ") and "微批 1 x 序列长度 2048" in text
    for label in ("用 fake tensor 追踪，耗时 1.2 s", "已分配峰值 3.000 GiB，出现在 反向（损失），位于 lm_head（正在重算一个检查点层）：",
                  "类别", "权重", "激活值", "说明：", "  - 放不下"):
        assert label in text, label
    assert "Peak allocated 3.000 GiB at backward (loss), in lm_head (recomputing" in render(setup, result)   # English


def _quick_start(path: pathlib.Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    section = re.search(r"^## (?:Quick start|快速开始)\n(.*?)(?=^## )", text, re.DOTALL | re.MULTILINE).group(1)
    block = re.search(r"```\n(.*?)```", section, re.DOTALL).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_chinese_readme_has_the_same_quick_start_commands():
    english = _quick_start(ROOT / "README.md")
    assert len(english) == 2 and english[0].startswith("python3 -m venv .venv")
    assert _quick_start(ROOT / "README.zh-CN.md") == english


def test_catalogs_compiled_and_english_estimate_loads_none():
    check = subprocess.run([sys.executable, "tools/compile_catalogs.py", "--check"], check=False, cwd=ROOT,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    code = ("import io, contextlib; from trainplan import i18n; from trainplan.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['estimate', '--model', 'llama-2-7b'])\n"
            "print(sorted(i18n._catalogs), sorted(i18n._templates))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}).stdout
    assert out.strip() == "[] []"


def test_plan_and_fit_text_in_chinese(capsys):
    code, zh, _ = run_cli(capsys, "plan", "--model", "llama-2-7b", "--method", "lora", "--gpus", "h100", "--top", "2",
                          "--lang", "zh")
    assert code == 0
    for label in ("全局批大小 32", "按一步的费用排序（USD）", "帕累托前沿上", "微批 x 累积", "每 GPU GiB", "复现：trainplan estimate",
                  "共搜索"):
        assert label in zh, label
    assert "ranked by" not in zh and "To reproduce" not in zh
    code, en, _ = run_cli(capsys, "plan", "--model", "llama-2-7b", "--method", "lora", "--gpus", "h100", "--top", "2")
    assert "ranked by cost of one step (USD)" in en and "To reproduce: trainplan estimate <flags>" in en
    code, fit_zh, _ = run_cli(capsys, "fit", "--model", "llama-2-7b", "--method", "lora", "--gpu", "h100", "--lang", "zh")
    assert code == 0 and "序列长度 2,048 下最大微批：" in fit_zh
