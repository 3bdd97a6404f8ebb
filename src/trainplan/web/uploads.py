"""Files a web client sends (a model's config.json, training configs): written to a private
temporary folder (mode 0700, removed after the request), read there by the library's own readers
(trainplan.importers, safeio: size-limited, YAML by safe_load only), and never anything else on
the server: a config that names a file outside its upload folder is refused, and the folder's
path is taken out of every message and result the client sees."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.safeio import CONFIG_LIMIT_BYTES

MAX_FILES = 8
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str, index: int) -> str:
    """The basename of an uploaded file with only [A-Za-z0-9._-] kept (never '', '.', '..')."""
    base = _SAFE_NAME.sub("_", os.path.basename(str(name).replace("\\", "/")))[:120].lstrip(".")
    return base or f"upload-{index}"


class UploadDir:
    """The folder of one request's uploads; `scrub` takes its path out of text and results."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.configs: list[str] = []
        self.model_path: str | None = None

    def add_config(self, name: str, data: bytes | str) -> str:
        if len(self.configs) >= MAX_FILES:
            raise TrainplanError(f"at most {MAX_FILES} config files in one request")
        raw = data.encode("utf-8") if isinstance(data, str) else data
        if len(raw) > CONFIG_LIMIT_BYTES:
            raise TrainplanError(f"upload {name!r}: {len(raw):,} bytes, over the limit of "
                                 f"{CONFIG_LIMIT_BYTES // 2**20} MiB")
        folder = os.path.join(self.path, f"c{len(self.configs)}")   # one folder each: equal names never clash
        os.mkdir(folder, 0o700)
        target = os.path.join(folder, safe_name(name, len(self.configs)))
        with open(target, "xb") as handle:
            handle.write(raw)
        self.configs.append(target)
        return target

    def add_model_config(self, config: dict[str, Any]) -> str:
        text = json.dumps(config)
        if len(text) > CONFIG_LIMIT_BYTES:
            raise TrainplanError(f"config_json: over the limit of {CONFIG_LIMIT_BYTES // 2**20} MiB")
        folder = os.path.join(self.path, "model")
        os.mkdir(folder, 0o700)
        target = os.path.join(folder, "config.json")
        with open(target, "x", encoding="utf-8") as handle:
            handle.write(text)
        self.model_path = target
        return target

    def check_configs(self) -> None:
        """Read each config once with the library's reader: every file it names must be an upload."""
        from trainplan.importers import read_config
        from trainplan.importers.read import confined_reads

        for path in self.configs:
            with confined_reads():                # names outside the upload are not even looked at
                imported = read_config(path)
            for name in (imported.file, *imported.includes):
                full = os.path.abspath(name)
                if os.path.commonpath([full, self.path]) != self.path:
                    raise TrainplanError(f"{self.scrub(path)}: names {name!r}, a file on the server outside the "
                                         "upload; upload that file's settings instead")

    def scrub(self, value: Any) -> Any:
        """`value` with this folder's path (and the per-file subfolders) taken out of every string."""
        if isinstance(value, str):
            return re.sub(re.escape(self.path) + r"/(c\d+|model)/", "", value).replace(self.path, "(upload)")
        if isinstance(value, dict):
            return {k: self.scrub(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.scrub(v) for v in value]
        return value


@contextlib.contextmanager
def upload_dir() -> Iterator[UploadDir]:
    """A private folder for one request's uploads; TrainplanErrors raised inside lose its path."""
    path = os.path.realpath(tempfile.mkdtemp(prefix="trainplan-web-"))
    os.chmod(path, 0o700)
    folder = UploadDir(path)
    try:
        yield folder
    except TrainplanError as exc:
        raise TrainplanError(folder.scrub(str(exc))) from None
    finally:
        shutil.rmtree(path, ignore_errors=True)


def import_configs(folder: UploadDir) -> dict[str, Any]:
    """What the uploaded configs say about the job, as `--from` reads them (later files over
    earlier ones): each setting with its value and source, the keys not used and why."""
    from trainplan.importers.merge import check_gpu_count, from_configs
    from trainplan.importers.read import confined_reads
    from trainplan.job.options import JobOptions

    if not folder.configs:
        raise TrainplanError("upload at least one training config (LLaMA-Factory, HF, DeepSpeed, axolotl, ...)")
    folder.check_configs()
    with confined_reads():
        options = from_configs(folder.configs, JobOptions(model=""), {})
    notes = []
    try:
        check_gpu_count(options)
    except TrainplanError as exc:
        notes.append(str(exc))
    sources = [s.to_dict() for s in options.provenance]
    return folder.scrub({"setup": {s["field"]: s["value"] for s in sources}, "sources": sources,
                         "unread": [u.to_dict() for u in options.unread], "ignored_keys": options.ignored_keys,
                         "files": list(options.configs), "notes": notes})
