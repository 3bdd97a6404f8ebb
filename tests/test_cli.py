"""The outside surface: PRODUCT.md keys, one-line errors with exit code 2, a light import."""

import json
import subprocess
import sys

import pytest

from trainplan.cli import main

PRODUCT_MEMORY_KEYS = {"components_bytes", "peak_allocated_bytes", "peak_reserved_bytes", "device_bytes",
                       "gpu_capacity_bytes", "fits", "cpu_ram_bytes"}


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_estimate_json_has_product_keys(capsys):
    code, out, _ = run_cli(capsys, "estimate", "--model", "llama-2-7b", "--method", "full", "--gpu",
                           "a100-80gb", "--json")
    assert code == 0
    data = json.loads(out)
    assert {"setup", "params", "memory", "time", "cost", "notes"} <= set(data)
    assert PRODUCT_MEMORY_KEYS <= set(data["memory"])
    assert {"weights", "gradients", "optimizer", "activations"} <= set(data["memory"]["components_bytes"]) | {
        "gradients"}
    assert data["params"]["total"] == 6_738_415_616
    assert data["params"]["trainable"] == 6_738_415_616
    assert sum(data["memory"]["components_bytes"].values()) == data["memory"]["peak_allocated_bytes"]
    assert data["setup"]["model"] == "llama-2-7b" and data["setup"]["gpu"] == "a100-sxm4-80gb"
    assert isinstance(data["memory"]["fits"], bool)
    assert data["notes"]


def test_estimate_text_shows_breakdown_and_verdict(capsys):
    code, out, _ = run_cli(capsys, "estimate", "--model", "llama-2-7b", "--method", "full", "--gpu", "a100-80gb")
    assert code == 0
    assert "peak allocated" in out and "device (nvidia-smi)" in out
    assert "DOES NOT FIT" in out          # 16 B/param alone is 100 GiB for 6.74B parameters
    assert "--method lora" in out          # a change that makes it fit is listed


def test_lora_fits_and_counts_trainable(capsys):
    code, out, _ = run_cli(capsys, "estimate", "--model", "llama-2-7b", "--method", "lora", "--lora-rank", "16",
                           "--lora-targets", "q_proj,v_proj", "--gpu", "a100", "--json")
    data = json.loads(out)
    assert data["params"]["trainable"] == 8_388_608
    assert data["memory"]["fits"] is True


