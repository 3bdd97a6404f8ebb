"""accelerate config YAMLs read with --from (importers/accelerate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import estimate_json as est
from conftest import options_from as options
from trainplan.cli import main
from trainplan.errors import TrainplanError
from trainplan.importers import read_config
from trainplan.importers.base import Origin
from trainplan.job.options import JobOptions

DIR = Path(__file__).parent / "fixtures" / "configs" / "accelerate"
FSDP2 = DIR / "fsdp2.yaml"
ZERO3 = DIR / "deepspeed_zero3_offload.yaml"
MULTI = DIR / "multi_node_fsdp1.yaml"
DSFILE = DIR / "deepspeed_file.yaml"


def unread(opts: JobOptions) -> dict:
    return {u.key: u.value for u in opts.unread}


def test_fsdp2():
    o = options(FSDP2)
    assert o.model == ""                 # an accelerate config names no model
    assert (o.framework, o.precision, o.num_gpus, o.nodes) == ("fsdp", "bf16", 8, 1)
    assert (o.fsdp, o.fsdp_version, o.reshard_after_forward, o.offload, o.grad_ckpt) == ("full", 2, True, "none", "full")
    assert unread(o) == {} and o.ignored_keys >= 10


def test_deepspeed_zero3_offload_estimate_equals_flags(capsys):
    o = options(ZERO3)
    assert (o.framework, o.zero, o.offload, o.offload_device, o.grad_accum) == ("deepspeed", 3, "all", "cpu", 4)
    assert (o.num_gpus, o.precision) == (4, "bf16")
    a = est(capsys, "--from", str(ZERO3), "--model", "llama-3.1-8b", "--batch-size", "2")
    b = est(capsys, "--model", "llama-3.1-8b", "--framework", "deepspeed", "--zero", "3", "--offload", "all",
            "--num-gpus", "4", "--grad-accum", "4", "--precision", "bf16", "--batch-size", "2")
    assert a["memory"] == b["memory"] and a["time"]["step_s"] == b["time"]["step_s"]


def test_multi_gpu_two_machines_estimate_equals_flags(capsys, tmp_path):
    f = tmp_path / "ddp.yaml"
    f.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmachine_rank: 0\n"
                 "main_process_ip: 10.0.0.1\nmain_process_port: 29500\nmixed_precision: bf16\nnum_machines: 2\n"
                 "num_processes: 8\nrdzv_backend: static\nsame_network: false\ndynamo_config:\n"
                 "  dynamo_backend: INDUCTOR\n")
    o = options(f)
    assert (o.num_gpus, o.nodes, o.precision, o.compile, o.framework, o.fsdp, o.zero) == (
        8, 2, "bf16", True, "hf", "none", 0)
    a = est(capsys, "--from", str(f), "--model", "qwen2.5-1.5b")
    b = est(capsys, "--model", "qwen2.5-1.5b", "--num-gpus", "8", "--nodes", "2", "--precision", "bf16", "--compile")
    assert a["memory"] == b["memory"] and a["time"]["step_s"] == b["time"]["step_s"]


def test_multi_node_fsdp1_hybrid_by_number():
    o = options(MULTI)
    assert (o.nodes, o.num_gpus) == (2, 16)           # num_processes is the total over the machines
    assert (o.fsdp, o.fsdp_version, o.reshard_after_forward) == ("hybrid", 1, True)


def test_deepspeed_config_file_included():
    o = options(DSFILE)
    assert (o.framework, o.zero, o.precision, o.num_gpus) == ("deepspeed", 2, "bf16", 8)   # JSON bf16 "auto"
    assert str(DIR / "ds_zero2_auto.json") in o.configs


def test_defaults_of_an_fsdp_config_left_empty(tmp_path):
    f = tmp_path / "fsdp.yaml"
    f.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\nfsdp_config: {}\n")
    o = options(f)
    assert (o.fsdp, o.fsdp_version, o.reshard_after_forward) == ("full", 1, True)
    for field in ("fsdp", "fsdp_version", "reshard_after_forward"):
        assert next(s for s in o.provenance if s.field == field).origin is Origin.FRAMEWORK_DEFAULT
    zero = tmp_path / "ds.yaml"
    zero.write_text("distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config: {offload_optimizer_device: nvme}\n")
    z = options(zero)
    assert (z.zero, z.offload, z.offload_device) == (2, "optimizer", "nvme")    # ACCELERATE_DEEPSPEED_ZERO_STAGE 2


def test_model_required(capsys):
    assert main(["estimate", "--from", str(FSDP2), "--json"]) == 2
    assert "none of the --from configs names the model" in capsys.readouterr().err


def test_flags_override_and_unread(tmp_path):
    f = tmp_path / "fp8.yaml"
    f.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmixed_precision: fp8\n"
                 "num_processes: -1\nfp8_config:\n  backend: TE\n  fp8_format: HYBRID\nuse_cpu: true\n")
    o = options(f, num_gpus=4)
    assert (o.precision, o.num_gpus) == ("fp8", 4)
    assert set(unread(o)) == {"num_processes", "fp8_config", "use_cpu"}


@pytest.mark.parametrize("text, needle", [
    ("distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_sharding_strategy: HALF\n",
     "fsdp_config.fsdp_sharding_strategy must be one of"),
    ("distributed_type: MULTI_GPU\nnum_processes: eight\n", "num_processes must be an integer"),
    ("distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n  fsdp_offload_params: sometimes\n",
     "fsdp_offload_params must be true or false"),
    ("distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: three\n",
     "zero_stage must be an integer"),
    ("distributed_type: FSDP\nnum_processes: [2\n", "malformed YAML"),
])
def test_bad_input_names_the_file(tmp_path, text, needle):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(TrainplanError) as err:
        read_config(str(f))
    assert needle in str(err.value) and str(f) in str(err.value) and "\n" not in str(err.value)
