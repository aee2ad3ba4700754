from __future__ import annotations

import pytest

from voxserve.errors import UnsupportedLanguage
from voxserve.text import SUPPORTED_LANGS, lang_for_voice, normalize_lang


@pytest.mark.parametrize(
    ("voice", "lang"),
    [
        ("af_heart", "en-us"),
        ("am_adam", "en-us"),
        ("bf_emma", "en-gb"),
        ("zf_xiaobei", "zh"),
        ("jf_alpha", "ja"),
        ("ff_siwis", "fr"),
        ("em_alex", "es"),
        ("if_sara", "it"),
        ("pf_dora", "pt-br"),
        ("hf_alpha", "hi"),
        ("en_US-joe-medium", "en-us"),
        ("en_GB-alan-low", "en-gb"),
    ],
)
def test_lang_for_voice(voice: str, lang: str) -> None:
    assert lang_for_voice(voice) == lang


def test_unknown_voice_language() -> None:
    with pytest.raises(UnsupportedLanguage):
        lang_for_voice("xf_nobody")


def test_normalize_lang_aliases_and_errors() -> None:
    assert normalize_lang("EN") == "en-us"
    assert normalize_lang("pt_BR") == "pt-br"
    assert normalize_lang("zh-CN") == "zh"
    assert set(SUPPORTED_LANGS) >= {"en-us", "en-gb", "zh", "ja", "fr", "es", "it", "pt-br", "hi", "ko"}
    with pytest.raises(UnsupportedLanguage, match="supported: en-us"):
        normalize_lang("klingon")
