// Copyable curl and Python for the HTTP request that makes the same audio.

function shellQuote(s) {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export function curlSnippet(base, body, withKey) {
  const lines = [`curl -sS ${base}/v1/audio/speech \\`, `  -H 'Content-Type: application/json' \\`];
  if (withKey) lines.push(`  -H "Authorization: Bearer $VOXSERVE_API_KEY" \\`);
  lines.push(`  -d ${shellQuote(JSON.stringify(body))} \\`);
  lines.push(`  -o speech.${body.response_format}`);
  return lines.join("\n");
}

function pyValue(v, key) {
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "boolean") return v ? "True" : "False";
  if (v === null || v === undefined) return "None";
  if (key === "speed" && Number.isInteger(v)) return `${v}.0`;
  return String(v);
}

export function pythonSnippet(base, body, withKey) {
  const fields = Object.entries(body)
    .map(([k, v]) => `        ${JSON.stringify(k)}: ${pyValue(v, k)},`)
    .join("\n");
  const lines = ["import httpx", ""];
  if (withKey) lines.push("import os", "", 'headers = {"Authorization": f"Bearer {os.environ[\'VOXSERVE_API_KEY\']}"}');
  else lines.push("headers = {}");
  lines.push(
    "with httpx.stream(",
    '    "POST",',
    `    ${JSON.stringify(base + "/v1/audio/speech")},`,
    "    headers=headers,",
    "    json={",
    fields,
    "    },",
    "    timeout=120,",
    ") as response:",
    "    response.raise_for_status()",
    `    with open(${JSON.stringify("speech." + body.response_format)}, "wb") as out:`,
    "        for block in response.iter_bytes():",
    "            out.write(block)",
  );
  return lines.join("\n");
}

// Copy a snippet; where the clipboard is not available, select it for Ctrl+C instead.
export async function copyFrom(button, source) {
  try {
    await navigator.clipboard.writeText(source.textContent);
    button.textContent = "Copied";
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    button.textContent = "Selected: press Ctrl+C";
  }
  setTimeout(() => (button.textContent = "Copy"), 2000);
}
