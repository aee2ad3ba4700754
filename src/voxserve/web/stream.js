// One utterance over the /v1/tts/stream WebSocket (protocol in docs/protocol.md).

import { ServerError, wsUrl } from "./api.js";

const CLOSE_CODES = {
  1006: ["unreachable", "the connection to the server was lost"],
  1008: ["invalid_request", "the server refused the request"],
  1009: ["input_too_large", "the message was too large for the server"],
  1011: ["internal_error", "the server hit an internal error"],
  1013: ["overloaded", "the server is at capacity"],
  4001: ["unauthorized", "the server wants a valid API key"],
  4003: ["forbidden", "access denied"],
  4029: ["rate_limited", "rate limit reached"],
};

export class Utterance {
  // handlers: onReady(msg), onChunk(meta, ArrayBuffer), onDone(msg), onError(ServerError), onEnd()
  constructor(config, handlers) {
    this.config = { type: "config", format: "pcm", word_timings: true, ...config };
    this.h = handlers;
    this.ws = null;
    this.pendingMeta = null;
    this.finished = false;
    this.errored = false;
    this.opened = false;
    this.queue = [];
  }

  start() {
    let ws;
    try {
      ws = new WebSocket(wsUrl());
    } catch (err) {
      this.fail(new ServerError("unreachable", `cannot open the WebSocket (${err.message})`));
      return;
    }
    this.ws = ws;
    ws.binaryType = "arraybuffer";
    ws.onopen = () => {
      this.opened = true;
      ws.send(JSON.stringify(this.config));
      for (const msg of this.queue) ws.send(msg);
      this.queue = [];
    };
    ws.onmessage = (ev) => this.receive(ev.data);
    ws.onclose = (ev) => this.closed(ev);
  }

  send(obj) {
    const msg = JSON.stringify(obj);
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(msg);
    else if (this.ws && this.ws.readyState === WebSocket.CONNECTING) this.queue.push(msg);
  }

  text(fragment) {
    if (fragment) this.send({ type: "text", text: fragment });
  }

  flush() {
    this.send({ type: "flush" });
  }

  close() {
    this.send({ type: "close" });
  }

  cancel() {
    if (this.finished) return;
    this.send({ type: "cancel" });
    // Do not wait for the server: nothing more from this utterance is wanted.
    this.finish();
  }

  receive(data) {
    if (this.finished) return;
    if (data instanceof ArrayBuffer) {
      const meta = this.pendingMeta ?? { index: -1, words: [] };
      this.pendingMeta = null;
      this.h.onChunk(meta, data);
      return;
    }
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return;
    }
    if (msg.type === "ready") this.h.onReady(msg);
    else if (msg.type === "chunk") this.pendingMeta = msg;
    else if (msg.type === "done") {
      this.h.onDone(msg);
      this.finish();
    } else if (msg.type === "error") {
      this.fail(new ServerError(msg.code || "error", msg.message || "unknown error"));
    }
  }

  // The socket closed before "done" (or an error event): say why as well as the close code allows.
  closed(ev) {
    if (this.finished) return;
    if (!this.opened) {
      this.fail(new ServerError("unreachable", `cannot reach the server at ${location.host}`));
      return;
    }
    const [code, text] = CLOSE_CODES[ev.code] ?? ["closed", "the server closed the stream early"];
    this.fail(new ServerError(code, ev.reason ? `${text}: ${ev.reason}` : `${text} (close code ${ev.code})`));
  }

  fail(err) {
    if (this.errored || this.finished) return;
    this.errored = true;
    this.h.onError(err);
    this.finish();
  }

  finish() {
    if (this.finished) return;
    this.finished = true;
    const ws = this.ws;
    if (ws && ws.readyState <= WebSocket.OPEN) {
      ws.onclose = null;
      ws.close(1000);
    }
    this.h.onEnd();
  }
}
