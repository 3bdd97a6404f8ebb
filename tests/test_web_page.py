"""The page of `trainplan serve`, driven in headless Chromium (Debian's /usr/bin/chromium through
Playwright's Python API) against uvicorn on a free localhost port: the seed's 7B example (Llama-2-7B
full fine-tune, fp16, batch 32 x 1024, one A100 80GB) shows its memory breakdown and "does not fit",
the Chinese page shows it in Chinese, an uploaded LLaMA-Factory YAML fills the form and the plan
scatter is drawn with its Pareto front.

These tests fail, never skip, when Chromium or Playwright is missing: CI installs both (.ci/run,
the dev extra). Screenshots go to $TRAINPLAN_WEB_SCREENSHOTS (tools/web_screenshots.py sets it to
docs/), else to the test's temporary folder."""

from __future__ import annotations

import os
import pathlib
import socket
import sys
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
LF_YAML = ROOT / "tests/fixtures/configs/llamafactory/examples/train_full/qwen3_full_sft_ds3.yaml"


def test_every_phrase_of_the_page_has_a_chinese_translation():
    sys.path.insert(0, str(ROOT / "tools"))
    from compile_catalogs import parse_po
    from trainplan.web.page import page_phrases

    po = ROOT / "src/trainplan/locale/zh/LC_MESSAGES/web.po"
    entries = parse_po(po.read_text(encoding="utf-8"))
    phrases = page_phrases()
    assert [p for p in phrases if not entries.get(p)] == []
    assert [m for m in entries if m and m not in phrases] == []      # no stale entries


def test_the_page_renders_in_both_languages_without_a_browser():
    from fastapi.testclient import TestClient

    from trainplan.web.app import create_app

    with TestClient(create_app()) as client:
        en, zh = client.get("/").text, client.get("/?lang=zh").text
    assert "{{" not in en and "%%" not in en and "Memory per GPU" in en
    assert "每卡显存" in zh and '"does not fit": "放不下"' in zh
    assert "http://" not in en.replace("http://www.w3.org", "") and "https://" not in en   # nothing from a CDN


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    import uvicorn

    from trainplan.web.app import create_app

    db = tmp_path_factory.mktemp("ledger") / "ledger.sqlite"
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(db=str(db)), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser():
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)"
    from playwright.sync_api import sync_playwright  # an ImportError fails the test: pip install playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-US")
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    pg.set_default_timeout(30_000)
    yield pg
    context.close()
    assert errors == [], errors


