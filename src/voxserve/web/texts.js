// Text helpers: per-language sample sentences and LLM-like tokenization for the replay mode.

const SAMPLES = {
  en: "Hello! This is how I sound. I hope you like it.",
  es: "¡Hola! Así es como sueno.",
  fr: "Bonjour ! Voici ma voix.",
  it: "Ciao! Questa è la mia voce.",
  pt: "Olá! Esta é a minha voz.",
  hi: "नमस्ते! मेरी आवाज़ ऐसी है।",
  ja: "こんにちは。これが私の声です。",
  zh: "你好！这是我的声音。",
};

export function sampleText(lang) {
  return SAMPLES[(lang || "en").slice(0, 2)] ?? SAMPLES.en;
}

// Pieces of at most five characters, each with the whitespace before it, like an LLM's tokens.
export function tokens(text) {
  return text.match(/\s*\S{1,5}|\s+$/g) ?? [];
}
