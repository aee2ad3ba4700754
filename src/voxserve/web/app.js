// The playground page: wires the controls to the stream, the player and the captions.

import { apiKey, fetchVoices, httpBase, setApiKey, speechRequest } from "./api.js";
import { Captions } from "./captions.js";
import { makeFile, saveFile } from "./download.js";
import { Player, pcm16ToFloat } from "./player.js";
import { Scope } from "./scope.js";
import { copyFrom, curlSnippet, pythonSnippet } from "./snippets.js";
import { Utterance } from "./stream.js";
import { sampleText, tokens } from "./texts.js";
import { describeVoice, fillVoiceSelect } from "./voices.js";

const $ = (id) => document.getElementById(id);
const el = {
  text: $("text"), voice: $("voice"), voiceInfo: $("voice-info"), sample: $("sample"),
  speed: $("speed"), speedOut: $("speed-out"), rate: $("rate"), rateOut: $("rate-out"), rateField: $("rate-field"),
  speak: $("speak"), stop: $("stop"), status: $("status"), error: $("error"),
  wave: $("wave"), level: $("level"), ttfa: $("m-ttfa"), rtf: $("m-rtf"), chunks: $("m-chunks"), audio: $("m-audio"),
  captions: $("captions"), format: $("format"), rateHz: $("rate-hz"), download: $("download"),
  link: $("download-link"), curl: $("snip-curl"), py: $("snip-py"), key: $("api-key"),
};

// Page state, read by the end-to-end tests (and handy in the console).
const state = {
  voicesLoaded: false, voices: 0, mode: "whole", active: false, playing: false, status: "",
  chunks: 0, scheduledSeconds: 0, activeSources: 0, underruns: 0, sampleRate: 0, words: 0,
  ttfaMs: null, serverTtfaMs: null, rtf: null, serverAudioS: null, serverStallS: null, cancelled: false,
  utterances: 0, lastError: null, lastDownload: null, fragmentsSent: 0, fragmentsAtFirstAudio: null,
};
window.voxState = state;

const player = new Player();
const captions = new Captions(el.captions);
const voices = new Map();
let current = null; // the utterance being streamed: {utt, t0, firstAt, lastAt, text, timer, live, sent}
let lastRequest = null; // what the last utterance asked for, for downloads

function setStatus(text) {
  state.status = text;
  el.status.textContent = text;
}

function showError(err) {
  const text = err.readable ?? String(err.message ?? err);
  state.lastError = { code: err.code ?? "error", message: err.message ?? String(err), text };
  el.error.textContent = text;
  el.error.hidden = false;
  setStatus("Error.");
}

function clearError() {
  state.lastError = null;
  el.error.hidden = true;
  el.error.textContent = "";
}

// ---- voices -------------------------------------------------------------------------------------

async function loadVoices() {
  setStatus("Loading voices…");
  let list;
  try {
    list = await fetchVoices();
  } catch (err) {
    showError(err);
    return;
  }
  const wanted = el.voice.value || sessionStorage.getItem("voxserve.voice") || "af_heart";
  voices.clear();
  for (const v of list) voices.set(v.id, v);
  const languages = fillVoiceSelect(el.voice, list, wanted);
  state.voices = voices.size;
  state.voicesLoaded = true;
  clearError();
  setStatus(`${voices.size} voices in ${languages} languages. Ready.`);
  el.voiceInfo.textContent = describeVoice(voices.get(el.voice.value));
  refreshSnippets();
}

// ---- streaming ----------------------------------------------------------------------------------

function resetMetrics() {
  Object.assign(state, {
    chunks: 0, scheduledSeconds: 0, underruns: 0, words: 0, ttfaMs: null, serverTtfaMs: null, rtf: null,
    serverAudioS: null, serverStallS: null, cancelled: false, sampleRate: 0, fragmentsSent: 0, fragmentsAtFirstAudio: null,
  });
  el.ttfa.textContent = "–";
  el.rtf.textContent = "–";
  el.chunks.textContent = "0";
  el.audio.textContent = "0.00 s";
}

function requestFor(text) {
  const v = voices.get(el.voice.value);
  return { text, voice: el.voice.value, speed: Number(el.speed.value), sampleRate: v?.sampleRate ?? null };
}

async function begin(text, { live = false } = {}) {
  if (!el.voice.value) {
    showError({ code: "no_voice", message: "no voice is selected", readable: "No voice is available yet." });
    return null;
  }
  halt();
  clearError();
  await player.unlock();
  player.stop();
  player.reset();
  captions.reset();
  resetMetrics();
  const req = requestFor(text);
  lastRequest = req;
  const cur = { t0: performance.now(), firstAt: null, lastAt: null, text, timer: null, live, sent: "", req };
  const config = { voice: req.voice, speed: req.speed };
  if (req.sampleRate) config.sample_rate = req.sampleRate;
  cur.utt = new Utterance(config, {
    onReady: (msg) => {
      state.sampleRate = Number(msg.sample_rate) || state.sampleRate;
    },
    onChunk: (meta, buf) => onChunk(cur, meta, buf),
    onDone: (msg) => onDone(cur, msg),
    onError: (err) => {
      showError(err);
      if (cur.timer) clearInterval(cur.timer);
    },
    onEnd: () => onEnd(cur),
  });
  current = cur;
  state.active = true;
  updateButtons();
  setStatus("Speaking…");
  cur.utt.start();
  return cur;
}

