"""The JSON API of `trainplan serve` (trainplan.web): each endpoint's answer equals the library's for
the same input, every bad input is a 4xx with a one-line message, uploads stay in their folder, and
schemathesis sends >= 1,000 requests generated from the app's OpenAPI schema without one 500.

TestClient raises any exception a handler lets through (raise_server_exceptions), so a bug is a
failing test here, not a quiet 500."""

from __future__ import annotations

import datetime
import io
import json
import pathlib
import re

import pytest
from fastapi.testclient import TestClient

import trainplan
from trainplan.errors import TrainplanError
from trainplan.web.app import create_app

ROOT = pathlib.Path(__file__).parents[1]
LF = ROOT / "tests/fixtures/configs/llamafactory/examples/train_full/qwen3_full_sft_ds3.yaml"
SEED = {"model": "llama-2-7b", "method": "full", "precision": "fp16", "batch_size": 32, "seq_len": 1024,
        "gpu": "a100-80gb"}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    db = tmp_path_factory.mktemp("ledger") / "ledger.sqlite"
    with TestClient(create_app(db=str(db))) as c:
        yield c


@pytest.fixture(scope="module")
def bare():
    with TestClient(create_app()) as c:      # no ledger
        yield c


def _one_line_error(response, status: int | tuple[int, ...]) -> str:
    statuses = (status,) if isinstance(status, int) else status
    assert response.status_code in statuses, response.text
    message = response.json()["error"]
    assert message and "\n" not in message
    return message


def _plain(obj):
    return json.loads(json.dumps(obj, default=str))


# --- each endpoint equals the library ----------------------------------------------------------------

def test_estimate_get_and_post_equal_the_library(client):
    expected = _plain(trainplan.estimate(**SEED).to_dict())
    got = client.get("/api/estimate", params=SEED)
    assert got.status_code == 200
    assert got.json() == expected
    assert client.post("/api/estimate", json=SEED).json() == expected
    assert expected["memory"]["fits"] is False          # the seed's 7B example does not fit one A100 80GB


def test_plan_equals_the_library_and_has_every_point(client):
    query = {"model": "llama-2-7b", "method": "lora", "gpus": "a100-80gb,h100", "max_gpus": 8, "samples": 1000}
    result = trainplan.plan("llama-2-7b", method="lora", gpus=("a100-80gb", "h100"), max_gpus=8, samples=1000)
    got = client.get("/api/plan", params=query).json()
    points = got.pop("points")
    expected = _plain(result.to_dict())
    for d in (got, expected):
        d["stats"].pop("search_s")
    assert got == expected
    assert len(points) == len(result.found) and sum(p["pareto"] for p in points) == sum(result.pareto)
    assert [p["cost"] for p in points] == [f.cost_value for f in result.found]


def test_fit_equals_the_library(client):
    expected = _plain(trainplan.fit("llama-2-7b", method="lora", gpu="h100").to_dict())
    assert client.get("/api/fit", params={"model": "llama-2-7b", "method": "lora", "gpu": "h100"}).json() == expected


TABLE_QUERY = {"models": "llama-2-7b,llama-2-13b", "methods": "full,lora,qlora", "quants": "nf4,int8",
               "gpus": "a100-80gb,rtx4090", "global_batch": 64}
TABLE_FLAGS = ["--models", "llama-2-7b,llama-2-13b", "--methods", "full,lora,qlora", "--quants", "nf4,int8",
               "--gpus", "a100-80gb,rtx4090", "--global-batch", "64"]
_STAMP = re.compile(r'<p class="meta">[^<]*\d{4}-\d\d-\d\d \d\d:\d\d UTC[^<]*</p>')   # the generation line


def _cli_table(client, tmp_path, *flags: str) -> bytes:
    """The file `trainplan table ... --output FILE` writes, over the server's ledger."""
    from trainplan.cli import main

    out = tmp_path / f"cli-{len(list(tmp_path.iterdir()))}.out"
    assert main(["table", *TABLE_FLAGS, "--db", client.app.state.ledger_url, *flags, "--output", str(out)]) == 0
    return out.read_bytes()


@pytest.mark.parametrize("fmt, lang", [("html", "en"), ("html", "zh"), ("markdown", "en"), ("markdown", "zh"),
                                       ("csv", "en")])
