"""The measured block of a published case read as the schema's values (cases.normalize applies it): a number
written as text with separators, a magnitude ("1.3M", "2.7k", "15 trillion") and a unit word (a step time in
ms, minutes or hours under the seconds key, a memory in GB, MB or MiB under the GiB key converted), a percentage
MFU as its fraction, another name of a measured
quantity (MEASURED_SYNONYMS), samples/s as tokens/s where the samples are full sequences, else as the step
time of the global batch; a step rate (tqdm's it/s, HF Trainer's train_steps_per_second) as the step time, and a
run's wall time (train_runtime) over its tokens or its steps. Each reading that changed a value is a note."""

from __future__ import annotations

import re

from trainplan.cases.common import without_aside

FRACTION_METRICS = ("mfu", "hfu")
# the measured values the mappings read as numbers (cases.timecase, cases.memorycase); the block's other
# keys are text ("what", "scope", "model_mem": "15 GiB") and stay as written
MEASURED_NUMBERS = ("step_time_s", "tokens_per_s_per_gpu", "tokens_per_s_total", "tokens_per_s_reported",
                    "tflops_per_gpu", "mfu", "hfu", "gpu_hours", "tokens_total", "global_batch_tokens",
                    "hours_per_1B_tokens", "peak_mem_gib", "reported_value", "time_per_1k_iters_min")
# other names a measured block gives the same quantity (the key, the canonical key, the factor to its unit); read
# only where the canonical key is absent. A bare tokens/s is tokens_per_s_reported: per GPU or over all of them,
# the mapping decides (cases.timecase). Samples/s is read only as FULL_SAMPLES says.
MEASURED_SYNONYMS: dict[str, tuple[str, float]] = {
    **{key: ("step_time_s", 1.0) for key in ("step_s", "seconds_per_step", "sec_per_step", "s_per_step",
                                              "time_per_step_s", "iteration_time_s", "iter_time_s",
                                              "seconds_per_iteration", "s_per_iter", "time_per_iteration_s")},
    **{key: ("step_time_s", 1e-3) for key in ("step_time_ms", "iteration_time_ms", "iter_time_ms", "ms_per_step",
                                               "ms_per_iter")},
    **{key: ("tokens_per_s_per_gpu", 1.0) for key in ("tokens_per_s_per_device", "tokens_per_sec_per_gpu",
                                                       "tokens_per_second_per_gpu", "tgs", "tps_per_gpu")},
    **{key: ("tokens_per_s_total", 1.0) for key in ("tokens_per_sec_total", "tokens_per_second_total",
                                                     "total_tokens_per_s")},
    **{key: ("tokens_per_s_reported", 1.0) for key in ("tokens_per_s", "tokens_per_sec", "tokens_per_second",
                                                        "throughput_tokens_per_s")},
    **{key: ("tflops_per_gpu", 1.0) for key in ("tflops_per_device", "model_tflops_per_gpu", "tflops_per_s_per_gpu")},
    "mfu_percent": ("mfu", 0.01), "hfu_percent": ("hfu", 0.01), "gpu_days": ("gpu_hours", 24.0),
}
# Samples per second are tokens per second only where every sample holds seq_len tokens: the case's
# seq_len_note says its sequences are packed, filled or of fixed full length. HF Trainer's
# train_samples_per_second counts the whole run's samples (all GPUs); samples_per_s_per_gpu one GPU's.
FULL_SAMPLES = {"samples_per_s_per_gpu": "tokens_per_s_per_gpu", "samples_per_s": "tokens_per_s_total",
                "train_samples_per_second": "tokens_per_s_total"}
_FULL_SEQUENCES = re.compile(r"\bpack(?:ed|ing)\b|fully filled|full[- ]length|of full length|fixed \d+-token|"
                             r"without padding|no padding", re.IGNORECASE)

_NUMBER = re.compile(r"^\s*([-+]?(?:\d{1,3}(?:[,\s]\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)"
                     r"\s*(%|[A-Za-z/][\w/ .-]*)?\s*$")


def number(text: str) -> tuple[float, str] | None:
    """(value, unit) of a number written as text, thousands separators allowed; None if it is not one."""
    m = _NUMBER.match(text)
    if not m:
        return None
    return float(re.sub(r"[,\s]", "", m.group(1))), (m.group(2) or "").strip()


# a magnitude written after a measured number ("1.3M" GPU-hours, "2.7k tokens/s", "15 trillion" tokens): decimal,
# as counts of hours, tokens and FLOPs are written; only an upper-case M is a million (a lower-case m is minutes)
_MAGNITUDE = re.compile(r"^(?:([kKMBGT])(?![A-Za-z])|(thousand|million|billion|trillion)\b)", re.IGNORECASE)
_MAGNITUDES = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "b": 1e9, "g": 1e9, "billion": 1e9, "t": 1e12,
               "trillion": 1e12}