@pytest.mark.parametrize("argv, fragment", [
    (["estimate", "--model", "llama-9-7b"], "did you mean"),
    (["estimate", "--model", "llama-2-7b", "--gpu", "a1000"], "unknown GPU"),
    (["estimate", "--model", "llama-2-7b", "--batch-size", "0"], "--batch-size must be a positive integer"),
    (["estimate", "--model", "llama-2-7b", "--seq-len", "-5"], "--seq-len must be a positive integer"),
    (["estimate", "--model", "llama-2-7b", "--method", "lora", "--lora-rank", "5000"], "above the hidden size"),
    (["estimate", "--model", "llama-2-7b", "--method", "qlora", "--precision", "fp32"], "fp32"),
    (["estimate", "--model", "llama-2-7b", "--method", "sideways"], "--method 'sideways' is not one of"),
    (["estimate", "--model", "llama-2-7b", "--headroom", "1.5"], "--headroom"),
    (["estimate", "--model", "llama-2-7b", "--batch-size", "two"], "invalid int value"),
    (["estimate", "--model", "llama-2-7b", "--method", "lora", "--lora-targets", "nope"], "not found"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, fragment):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("trainplan: error:")
    assert fragment in err
    assert "Traceback" not in err


def test_malformed_config_json_is_one_line(capsys, tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", "hidden_size": 64,')
    code, _, err = run_cli(capsys, "estimate", "--model", str(bad))
    assert code == 2 and "config.json" in err and err.count("\n") == 1


def test_import_trainplan_and_estimate_load_no_heavy_modules():
    code = ("import sys, trainplan; trainplan.estimate('llama-2-7b', gpu='a100');"
            "heavy=[m for m in ('torch','transformers','peft','sqlalchemy','fastapi','matplotlib','numpy') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


@pytest.mark.parametrize("command", ["models", "gpus", "prices"])
def test_catalog_listings_json(capsys, command):
    code, out, _ = run_cli(capsys, command, "--json")
    assert code == 0 and len(json.loads(out)) > 10


def test_seed_example_chain(capsys):
    # shared/seeds/003: 10,000 samples / batch 32 x 3 epochs = 313 x 3 = 939 steps; 27.08 CNY per GPU-hour
    argv = ["estimate", "--model", "llama-2-7b", "--method", "full", "--precision", "fp16-pure", "--batch-size", "32",
            "--seq-len", "1024", "--samples", "10000", "--tokens-per-sample", "1024", "--epochs", "3",
            "--gpu", "a100-80gb", "--price-per-gpu-hour", "27.08", "--currency", "CNY", "--retry-factor", "3", "--json"]
    code, out, _ = run_cli(capsys, *argv)
    data = json.loads(out)
    assert code == 0 and data["time"]["steps"] == 939
    assert data["cost"]["currency"] == "CNY"
    assert data["cost"]["total"] == pytest.approx(data["time"]["gpu_hours"] * 27.08 * 3)
    assert data["time"]["step_s"] > 1.5     # the article's 1.5 s/step would need > 2x the A100's peak


def test_lengths_file_and_bad_values(capsys, tmp_path):
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("100\n300\n")
    code, out, _ = run_cli(capsys, "estimate", "--model", "qwen2.5-0.5b", "--samples", "100", "--lengths-file",
                           str(lengths), "--json")
    assert code == 0 and json.loads(out)["time"]["steps"] == 100
    lengths.write_text("100\nabc\n")
    code, _, err = run_cli(capsys, "estimate", "--model", "qwen2.5-0.5b", "--samples", "100", "--lengths-file",
                           str(lengths))
    assert code == 2 and "--lengths-file" in err
    code, _, err = run_cli(capsys, "estimate", "--model", "qwen2.5-0.5b", "--efficiency", "1.5")
    assert code == 2 and "--efficiency" in err


def test_trace_command_json(capsys):
    import pathlib

    import torch  # noqa: F401
    import transformers  # noqa: F401
    config = pathlib.Path(__file__).parent / "fixtures" / "trace" / "tiny_llama.json"
    code, out, _ = run_cli(capsys, "trace", "--model", str(config), "--batch-size", "2", "--seq-len", "32", "--json")
    data = json.loads(out)
    assert code == 0 and data["peak_allocated_bytes"] == sum(data["breakdown_bytes"].values())
    code, out, _ = run_cli(capsys, "trace", "--model", str(config), "--batch-size", "2", "--seq-len", "32")
    assert code == 0 and "Peak allocated" in out


@pytest.mark.parametrize("command, collector", [("estimate", False), ("plan", False), ("runs", True),
                                                ("serve", True), ("calibrate", True)])
def test_executable_runs_one_shot_commands_without_the_cyclic_collector(command, collector):
    """trainplan/__main__.py (the executable) turns the cyclic GC off before importing anything;
    cli.run turns it back on for commands that are not one-shot (FAST_EXIT)."""
    script = ("import gc, sys\nimport trainplan.__main__ as entry\nimport trainplan.cli as cli\n"
              "def fake(argv):\n    print('gc', gc.isenabled(), argv)\n    return 0\n"
              f"cli.main = fake\nsys.argv = ['trainplan', {command!r}, '--json']\nentry.run()\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"gc {collector} [{command!r}, '--json']"


def test_python_m_trainplan_is_the_executable():
    out = subprocess.run([sys.executable, "-m", "trainplan", "gpus", "--json"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert any(row["id"] == "h100-sxm" for row in json.loads(out.stdout))