def test_table_downloads_are_the_files_the_cli_writes(client, tmp_path, fmt, lang, capsys):
    got = client.get("/api/table", params={**TABLE_QUERY, "format": fmt, "lang": lang})
    assert got.status_code == 200, got.text
    suffix = {"markdown": "md"}.get(fmt, fmt)
    assert got.headers["content-disposition"] == f'attachment; filename="trainplan-table.{suffix}"'
    expected = _cli_table(client, tmp_path, "--format", fmt, "--lang", lang).decode()
    if fmt == "html":      # the generation line differs only by the minute it was written
        assert _STAMP.search(got.text) and _STAMP.search(expected)
        assert _STAMP.sub("", got.text) == _STAMP.sub("", expected)
        assert 'class="assumptions"' in got.text and 'class="prices"' in got.text
        assert ('lang="zh-CN"' in got.text and "假设" in got.text) if lang == "zh" else 'lang="en"' in got.text
    else:
        assert got.text == expected
    assert "int8" in expected                                    # --quants as columns


def test_table_xlsx_download_is_the_cli_workbook(client, tmp_path, capsys):
    from openpyxl import load_workbook

    got = client.get("/api/table", params={**TABLE_QUERY, "format": "xlsx", "paper": "letter"})
    assert got.status_code == 200 and got.headers["content-type"].startswith("application/vnd.openxmlformats")
    web = load_workbook(io.BytesIO(got.content))
    cli = load_workbook(io.BytesIO(_cli_table(client, tmp_path, "--format", "xlsx", "--paper", "letter")))
    assert web.sheetnames == cli.sheetnames == ["table", "data", "assumptions"]
    for name in web.sheetnames:
        mine, theirs = ([[c.value for c in row] for row in book[name].iter_rows()] for book in (web, cli))
        if name == "table":      # A2: the generation line, to the minute
            assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", mine[1][0])
            mine[1] = theirs[1] = None
        assert mine == theirs
        assert web[name].freeze_panes == cli[name].freeze_panes
        assert web[name].merged_cells.ranges == cli[name].merged_cells.ranges
    assert web["table"].freeze_panes == "D4" and int(web["table"].page_setup.paperSize) == 1     # 1: Letter
    gib = [r[14].value for r in web["data"].iter_rows(min_row=2)]
    assert gib and all(isinstance(v, int | float) for v in gib if v is not None)        # typed numbers, not text


def test_table_json_carries_the_cells_as_the_cli_json(client, capsys):
    from trainplan.cli import main

    got = client.get("/api/table", params=TABLE_QUERY).json()
    assert main(["table", *TABLE_FLAGS, "--db", client.app.state.ledger_url, "--json"]) == 0
    assert got["cells"] == json.loads(capsys.readouterr().out)
    cell = next(c for c in got["cells"] if c["method"] == "qlora" and c["quant"] == "int8" and c["gpu"] == "rtx4090")
    assert {"num_gpus", "gib_per_gpu", "time_h", "cost", "engine", "grad_ckpt", "micro_batch", "grad_accum"} <= set(cell)
    # the page's layout: one sub-row per model and GPU type, a cell per column with its words and colour
    assert [c["key"] for c in got["columns"]] == ["full bf16", "lora bf16", "qlora nf4 bf16", "qlora int8 bf16"]
    assert [(r["model"], r["gpu"]) for r in got["rows"]] == [(m, g) for m in ("llama-2-7b", "llama-2-13b")
                                                            for g in ("a100-80gb", "4090")]
    first = got["rows"][0]["cells"][1]
    assert first["kind"] in ("one", "many") and first["parts"][0].startswith("x")
    assert any("64 sequences per optimizer step" in a for a in got["assumptions"])
    assert [p["gpu"] for p in got["prices"]] == ["a100-sxm4-80gb", "rtx4090"]
    zh = client.get("/api/table", params={**TABLE_QUERY, "lang": "zh"}).json()
    assert zh["cells"] == got["cells"]                       # the records never change with the language
    assert zh["title"] != got["title"] and "LoRA" in zh["columns"][1]["header"]
    _one_line_error(client.get("/api/table", params={**TABLE_QUERY, "lang": "fr"}), 400)
    _one_line_error(client.get("/api/table", params={**TABLE_QUERY, "paper": "a3"}), 422)
    _one_line_error(client.get("/api/table", params={"models": "llama-2-7b", "methods": "lora", "quants": "int8"}), 400)


