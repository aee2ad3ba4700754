"""End-to-end: the playground page in headless Chromium against a real voxserve server."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import soundfile as sf

pytestmark = pytest.mark.alone  # the page schedules audio in real time

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

Server = Any  # conftest.ServerProcess: .url, .stop()
PIPER = "en_US-joe-medium"
SENTENCE = "Sure, I can help with that. Your order shipped this morning and should arrive on Thursday."
LONG = " ".join(
    [
        "The quick brown fox jumps over the lazy dog near the river bank.",
        "Meanwhile, the farmer counts his sheep and waits for the evening train.",
        "Nobody expected the storm to arrive so early in the season.",
        "By midnight the streets were quiet again, and the lights went out one by one.",
    ]
)


def state(page: Page, key: str) -> Any:
    return page.evaluate(f"window.voxState.{key}")


def open_page(page: Page, url: str, voice: str = PIPER) -> None:
    page.goto(url + "/")
    page.wait_for_function("window.voxState && window.voxState.voicesLoaded", timeout=15_000)
    page.select_option("#voice", voice)


def speak_and_wait(page: Page, text: str) -> None:
    page.fill("#text", text)
    page.click("#speak")
    page.wait_for_function("window.voxState.utterances >= 1 || window.voxState.lastError", timeout=30_000)
    assert state(page, "lastError") is None


def test_speak_schedules_gapless_audio_and_shows_metrics(page: Page, server: Server, artifacts: Path) -> None:
    open_page(page, server.url)
    groups = page.eval_on_selector_all("#voice optgroup", "gs => gs.map(g => g.label)")
    assert len(groups) >= 3, groups  # voices grouped by language (Kokoro has nine)
    assert "American English" in groups

    speak_and_wait(page, SENTENCE)
    s = page.evaluate("({...window.voxState})")
    assert s["chunks"] >= 2, s
    assert s["scheduledSeconds"] > 3.0, s  # ≈4.5 s of speech
    assert s["scheduledSeconds"] == pytest.approx(s["serverAudioS"], abs=0.01)
    # The server's own count of how late it was for a listener playing from the first byte, shown as sent.
    # (How late depends on the machine and what else runs on it, here a browser: benchmarks measure that.)
    assert isinstance(s["serverStallS"], int | float) and s["serverStallS"] >= 0, s
    assert f"server late by {s['serverStallS']:.2f} s" in page.inner_text("#status")
    assert s["underruns"] == 0, s  # every chunk arrived before the previous one finished playing
    assert s["ttfaMs"] is not None and 0 < s["ttfaMs"] < 5000, s
    assert s["sampleRate"] == 22050
    assert re.fullmatch(r"\d+ ms(server: \d+ ms)?", page.inner_text("#m-ttfa").replace("\n", ""))
    assert re.fullmatch(r"\d+\.\d\d", page.inner_text("#m-rtf"))
    assert page.inner_text("#m-chunks") == str(s["chunks"])
    assert "Done" in page.inner_text("#status")
    assert "Thursday" in page.inner_text("#captions")

    # While it plays: the level meter moves and (with word timings) the heard word is highlighted.
    page.wait_for_function("window.voxState.playing", timeout=5_000)
    page.wait_for_function("document.getElementById('level').value > 0", timeout=5_000)
    if s["words"]:
        page.wait_for_selector("#captions .word.current", timeout=5_000)
    page.screenshot(path=str(artifacts / "playground.png"), full_page=True)
    page.wait_for_function("!window.voxState.playing", timeout=15_000)
    assert state(page, "activeSources") == 0


def test_keyboard_speak_and_stop(page: Page, server: Server) -> None:
    open_page(page, server.url)
    page.fill("#text", LONG)
    page.focus("#text")
    page.keyboard.press("Control+Enter")
    page.wait_for_function("window.voxState.playing", timeout=15_000)
    assert page.is_enabled("#stop")
    page.keyboard.press("Escape")
    page.wait_for_function("!window.voxState.playing && window.voxState.activeSources === 0", timeout=1_000)
    assert page.inner_text("#status") == "Stopped."
    assert page.is_disabled("#stop")
    chunks = state(page, "chunks")
    page.wait_for_timeout(800)
    assert state(page, "chunks") == chunks  # nothing more was scheduled after Stop
    assert not state(page, "playing")


def test_llm_replay_is_spoken_before_the_text_is_complete(page: Page, server: Server) -> None:
    open_page(page, server.url)
    page.check("input[name=mode][value=replay]")
    page.fill("#rate", "15")
    count = "async (t) => (await import('./texts.js')).tokens(t).length"  # the page's own tokenizer
    tokens = page.evaluate(count, LONG)
    last_sentence_starts_at = page.evaluate(count, LONG[: LONG.index("By midnight")])
    page.fill("#text", LONG)
    page.click("#speak")
    page.wait_for_function(f"window.voxState.fragmentsSent === {tokens} || window.voxState.lastError", timeout=15_000)
    page.wait_for_function("window.voxState.chunks >= 3 || window.voxState.lastError", timeout=10_000)
    s = page.evaluate("({...window.voxState})")
    assert s["lastError"] is None, s
    # Incremental synthesis: the first sentence was heard while the paragraph was still being "generated".
    assert s["fragmentsAtFirstAudio"] < last_sentence_starts_at, s
    assert s["playing"], s
    page.click("#stop")
    page.wait_for_function("!window.voxState.playing && !window.voxState.active", timeout=2_000)


def test_llm_live_typing_speaks_while_typing(page: Page, server: Server) -> None:
    open_page(page, server.url)
    page.check("input[name=mode][value=live]")
    page.fill("#text", "")
    page.click("#speak")
    assert page.inner_text("#speak") == "Finish"
    assert page.evaluate("document.activeElement.id") == "text"
    page.keyboard.type("Hello there, my friend. I am typing this ", delay=15)
    # The finished sentence is spoken before the user presses Finish.
    page.wait_for_function("window.voxState.chunks > 0", timeout=10_000)
    assert state(page, "utterances") == 0 and state(page, "active")
    page.keyboard.type("right now.", delay=15)
    page.click("#speak")
    page.wait_for_function("window.voxState.utterances >= 1 || window.voxState.lastError", timeout=15_000)
    s = page.evaluate("({...window.voxState})")
    assert s["lastError"] is None and s["fragmentsSent"] > 20, s
    assert s["scheduledSeconds"] == pytest.approx(s["serverAudioS"], abs=0.01)
    assert s["scheduledSeconds"] > 2.0, s


def test_download_wav_and_mp3(page: Page, server: Server, tmp_path: Path) -> None:
    open_page(page, server.url)
    speak_and_wait(page, "Hello there, how can I help you today?")
    heard = state(page, "scheduledSeconds")
    assert page.is_enabled("#download")

    with page.expect_download() as info:
        page.click("#download")
    wav = tmp_path / "speech.wav"
    info.value.save_as(wav)
    data, rate = sf.read(wav)
    assert rate == 22050
    assert len(data) / rate == pytest.approx(heard, abs=0.01)

    page.select_option("#format", "mp3")
    page.select_option("#rate-hz", "16000")
    with page.expect_download(timeout=30_000) as info:
        page.click("#download")
    mp3 = info.value.path().read_bytes()
    data, rate = sf.read(io.BytesIO(mp3))
    assert rate == 16000
    assert len(data) / rate == pytest.approx(heard, abs=0.3)
    curl = page.inner_text("#snip-curl")
    assert '"response_format":"mp3"' in curl and '"sample_rate":16000' in curl and "/v1/audio/speech" in curl


def test_voice_sample_on_demand(page: Page, server: Server) -> None:
    open_page(page, server.url)
    assert "male" in page.inner_text("#voice-info") and "22050 Hz" in page.inner_text("#voice-info")
    page.click("#sample")
    page.wait_for_function("window.voxState.utterances >= 1 || window.voxState.lastError", timeout=30_000)
    assert state(page, "lastError") is None
    assert state(page, "scheduledSeconds") > 1.0
    assert "how I sound" in page.inner_text("#captions")


def test_unknown_voice_is_reported(page: Page, server: Server) -> None:
    open_page(page, server.url)
    page.evaluate("""() => {
        const sel = document.getElementById('voice');
        sel.add(new Option('no_such_voice', 'no_such_voice'));
        sel.value = 'no_such_voice';
    }""")
    page.fill("#text", "Hello.")
    page.click("#speak")
    page.wait_for_function("window.voxState.lastError !== null", timeout=10_000)
    assert state(page, "lastError.code") == "unknown_voice"
    alert = page.locator("#error[role=alert]")
    assert alert.is_visible()
    assert "no_such_voice" in alert.inner_text()
    assert state(page, "chunks") == 0
    assert not state(page, "active")


def test_phone_layout_and_labels(browser: Browser, server: Server) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        open_page(page, server.url)
        assert page.evaluate("document.documentElement.scrollWidth") <= 375  # no sideways scrolling
        unlabelled = page.evaluate("""() => [...document.querySelectorAll('input, select, textarea, button')]
            .filter(el => !el.hidden && el.type !== 'hidden')
            .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                          && !(el.tagName === 'BUTTON' && el.textContent.trim()))
            .map(el => el.id || el.outerHTML)""")
        assert unlabelled == []
        assert page.get_attribute("#status", "aria-live") == "polite"
    finally:
        context.close()


def test_api_key_and_server_down(page: Page, launch: Callable[..., Server]) -> None:
    secured = launch("auth", VOXSERVE_ENGINES='["piper"]', VOXSERVE_API_KEYS='["s3cret-key"]')
    try:
        page.goto(secured.url + "/")
        page.wait_for_function("window.voxState.lastError !== null", timeout=10_000)
        assert state(page, "lastError.code") == "unauthorized"
        assert "API key" in page.inner_text("#error")

        page.fill("#api-key", "s3cret-key")
        page.press("#api-key", "Enter")
        page.wait_for_function("window.voxState.voicesLoaded", timeout=10_000)
        assert page.is_hidden("#error")
        assert page.evaluate("sessionStorage.getItem('voxserve.apiKey')") == "s3cret-key"
        assert page.evaluate("localStorage.length") == 0
        snippet = page.inner_text("#snip-curl")
        assert "$VOXSERVE_API_KEY" in snippet and "s3cret-key" not in snippet

        speak_and_wait(page, "Hello.")
        assert state(page, "chunks") >= 1
    finally:
        secured.stop()

    page.click("#speak")
    page.wait_for_function("window.voxState.lastError !== null", timeout=10_000)
    assert state(page, "lastError.code") == "unreachable"
    assert "server" in page.inner_text("#error").lower()
    assert not state(page, "active")
