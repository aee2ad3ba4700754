// Captions built from the word timings of each chunk, with the word being heard highlighted.

export class Captions {
  constructor(el) {
    this.el = el;
    this.words = []; // {span, start, end} in AudioContext seconds
    this.current = null;
  }

  reset() {
    this.el.textContent = "";
    this.words = [];
    this.current = null;
  }

  get count() {
    return this.words.length;
  }

  // words: [{word, start_s, end_s}] in stream seconds; the chunk starting at offsetS plays at ctxStart.
  add(words, offsetS, ctxStart) {
    for (const w of words ?? []) {
      const span = document.createElement("span");
      span.className = "word";
      span.textContent = w.word;
      if (this.words.length) this.el.append(" ");
      this.el.append(span);
      const start = ctxStart + (w.start_s - offsetS);
      const end = ctxStart + ((w.end_s ?? w.start_s) - offsetS);
      this.words.push({ span, start, end });
    }
  }

  // Shown when the server sends no word timings.
  plain(text) {
    if (this.words.length === 0) this.el.textContent = text;
  }

  update(now) {
    let found = null;
    for (const w of this.words) {
      if (w.start <= now && now < Math.max(w.end, w.start + 0.05)) found = w;
      if (w.start > now) break;
    }
    if (found === this.current) return;
    if (this.current) {
      this.current.span.classList.remove("current");
      this.current.span.removeAttribute("aria-current");
    }
    this.current = found;
    if (found) {
      found.span.classList.add("current");
      found.span.setAttribute("aria-current", "true");
    }
  }
}