def test_the_python_table_takes_quants_and_global_batch():
    result = trainplan.table(("llama-2-7b",), methods=("qlora",), quants=("nf4", "int8"), gpus=("rtx4090",),
                             global_batch=16)
    assert [c.quant for c in result.cells] == ["nf4", "int8"] and result.request.global_batch == 16
    for ch in (c.choices[0] for c in result.cells):
        assert ch.batch_size * ch.grad_accum * ch.num_gpus == 16
    with pytest.raises(TrainplanError, match="global.batch"):
        trainplan.table(("llama-2-7b",), global_batch=0)


def test_catalog_listings_equal_the_cli(client):
    from trainplan.catalog import gpu_rows, model_rows
    from trainplan.cost.listing import price_rows
    from trainplan.cost.sources import price_book

    assert client.get("/api/models").json() == _plain(model_rows())
    assert client.get("/api/models", params={"filter": "qwen"}).json() == _plain(model_rows("qwen"))
    assert client.get("/api/gpus").json() == _plain(gpu_rows())
    book = price_book()
    assert client.get("/api/prices").json() == _plain(price_rows(book, today=datetime.date.today()))


def test_import_config_reads_the_upload_with_its_sources(client):
    got = client.post("/api/import-config", files=[("files", (LF.name, LF.read_bytes(), "application/x-yaml"))])
    assert got.status_code == 200, got.text
    data = got.json()
    assert data["setup"]["model"] == "Qwen/Qwen3-8B" and data["setup"]["zero"] == 3
    by_field = {s["field"]: s for s in data["sources"]}
    assert by_field["seq_len"] == {"field": "seq_len", "value": 2048, "origin": "file", "key": "cutoff_len",
                                   "file": LF.name, "raw": 2048}
    assert "/tmp" not in json.dumps(data) and data["files"] == [LF.name]
    assert any("no GPU count" in n for n in data["notes"])


def test_estimate_with_an_uploaded_config_equals_from(client, tmp_path):
    alone = tmp_path / LF.name          # uploaded alone: the DeepSpeed JSON it names is not beside it
    alone.write_text(LF.read_text())
    expected = trainplan.estimate(configs=(str(alone),), gpu="h100", num_gpus=8).to_dict()
    got = client.post("/api/estimate", json={"gpu": "h100", "num_gpus": 8,
                                             "configs": [{"name": LF.name, "text": LF.read_text()}]}).json()
    assert got["memory"] == _plain(expected["memory"]) and got["time"] == _plain(expected["time"])
    assert {s["field"]: s["origin"] for s in got["setup"]["sources"]}["seq_len"] == "file"


def test_export_of_uploaded_configs_is_their_job(client, tmp_path):
    """The export panel's POST: the uploaded configs' job (as --from, read confined to the upload)
    under the fields given, not the form's values."""
    from trainplan.estimation import estimate as estimate_job
    from trainplan.export.write import build_export

    alone = tmp_path / LF.name
    alone.write_text(LF.read_text())
    job = trainplan.resolve(configs=(str(alone),), gpu="h100", num_gpus=8)
    expected = _plain(build_export(job, estimate_job(job), None).to_dict())
    got = client.post("/api/export", json={"gpu": "h100", "num_gpus": 8,
                                           "configs": [{"name": LF.name, "text": LF.read_text()}]})
    assert got.status_code == 200, got.text
    assert got.json() == expected
    assert "llamafactory.yaml" in [f["name"] for f in expected["files"]] and "ZeRO-3" in expected["header"]
    assert "/tmp" not in got.text
    outside = f"model_name_or_path: x\nstage: sft\ndeepspeed: {LF.parent.parent}/deepspeed/ds_z3_config.json\n"
    assert "outside the upload" in _one_line_error(
        client.post("/api/export", json={"gpu": "h100", "num_gpus": 8, "configs": [{"name": "x.yaml", "text": outside}]}),
        400)


