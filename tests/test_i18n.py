"""Translations (trainplan.i18n): gettext catalogs compiled by tools/compile_catalogs.py."""

from __future__ import annotations

import gettext as stdlib_gettext
import importlib.util
import pathlib

import pytest

from trainplan import i18n
from trainplan.errors import TrainplanError

ROOT = pathlib.Path(__file__).parents[1]
_spec = importlib.util.spec_from_file_location("compile_catalogs", ROOT / "tools" / "compile_catalogs.py")
compile_catalogs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compile_catalogs)


def test_every_catalog_is_compiled_and_current():
    assert compile_catalogs.catalogs(), "no .po catalogs found"
    assert compile_catalogs.main(["--check"]) == 0


@pytest.mark.parametrize("po", compile_catalogs.catalogs(), ids=lambda p: f"{p.parents[1].name}-{p.stem}")
def test_compiled_catalog_gives_every_translation(po):
    """The .mo read by Python's own gettext returns each msgstr of the .po (the compiler is ours)."""
    entries = compile_catalogs.parse_po(po.read_text(encoding="utf-8"))
    with open(po.with_suffix(".mo"), "rb") as handle:
        catalog = stdlib_gettext.GNUTranslations(handle)
    assert catalog.info()["language"] == "zh_CN"
    for msgid, msgstr in entries.items():
        if msgid:
            assert catalog.gettext(msgid) == msgstr


def test_po_parser_reads_multiline_escapes_and_skips_fuzzy():
    text = ('msgid ""\nmsgstr "Language: zh_CN\\n"\n\nmsgid "a\\n"\n"b"\nmsgstr "甲\\n"\n"乙"\n\n'
            '#, fuzzy\nmsgid "old"\nmsgstr "旧"\n\nmsgid "untranslated"\nmsgstr ""\n')
    assert compile_catalogs.parse_po(text) == {"": "Language: zh_CN\n", "a\nb": "甲\n乙"}


def test_language_from_flag_then_environment(monkeypatch):
    for name in ("TRAINPLAN_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert i18n.set_language(None) == "zh"
    monkeypatch.setenv("TRAINPLAN_LANG", "en")
    assert i18n.set_language(None) == "en"
    monkeypatch.setenv("LANG", "fr_FR.UTF-8")
    monkeypatch.delenv("TRAINPLAN_LANG")
    assert i18n.set_language(None) == "en"           # no French catalog: English
    assert i18n.set_language("zh-CN") == "zh"
    assert i18n.gettext("DOES NOT FIT") == "放不下"
    assert i18n.gettext("a message nobody translated") == "a message nobody translated"
    assert i18n.gettext("does not fit", domain="web") == "放不下"
    i18n.set_language("en")
    assert i18n.gettext("DOES NOT FIT") == "DOES NOT FIT"


@pytest.mark.parametrize("bad", ["fr", "", "zh\nen", "klingon"])
def test_unknown_language_is_one_line(bad):
    with pytest.raises(TrainplanError, match="--lang must be one of en, zh"):
        i18n.normalize(bad)


def test_po_parser_refuses_a_duplicate_message():
    with pytest.raises(ValueError, match="duplicate msgid 'a'"):
        compile_catalogs.parse_po('msgid "a"\nmsgstr "甲"\n\nmsgid "a"\nmsgstr "乙"\n')


def test_name_reading_notes_in_chinese():
    # the notes job/resolve.py adds when a name is read as a catalog entry (catalog.model_name_note, gpu_name_note)
    gpu = "GPU 'NVIDIA A100-SXM4-80GB' read as catalog a100-sxm4-80gb (A100 SXM4 80GB)"
    assert i18n.translate(gpu, lang="zh") == "GPU 'NVIDIA A100-SXM4-80GB' 按目录中的 a100-sxm4-80gb（A100 SXM4 80GB）读取"
    model = "model 'qwen2_5-7b' read as catalog qwen2.5-7b: the version as 'qwen2_5-7b' writes it"
    assert i18n.translate(model, lang="zh").startswith("模型 'qwen2_5-7b' 按目录中的 qwen2.5-7b 读取：")


def test_pipeline_stage_list_in_chinese():
    # memory._parallel_notes: each stage said in turn, a stage of the embedding or the loss alone by name
    note = ("pipeline 4 stages, 1F1B, 8 micro-batches: 0: the embedding only, 4 micro-batches, 11.2 GiB; "
            "1: 2 layers, 3 micro-batches, 19.7 GiB; 2: 2 layers, 2 micro-batches, 19.3 GiB; "
            "3: the LM head and the loss only, 1 micro-batches, 14.5 GiB")
    assert i18n.translate(note, lang="zh") == (
        "流水线 4 个阶段，1F1B，8 个微批：0：仅嵌入层，4 个微批，11.2 GiB；1：2 层，3 个微批，19.7 GiB；"
        "2：2 层，2 个微批，19.3 GiB；3：仅 LM 头与损失，1 个微批，14.5 GiB")
