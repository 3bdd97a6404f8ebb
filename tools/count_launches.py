"""Print the per-layer launch counts of trainplan.timing.launch.LAYER_LAUNCHES, recounted on the
installed torch / transformers / peft (trainplan.trace.launches), beside the table's values.

    python tools/count_launches.py
"""

from __future__ import annotations

import importlib.metadata as md

from trainplan.timing.launch import LAYER_LAUNCHES
from trainplan.trace.launches import count_layer_launches


def main() -> None:
    versions = ", ".join(f"{p} {md.version(p)}" for p in ("torch", "transformers", "peft"))
    print(f"ATen launches per Llama decoder layer and micro-batch ({versions})")
    print(f"{'kind':18s} {'forward':>8s} {'backward':>9s} {'recompute':>10s}   table")
    for key, lora in (("full", False), ("lora_all_linear", True)):
        c = count_layer_launches(lora)
        t = LAYER_LAUNCHES[key]
        print(f"{key:18s} {c.forward:8d} {c.backward:9d} {c.recompute:10d}   "
              f"{t.forward}/{t.backward}/{t.recompute}")


if __name__ == "__main__":
    main()