LLAMA_2_7B_CONFIG = {   # meta-llama/Llama-2-7b-hf config.json (the keys that size the model)
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "vocab_size": 32000,
    "max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "torch_dtype": "float16",
    "hidden_act": "silu"}


def test_estimate_with_an_uploaded_model_config(client):
    got = client.post("/api/estimate", json={"config_json": LLAMA_2_7B_CONFIG, "method": "lora"})
    assert got.status_code == 200, got.text
    assert got.json()["params"]["total"] == 6_738_415_616      # Llama-2-7B, as the catalog's entry
    assert "/tmp" not in json.dumps(got.json())
    _one_line_error(client.post("/api/estimate", json={"config_json": {"model_type": "nothing"}}), 400)


# --- the ledger ------------------------------------------------------------------------------------

def test_runs_without_a_ledger_list_nothing_and_write_nothing(bare, monkeypatch):
    assert bare.get("/api/runs").json()["runs"] == []
    assert bare.get("/api/info").json()["writable"] is False
    body = {"setup": {"model": "llama-2-7b", "method": "lora"}, "measured": {"peak_allocated_gib": 20}}
    assert "no ledger configured" in _one_line_error(bare.post("/api/runs", json=body), 400)


def test_runs_record_and_list_with_a_ledger(client):
    body = {"setup": {"model": "llama-2-7b", "method": "lora", "gpu": "a100-80gb"},
            "measured": {"peak_allocated_gib": 20.5, "step_s": 1.5}, "source": "test"}
    assert client.post("/api/runs", json=body).json()["added"] == 1
    runs = client.get("/api/runs", params={"source": "test"}).json()["runs"]
    assert runs and runs[0]["model"] == "llama-2-7b" and runs[0]["meas_peak_allocated_bytes"] == int(20.5 * 2**30)
    est = trainplan.estimate("llama-2-7b", method="lora", gpu="a100-80gb").memory.peak_allocated_bytes
    assert runs[0]["est_peak_allocated_bytes"] == est


# --- bad input: 4xx, one line --------------------------------------------------------------------

@pytest.mark.parametrize("url, status", [
    ("/api/estimate?model=no-such-model", 400),
    ("/api/estimate?model=llama-2-7b&batch_size=many", 422),
    ("/api/estimate?model=llama-2-7b&batch_size=0", 400),
    ("/api/estimate?model=llama-2-7b&method=sideways", 400),
    ("/api/estimate?model=llama-2-7b&gpu=abacus", 400),
    ("/api/estimate?model=llama-2-7b&unknown_flag=1", 422),
    ("/api/estimate?model=/etc/passwd", 400),
    ("/api/estimate?model=..%2F..%2Fetc", 400),
    ("/api/estimate", 400),
    ("/api/plan?model=llama-2-7b&max_gpus=1000000", 422),
    ("/api/plan?model=llama-2-7b&sort=fastest", 422),
    ("/api/table?models=llama-2-7b&format=pdf", 422),
    ("/api/table", 400),
    ("/api/fit?model=llama-2-7b&seq_len=-5", 400),
    ("/api/runs?limit=-1", 422),
    ("/?lang=klingon", 400),
    ("/api/nothing-here", 404),
])
def test_bad_input_is_a_4xx_with_one_line(client, url, status):
    _one_line_error(client.get(url), status)