function onChunk(cur, meta, buf) {
  if (cur !== current) return;
  const samples = pcm16ToFloat(buf);
  const rate = state.sampleRate || cur.req.sampleRate || 24000;
  const offset = Number(meta.offset_s ?? player.scheduledSeconds);
  const at = player.enqueue(samples, rate);
  const now = performance.now();
  if (cur.firstAt === null) {
    cur.firstAt = now;
    state.ttfaMs = Math.round(now - cur.t0);
    state.fragmentsAtFirstAudio = state.fragmentsSent;
    el.ttfa.textContent = `${state.ttfaMs} ms`;
  }
  cur.lastAt = now;
  captions.add(meta.words, offset, at);
  state.chunks = player.buffers;
  state.scheduledSeconds = player.scheduledSeconds;
  state.underruns = player.underruns;
  state.words = captions.count;
  el.chunks.textContent = String(state.chunks);
  el.audio.textContent = `${state.scheduledSeconds.toFixed(2)} s`;
}

function onDone(cur, msg) {
  if (cur !== current) return;
  state.cancelled = Boolean(msg.cancelled);
  state.serverTtfaMs = msg.ttfa_ms ?? null;
  state.serverAudioS = msg.audio_s ?? null;
  state.serverStallS = msg.stall_s ?? null; // the server's own count: audio it made late for a real-time listener
  const elapsed = ((cur.lastAt ?? performance.now()) - cur.t0) / 1000;
  state.rtf = typeof msg.rtf === "number" ? msg.rtf : state.scheduledSeconds ? elapsed / state.scheduledSeconds : null;
  if (state.rtf !== null) el.rtf.textContent = state.rtf.toFixed(2);
  if (state.serverTtfaMs !== null && state.ttfaMs !== null) {
    const small = document.createElement("small");
    small.textContent = `server: ${Math.round(state.serverTtfaMs)} ms`;
    el.ttfa.replaceChildren(`${state.ttfaMs} ms`, small);
  }
  if (!state.words) captions.plain(cur.text);
  state.utterances += 1;
  setStatus(
    `Done: ${state.chunks} chunks, ${state.scheduledSeconds.toFixed(2)} s of audio, ` +
      `first audio after ${state.ttfaMs ?? "–"} ms` +
      (state.serverStallS === null ? "." : `, server late by ${state.serverStallS.toFixed(2)} s.`),
  );
}

function onEnd(cur) {
  if (cur !== current) return;
  if (cur.timer) clearInterval(cur.timer);
  state.active = false;
  current = null;
  el.download.disabled = player.pieces.length === 0;
  updateButtons();
}

// Stop streaming (without touching what is already scheduled).
function halt() {
  const cur = current;
  if (!cur) return;
  current = null;
  if (cur.timer) clearInterval(cur.timer);
  cur.utt.cancel();
  state.active = false;
}

function stop() {
  const wasBusy = state.active || player.playing;
  halt();
  player.stop();
  state.playing = false;
  state.activeSources = 0;
  updateButtons();
  if (wasBusy) setStatus("Stopped.");
  el.download.disabled = player.pieces.length === 0;
}

function updateButtons() {
  const live = current?.live;
  el.speak.textContent = live ? "Finish" : "Speak";
  el.speak.setAttribute("aria-label", live ? "Finish live input" : "Speak");
  el.stop.disabled = !(state.active || player.playing);
}

function sendText(cur, fragment) {
  if (!fragment) return;
  cur.utt.text(fragment);
  state.fragmentsSent += 1;
}

// ---- the three modes ----------------------------------------------------------------------------

function mode() {
  return document.querySelector('input[name="mode"]:checked').value;
}

async function speak() {
  if (current?.live) return finishLive();
  const text = el.text.value;
  const m = mode();
  if (m !== "live" && !text.trim()) {
    showError({ code: "empty", message: "nothing to say", readable: "Type some text first." });
    return;
  }
  if (m === "whole") {
    const cur = await begin(text);
    if (!cur) return;
    sendText(cur, text);
    cur.utt.close();
  } else if (m === "replay") {
    await replay(text);
  } else {
    await startLive();
  }
}

// A pasted paragraph replayed as LLM-sized tokens at the chosen rate.
async function replay(text) {
  const cur = await begin(text);
  if (!cur) return;
  const parts = tokens(text);
  let i = 0;
  const interval = 1000 / Number(el.rate.value);
  cur.timer = setInterval(() => {
    if (cur !== current) return clearInterval(cur.timer);
    if (i < parts.length) {
      if (i === 0) cur.t0 = performance.now();
      sendText(cur, parts[i++]);
      return;
    }
    clearInterval(cur.timer);
    cur.timer = null;
    cur.utt.close();
  }, interval);
}

