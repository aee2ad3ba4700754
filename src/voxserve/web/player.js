// Gapless playback of streamed PCM: each chunk becomes an AudioBuffer scheduled right after the last one.

// Head room before the first buffer of an utterance: what absorbs the jitter of delivery (a busy page,
// a machine whose cores the server shares). The server keeps its own audio ahead of real time; this only
// covers the way to the speaker, for a tenth of a second more before the first sound.
const START_LEAD_S = 0.1;
const LATE_MARGIN_S = 0.02; // a chunk that arrives after its slot starts this far from now

export function pcm16ToFloat(buffer) {
  const view = new DataView(buffer);
  const n = buffer.byteLength >> 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getInt16(i * 2, true) / 32768;
  return out;
}

export class Player {
  constructor() {
    this.ctx = null;
    this.analyser = null;
    this.sources = new Set();
    this.reset();
  }

  reset() {
    this.nextTime = 0; // context time where the next buffer starts; 0 = nothing scheduled yet
    this.scheduledSeconds = 0;
    this.buffers = 0;
    this.underruns = 0;
    this.pieces = []; // Float32Array per chunk, kept for the WAV download
    this.sampleRate = 0;
  }

  // Must run inside a user gesture the first time (browsers keep audio suspended otherwise).
  async unlock() {
    if (!this.ctx) {
      this.ctx = new AudioContext({ latencyHint: "interactive" });
      this.analyser = this.ctx.createAnalyser();
      this.analyser.fftSize = 2048;
      this.analyser.connect(this.ctx.destination);
    }
    if (this.ctx.state !== "running") await this.ctx.resume();
  }

  // Schedule one chunk; returns the context time at which it starts.
  enqueue(samples, sampleRate) {
    const ctx = this.ctx;
    this.sampleRate = sampleRate;
    this.pieces.push(samples);
    if (samples.length === 0) return this.nextTime || ctx.currentTime;
    const buffer = ctx.createBuffer(1, samples.length, sampleRate);
    buffer.copyToChannel(samples, 0);
    const now = ctx.currentTime;
    let at = this.nextTime;
    if (at === 0) at = now + START_LEAD_S;
    else if (at < now + 0.005) {
      this.underruns += 1;
      at = now + LATE_MARGIN_S;
    }
    const src = ctx.createBufferSource();
    src.buffer = buffer;
    src.connect(this.analyser);
    src.onended = () => this.sources.delete(src);
    src.start(at);
    this.sources.add(src);
    this.nextTime = at + buffer.duration;
    this.scheduledSeconds += buffer.duration;
    this.buffers += 1;
    return at;
  }

  get now() {
    return this.ctx ? this.ctx.currentTime : 0;
  }

  get playing() {
    return this.sources.size > 0 && this.nextTime > this.now;
  }

  get activeSources() {
    return this.sources.size;
  }

  stop() {
    for (const src of this.sources) {
      try {
        src.stop();
      } catch {
        /* never started */
      }
      src.disconnect();
    }
    this.sources.clear();
    this.nextTime = 0;
  }

  // Level (RMS, 0..1) and the current waveform, for the meter and canvas.
  sample(into) {
    if (!this.analyser) return 0;
    this.analyser.getFloatTimeDomainData(into);
    let sum = 0;
    for (let i = 0; i < into.length; i++) sum += into[i] * into[i];
    return Math.sqrt(sum / into.length);
  }

  recorded() {
    const total = this.pieces.reduce((n, p) => n + p.length, 0);
    const out = new Float32Array(total);
    let at = 0;
    for (const p of this.pieces) {
      out.set(p, at);
      at += p.length;
    }
    return { samples: out, sampleRate: this.sampleRate };
  }
}

export async function resample(samples, fromRate, toRate) {
  if (!toRate || toRate === fromRate || samples.length === 0) return samples;
  const frames = Math.ceil((samples.length * toRate) / fromRate);
  const offline = new OfflineAudioContext(1, frames, toRate);
  const buffer = offline.createBuffer(1, samples.length, fromRate);
  buffer.copyToChannel(samples, 0);
  const src = offline.createBufferSource();
  src.buffer = buffer;
  src.connect(offline.destination);
  src.start();
  const rendered = await offline.startRendering();
  return rendered.getChannelData(0);
}

export function encodeWav(samples, sampleRate) {
  const data = samples.length * 2;
  const buf = new ArrayBuffer(44 + data);
  const v = new DataView(buf);
  const ascii = (at, s) => [...s].forEach((c, i) => v.setUint8(at + i, c.charCodeAt(0)));
  ascii(0, "RIFF");
  v.setUint32(4, 36 + data, true);
  ascii(8, "WAVE");
  ascii(12, "fmt ");
  v.setUint32(16, 16, true);
  v.setUint16(20, 1, true); // PCM
  v.setUint16(22, 1, true); // mono
  v.setUint32(24, sampleRate, true);
  v.setUint32(28, sampleRate * 2, true);
  v.setUint16(32, 2, true);
  v.setUint16(34, 16, true);
  ascii(36, "data");
  v.setUint32(40, data, true);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]));
    v.setInt16(44 + i * 2, s < 0 ? s * 32768 : s * 32767, true);
  }
  return new Blob([buf], { type: "audio/wav" });
}
