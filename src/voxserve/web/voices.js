// The voice picker: voices grouped by language, and a one-line description of the chosen one.

import { languageName } from "./api.js";

// Fill <select> with one <optgroup> per language; returns the number of languages.
export function fillVoiceSelect(select, list, wanted) {
  select.replaceChildren();
  const groups = new Map();
  for (const v of list) {
    if (!groups.has(v.lang)) groups.set(v.lang, []);
    groups.get(v.lang).push(v);
  }
  const byName = [...groups.keys()].sort((a, b) => languageName(a).localeCompare(languageName(b)));
  for (const lang of byName) {
    const group = document.createElement("optgroup");
    group.label = languageName(lang);
    for (const v of groups.get(lang).sort((a, b) => a.id.localeCompare(b.id))) {
      const who = [v.name, v.gender].filter(Boolean).join(", ");
      group.append(new Option(who ? `${who} · ${v.id}` : v.id, v.id));
    }
    select.append(group);
  }
  if (list.some((v) => v.id === wanted)) select.value = wanted;
  return groups.size;
}

export function describeVoice(v) {
  if (!v) return "";
  const parts = [languageName(v.lang), v.gender, v.engine, v.sampleRate ? `${v.sampleRate} Hz` : ""];
  return parts.filter(Boolean).join(" · ");
}
