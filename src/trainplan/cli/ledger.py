"""Ledger commands: record, runs, import, calibrate, accuracy (registered by trainplan.cli).

No formulas here, and no heavy import at module level: SQLAlchemy and Alembic load inside the
commands that open the database (`trainplan estimate` never imports them).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import Any

from trainplan.cases import load_cases
from trainplan.cases.accuracy import evaluate, leave_one_source_out, render, summarize
from trainplan.cli.common import print_json
from trainplan.cli.flags import add_setup_flags, options_from_args
from trainplan.errors import TrainplanError
from trainplan.job.options import OPTION_NAMES, JobOptions
from trainplan.ledger import calibration, calibration_fit, spool
from trainplan.ledger.capture import (
    environment,
    open_ledger,
    record_from_case,
    record_from_options,
    recordable_url,
    save,
)
from trainplan.ledger.paths import db_url, redact
from trainplan.ledger.records import MEASURE_KEYS, measured_from_gib, now_iso, residual
from trainplan.ledger.store import read_runs
from trainplan.report.tables import render_table

MEASURE_FLAGS = (("peak_allocated_gib", "peak allocated memory per GPU (torch.cuda.max_memory_allocated), GiB"),
                 ("peak_reserved_gib", "peak reserved memory per GPU (torch.cuda.max_memory_reserved), GiB"),
                 ("device_gib", "peak device memory per GPU (nvidia-smi / NVML), GiB"),
                 ("step_s", "seconds per optimizer step"),
                 ("tokens_per_s", "tokens per second per GPU"))
FILE_RUN_FIELDS = frozenset({"setup", "measured", "source", "notes", "environment", "created_at", "external_id"})


def _db_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="SQLAlchemy URL of the ledger (default $TRAINPLAN_DB, else SQLite in the data dir)")


def add(sub: Any, name: str, helptext: str) -> None:
    p = sub.add_parser(name, help=helptext)
    if name == "record":
        add_setup_flags(p)
        for action in p._actions:            # --model is required for one run, not with --file
            if action.dest == "model":
                action.required = False
        m = p.add_argument_group("what was measured")
        for flag, text in MEASURE_FLAGS:
            m.add_argument("--" + flag.replace("_", "-"), type=float, help=text)
        m.add_argument("--source", default="manual", help="who measured it (a team, a cluster, a paper)")
        m.add_argument("--notes", default="")
        m.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                       help="environment facts (driver, cuda, ...); repeatable")
        m.add_argument("--file",
                       help="a JSON list of runs: {setup: {flags}, measured: {peak_allocated_gib, ...}, source}")
        m.add_argument("--force", action="store_true",
                       help="record memory above the GPU's catalog capacity (a variant with more memory), with a note")
        _db_flag(p)
        p.set_defaults(func=cmd_record)
    elif name == "runs":
        for key in ("model", "method", "framework", "gpu", "source", "precision"):
            p.add_argument("--" + key, help=f"filter by {key}")
        p.add_argument("--limit", type=int, default=50, help="newest N runs (0: all)")
        p.add_argument("--csv", metavar="FILE", help="also write every listed run to a CSV file")
        p.add_argument("--flush-spool", action="store_true",
                       help="write the runs spooled for this database now and say what was written and what was "
                            "set aside (any connection that writes does it too)")
        _db_flag(p)
        p.set_defaults(func=cmd_runs)
    elif name == "import":
        p.add_argument("file")
        _db_flag(p)
        p.set_defaults(func=cmd_import)
    elif name == "calibrate":
        p.add_argument("--out", help="calibration file (default $TRAINPLAN_CALIBRATION, else the data dir)")
        p.add_argument("--min-runs", type=int, default=3, help="runs a group needs before it gets its own term")
        _db_flag(p)
        p.set_defaults(func=cmd_calibrate)
    else:
        p.add_argument("--cases", required=True, help="JSON file in the shared/ground_truth schema")
        p.add_argument("--min-runs", type=int, default=3, help="cases a group needs for its own calibration term")
        p.set_defaults(func=cmd_accuracy)
    p.add_argument("--json", action="store_true")


def _env_pairs(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise TrainplanError(f"--env {pair!r}: expected KEY=VALUE")
        out[key] = value
    return out


def _file_runs(path: str) -> list[dict[str, Any]]:
    from trainplan.safeio import CASE_FILE_LIMIT_BYTES, parse_json, read_user_text

    data = parse_json(read_user_text(path, what="--file", limit_bytes=CASE_FILE_LIMIT_BYTES), what="--file", path=path)
    data = [data] if isinstance(data, dict) else data
    if not isinstance(data, list) or not data:
        raise TrainplanError(f"--file {path}: expected a JSON list of runs")
    return data


def _records_from_file(path: str, default_source: str, force: bool = False) -> list[Any]:
    records = []
    for i, run in enumerate(_file_runs(path)):
        where = f"--file {path}: run {i}"
        if not isinstance(run, dict):
            raise TrainplanError(f"{where}: expected a JSON object")
        unknown = sorted(set(run) - FILE_RUN_FIELDS)
        if unknown:
            raise TrainplanError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; nothing was written")
        setup, measured = run.get("setup") or {}, run.get("measured") or {}
        env = run.get("environment") or {}
        for name, value in (("setup", setup), ("measured", measured), ("environment", env)):
            if not isinstance(value, dict):
                raise TrainplanError(f"{where}: {name} must be a JSON object; nothing was written")
        for name in ("source", "notes", "external_id", "created_at"):
            if run.get(name) is not None and not isinstance(run[name], str):
                raise TrainplanError(f"{where}: {name} must be text, got {run[name]!r}; nothing was written")
        bad = sorted(set(setup) - set(OPTION_NAMES)) + sorted(set(measured) - {n for n, _ in MEASURE_FLAGS})
        if bad:
            raise TrainplanError(f"{where}: unknown setup/measured field(s) {', '.join(map(repr, bad))}; "
                                 "nothing was written")
        if "model" not in setup:
            raise TrainplanError(f"{where}: setup needs a model; nothing was written")
        try:
            req = JobOptions(**setup)
            rec = record_from_options(req, measured_from_gib(**measured), source=run.get("source") or default_source,
                                      notes=run.get("notes") or "", env=environment(**env),
                                      external_id=run.get("external_id"), created_at=run.get("created_at"),
                                      force=force)
        except TrainplanError as exc:
            raise TrainplanError(f"{where}: {exc}") from None
        records.append(rec)
    return records


def cmd_record(args: argparse.Namespace) -> int:
    recordable_url(args.db)                    # an in-memory database is refused before any work
    if args.file:
        records = _records_from_file(args.file, args.source, args.force)
    else:
        if not args.model:
            raise TrainplanError("record needs --model (and the other setup flags) or --file")
        measured = measured_from_gib(**{name: getattr(args, name) for name, _ in MEASURE_FLAGS})
        records = [record_from_options(options_from_args(args), measured, source=args.source, notes=args.notes,
                                       env=environment(**_env_pairs(args.env)), force=args.force)]
    result = save(records, args.db, spool_on_failure=True)
    if result.warning:
        print(result.warning, file=sys.stderr)
    if args.json:
        print_json({"added": result.added, "already_present": result.present, "updated": result.updated,
                    "spooled": result.spooled, "spool": None if result.spool is None else str(result.spool)})
    elif not result.spooled:
        print(f"recorded {result.added} run(s)"
              + (f", {result.present} already in the ledger" if result.present else "")
              + (f" ({result.updated} with notes updated)" if result.updated else ""))
    return 0


def _display(row: dict[str, Any]) -> dict[str, Any]:
    out = {"id": row["id"], "created": str(row["created_at"])[:19], "source": row["source"], "model": row["model"],
           "method": row["method"], "framework": row["framework"], "gpu": row["gpu"], "gpus": row["num_gpus"]}
    for key in MEASURE_KEYS:
        est, meas = row.get(f"est_{key}"), row.get(f"meas_{key}")
        if meas is None:
            continue
        label = key.replace("_bytes", "").replace("peak_", "")
        scale = 2**30 if key.endswith("_bytes") else 1
        unit = " GiB" if key.endswith("_bytes") else ""
        res = residual(est, meas)
        out[label] = (f"{(est or 0) / scale:.3g}{unit} est / {meas / scale:.3g}{unit} meas"
                      + ("" if res is None else f" ({res:+.1%})"))
    return out


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: (str(v) if k == "created_at" else v) for k, v in row.items()}
    out["residual"] = {k: residual(row.get(f"est_{k}"), row.get(f"meas_{k}")) for k in MEASURE_KEYS
                       if row.get(f"meas_{k}") is not None}
    return out


def _write_csv(path: str, rows: list[dict[str, Any]]) -> None:
    flat_cols = [c for c in (rows[0].keys() if rows else []) if c not in ("setup", "environment", "measured",
                                                                           "estimate", "raw")]
    cols = flat_cols + [f"residual_{k}" for k in MEASURE_KEYS] + ["setup", "environment"]
    import io

    from trainplan.safeio import write_atomic

    f = io.StringIO(newline="")
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    for row in rows:
        out = {c: row.get(c) for c in flat_cols}
        out.update({f"residual_{k}": residual(row.get(f"est_{k}"), row.get(f"meas_{k}")) for k in MEASURE_KEYS})
        out.update(setup=json.dumps(row.get("setup"), default=str),
                   environment=json.dumps(row.get("environment"), default=str))
        w.writerow(out)
    write_atomic(path, f.getvalue(), what="--csv")   # a regular file or a new name; never through a link


def _spool_lines(url: str) -> list[str]:
    """What `runs` says about runs waiting in the spool or set aside (nothing when there are none)."""
    st = spool.status(url)
    lines = []
    if st.spooled or st.spooled_other:
        lines.append(f"spooled: {st.spooled} run(s) waiting for this database, {st.spooled_other} for others, "
                     f"in {st.spool} (written on the next successful connection)")
    if st.set_aside or st.set_aside_other:
        lines.append(f"set aside: {st.set_aside} spooled run(s) of this database, {st.set_aside_other} of others, "
                     f"that can never be written as they are, in {st.set_aside_file} (each line has its reason)")
    return lines


def _flushed(url: str, before: Any) -> dict[str, Any]:
    """What opening the ledger flushed from the spool (store.engine_for flushes on first connection),
    and every spooled run of this database that can never be written, with its reason and file."""
    after = spool.status(url)
    aside = spool.set_aside(url)
    added_aside = max(0, after.set_aside - before.set_aside)
    return {"written": max(0, before.spooled - after.spooled - added_aside), "set_aside_now": added_aside,
            "still_spooled": after.spooled, "spool": after.spool, "set_aside_file": after.set_aside_file,
            "set_aside": [{"reason": e.get("reason", ""), "set_aside_at": e.get("set_aside_at"),
                           "source": (e.get("run") or {}).get("source") if isinstance(e.get("run"), dict) else None}
                          for e in aside]}


def _flush_lines(report: dict[str, Any]) -> list[str]:
    lines = [f"spool: {report['written']} spooled run(s) written now, {report['still_spooled']} still waiting "
             f"({report['spool']})"]
    if report["set_aside"]:
        lines.append(f"set aside, can never be written as they are ({report['set_aside_file']}):")
        lines += [f"  {e['set_aside_at'] or '-'}  {e['source'] or '-'}: {e['reason']}" for e in report["set_aside"]]
    return lines


def cmd_runs(args: argparse.Namespace) -> int:
    if not 0 <= args.limit <= 2**62:      # SQLite and PostgreSQL take 64-bit LIMITs
        raise TrainplanError(f"--limit must be 0 (all runs) to {2**62}, got {args.limit}")
    url = db_url(args.db)
    before = spool.status(url) if args.flush_spool else None
    engine = open_ledger(url)
    flushed = _flushed(url, before) if before is not None else None
    filters = {k: getattr(args, k) for k in ("model", "method", "framework", "gpu", "source", "precision")}
    result = read_runs(engine, limit=args.limit or None, **filters)
    rows = list(result.rows)
    if args.csv:
        _write_csv(args.csv, rows)
    notes = [f"unreadable: run id {u['id']!r}: {u['reason']}" for u in result.unreadable]
    notes += _flush_lines(flushed) if flushed is not None else _spool_lines(url)
    if args.json:
        listed = [_json_row(r) for r in rows] + [{"id": u["id"], "unreadable": u["reason"]} for u in result.unreadable]
        print_json({"runs": listed, "spool": flushed} if flushed is not None else listed)
        for note in notes:
            print(f"trainplan: {note}", file=sys.stderr)
    else:
        shown = [_display(r) for r in rows]
        columns = list(dict.fromkeys(k for row in shown for k in row))
        print(render_table(shown, columns) if rows else "no runs")
        for note in notes:
            print(note)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    recordable_url(args.db)
    cases = load_cases(args.file)
    records = [record_from_case(c) for c in cases]
    result = save(records, args.db)
    not_estimated = [r.external_id for r in records if r.estimate is None]
    if args.json:
        print_json({"cases": len(records), "added": result.added, "already_present": result.present,
                    "updated": result.updated, "not_estimated": not_estimated})
    else:
        print(f"imported {result.added} new run(s) from {args.file} ({result.present} already in the ledger"
              + (f", {result.updated} with notes updated" if result.updated else "") + "; "
              f"{len(not_estimated)} kept without an estimate: cases trainplan cannot map)")
    return 0


def _check_min_runs(value: int, least: int = 2) -> None:
    if value < least:
        raise TrainplanError(f"--min-runs must be at least {least}" + (" (a band needs two runs)" if least == 2 else "")
                             + f", got {value}")


def _term_text(name: str, t: calibration.Term) -> str:
    if name == "device_overhead_bytes":
        return f"{name} {t.value / 2**30:+.2f} GiB (sd {t.sigma / 2**30:.2f}, n {t.n})"
    return f"{name} {t.value:.3f} (sd {t.sigma:.3f}, n {t.n})"


def _coverage_lines(cov: list[calibration_fit.Coverage], min_runs: int) -> list[str]:
    lines = []
    for c in cov:
        if not c.missing:
            continue
        parts = []
        for name, (have, need) in c.missing.items():
            where = c.falls_back_to.get(name)
            parts.append(f"{name} {have} of {min_runs} run(s)" + (f", needs {need} more" if need else "")
                         + (f" (uses {where})" if where else " (none: raw)"))
        lines.append(f"  {c.label:48s} {c.runs} run(s): " + "; ".join(parts))
    return lines


def cmd_calibrate(args: argparse.Namespace) -> int:
    _check_min_runs(args.min_runs)
    calibration.check_target(args.out, args.db)   # a bad --out fails before the ledger is read
    url = db_url(args.db)
    read = read_runs(open_ledger(args.db))
    rows = list(read.rows)
    if read.unreadable:
        print(f"trainplan: {len(read.unreadable)} unreadable run(s) left out (ids "
              f"{', '.join(repr(u['id']) for u in read.unreadable[:10])}); `trainplan runs` says why", file=sys.stderr)
    obs = [o for o in (calibration_fit.observation_from_row(r) for r in rows) if o is not None]
    if not obs:
        raise TrainplanError("the ledger holds no run with an estimate to calibrate from (record or import runs first)")
    validation = leave_one_source_out(obs, min_runs=args.min_runs)
    cal = calibration_fit.fit(obs, min_runs=args.min_runs,
                              provenance={"created_at": now_iso(), "db": redact(url),
                                          "runs_in_ledger": len(rows), "leave_one_source_out": validation})
    cov = calibration_fit.coverage(obs, cal)
    path = calibration.save(cal, args.out, args.db) if cal.groups else None
    kept = None if path or args.out else calibration.load_active(None, args.db)
    if args.json:
        print_json({"path": None if path is None else str(path), "written": path is not None,
                    "fitted": [{"level": list(g.level), "group": dict(zip(g.level, g.key)), "terms": list(g.terms)}
                               for g in cal.groups],
                    "coverage": [c.to_dict() for c in cov], "min_runs": args.min_runs,
                    "previous_kept": kept is not None, **calibration.to_json(cal)})
        return 0
    if path is None:
        print(f"nothing fitted: no group of the {len(obs)} run(s) has {args.min_runs} runs measuring a term "
              f"(--min-runs {args.min_runs}); no calibration written"
              + ("; the previous calibration of this ledger stays" if kept is not None
                 else "; estimates stay raw"))
    else:
        print(f"calibration from {len(obs)} runs ({len(cal.provenance['sources'])} sources) of {redact(url)} "
              f"written to {path}")
        print("fitted:")
        for g in cal.groups:
            print(f"  {g.label:48s} " + ", ".join(_term_text(n, t) for n, t in g.terms.items()))
    short = _coverage_lines(cov, args.min_runs)
    if short:
        print(f"not fitted (a group needs {args.min_runs} runs measuring a term for its own value):")
        print("\n".join(short))
    if path is None:
        return 0
    print("leave-one-source-out (fit on the other sources, predict this one): median |error| raw -> calibrated")
    for kind, block in validation.items():
        for label, s in [("all", block["all"])] + list(block["by_source"].items()):
            if s["raw"]["n"]:
                print(f"  {kind:6s} {label[:40]:40s} n={s['raw']['n']:3d} {s['raw']['median_abs']:6.1%} -> "
                      f"{s['calibrated']['median_abs']:6.1%}")
    return 0


def cmd_accuracy(args: argparse.Namespace) -> int:
    _check_min_runs(args.min_runs, least=1)
    results = evaluate(load_cases(args.cases, strict=False, what="--cases"), min_runs=args.min_runs)
    summary = summarize(results)
    if args.json:
        print_json({"cases": [r.to_dict() for r in results], "summary": summary})
    else:
        print(render(results, summary))
    return 0
