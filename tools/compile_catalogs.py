"""Compile the gettext catalogs: every src/trainplan/locale/<lang>/LC_MESSAGES/<domain>.po into its .mo.

A pure-Python msgfmt (the GNU .mo format: magic 0x950412de, revision 0, the sorted original and
translated strings with their offset tables; https://www.gnu.org/software/gettext/manual/html_node/MO-Files.html),
so neither Debian's gettext nor Babel is needed. Handles msgctxt-free catalogs of msgid/msgstr
pairs with multi-line strings and the usual escapes; fuzzy entries are left out, as msgfmt does.

    python tools/compile_catalogs.py           # write the .mo files
    python tools/compile_catalogs.py --check   # exit 1 if a .mo is not what its .po compiles to
"""

from __future__ import annotations

import ast
import pathlib
import struct
import sys

LOCALE = pathlib.Path(__file__).resolve().parents[1] / "src" / "trainplan" / "locale"


def parse_po(text: str) -> dict[str, str]:
    """msgid -> msgstr of a .po file (the header under the empty msgid)."""
    entries: dict[str, str] = {}
    seen: set[str] = set()
    msgid = msgstr = None
    target = None
    fuzzy = False

    def flush():
        nonlocal msgid, msgstr, fuzzy
        if msgid is not None and msgstr is not None and not fuzzy and (msgstr or msgid == ""):
            entries[msgid] = msgstr
        msgid = msgstr = None
        fuzzy = False

    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#,") and "fuzzy" in line:
            flush()
            fuzzy = True
            continue
        if not line or line.startswith("#"):
            continue
        if line.startswith("msgid "):
            if msgid is not None and msgstr is not None:
                keep = fuzzy
                flush()
                fuzzy = keep
            msgid, target = ast.literal_eval(line[6:]), "id"
            if line[6:] != '""' and msgid in seen:     # msgfmt refuses duplicates: one translation per message
                raise ValueError(f"duplicate msgid {msgid!r}")
            seen.add(msgid)
        elif line.startswith("msgstr "):
            msgstr, target = ast.literal_eval(line[7:]), "str"
        elif line.startswith('"'):
            if target == "id":
                msgid += ast.literal_eval(line)
            else:
                msgstr += ast.literal_eval(line)
    flush()
    return entries


def compile_mo(entries: dict[str, str]) -> bytes:
    keys = sorted(entries)
    ids = [k.encode("utf-8") for k in keys]
    strs = [entries[k].encode("utf-8") for k in keys]
    n = len(keys)
    header = 7 * 4
    ids_table, strs_table = header, header + 8 * n
    data_start = strs_table + 8 * n
    offsets, blob = [], b""
    for s in ids:
        offsets.append((len(s), data_start + len(blob)))
        blob += s + b"\0"
    str_offsets = []
    for s in strs:
        str_offsets.append((len(s), data_start + len(blob)))
        blob += s + b"\0"
    out = struct.pack("<7I", 0x950412DE, 0, n, ids_table, strs_table, 0, 0)
    out += b"".join(struct.pack("<2I", *o) for o in offsets)
    out += b"".join(struct.pack("<2I", *o) for o in str_offsets)
    return out + blob


def catalogs() -> list[pathlib.Path]:
    return sorted(LOCALE.glob("*/LC_MESSAGES/*.po"))


def main(argv: list[str]) -> int:
    stale = []
    for po in catalogs():
        mo = po.with_suffix(".mo")
        data = compile_mo(parse_po(po.read_text(encoding="utf-8")))
        if "--check" in argv:
            if not mo.exists() or mo.read_bytes() != data:
                stale.append(str(mo))
        else:
            mo.write_bytes(data)
            print(f"wrote {mo.relative_to(LOCALE.parents[2])}")
    if stale:
        print("stale catalogs (python tools/compile_catalogs.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
