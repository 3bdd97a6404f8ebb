"""One rank of a multi-GPU probe: `python -m trainplan.probe.worker --job FILE`, started by torchrun
or the DeepSpeed launcher (launch.py). It builds the model on its device, wraps it (DDP, FSDP2
fully_shard per decoder layer and at the root, or deepspeed.initialize with the generated ZeRO
config), runs the probe's steps and writes rank<N>.json beside the job. Errors become that file's
"error" (one line), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from trainplan.errors import TrainplanError
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup
from trainplan.job.training import TrainingSetup

COLLECTIVE_TIMEOUT_S = 300   # a rank that failed must not leave the others waiting for 30 minutes


def _wrap_ddp(model, device: str, index: int):
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[index] if device == "cuda" else None)


def _wrap_fsdp2(model, setup: TrainingSetup, notes: list[str], hybrid: bool):
    """FSDP2 as accelerate/HF Trainer apply it: each decoder layer a unit, then the root. Mixed
    precision gathers 16-bit parameters (fp32 shards kept as master weights), reduces in fp32."""
    import torch
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    from trainplan.trace import build

    plan = build.dtype_plan(setup)
    policy = (MixedPrecisionPolicy(param_dtype=plan.autocast, reduce_dtype=torch.float32)
              if plan.autocast is not None else MixedPrecisionPolicy())
    for layer in build.decoder_layers(model):
        fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    if hybrid:
        notes.append("--fsdp hybrid on one node shards like --fsdp full (no replica groups)")
    return model


def _deepspeed_step(setup: TrainingSetup, model, optimizer, input_ids, config: dict[str, Any]):
    """deepspeed.initialize with the generated config; the engine's forward/backward/step."""
    import deepspeed

    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)

    def one_step() -> None:
        for _ in range(setup.grad_accum):
            loss = engine(input_ids=input_ids, labels=input_ids).loss
            engine.backward(loss)
            engine.step()

    return engine, engine.optimizer, one_step


def _init_distributed(device: str, strategy: str, index: int) -> None:
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    timeout = timedelta(seconds=COLLECTIVE_TIMEOUT_S)
    if strategy.startswith("zero"):
        import deepspeed

        deepspeed.init_distributed(dist_backend="nccl", timeout=timeout)
    elif not dist.is_initialized():
        if device == "cuda":
            dist.init_process_group("nccl", device_id=torch.device("cuda", index), timeout=timeout)
        else:
            dist.init_process_group("gloo", timeout=timeout)


def run_rank(job: dict[str, Any], rank: int, index: int) -> dict[str, Any]:
    from trainplan.probe import run

    device, strategy, steps = job["device"], job["strategy"], job["steps"]
    setup = build_setup(JobOptions(**job["request"]))
    notes: list[str] = []
    meter = run.new_meter(device, index)
    _init_distributed(device, strategy, index)
    model = run.build_on(setup, device=device, index=index, notes=notes)
    input_ids = run.synthetic_batch(setup, device=device, index=index, seed=rank)
    one_step: Callable[[], None]
    if strategy.startswith("zero"):
        optimizer = run.make_optimizer(setup, model, notes)
        model, optimizer, one_step = _deepspeed_step(setup, model, optimizer, input_ids, job["deepspeed_config"])
    else:
        model = _wrap_ddp(model, device, index) if strategy == "ddp" else _wrap_fsdp2(
            model, setup, notes, job.get("hybrid", False))
        optimizer = run.make_optimizer(setup, model, notes)
        one_step = run.hf_step(setup, model, optimizer, input_ids, device=device)
    if device == "cuda":   # the unsharded copies freed by wrapping: a sharded load never held them
        import torch

        torch.cuda.empty_cache()
    measurement = run.measure_steps(one_step, meter, setup=setup, device=device, steps=steps, model=model,
                                    optimizer=optimizer, input_ids=input_ids, notes=notes)
    return {"rank": rank, **measurement.to_dict(), "notes": notes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trainplan.probe.worker")
    parser.add_argument("--job", required=True)
    args, _ = parser.parse_known_args(argv)   # tolerate a launcher's --local_rank
    job = json.loads(Path(args.job).read_text())
    rank, index = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    out = Path(job["out_dir"]) / f"rank{rank}.json"
    try:
        result = run_rank(job, rank, index)
        code = 0
    except TrainplanError as exc:
        result, code = {"rank": rank, "error": str(exc)}, 2
    except Exception as exc:   # one line for the parent; TRAINPLAN_DEBUG=1 shows the traceback
        if os.environ.get("TRAINPLAN_DEBUG"):
            raise
        result, code = {"rank": rank, "error": f"{type(exc).__name__}: {exc}"}, 1
    out.write_text(json.dumps(result, default=str))
    try:
        import torch.distributed as dist

        if dist.is_initialized():
            if code == 0:
                dist.barrier()   # no rank tears the group down while another still talks to it
            dist.destroy_process_group()
    except Exception:   # teardown: the result file already holds the measurement or the error
        pass
    return code


if __name__ == "__main__":
    sys.exit(main())
