"""--loss-upcast / --no-loss-upcast: whether the cross-entropy runs on an fp32 copy of the logits (transformers'
ForCausalLMLoss, `logits = logits.float()`, when the model gets labels) or on the 16-bit logits (a loop computing
its own loss; litgpt). The framework's profile decides when the flag is not given."""

from __future__ import annotations

import json

import pytest

from trainplan.cli import main

ARGS = ["estimate", "--model", "llama-3.1-8b", "--method", "lora", "--gpu", "h100", "--batch-size", "1",
        "--seq-len", "2048", "--json"]


def _estimate(capsys, *extra: str) -> dict:
    assert main([*ARGS, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_upcast_holds_fp32_logits_a_plain_loop_does_not(capsys):
    plain = _estimate(capsys, "--framework", "pytorch")
    upcast = _estimate(capsys, "--framework", "pytorch", "--loss-upcast")
    # 2,048 tokens x 128,256 logits: the fp32 copy (4 bytes a logit) and the log-softmax kept in fp32 instead of
    # bf16 (2 more) at the loss's peak: 6 x 262,668,288 = 1,576,009,728 bytes
    delta = upcast["memory"]["peak_allocated_bytes"] - plain["memory"]["peak_allocated_bytes"]
    assert delta == 6 * 2048 * 128256
    assert upcast["time"]["step_s"] > plain["time"]["step_s"]     # the copy's traffic


@pytest.mark.parametrize(("framework", "upcast"), [("hf", True), ("pytorch", False), ("litgpt", False)])
def test_without_the_flag_the_framework_decides(capsys, framework, upcast):
    default = _estimate(capsys, "--framework", framework)
    stated = _estimate(capsys, "--framework", framework, "--loss-upcast" if upcast else "--no-loss-upcast")
    assert default["memory"]["peak_allocated_bytes"] == stated["memory"]["peak_allocated_bytes"]


def test_a_typo_in_the_flag_is_one_line(capsys):
    assert main([*ARGS, "--loss-upcastt"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unrecognized arguments: --loss-upcastt" in err and "Traceback" not in err and len(err.splitlines()) == 1