def test_bad_uploads_are_refused_in_one_line(client):
    def post(text: str, name: str = "x.yaml"):
        return client.post("/api/estimate", json={"configs": [{"name": name, "text": text}]})

    assert "constructor" in _one_line_error(post("!!python/object/apply:os.system ['true']"), 400)
    _one_line_error(post("{not: [valid"), 400)
    _one_line_error(post("just some words"), 400)
    outside = f"model_name_or_path: x\nstage: sft\nfinetuning_type: lora\ndeepspeed: {LF.parent.parent}/deepspeed/ds_z3_config.json\n"
    assert "outside the upload" in _one_line_error(post(outside), 400)
    message = _one_line_error(client.post("/api/import-config", files=[("files", ("a.yaml", b"\x00\x01", "x"))]), 400)
    assert "/tmp" not in message
    big = b"a: 1\n" * (5 * 2**20 // 5)
    _one_line_error(client.post("/api/import-config", files=[("files", ("big.yaml", big, "x"))]), (400, 413))
    huge = {"model": "llama-2-7b", "configs": [{"name": "x.yaml", "text": "a" * (10 * 2**20)}]}
    _one_line_error(client.post("/api/estimate", json=huge), 413)


def test_the_server_binds_localhost_by_default():
    from trainplan.cli import build_parser

    args = build_parser("serve").parse_args(["serve"])
    assert (args.host, args.port, args.db) == ("127.0.0.1", 8000, None)


def test_the_estimate_path_does_not_import_fastapi():
    import subprocess
    import sys

    code = ("import sys, trainplan; trainplan.estimate('llama-2-7b'); "
            "print(any(m.split('.')[0] in ('fastapi', 'starlette', 'uvicorn') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


# --- property-based: the OpenAPI schema, >= 1,000 generated requests, no 500 -------------------------

EXAMPLES_PER_OPERATION = 100    # x the operations in the schema: >= 1,000 requests in all (~15 s)


def test_schemathesis_no_500_over_a_thousand_requests(tmp_path):
    import hypothesis
    import schemathesis
    from schemathesis.checks import not_a_server_error

    app = create_app(db=str(tmp_path / "fuzz.sqlite"))
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    sent, statuses = [], {}

    for operation in operations:
        @hypothesis.settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None, derandomize=True,
                             suppress_health_check=list(hypothesis.HealthCheck))
        @hypothesis.given(case=operation.as_strategy())
        def run(case):
            response = case.call()
            sent.append(1)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            assert response.status_code < 500, f"{case.method} {case.formatted_path} {case.query}: {response.text[:300]}"
            case.validate_response(response, checks=[not_a_server_error])
            if response.status_code >= 400:          # every refusal: {"error": one line}
                message = json.loads(response.text)["error"]
                assert message and "\n" not in message

        run()
    assert len(sent) >= 1000, f"only {len(sent)} requests generated"
    assert statuses.get(200, 0) > 0, statuses
    print(f"schemathesis: {len(sent)} requests, statuses {dict(sorted(statuses.items()))}")


def test_an_uploaded_config_cannot_make_the_server_read_its_files(tmp_path, monkeypatch):
    """A LLaMA-Factory YAML naming a DeepSpeed JSON that exists on the server (in the working
    directory) is read as if that file were absent: confined reads look only inside the upload."""
    from trainplan.importers.read import confined_reads, read_config

    (tmp_path / "server.json").write_text('{"zero_optimization": {"stage": 3}}')
    monkeypatch.chdir(tmp_path)
    upload = tmp_path / "upload"
    upload.mkdir()
    (upload / "train.yaml").write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nstage: sft\n"
                                       "finetuning_type: full\ndeepspeed: server.json\n")
    assert read_config(str(upload / "train.yaml")).values()["zero"] == 3          # the CLI finds it in the cwd
    with confined_reads():                                                      # not in the upload: absent
        assert read_config(str(upload / "train.yaml")).values().get("zero", 0) == 0
    (upload / "train.yaml").write_text("model_name_or_path: meta-llama/Llama-2-7b-hf\nstage: sft\n"
                                       f"finetuning_type: full\ndeepspeed: {tmp_path / 'server.json'}\n")
    with pytest.raises(TrainplanError, match="a file outside the upload"), confined_reads():
        read_config(str(upload / "train.yaml"))
    (upload / "train.yaml").write_text("model_name_or_path: m\ndeepspeed: ../server.json\n")
    with pytest.raises(TrainplanError, match="a file outside the upload"), confined_reads():
        read_config(str(upload / "train.yaml"))


def test_estimate_takes_a_catalog_dataset(client):
    params = {"model": "llama-2-7b", "method": "lora", "gpu": "a100-80gb", "dataset": "vicgalle/alpaca-gpt4"}
    expected = _plain(trainplan.estimate(**params).to_dict())
    got = client.post("/api/estimate", json=params).json()
    assert got == expected and got["setup"]["samples"] == 52002     # ms-swift's table: 52,002 samples
    assert "unknown dataset 'alpaka'" in _one_line_error(
        client.post("/api/estimate", json={**params, "dataset": "alpaka"}), 400)
