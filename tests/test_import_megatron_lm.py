"""Megatron-LM `pretrain_gpt.py` launch lines and scripts read with --from (importers/megatron_lm.py, with
the bash of importers/shell.py): the model built from the flags, the layout, batch and precision."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import options_from as options
from trainplan.errors import TrainplanError
from trainplan.export import megatron as megatron_export
from trainplan.export.base import ExportContext
from trainplan.importers.shell import command_running
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.model.params import count_params

DIR = Path(__file__).parent / "fixtures" / "configs" / "megatron_lm"


def unread(opts) -> dict:
    return {u.key: u.value for u in opts.unread}


def test_gpt3_175b_under_sbatch_and_srun():
    o = options(DIR / "gpt_175b_sbatch.sh")
    # one rank per Slurm task: #SBATCH --nodes=128 x --ntasks-per-node=8
    assert (o.num_gpus, o.nodes, o.framework, o.tp, o.pp) == (1024, 128, "megatron", 8, 16)
    # data parallel 1024 / (8 x 16) = 8: 1536 / (1 x 8) = 192 micro-batches per step
    assert (o.batch_size, o.grad_accum, o.seq_len) == (1, 192, 2048)
    assert (o.precision, o.grad_ckpt, o.zero) == ("fp16", "full", 0)
    assert o.max_steps == 95368                       # ceil(146484375 / 1536)
    assert o.sequence_parallel is False               # model_parallel_config.py: off unless --sequence-parallel
    spec = o.model
    # GPT-2 BPE (50257) padded to a multiple of 128 x tp 8 = 1024: 51200; FFN 4h; learned positions, biases,
    # LayerNorm, tied embeddings (transformer_config.py defaults)
    assert (spec.vocab_size, spec.intermediate_size, spec.head_dim, spec.tied_embeddings) == (51200, 49152, 128, True)
    # by hand: per layer qkv 12288 x 36864 + 36864, proj 12288^2 + 12288, fc1 12288 x 49152 + 49152,
    # fc2 49152 x 12288 + 12288, two LayerNorms 4 x 12288: 1,812,099,072; x 96 = 173,961,510,912;
    # + embeddings 51200 x 12288 + positions 2048 x 12288 + final LayerNorm 2 x 12288
    assert count_params(spec).total == 173_961_510_912 + 629_145_600 + 25_165_824 + 24_576
    assert "--rampup-batch-size" in unread(o)


def test_llama3_shape_from_bash_arrays_and_an_if_block():
    o = options(DIR / "llama3_8b_arrays.sh")
    assert (o.num_gpus, o.nodes, o.tp, o.cp) == (16, 2, 2, 1)
    # dp = 16 / 2 = 8: 256 / (2 x 8) = 16
    assert (o.batch_size, o.grad_accum, o.seq_len, o.max_steps) == (2, 16, 8192, 1000)
    # the `if [[ "$DTYPE" == "fp8" ]]` branch ran, its array elements split into words
    assert (o.precision, o.fp8_recipe, o.grad_ckpt) == ("fp8", "te-current", "selective")
    assert (o.zero, o.comm_overlap) == (1, True)
    assert (o.sequence_parallel, o.attention) == (True, "flash")
    spec = o.model
    assert (spec.num_kv_heads, spec.head_dim, spec.vocab_size, spec.tied_embeddings) == (8, 128, 128256, False)
    assert (spec.qkv_bias, spec.mlp_bias, spec.hidden_dropout, spec.attention_dropout) == (False, False, 0.0, 0.0)
    # Llama 3.1 8B's count (the catalog's, and meta-llama's): the same shape
    assert count_params(spec).total == 8_030_261_248


def test_export_then_read_back_is_the_same_job():
    job = resolve_job(JobOptions(model="llama-3.1-70b", gpu="h100", framework="megatron", num_gpus=32, nodes=4, tp=8,
                                 pp=4, vpp=5, zero=1, grad_accum=8, grad_ckpt="full", seq_len=4096),
                      calibration=None, priced=False)
    lm = next(f for f in megatron_export.export(job, None, ExportContext()).files if f.name == "megatron_lm.sh")
    words = command_running(lm.text, "pretrain_gpt.py", "megatron_lm.sh")
    o = options(" ".join(words))
    assert (o.num_gpus, o.nodes, o.tp, o.pp, o.vpp, o.zero, o.grad_accum, o.grad_ckpt, o.seq_len, o.precision) == \
        (32, 4, 8, 4, 5, 1, 8, "full", 4096, "bf16")
    # the tokenizer names the catalog model: its vocabulary, padded to 128 x 8 (128256 = 125.25 x 1024 -> 129024)
    assert o.model.vocab_size == 129024
    assert count_params(o.model).total - count_params(job.setup.model).total == 2 * (129024 - 128256) * 8192


def test_shell_arrays_defaults_and_arithmetic():
    text = """
