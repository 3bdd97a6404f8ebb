"""torchtitan TOML job configs read with --from (importers/torchtitan.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import estimate_json as est
from conftest import options_from as options
from trainplan.errors import TrainplanError
from trainplan.importers import read_config
from trainplan.importers.base import Origin
from trainplan.importers.merge import from_configs
from trainplan.job.options import JobOptions

DIR = Path(__file__).parent / "fixtures" / "configs" / "torchtitan"
L8B = DIR / "llama3_8b.toml"
L70B = DIR / "llama3_70b_tp8_pp2.toml"
FP8 = DIR / "llama3_8b_float8.toml"
OLD = DIR / "qwen3_8b_v0_1.toml"
SINGLE = DIR / "qwen3_0.6b_single_gpu.toml"


def unread(opts: JobOptions) -> dict:
    return {u.key: u.value for u in opts.unread}


def origin(opts: JobOptions, field: str) -> Origin:
    return next(s.origin for s in opts.provenance if s.field == field)


def test_llama3_8b_shipped_preset():
    o = options(L8B)
    assert (o.model, o.framework, o.precision, o.optimizer) == ("llama-3.1-8b", "torchtitan", "bf16", "adamw-fused")
    assert (o.batch_size, o.grad_accum, o.seq_len, o.max_steps) == (1, 1, 8192, 1000)
    assert (o.grad_ckpt, o.grad_ckpt_every, o.compile) == ("op", None, False)
    assert (o.fsdp, o.fsdp_version, o.reshard_after_forward) == ("full", 2, True)
    assert o.num_gpus == 1                       # data_parallel_shard_degree -1: the launcher decides
    assert unread(o) == {"parallelism.data_parallel_shard_degree": -1}
    assert origin(o, "precision") is Origin.FRAMEWORK_DEFAULT     # mixed_precision_param left out: bfloat16
    assert options(L8B, num_gpus=64).num_gpus == 64


def test_llama3_70b_tp_pp():
    o = options(L70B)
    assert (o.model, o.num_gpus, o.tp, o.pp, o.cp) == ("llama-3.1-70b", 64, 8, 2, 1)
    # PP: the local batch of 8 runs as 8 microbatches of 1; global 64 / (8 x dp_shard 4) = 2 accumulation steps
    assert (o.batch_size, o.grad_accum, o.seq_len) == (1, 16, 8192)
    assert (o.fsdp, o.reshard_after_forward) == ("full", False)    # "default" with PP: not pp_enabled
    assert origin(o, "reshard_after_forward") is Origin.FRAMEWORK_DEFAULT
    assert (o.grad_ckpt, o.precision) == ("full", "bf16")
    assert unread(o) == {}


def test_float8_compile_selective_layers():
    o = options(FP8)
    assert (o.precision, o.compile, o.grad_ckpt, o.grad_ckpt_every) == ("fp8", True, "full", 2)
    assert (o.num_gpus, o.batch_size, o.grad_accum, o.seq_len, o.max_steps) == (8, 2, 2, 4096, 3000)
    assert o.reshard_after_forward is True
    # the recipe is read (its cast traffic and which GEMMs run in FP8: timing/fp8.py); FP8 all-gather
    # and the modules kept out are not
    assert o.fp8_recipe == "torchao-rowwise"
    assert unread(o) == {"quantize.linear.float8": {"enable_fsdp_float8_all_gather": True, "filter_fqns": ["output"]}}


def test_older_keys_and_defaults():
    o = options(OLD)
    assert (o.model, o.num_gpus, o.fsdp, o.compile) == ("qwen3-8b", 16, "hybrid", True)   # training.compile
    assert o.precision == "bf16"       # [float8] settings without the float8 converter do nothing
    assert (o.grad_ckpt, o.grad_ckpt_every) == ("full", 2)
    assert origin(o, "grad_ckpt") is Origin.FRAMEWORK_DEFAULT and origin(o, "grad_ckpt_every") is Origin.FRAMEWORK_DEFAULT


def test_single_gpu_estimate_equals_flags(capsys):
    o = options(SINGLE)
    assert (o.model, o.num_gpus, o.fsdp, o.grad_ckpt, o.precision) == ("qwen3-0.6b", 1, "none", "full", "bf16")
    assert (o.fsdp_version, o.reshard_after_forward) == (None, None)
    a = est(capsys, "--from", str(SINGLE))
    b = est(capsys, "--model", "qwen3-0.6b", "--framework", "torchtitan", "--precision", "bf16", "--optimizer",
            "adamw-fused", "--batch-size", "4", "--seq-len", "4096", "--grad-ckpt", "full", "--no-compile")
    assert a["memory"] == b["memory"] and a["time"]["step_s"] == b["time"]["step_s"]


def test_world_from_the_launch_line():
    line = (f"torchrun --nproc_per_node 8 --nnodes 8 -m torchtitan.train --job.config_file {L8B} "
            "--training.global_batch_size 128 --parallelism.tensor_parallel_degree=2 --compile.enable")
    o = from_configs([line], JobOptions(model=""), {})
    assert (o.num_gpus, o.nodes, o.tp) == (64, 8, 2)
    assert o.grad_accum == 4          # 128 / (local 1 x dp_shard 64 / 2)
    assert o.compile is True and unread(o) == {}


def test_flags_override_the_file():
    o = options(L70B, batch_size=2, pp=1, num_gpus=64)
    assert (o.batch_size, o.pp, o.tp) == (2, 1, 8)
    assert next(s for s in o.provenance if s.field == "pp").origin is Origin.FLAG


def test_unread_and_memory_budget(tmp_path):
    f = tmp_path / "j.toml"
    f.write_text('[model]\nname = "llama4"\nflavor = "17bx16e"\n[training]\nlocal_batch_size = 1\n'
                 '[parallelism]\ndata_parallel_shard_degree = 8\npipeline_parallel_degree = 2\n'
                 'pipeline_parallel_schedule = "Interleaved1F1B"\n'
                 '[activation_checkpoint]\nmode = "memory_budget"\n[optimizer]\nname = "Muon"\n')
    o = options(f)
    # an interleaved schedule without split points runs torchtitan's 2 stages per rank
    assert set(unread(o)) == {"model.flavor", "activation_checkpoint.mode", "optimizer.name"}
    assert (o.num_gpus, o.pp, o.reshard_after_forward) == (16, 2, False)
    assert (o.pp_schedule, o.vpp) == ("interleaved-1f1b", 2)
    assert origin(o, "vpp") is Origin.FRAMEWORK_DEFAULT
    # with split points the stages per rank are the file's: not read, the user says --vpp
    f.write_text(f.read_text().replace('pipeline_parallel_schedule = "Interleaved1F1B"\n',
                                       'pipeline_parallel_schedule = "Interleaved1F1B"\n'
                                       'pipeline_parallel_split_points = ["layers.4", "layers.8", "layers.12"]\n'))
    o = options(f)
    assert "parallelism.pipeline_parallel_schedule" in unread(o) and o.pp_schedule is None


def test_old_files_keep_the_schedule_under_experimental(tmp_path):
    # torchtitan before the [parallelism] section: [experimental].pipeline_parallel_schedule (read, not dropped)
    f = tmp_path / "old.toml"
    f.write_text('[model]\nname = "llama3"\nflavor = "70B"\n[training]\nbatch_size = 8\n'
                 'data_parallel_shard_degree = 2\n[experimental]\npipeline_parallel_degree = 4\n'
                 'pipeline_parallel_schedule = "Interleaved1F1B"\n')
    o = options(f)
    assert (o.pp, o.pp_schedule, o.vpp) == (4, "interleaved-1f1b", 2)


@pytest.mark.parametrize("name, expected", [("ZBVZeroBubble", "zbv"), ("GPipe", "gpipe"), ("1F1B", "1f1b"),
                                            ("InterleavedZeroBubble", "zb-h1"), ("DualPipeV", None)])
def test_pipeline_schedules(tmp_path, name, expected):
    f = tmp_path / "j.toml"
    f.write_text('[model]\nname = "llama3"\nflavor = "70B"\n[training]\nlocal_batch_size = 8\n'
                 '[parallelism]\ndata_parallel_shard_degree = 2\npipeline_parallel_degree = 4\n'
                 f'pipeline_parallel_schedule = "{name}"\n')
    o = options(f)
    assert o.pp_schedule == expected
    assert ("parallelism.pipeline_parallel_schedule" in unread(o)) is (expected is None)
    # looped schedules other than ZB-V (always two chunks) run 2 stages per rank by default
    assert o.vpp == (2 if name == "InterleavedZeroBubble" else 1)


@pytest.mark.parametrize("text, needle", [
    ('[model]\nname = "llama3"\nflavor = "8B"\n[training\n', "malformed TOML"),
    ('[model]\nname = "llama3"\nflavor = "8B"\n[training]\nlocal_batch_size = "x"\n',
     "training.local_batch_size must be an integer"),
    ('[model]\nname = "llama3"\nflavor = "8B"\n[parallelism]\nfsdp_reshard_after_forward = "sometimes"\n',
     "fsdp_reshard_after_forward must be default, always or never"),
    ('[model]\nname = "llama3"\nflavor = "8B"\n[activation_checkpoint]\nmode = "selective"\nselective_ac_option = "mm"\n',
     "selective_ac_option"),
    ('[model]\nname = "llama3"\nflavor = "8B"\n[parallelism]\ndata_parallel_shard_degree = 0\n',
     "data_parallel_shard_degree must be -1 or >= 1"),
])
def test_bad_input_names_the_file(tmp_path, text, needle):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(TrainplanError) as err:
        read_config(str(f))
    assert needle in str(err.value) and str(f) in str(err.value) and "\n" not in str(err.value)


def test_torchtitan_splits_uneven_pipelines_itself(tmp_path, capsys):
    # Llama 3.1 405B's 126 layers over pp 8 x 2 stages a rank (Interleaved1F1B): 126 % 16 = 14, which
    # torchtitan's generate_llm_fqn_per_model_part spreads unevenly; no --uneven-pipeline needed
    f = tmp_path / "405b.toml"
    f.write_text('[model]\nname = "llama3"\nflavor = "405B"\n[training]\nlocal_batch_size = 32\nseq_len = 8192\n'
                 '[parallelism]\ndata_parallel_shard_degree = -1\ntensor_parallel_degree = 8\n'
                 'pipeline_parallel_degree = 8\npipeline_parallel_schedule = "Interleaved1F1B"\n'
                 'pipeline_parallel_microbatch_size = 4\n[activation_checkpoint]\nmode = "full"\n')
    d = est(capsys, "--from", str(f), "--gpu", "h100", "--num-gpus", "512", "--nodes", "64")
    assert any("interleaved-1f1b" in n and "v=2" in n for n in d["time"]["assumptions"])


def test_async_tensor_parallel_is_said_to_be_timed_as_vanilla(tmp_path):
    # enable_async_tensor_parallel changes how the TP collectives overlap, which trainplan does not model: it
    # is listed as not read (timed as vanilla TP), and only where there is tensor parallelism to speed up
    f = tmp_path / "j.toml"
    f.write_text('[model]\nname = "llama3"\nflavor = "8B"\n[training]\nlocal_batch_size = 2\n'
                 '[parallelism]\ndata_parallel_shard_degree = 2\ntensor_parallel_degree = 4\n'
                 'enable_async_tensor_parallel = true\n')
    o = options(f)
    assert unread(o) == {"parallelism.enable_async_tensor_parallel": True} and o.tp == 4
    assert "vanilla TP" in next(u.why for u in o.unread)
    f.write_text(f.read_text().replace("tensor_parallel_degree = 4", "tensor_parallel_degree = 1")
                 .replace("data_parallel_shard_degree = 2", "data_parallel_shard_degree = 8"))
    assert unread(options(f)) == {}


def test_flex_and_varlen_flavors_attend_per_document(tmp_path, capsys):
    # llama3 8B_flex: a block-causal document mask over the packed documents -> padding-free packing, the
    # attention span a document's (--tokens-per-sample); the plain flavor attends over the whole sequence
    f = tmp_path / "j.toml"
    f.write_text('[model]\nname = "llama3"\nflavor = "8B_flex"\n[training]\nlocal_batch_size = 1\nseq_len = 8192\n'
                 '[parallelism]\ndata_parallel_shard_degree = 8\n')
    o = options(f)
    assert (o.model, o.packing, o.padding_free) == ("llama-3.1-8b", True, True) and unread(o) == {}
    flex = est(capsys, "--from", str(f), "--tokens-per-sample", "512")
    f.write_text(f.read_text().replace('"8B_flex"', '"8B"'))
    plain = est(capsys, "--from", str(f), "--tokens-per-sample", "512", "--packing")
    assert flex["time"]["step_s"] < plain["time"]["step_s"]
    assert any("attends only within itself (512-token causal span)" in a for a in flex["time"]["assumptions"])


@pytest.mark.parametrize("components, compile_, compile_loss", [
    (["model", "loss"], True, None), (["model"], True, False), (["loss"], False, True)])
def test_compile_components_say_what_is_compiled(tmp_path, components, compile_, compile_loss):
    # job_config.py Compile.components (default ["model", "loss"]): the model's blocks and the loss compile apart
    text = L8B.read_text()
    old = '[compile]\nenable=false\ncomponents = ["model", "loss"]'
    assert old in text
    path = tmp_path / "job.toml"
    listed = ", ".join(f'"{c}"' for c in components)
    path.write_text(text.replace(old, f"[compile]\nenable = true\ncomponents = [{listed}]"))
    o = options(path)
    assert (o.compile, o.compile_loss) == (compile_, compile_loss)

