"""The one home for reading the user's files and writing output files.

Reading (`read_user_text`): regular files only, never blocking. The path is stat()ed first and
only a regular file is opened, with O_NONBLOCK and checked again with fstat (a FIFO swapped in
between the two cannot hang the read); at most `limit_bytes + 1` bytes are read, so an endless
file (/proc, a growing log) ends in a one-line error, not in a memory blow-up. NUL bytes and
invalid UTF-8 are refused as "binary". `parse_json` and `check_depth` bound the nesting of parsed
JSON/YAML/TOML (real configs nest 3-5 levels; MAX_DEPTH is far above that).

Writing (`check_output_path`, `write_atomic`): only a regular file or a new name in an existing
directory; never through a symlink (the link and its target stay as they are), never onto a FIFO,
device, socket or directory; missing parent directories only when asked (`make_parents`). The data
goes to a temporary file in the same directory, is fsync()ed and os.replace()d onto the name, so a
reader sees the old file or the new one, never half of one; an existing file keeps its permission
bits. Call `check_output_path` before long work, so a bad path fails in a second, not after it.

Every refusal is a TrainplanError of one line naming `what` (the flag, e.g. "--from") and the path
(quoted with !r, so a newline in a name cannot split the line). Stdlib only, cheap to import.
"""

from __future__ import annotations

import os
import stat

from trainplan.errors import TrainplanError

MIB = 1024 * 1024
CONFIG_LIMIT_BYTES = 4 * MIB        # a training config or a model's config.json is a few KiB
CASE_FILE_LIMIT_BYTES = 64 * MIB    # case files for accuracy/import, run files for record --file
LENGTHS_FILE_LIMIT_BYTES = 64 * MIB  # --lengths-file: ~10 million sample lengths, one per line
MAX_DEPTH = 64                      # nesting levels of parsed JSON/YAML/TOML
MAX_CONTAINERS = 4_000_000          # lists/mappings in one parsed file (each is >= 2 bytes of JSON)

_CHUNK_BYTES = 1 * MIB


def _size_text(n_bytes: int) -> str:
    return f"{n_bytes // MIB} MiB" if n_bytes >= MIB and n_bytes % MIB == 0 else f"{n_bytes:,} bytes"