N=4
ARGS=(--a 1 --b "$N")
ARGS+=(--c $((N*2)))
X=${UNSET:-fallback}
python pretrain_gpt.py ${ARGS[@]} --d $X
"""
    assert command_running(text, "pretrain_gpt.py", "t.sh") == ["python", "pretrain_gpt.py", "--a", "1", "--b", "4",
                                                                "--c", "8", "--d", "fallback"]
    assert command_running("echo pretrain_gpt.py\n", "pretrain_gpt.py", "t.sh") is None
    with pytest.raises(TrainplanError, match="never closed"):
        command_running('A="open\npython pretrain_gpt.py\n', "pretrain_gpt.py", "t.sh")


def test_unknown_vocabulary_leaves_the_model_to_the_flag():
    o = options("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 256 "
                "--num-attention-heads 4 --seq-length 512 --micro-batch-size 1 --tokenizer-type "
                "SentencePieceTokenizer --tokenizer-model /data/tok.model")
    assert o.model == "" and "--tokenizer-type" in unread(o)
    assert (o.num_gpus, o.grad_accum) == (8, 1)       # no --global-batch-size: micro x data parallel


def test_megatron_deepspeed_flags_are_said_not_dropped():
    # Megatron-DeepSpeed runs the same pretrain_gpt.py with a DeepSpeed engine: its ZeRO stage is read from
    # --zero-stage; the engine's JSON (offload) is listed as not read, never silently dropped
    o = options("deepspeed --num_gpus 8 pretrain_gpt.py --num-layers 2 --hidden-size 256 --num-attention-heads 4 "
                "--seq-length 512 --micro-batch-size 1 --vocab-size 1000 --deepspeed --deepspeed_config ds.json "
                "--zero-stage 3")
    assert {"--deepspeed", "--deepspeed-config"} <= set(unread(o)) and "--zero-stage" not in unread(o)
    assert (o.num_gpus, o.zero, o.model.vocab_size) == (8, 3, 1024)      # 1000 padded to a multiple of 128


@pytest.mark.parametrize(("flags", "zero"), [
    ("--bf16 --zero-stage 0 --pipeline-model-parallel-size 2", 1),   # BF16_Optimizer: ZeRO-1's partitioning
    ("--bf16 --zero-stage 0", 0),                                    # no pipeline: DDP_BFLOAT16, nothing sharded
    ("--fp16 --zero-stage 0 --pipeline-model-parallel-size 2", 0),   # FP16_Optimizer: nothing sharded
    ("--bf16 --zero-stage 2 --pipeline-model-parallel-size 2", 2),
])
def test_megatron_deepspeed_zero_stage(flags, zero):
    # deepspeed/runtime/engine.py _do_optimizer_sanity_check: a bf16 model with ZeRO off under pipeline parallelism
    # runs BF16_Optimizer, which partitions fp32 master weights and optimizer states over data parallel
    o = options("deepspeed --num_gpus 8 pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 4 "
                f"--seq-length 512 --micro-batch-size 1 --vocab-size 1000 --deepspeed {flags}")
    assert o.zero == zero


def test_a_megatron_deepspeed_slurm_script_in_blooms_shape():
    # tests/fixtures/configs/megatron_lm/meg_ds_bf16.slurm, the shape of BigScience's tr11-176B-ml.slurm: a .slurm
    # batch script, `clear; srun ... bash -c "$LAUNCHER ... $CMD"` with one Slurm task a node running
    # `python -u -m torch.distributed.run --nproc_per_node 8 --nnodes $SLURM_NNODES`, CUDA_LAUNCH_BLOCKING exported
    o = options(DIR / "meg_ds_bf16.slurm")
    assert (o.num_gpus, o.nodes, o.tp, o.pp) == (32, 4, 2, 4)          # 8 ranks x 4 nodes, not 4 Slurm tasks
    assert (o.batch_size, o.grad_accum) == (2, 8)                      # 64 / (2 x data parallel 32 / (2 x 4) = 4)
    assert (o.precision, o.grad_ckpt, o.zero, o.launch_blocking) == ("bf16", "full", 1, True)
    assert o.uneven_pipeline is True                                   # --pp-partition-method: 30 layers, 4 stages
    assert o.model.vocab_size == 250880                                # --pad-vocab-size-to: the padded size itself
    # 'type:transformer|embedding': the embedding and the tied head are partition units like a layer
    assert o.pp_head_as_layer is True
    # bigscience Megatron-DeepSpeed's ParallelAttention: baddbmm scores, fused softmax, bmm (no flash kernel)
    assert o.attention == "eager"
    assert unread(o)["--position-embedding-type"] == "alibi"     # said: ALiBi's bias is not timed apart


def test_a_megatron_deepspeed_slurm_script_in_bigscience_tr1_shape():
    # tests/fixtures/configs/megatron_lm/meg_ds_fp16_v100.slurm, the shape of BigScience's tr1-13B-round1.slurm:
    # nodes of 4 GPUs, `bash -c '$LAUNCHER ... $SLURM_PROCID $CMD'` in single quotes (the inner bash expands the
    # exported LAUNCHER and CMD; SLURM_PROCID is each task's own: 0 for the first), `python -m torch.distributed.launch`
    # with a MASTER_ADDR the script gets from perl (unknown here: an empty value), an argument list that spans lines
    o = options(DIR / "meg_ds_fp16_v100.slurm")
    assert (o.num_gpus, o.nodes, o.tp, o.pp, o.zero) == (64, 16, 2, 4, 1)
    assert (o.precision, o.grad_ckpt, o.attention, o.batch_size, o.grad_accum) == ("fp16", "full", "eager", 1, 8)
    assert o.model.vocab_size == 50432          # GPT-2's 50,257 padded to a multiple of 128 x tp 2 = 256: 197 x 256


@pytest.mark.parametrize(("flag", "attention"), [("", "eager"), ("--use-flash-attn-v2", "flash"),
                                                 ("--use-flash-attn", "flash")])
def test_megatron_deepspeed_attention(flag, attention):
    o = options("deepspeed --num_gpus 8 pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 4 "
                f"--seq-length 512 --micro-batch-size 1 --vocab-size 1000 --deepspeed --zero-stage 1 {flag}")
    assert o.attention == attention



def test_argument_loops_wrappers_and_llama2_tokenizer():
    # Megatron-LM's newer example scripts parse their own options in a `while ... case ... esac done` loop
    # (with `exit` inside), run under `uv run` / nsys wrappers, and name Llama 2's SentencePiece tokenizer
    text = """
CKPT=/ckpt
while [[ $# -gt 0 ]]; do
    case $1 in
        --checkpoint-path) CKPT="$2"; shift 2 ;;
        -h|--help) echo usage; exit 0 ;;
    esac
done
PREFIX="uv run"
$PREFIX python -m torch.distributed.run --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 256 \\
    --num-attention-heads 4 --seq-length 512 --micro-batch-size 1 --global-batch-size 16 --swiglu \\
    --tokenizer-type Llama2Tokenizer --tokenizer-model /data/tokenizer.model --use-megatron-fsdp
"""
    words = command_running(text, "pretrain_gpt.py", "t.sh")
    assert words[:4] == ["uv", "run", "python", "-m"]
    o = options(" ".join(words))
    assert (o.num_gpus, o.grad_accum) == (8, 2)                 # 16 / (1 x 8)
    assert o.model.vocab_size == 32000                          # a multiple of 128 already
    assert "--use-megatron-fsdp" in unread(o)