async function startLive() {
  const cur = await begin("", { live: true });
  if (!cur) return;
  cur.sent = "";
  sendTyped(cur);
  updateButtons();
  setStatus("Live: type in the text box; pause to hear it, press Finish when done.");
  el.text.focus();
}

function sendTyped(cur) {
  const value = el.text.value;
  if (!value.startsWith(cur.sent)) {
    cur.sent = value; // edited earlier text: only new text at the end is spoken
    return;
  }
  const fresh = value.slice(cur.sent.length);
  if (!fresh) return;
  if (cur.sent === "") cur.t0 = performance.now();
  cur.sent = value;
  cur.text = value;
  cur.req.text = value;
  sendText(cur, fresh);
  clearTimeout(cur.idle);
  cur.idle = setTimeout(() => cur === current && cur.utt.flush(), 1200);
}

function finishLive() {
  const cur = current;
  sendTyped(cur);
  clearTimeout(cur.idle);
  cur.live = false;
  cur.utt.close();
  updateButtons();
  setStatus("Finishing…");
}

async function speakSample() {
  const v = voices.get(el.voice.value);
  const text = sampleText(v?.lang);
  const cur = await begin(text);
  if (!cur) return;
  sendText(cur, text);
  cur.utt.close();
}

// ---- download and snippets ----------------------------------------------------------------------

function currentRequestBody() {
  const req = lastRequest ?? requestFor(el.text.value);
  return speechRequest({
    text: req.text || el.text.value,
    voice: req.voice || el.voice.value,
    speed: req.speed,
    format: el.format.value,
    sampleRate: Number(el.rateHz.value) || null,
  });
}

function refreshSnippets() {
  const body = speechRequest({
    text: el.text.value,
    voice: el.voice.value || "af_heart",
    speed: Number(el.speed.value),
    format: el.format.value,
    sampleRate: Number(el.rateHz.value) || null,
  });
  el.curl.textContent = curlSnippet(httpBase(), body, Boolean(apiKey()));
  el.py.textContent = pythonSnippet(httpBase(), body, Boolean(apiKey()));
}

async function download() {
  const format = el.format.value;
  clearError();
  if (format !== "wav") setStatus(`Preparing ${format.toUpperCase()}…`);
  let blob;
  try {
    blob = await makeFile(format, Number(el.rateHz.value) || null, player.recorded(), currentRequestBody());
  } catch (err) {
    showError(err);
    return;
  }
  saveFile(el.link, blob, `voxserve-${lastRequest?.voice ?? "speech"}.${format === "opus" ? "ogg" : format}`);
  state.lastDownload = { format, bytes: blob.size, type: blob.type };
  setStatus(`Downloaded ${format.toUpperCase()} (${Math.round(blob.size / 1024)} KiB).`);
}

// ---- meter, waveform, captions ------------------------------------------------------------------

const scope = new Scope(el.wave, el.level);

function tick() {
  const wasPlaying = state.playing;
  state.playing = player.playing;
  state.activeSources = player.activeSources;
  captions.update(player.now);
  scope.render(player, state.playing);
  if (wasPlaying !== state.playing) updateButtons();
}

// ---- wiring -------------------------------------------------------------------------------------

function onModeChange() {
  state.mode = mode();
  el.rateField.hidden = state.mode !== "replay";
}

function init() {
  el.key.value = apiKey();
  el.speed.addEventListener("input", () => {
    el.speedOut.textContent = `${Number(el.speed.value).toFixed(2)}×`;
    refreshSnippets();
  });
  el.rate.addEventListener("input", () => (el.rateOut.textContent = `${el.rate.value} tokens/s`));
  el.voice.addEventListener("change", () => {
    sessionStorage.setItem("voxserve.voice", el.voice.value);
    el.voiceInfo.textContent = describeVoice(voices.get(el.voice.value));
    refreshSnippets();
  });
  for (const input of document.querySelectorAll('input[name="mode"]')) input.addEventListener("change", onModeChange);
  el.text.addEventListener("input", () => {
    if (current?.live) sendTyped(current);
    refreshSnippets();
  });
  el.format.addEventListener("change", refreshSnippets);
  el.rateHz.addEventListener("change", refreshSnippets);
  el.speak.addEventListener("click", () => speak().catch(showError));
  el.stop.addEventListener("click", stop);
  el.sample.addEventListener("click", () => speakSample().catch(showError));
  el.download.addEventListener("click", download);
  for (const b of document.querySelectorAll("button.copy")) b.addEventListener("click", () => copyFrom(b, $(b.dataset.target)));
  const applyKey = () => {
    setApiKey(el.key.value.trim());
    refreshSnippets();
    loadVoices();
  };
  $("key-form").addEventListener("submit", (e) => {
    e.preventDefault();
    applyKey();
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") stop();
    else if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      speak().catch(showError);
    }
  });
  onModeChange();
  refreshSnippets();
  setInterval(tick, 40);
  loadVoices();
}

init();