def _shots(tmp_path) -> pathlib.Path:
    folder = pathlib.Path(os.environ.get("TRAINPLAN_WEB_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _ready(pg) -> None:
    pg.wait_for_selector("body[data-ready='1']", state="attached")


def test_seed_7b_does_not_fit_then_in_chinese(server, page, tmp_path):
    shots = _shots(tmp_path)
    page.goto(server + "/")
    _ready(page)
    page.fill("#model", "llama-2-7b")
    page.select_option("select[name=method]", "full")
    page.select_option("select[name=precision]", "fp16")
    page.fill("input[name=batch_size]", "32")
    page.fill("input[name=seq_len]", "1024")
    page.select_option("#gpu", "a100-80gb")
    page.click("#run-estimate")
    page.wait_for_selector("#verdict.nofit")
    assert page.inner_text("#verdict") == "does not fit"
    assert page.locator("#memory-chart rect.segment").count() >= 4          # the breakdown, part by part
    assert page.locator("#memory-chart line.capacity").count() == 1         # the GPU's capacity line
    parts = page.eval_on_selector_all("#memory-chart rect.segment", "els => els.map(e => e.dataset.part)")
    assert {"weights", "optimizer states", "saved activations", "logits + loss"} <= set(parts)
    assert "355.7 GiB" in page.inner_text("#memory-table")                 # README's seed table: device view
    page.wait_for_selector("#tiers-table tbody tr")
    assert "llama-2-7b" in page.url and "batch_size=32" in page.url         # a shareable URL
    page.screenshot(path=str(shots / "web-estimate.png"))

    page.click("#lang-zh")
    page.wait_for_url("**lang=zh**")
    _ready(page)
    page.wait_for_selector("#verdict.nofit")
    assert page.inner_text("#verdict") == "放不下"
    assert "每卡显存" in page.inner_text("#estimate h2")
    assert page.input_value("input[name=batch_size]") == "32"               # the setup came with the URL
    page.screenshot(path=str(shots / "web-zh.png"))


def test_upload_llamafactory_yaml_then_plan_scatter(server, page, tmp_path):
    shots = _shots(tmp_path)
    page.goto(server + "/")
    _ready(page)
    page.set_input_files("#train-config", str(LF_YAML))
    page.wait_for_selector("#sources-table tbody tr")
    assert page.input_value("#model") == "Qwen/Qwen3-8B"
    assert page.input_value("select[name=zero]") == "3"
    assert "cutoff_len" in page.inner_text("#sources-table")
    page.fill("input[name=num_gpus]", "8")          # the config names no GPU count (the page says so)
    page.select_option("#gpu", "h100-sxm")
    page.click("#run-estimate")
    page.wait_for_selector("#verdict.fits")
    page.click("#run-plan")
    page.wait_for_selector("#plan-chart circle.pareto")
    assert page.locator("#plan-chart circle").count() > 10
    assert page.locator("#plan-chart path.front").count() == 1
    assert page.locator("#plan-table tbody tr").count() >= 1
    page.locator("#plan").screenshot(path=str(shots / "web-plan.png"))
    from trainplan.web.routes import export_available

    if export_available():           # trainplan.export.write in this build: each plan's configs to copy
        page.locator("#plan-table tbody button").first.click()
        page.wait_for_selector("#export-files figure pre")
        captions = page.locator("#export-files figcaption").all_inner_texts()
        assert any(c.startswith("llamafactory.yaml") for c in captions)   # the uploaded config's job, exported
        assert "(llamafactory)" in page.inner_text("#export-what")


def test_table_one_gpu_per_sub_row_downloads_and_runs(server, page, tmp_path):
    page.goto(server + "/?model=llama-2-7b&method=lora&view=table&quants=nf4,int8&global_batch=64")
    _ready(page)
    page.wait_for_selector("#resource-table tbody tr")
    assert page.input_value("#quants") == "nf4,int8" and page.input_value("#global-batch") == "64"
    heads = page.locator("#resource-table thead th").all_inner_texts()
    assert heads[:3] == ["model", "params", "GPU"] and "qlora int8 bf16" in heads
    rows = page.locator("#resource-table tbody tr")
    assert rows.count() == 3                                     # llama-2-7b on each default GPU type
    assert page.get_attribute("#resource-table tbody tr.model-start th", "rowspan") == "3"
    assert page.locator("#resource-table td.gpu").all_inner_texts() == ["a100-80gb", "h100", "4090"]
    kinds = set(page.eval_on_selector_all("#resource-table td.cell", "els => els.map(e => e.dataset.kind)"))
    assert kinds and kinds <= {"one", "many", "ran", "none", "na"}
    first = page.locator("#resource-table td.cell").first.locator("div").all_inner_texts()
    assert first[0].startswith("x") and "GiB" in first[0] and " h" in first[1]   # GPUs, GiB per GPU; time, cost
    assert "64 sequences per optimizer step" in page.inner_text("#table-assumptions")
    for fmt in ("csv", "xlsx", "html", "markdown"):
        href = page.get_attribute(f"#dl-{fmt}", "href")
        assert href and f"format={fmt}" in href and "quants=nf4%2Cint8" in href and "global_batch=64" in href
        response = page.request.get(server + href)
        assert response.ok and response.body()
        if fmt == "html":
            assert b'class="assumptions"' in response.body()
    page.locator("#table").screenshot(path=str(_shots(tmp_path) / "web-table.png"))
    page.click("#lang-zh")
    page.wait_for_url("**lang=zh**")
    _ready(page)
    page.wait_for_selector("#resource-table tbody tr")
    assert "LoRA" in page.inner_text("#resource-table thead") and "假设" in page.inner_text("#table")
    assert "lang=zh" in page.get_attribute("#dl-html", "href")
    body = {"setup": {"model": "llama-2-7b", "method": "lora"}, "measured": {"peak_allocated_gib": 21.0}}
    assert page.request.post(server + "/api/runs", data=body).ok
    page.click("#run-runs")
    page.wait_for_selector("#runs-chart circle.point")
    assert "llama-2-7b" in page.inner_text("#runs-table")


def test_a_dataset_named_in_the_form_reaches_the_estimate(server, page):
    page.goto(server + "/")
    _ready(page)
    page.fill("#model", "llama-2-7b")
    page.select_option("select[name=method]", "lora")
    page.select_option("#gpu", "a100-80gb")
    page.fill("input[name=dataset]", "vicgalle/alpaca-gpt4")
    page.click("#run-estimate")
    page.wait_for_selector("#verdict.fits")
    page.wait_for_selector("#notes li", state="attached")        # in the closed "Assumptions and notes"
    notes = page.text_content("#notes")
    # ms-swift's dataset table: 52,002 samples of 167.6 +- 123.9 tokens
    assert "dataset AI-ModelScope/alpaca-gpt4-data-en: 52,002 samples of 167.6 +- 123.9 tokens" in notes
    assert "dataset=vicgalle%2Falpaca-gpt4" in page.url or "dataset=vicgalle/alpaca-gpt4" in page.url
