"""Routing a request to a voice by the scripts in its text, and the errors when no voice can read it."""

from __future__ import annotations

import pytest

from voxserve.errors import UnsupportedLanguage
from voxserve.routing import Router
from voxserve.settings import Settings
from voxserve.text.scripts import check_readable, scripts, text_language, unreadable
from voxserve.types import VoiceInfo

VOICES = [
    VoiceInfo("af_heart", "kokoro", "en-us", "female", 24000),
    VoiceInfo("zf_xiaobei", "kokoro", "zh", "female", 24000),
    VoiceInfo("zm_yunjian", "kokoro", "zh", "male", 24000),
    VoiceInfo("jf_alpha", "kokoro", "ja", "female", 24000),
    VoiceInfo("en_US-joe-medium", "piper", "en-us", "male", 22050),
]
ZH_MIXED = "我今天用iPhone打电话给John，他说OK，明天见。"
JA_DATE = "今日は2024年3月5日で…"
ARABIC = "مرحبا بالعالم، كيف حالك اليوم؟"
KOREAN = "안녕하세요, 만나서 반갑습니다."


@pytest.fixture()
def router() -> Router:
    return Router(VOICES, "af_heart", {})


def test_scripts_and_the_language_they_suggest() -> None:
    assert dict(scripts(ZH_MIXED)) == {"Han": 13, "Latin": 12}
    assert text_language(ZH_MIXED, "en-us") == "zh"
    assert text_language(JA_DATE, "en-us") == "ja"  # kana make Han Japanese
    assert text_language("東京", "ja") == "ja" and text_language("東京", "en-us") == "zh"
    assert text_language(ARABIC, "en-us") == "ar"
    assert text_language(KOREAN, "en-us") == "ko"
    assert text_language("Bonjour à tous", "fr") == "fr"
    # a lone Greek letter is a symbol in English text; Greek words are Greek
    assert unreadable("The angle α is π over two", "en-us") == []
    assert unreadable("Καλημέρα", "en-us") == ["Greek"]


@pytest.mark.parametrize(
    ("text", "voice", "expected"),
    [
        (ZH_MIXED, None, ("zf_xiaobei", "zh")),
        (ZH_MIXED, "auto", ("zf_xiaobei", "zh")),
        (ZH_MIXED, "zm_yunjian", ("zm_yunjian", "zh")),  # mixed zh-en with a Chinese voice: as before
        (JA_DATE, None, ("jf_alpha", "ja")),
        ("Hello there.", None, ("af_heart", "en-us")),  # the default voice for its own language
        ("Hello there.", "en_US-joe-medium", ("en_US-joe-medium", "en-us")),
    ],
)
def test_routes(router: Router, text: str, voice: str | None, expected: tuple[str, str]) -> None:
    route = router.route(text, voice, None)
    assert (route.voice, route.lang) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (ZH_MIXED, r"speaks English and cannot read the Chinese \(Han script\).*use voice 'zf_xiaobei' or 'auto'"),
        (JA_DATE, r"Japanese \(Han, Kana script\).*'jf_alpha'"),
        (ARABIC, r"Arabic \(Arabic script\).*no Arabic voice installed: place ar_JO-kareem-medium .* MODEL_PATH"),
        (KOREAN, r"Korean \(Hangul script\).*no Korean voice installed: place a Korean Piper voice .*MODEL_PATH"),
    ],
)
def test_a_named_voice_that_cannot_read_the_text_is_refused(router: Router, text: str, match: str) -> None:
    with pytest.raises(UnsupportedLanguage, match=match):
        router.route(text, "af_heart", None)


def test_text_streamed_to_a_chosen_voice_is_refused_naming_a_voice_that_reads_it(router: Router) -> None:
    router.check("Hello, and then ", "af_heart", "en-us")  # readable: nothing raised
    with pytest.raises(UnsupportedLanguage, match=r"'af_heart' speaks English .*; configure voice 'zf_xiaobei'") as e:
        router.check("今天天气", "af_heart", "en-us")
    assert "'auto'" not in str(e.value)  # the streamed utterance's voice is chosen: only naming one helps
    with pytest.raises(UnsupportedLanguage, match=r"no Korean voice installed"):
        router.check(KOREAN, "zf_xiaobei", "zh")


def test_with_no_voice_for_the_language_auto_says_how_to_add_one(router: Router) -> None:
    with pytest.raises(UnsupportedLanguage, match=r"no Korean voice installed: place a Korean Piper voice"):
        router.route(KOREAN, None, None)


def test_the_operators_language_map_takes_text_to_its_voice() -> None:
    settings = Settings(_env_file=None, language_voices="ja=jf_alpha, zh=zm_yunjian")
    assert settings.language_voices == {"ja": "jf_alpha", "zh": "zm_yunjian"}
    with pytest.raises(ValueError, match="lang=voice"):
        Settings(_env_file=None, language_voices="jf_alpha")
    router = Router(VOICES, "af_heart", settings.language_voices)
    route = router.route(JA_DATE, "af_heart", None)
    assert (route.voice, route.lang, route.rerouted) == ("jf_alpha", "ja", True)
    assert router.route(ZH_MIXED, None, None).voice == "zm_yunjian"
    assert router.route("Hello.", "af_heart", None).voice == "af_heart"


def test_the_frontend_check_names_the_script() -> None:
    check_readable(ZH_MIXED, "zh")
    check_readable(JA_DATE, "ja")
    with pytest.raises(UnsupportedLanguage, match=r"Korean \(Hangul script\).*English \(en-us\)"):
        check_readable(KOREAN, "en-us")
