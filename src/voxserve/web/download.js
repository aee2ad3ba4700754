// "Download last utterance": WAV is built from the audio the page received; other formats come from the server.

import { synthesizeFile } from "./api.js";
import { encodeWav, resample } from "./player.js";

// recorded: {samples, sampleRate}; body: the /v1/audio/speech request for the same utterance.
export async function makeFile(format, rate, recorded, body) {
  if (format === "wav") {
    const target = rate || recorded.sampleRate;
    const samples = await resample(recorded.samples, recorded.sampleRate, target);
    return encodeWav(samples, target);
  }
  return synthesizeFile(body);
}

export function saveFile(link, blob, filename) {
  const url = URL.createObjectURL(blob);
  link.href = url;
  link.download = filename;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