def _not_regular(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _fspath(path, what: str) -> str:
    try:
        text = os.fspath(path)
    except TypeError:
        raise TrainplanError(f"{what}: expected a file path, got {type(path).__name__}") from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text:
        raise TrainplanError(f"{what}: empty file name")
    if "\0" in text:
        raise TrainplanError(f"{what} {text!r}: a file name cannot hold a NUL character")
    return text


# --- reading -------------------------------------------------------------------------------------

def read_user_bytes(path, *, what: str, limit_bytes: int) -> bytes:
    """The bytes of a regular file of at most `limit_bytes`; TrainplanError (one line) otherwise."""
    name = _fspath(path, what)
    try:
        info = os.stat(name)
    except FileNotFoundError:
        raise TrainplanError(f"{what} {name!r}: no such file") from None
    except OSError as exc:
        raise TrainplanError(f"{what} {name!r}: cannot read ({_os_reason(exc)})") from None
    kind = _not_regular(info.st_mode)
    if kind is not None:
        raise TrainplanError(f"{what} {name!r}: {kind}, not a regular file")
    if info.st_size > limit_bytes:
        raise TrainplanError(f"{what} {name!r}: {info.st_size:,} bytes, over the limit of {_size_text(limit_bytes)}")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags)
    except OSError as exc:
        raise TrainplanError(f"{what} {name!r}: cannot read ({_os_reason(exc)})") from None
    try:
        kind = _not_regular(os.fstat(fd).st_mode)     # swapped for a FIFO or device since the stat
        if kind is not None:
            raise TrainplanError(f"{what} {name!r}: {kind}, not a regular file")
        chunks, total = [], 0
        while total <= limit_bytes:
            chunk = os.read(fd, min(_CHUNK_BYTES, limit_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise TrainplanError(f"{what} {name!r}: cannot read ({_os_reason(exc)})") from None
    finally:
        os.close(fd)
    if total > limit_bytes:
        raise TrainplanError(f"{what} {name!r}: more than the limit of {_size_text(limit_bytes)}")
    return b"".join(chunks)


def read_user_text(path, *, what: str, limit_bytes: int) -> str:
    """The UTF-8 text of a regular file of at most `limit_bytes` (a leading BOM dropped);
    TrainplanError (one line) for anything else: missing, a FIFO/device/socket/directory, too
    large, binary (a NUL byte) or not UTF-8."""
    raw = read_user_bytes(path, what=what, limit_bytes=limit_bytes)
    name = _fspath(path, what)
    if b"\0" in raw:
        raise TrainplanError(f"{what} {name!r}: a binary file (it holds NUL bytes), not text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrainplanError(f"{what} {name!r}: not UTF-8 text (byte {exc.start})") from None
    return text.removeprefix("\ufeff")


def check_depth(data, *, what: str, path=None, limit: int = MAX_DEPTH):
    """`data` (parsed JSON/YAML/TOML) back when it nests at most `limit` lists/mappings deep and
    holds at most MAX_CONTAINERS of them, counted as a reader walking it meets them; TrainplanError
    otherwise. Iterative: any depth is checked without recursion. A YAML alias that contains itself
    is refused as too deep; aliases that multiply one list into billions ("billion laughs") as too
    many (after at most MAX_CONTAINERS steps, about a second)."""
    where = f"{what} {os.fspath(path)!r}" if path is not None else what
    containers = (dict, list, tuple)
    stack = [(data, 1)] if isinstance(data, containers) else []
    count = 0
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise TrainplanError(f"{where}: nested more than {limit} levels deep")
        count += 1
        if count > MAX_CONTAINERS:
            raise TrainplanError(f"{where}: more than {MAX_CONTAINERS:,} lists/mappings (YAML aliases repeating "
                                 "one list?)")
        below = depth + 1
        for value in node.values() if isinstance(node, dict) else node:
            if isinstance(value, containers):
                stack.append((value, below))
    return data


def parse_json(text: str, *, what: str, path=None, limit: int = MAX_DEPTH):
    """json.loads with its failures as one line: malformed JSON (line and column), nesting beyond
    `limit` (never a RecursionError), a number too long for Python's int."""
    import json

    where = f"{what} {os.fspath(path)!r}" if path is not None else what
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TrainplanError(f"{where}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise TrainplanError(f"{where}: nested more than {limit} levels deep") from None
    except ValueError as exc:   # an integer over sys.get_int_max_str_digits() digits
        raise TrainplanError(f"{where}: malformed JSON: {str(exc).splitlines()[0]}") from None
    return check_depth(data, what=what, path=path, limit=limit)


# --- writing -------------------------------------------------------------------------------------

def check_output_path(path, *, what: str, make_parents: bool = False) -> str:
    """`path` as a str when it may be written: an existing regular file, or a new name in an
    existing directory (or, with make_parents, one whose missing directories can be made).
    TrainplanError (one line) for a symlink, FIFO, device, socket, directory, a missing or
    non-directory parent, or an unwritable place."""
    name = _fspath(path, what)
    try:
        info = os.lstat(name)
    except FileNotFoundError:
        info = None
    except OSError as exc:   # ENOTDIR (a file where a folder is), ENAMETOOLONG, EACCES
        raise TrainplanError(f"{what} {name!r}: cannot write there ({_os_reason(exc)})") from None
    if info is not None:
        if stat.S_ISLNK(info.st_mode):
            raise TrainplanError(f"{what} {name!r}: a symbolic link; trainplan does not write through links "
                                 "(give the real file's path)")
        kind = _not_regular(info.st_mode)
        if kind is not None:
            raise TrainplanError(f"{what} {name!r}: {kind}, not a regular file; nothing was written")
        parent = os.path.dirname(os.path.abspath(name))
        if not os.access(parent, os.W_OK | os.X_OK) and not os.access(name, os.W_OK):
            raise TrainplanError(f"{what} {name!r}: not writable")
        return name
    parent = os.path.dirname(os.path.abspath(name))
    existing = parent
    while not os.path.lexists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if existing != parent and not make_parents:
        raise TrainplanError(f"{what} {name!r}: the directory {parent!r} does not exist (create it first)")
    if not os.path.isdir(existing):
        raise TrainplanError(f"{what} {name!r}: {existing!r} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise TrainplanError(f"{what} {name!r}: the directory {existing!r} is not writable")
    return name


def write_atomic(path, data: str | bytes, *, what: str, make_parents: bool = False) -> str:
    """Write `data` (str: as UTF-8) to `path` atomically (a temporary file in the same directory,
    fsync, os.replace); the checks of check_output_path first. An existing file keeps its mode."""
    name = check_output_path(path, what=what, make_parents=make_parents)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    parent = os.path.dirname(os.path.abspath(name))
    try:
        if make_parents:
            os.makedirs(parent, exist_ok=True)
        try:
            old_mode: int | None = stat.S_IMODE(os.lstat(name).st_mode)
        except FileNotFoundError:
            old_mode = None
        tmp = os.path.join(parent, f".{os.path.basename(name)[:200]}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)  # umask applies
    except OSError as exc:
        raise TrainplanError(f"{what} {name!r}: cannot write ({_os_reason(exc)})") from None
    try:
        try:
            if old_mode is not None:
                os.fchmod(fd, old_mode)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        check_output_path(name, what=what)     # not swapped for a link or a FIFO meanwhile
        os.replace(tmp, name)
    except OSError as exc:
        _remove(tmp)
        raise TrainplanError(f"{what} {name!r}: cannot write ({_os_reason(exc)})") from None
    except BaseException:
        _remove(tmp)
        raise
    _fsync_dir(parent)
    return name


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _fsync_dir(path: str) -> None:
    """Make the rename durable (best effort: not every file system lets a directory be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
