// HTTP side of the playground: where the server is, credentials, voices, error text.

const KEY_STORE = "voxserve.apiKey";

export class ServerError extends Error {
  constructor(code, message, status = 0) {
    super(message);
    this.code = code;
    this.status = status;
  }
  get readable() {
    return describe(this.code, this.message, this.status);
  }
}

const HINTS = {
  unauthorized: "Enter a valid API key in “Server access” below.",
  forbidden: "This key is not allowed to do that.",
  rate_limited: "Too many requests; wait a moment and try again.",
  overloaded: "The server is busy; try again shortly.",
  not_ready: "The server is still starting; try again shortly.",
  unreachable: "Is the server running? Check the address and try again.",
  unknown_voice: "Pick a voice from the list.",
};

export function describe(code, message, status) {
  const head = status ? `Server error ${status} (${code})` : `Error (${code})`;
  const hint = HINTS[code] ? ` ${HINTS[code]}` : "";
  return `${head}: ${message}.${hint}`.replace(/\.\./g, ".");
}

export function apiKey() {
  try {
    return sessionStorage.getItem(KEY_STORE) || "";
  } catch {
    return "";
  }
}

export function setApiKey(key) {
  try {
    if (key) sessionStorage.setItem(KEY_STORE, key);
    else sessionStorage.removeItem(KEY_STORE);
  } catch {
    /* storage disabled: the key lives only in the input field */
  }
}

export function httpBase() {
  return location.origin;
}

export function wsUrl() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const url = new URL(`${scheme}//${location.host}/v1/tts/stream`);
  const key = apiKey();
  if (key) url.searchParams.set("api_key", key);
  return url.toString();
}

function headers(extra = {}) {
  const out = { ...extra };
  const key = apiKey();
  if (key) out.Authorization = `Bearer ${key}`;
  return out;
}

async function errorFrom(response) {
  let code = `http_${response.status}`;
  let message = response.statusText || "request failed";
  try {
    const body = await response.json();
    const err = body.error ?? body;
    if (typeof err === "object" && err !== null) {
      code = err.code || code;
      message = err.message || (typeof err.detail === "string" ? err.detail : JSON.stringify(err.detail ?? err));
    } else if (typeof err === "string") {
      message = err;
    }
  } catch {
    /* not JSON: keep the status text */
  }
  return new ServerError(code, message, response.status);
}

async function request(path, init = {}) {
  let response;
  try {
    response = await fetch(httpBase() + path, { ...init, headers: headers(init.headers) });
  } catch (err) {
    throw new ServerError("unreachable", `cannot reach the server at ${httpBase()} (${err.message})`);
  }
  if (!response.ok) throw await errorFrom(response);
  return response;
}

// The voices list, whatever envelope the server wraps it in.
export async function fetchVoices() {
  const body = await (await request("/v1/voices")).json();
  const list = Array.isArray(body) ? body : Array.isArray(body.data) ? body.data : body.voices ?? [];
  return list
    .map((v) => (typeof v === "string" ? { id: v } : v))
    .map((v) => ({
      id: String(v.id ?? v.voice_id ?? v.name),
      lang: String(v.lang ?? v.language ?? "other").toLowerCase(),
      engine: v.engine ?? "",
      gender: v.gender ?? "",
      name: v.name && v.name !== v.id ? v.name : "",
      sampleRate: Number(v.sample_rate ?? v.sampleRate ?? 0) || null,
    }));
}

// The HTTP request that makes the same audio as the last utterance (also shown as snippets).
export function speechRequest({ text, voice, speed, format, sampleRate }) {
  const body = { input: text, voice, response_format: format, speed };
  if (sampleRate) body.sample_rate = sampleRate;
  return body;
}

export async function synthesizeFile(body) {
  const response = await request("/v1/audio/speech", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return response.blob();
}

export function languageName(code) {
  if (!code || code === "other") return "Other";
  try {
    const names = new Intl.DisplayNames(["en"], { type: "language" });
    return names.of(code.replace("_", "-")) || code;
  } catch {
    return code;
  }
}