# a step time written in another unit than the key's seconds
_TIME_UNIT = re.compile(r"^(ms|msec|milliseconds?|min|mins|minutes?|h|hr|hrs|hours?)(?![A-Za-z])", re.IGNORECASE)
_SECONDS = {"ms": 1e-3, "msec": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3, "min": 60.0, "mins": 60.0,
            "minute": 60.0, "minutes": 60.0, "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0}


# a memory size written in another unit than the key's GiB: GB and MB are 1e9 and 1e6 bytes (nvidia-smi's MiB is
# 2^20), as the schema converts them ("converted where the source used 1e9-byte GB")
_MEMORY_UNIT = re.compile(r"^(gib|gb|mib|mb|tib|tb|g)(?![a-z])", re.IGNORECASE)
_GIB = {"gib": 1.0, "g": 1.0, "gb": 1e9 / 2**30, "mib": 1.0 / 1024, "mb": 1e6 / 2**30, "tib": 1024.0,
        "tb": 1e12 / 2**30}


def magnitude(unit: str) -> float:
    """The factor a magnitude at the start of a number's unit text stands for (_MAGNITUDE), else 1."""
    m = _MAGNITUDE.match(unit)
    if not m or (m.group(1) and m.group(1) == "m"):
        return 1.0
    return _MAGNITUDES[(m.group(1) or m.group(2)).lower()]


def plain_number(value: object) -> float | None:
    """A number, or text that is one (with separators, a magnitude and a unit word), else None (booleans included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    got = number(without_aside(value)) if isinstance(value, str) else None
    return got[0] * magnitude(got[1]) if got else None


def _measured(key: str, value: object) -> float | None:
    if not isinstance(value, str) or key not in MEASURED_NUMBERS:
        return None
    got = number(without_aside(value))      # "80 GB (nvidia-smi)": the aside is no unit
    if got is None:
        return None
    value_, unit = got
    if unit == "%":
        return value_ / 100.0 if key in FRACTION_METRICS else None
    if key == "step_time_s" and (seconds := _TIME_UNIT.match(unit)):
        return value_ * _SECONDS[seconds.group(1).lower()]      # "850 ms", "1.5 min" under the seconds key
    if key == "peak_mem_gib":      # "22.5 GB" (1e9 bytes), "23040 MiB"; a bare "G" is the key's own GiB
        size = _MEMORY_UNIT.match(unit)
        return value_ * (_GIB[size.group(1).lower()] if size else 1.0)
    return value_ * magnitude(unit)


def _full_samples(case: dict, measured: dict, notes: list[str]) -> None:
    """Samples/s as tokens/s where the case's samples are full sequences (FULL_SAMPLES)."""
    seq = case.get("seq_len") if isinstance(case.get("seq_len"), int) else None    # read above ("4k" -> 4096)
    if not seq or not _FULL_SEQUENCES.search(str(case.get("seq_len_note") or "")):
        return
    for key, canonical in FULL_SAMPLES.items():
        samples = plain_number(measured.get(key))
        if samples is None or measured.get(canonical) is not None:
            continue
        measured[canonical] = samples * seq
        notes.append(f"measured.{key} {measured[key]!r} x {seq} tokens a sample (full sequences: "
                      f"{case['seq_len_note']!r}) read as {canonical} {samples * seq:g}")


def _samples_per_step(case: dict, measured: dict, notes: list[str]) -> None:
    """Samples/s of samples that are not full sequences, as the step time: a step trains the global batch of
    samples whatever their lengths (HF Trainer's train_samples_per_second counts every GPU's samples; per GPU,
    one data-parallel rank's micro-batch x accumulation). Only where no throughput or step time is given."""
    if any(measured.get(k) is not None for k in ("step_time_s", "tokens_per_s_per_gpu", "tokens_per_s_total")):
        return
    micro, accum = case.get("micro_batch"), case.get("grad_accum") or 1
    per_rank = micro * accum if isinstance(micro, int) and isinstance(accum, int) else None
    batch = case.get("global_batch") if isinstance(case.get("global_batch"), int) else None
    for key, samples_in_step in (("samples_per_s", batch), ("train_samples_per_second", batch),
                                 ("samples_per_s_per_gpu", per_rank)):
        samples = plain_number(measured.get(key))
        if samples and samples_in_step:
            measured["step_time_s"] = samples_in_step / samples
            notes.append(f"measured.{key} {measured[key]!r}: a step of {samples_in_step} samples read as step_time_s "
                         f"{samples_in_step / samples:.4g}")
            return


# steps (iterations) a second: tqdm's "it/s", HF Trainer's train_steps_per_second metric; the step time is its inverse
STEP_RATES = ("it_per_s", "its_per_s", "iters_per_s", "iterations_per_s", "iterations_per_second", "steps_per_s",
              "steps_per_second", "train_steps_per_second")
# a run's wall time (HF Trainer's train_runtime metric is seconds), with the factor to seconds
RUN_TIMES = {"train_runtime": 1.0, "train_runtime_s": 1.0, "train_time_s": 1.0, "training_time_s": 1.0,
             "total_time_s": 1.0, "wall_time_s": 1.0, "runtime_s": 1.0, "train_time_min": 60.0,
             "training_time_min": 60.0, "train_time_h": 3600.0, "training_time_h": 3600.0, "wall_time_h": 3600.0}
# what the run did in that time: its tokens (all GPUs) or its optimizer steps
RUN_TOKENS = ("tokens_total", "total_tokens", "train_tokens", "num_tokens", "tokens_trained")
RUN_STEPS = ("steps", "total_steps", "train_steps", "max_steps", "num_steps", "global_steps")
# samples evaluated (forward only, all GPUs) inside that wall time: HF Trainer's train_runtime holds the
# evaluations eval_strategy runs, litgpt's `Training time` the validations of its fit loop
RUN_EVALS = ("eval_samples", "evaluated_samples", "validation_samples")
_TIME_KEYS = ("step_time_s", "tokens_per_s_per_gpu", "tokens_per_s_total", "tokens_per_s_reported", "tflops_per_gpu",
              "mfu", "hfu", "gpu_hours")


def _rates_and_runs(measured: dict, notes: list[str]) -> None:
    """A step rate as the step time; a run's wall time over its tokens as total tokens/s, over its steps as the
    step time. Only where the block gives no time metric of the schema's."""
    if any(measured.get(k) is not None for k in _TIME_KEYS):
        return
    for key in STEP_RATES:
        rate = plain_number(measured.get(key))
        if rate and rate > 0:
            measured["step_time_s"] = 1.0 / rate
            notes.append(f"measured.{key} {measured[key]!r} read as step_time_s {1.0 / rate:.4g} (its inverse)")
            return
    for key, factor in RUN_TIMES.items():
        seconds = plain_number(measured.get(key))
        if not seconds or seconds <= 0:
            continue
        seconds *= factor
        tokens = next(((k, v) for k in RUN_TOKENS if (v := plain_number(measured.get(k)))), None)
        steps = next(((k, v) for k in RUN_STEPS if (v := plain_number(measured.get(k)))), None)
        evals = next(((k, v) for k in RUN_EVALS if (v := plain_number(measured.get(k))) is not None), None)
        if steps and evals:
            # the run's wall time, evaluations included, against the predicted run of that many steps
            # (cases.timecase: run_s): a step time would charge the evaluations to training
            measured["run_s"] = seconds
            notes.append(f"measured.{key} {measured[key]!r} over measured.{steps[0]} {steps[1]:g} with "
                         f"measured.{evals[0]} {evals[1]:g} read as the run's wall time, run_s {seconds:.6g}")
        elif tokens:
            measured["tokens_per_s_total"] = tokens[1] / seconds
            notes.append(f"measured.{tokens[0]} {tokens[1]:g} over measured.{key} {measured[key]!r} read as "
                         f"tokens_per_s_total {tokens[1] / seconds:.6g}")
        elif steps:
            measured["step_time_s"] = seconds / steps[1]
            notes.append(f"measured.{key} {measured[key]!r} over measured.{steps[0]} {steps[1]:g} read as "
                         f"step_time_s {seconds / steps[1]:.4g}")
        return


# a bare tokens/s whose own text says whose it is: one GPU's ("3,200 tokens/s/GPU", "per device") or all of them
_PER_GPU_TEXT = re.compile(r"/\s*(?:gpu|device|card)\b|\bper\s+(?:gpu|device|card)\b", re.IGNORECASE)
_TOTAL_TEXT = re.compile(r"\b(?:total|all gpus|overall|aggregate|cluster|global)\b", re.IGNORECASE)


def _scoped(canonical: str, value: object) -> str:
    """A bare tokens/s (tokens_per_s_reported) as per GPU or total where its text says which."""
    if canonical != "tokens_per_s_reported" or not isinstance(value, str):
        return canonical
    if _PER_GPU_TEXT.search(value):
        return "tokens_per_s_per_gpu"
    return "tokens_per_s_total" if _TOTAL_TEXT.search(value) else canonical


def _value_objects(measured: dict, notes: list[str]) -> None:
    """A measured value written as an object of its number and unit ({"value": 91.2, "unit": "s/step"}) as the
    number with its unit word ("91.2 s/step"), which the readings below take as any other."""
    for key, value in list(measured.items()):
        if isinstance(value, dict) and "value" in value and set(value) <= {"value", "unit", "what", "note"} \
                and isinstance(value["value"], (int, float, str)) and not isinstance(value["value"], bool):
            written = f"{value['value']} {value.get('unit') or ''}".strip()
            notes.append(f"measured.{key} {value!r} read as {written!r}")
            measured[key] = written


# The schema's reported_value / reported_unit pair (the memory cases give their peak that way) with a unit that
# names a time metric: the key that metric has (the value then read with its unit, as under that key).
_REPORTED_UNITS = (
    (re.compile(r"tflop", re.IGNORECASE), "tflops_per_gpu"),
    (re.compile(r"\bmfu\b", re.IGNORECASE), "mfu"),
    (re.compile(r"\bhfu\b", re.IGNORECASE), "hfu"),
    (re.compile(r"\btok(?:en)?s?\s*(?:/|per)\s*(?:s|sec|second)\b", re.IGNORECASE), "tokens_per_s_reported"),
    (re.compile(r"\bsamples?\s*(?:/|per)\s*(?:s|sec|second)\b", re.IGNORECASE), "samples_per_s"),
    (re.compile(r"^(?:it|its|iters?|iterations?|steps?)\s*(?:/|per)\s*(?:s|sec|second)$", re.IGNORECASE), "it_per_s"),
    (re.compile(r"^(?:s|sec|secs|seconds?|ms|msec|milliseconds?|min|mins|minutes?)\s*(?:/|per)\s*"
                r"(?:step|it|iter|iteration)s?$", re.IGNORECASE), "step_time_s"),
    (re.compile(r"\bgpu[\s_-]*(?:hours?|hrs?|h)\b", re.IGNORECASE), "gpu_hours"),
    (re.compile(r"\bgpu[\s_-]*days?\b", re.IGNORECASE), "gpu_days"),
)


def _reported(measured: dict, notes: list[str]) -> None:
    """reported_value with a time metric's unit (_REPORTED_UNITS) under that metric's key, where the block gives no
    time metric of its own; "per GPU" or "total" in its `scope` goes with it (a bare tokens/s is scoped by it)."""
    value, unit = measured.get("reported_value"), measured.get("reported_unit")
    if value is None or not isinstance(unit, str) or any(
            measured.get(k) is not None for k in (*_TIME_KEYS, *MEASURED_SYNONYMS, *STEP_RATES, *FULL_SAMPLES,
                                                  *RUN_TIMES)):
        return
    key = next((k for pattern, k in _REPORTED_UNITS if pattern.search(unit.strip())), None)
    if key is None:
        return
    scope = str(measured.get("scope") or "").replace("_", " ")
    if key == "samples_per_s" and _PER_GPU_TEXT.search(f"{unit} {scope}"):
        key = "samples_per_s_per_gpu"
    written = f"{value}%" if key in FRACTION_METRICS and "%" in unit else f"{value} {unit} {scope}".strip()
    measured[key] = written
    notes.append(f"measured.reported_value {value!r} {unit!r} read as measured.{key} {measured[key]!r}")


def read_measured(case: dict, measured: dict, notes: list[str]) -> None:
    """`measured` (the case's own block, changed in place) with the readings above applied, a note for each."""
    _value_objects(measured, notes)
    _reported(measured, notes)
    for key, (canonical, factor) in MEASURED_SYNONYMS.items():
        value = measured.get(key)
        if value is None or measured.get(canonical) is not None:
            continue
        got = plain_number(value)
        if got is not None:
            canonical = _scoped(canonical, value)
            if measured.get(canonical) is not None:
                continue
            measured[canonical] = got * factor
            notes.append(f"measured.{key} {value!r} read as {canonical} {got * factor:g}")
    reported = measured.get("tokens_per_s_reported")
    if isinstance(reported, str) and (scoped := _scoped("tokens_per_s_reported", reported)) != "tokens_per_s_reported" \
            and measured.get(scoped) is None and (got := plain_number(reported)) is not None:
        measured[scoped] = got
        notes.append(f"measured.tokens_per_s_reported {reported!r} read as {scoped} {got:g}")
    _full_samples(case, measured, notes)
    _samples_per_step(case, measured, notes)
    _rates_and_runs(measured, notes)
    for key, value in list(measured.items()):
        got = _measured(key, value)
        if got is not None:
            notes.append(f"measured.{key} {value!r} read as {got:g}")
            measured[key] = got
