// Talking to the router: the API key, JSON errors and Server-Sent Events over fetch.
//
// Paths are relative ("./v1/models") so the UI also works behind a reverse proxy that mounts
// the router under a prefix. SSE is read with fetch rather than EventSource because
// EventSource cannot send an Authorization header.

const KEY_STORAGE = "corral.apiKey";

export class ApiError extends Error {
  constructor(status, message, type = "") {
    super(message);
    this.status = status;
    this.type = type;
  }
}

export function apiKey() {
  return localStorage.getItem(KEY_STORAGE) ?? "";
}

// The UI registers a function that asks the user for a key (see views/dialogs.js). Several
// requests failing with 401 at once share one prompt, and once the user has cancelled it the
// page stops asking until a key is set from the sidebar.
let askForKey = null;
let pendingPrompt = null;
let declined = false;

export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
  declined = false;
}

export function onKeyNeeded(prompt) {
  askForKey = prompt;
}

function promptForKey(rejected) {
  if (declined) return Promise.resolve(null);
  if (!pendingPrompt) {
    pendingPrompt = Promise.resolve(askForKey?.({ rejected }) ?? null).then((key) => {
      declined = !key;
      return key;
    }).finally(() => {
      pendingPrompt = null;
    });
  }
  return pendingPrompt;
}

/**
 * fetch() with the API key. On a 401 the user is asked for a key and the request is sent
 * again; a refused prompt ends in an ApiError(401). Returns the Response, whatever its status.
 */
export async function api(path, { method = "GET", json, headers = {}, signal } = {}) {
  for (;;) {
    const sentKey = apiKey();
    const init = { method, headers: { ...headers }, signal };
    if (json !== undefined) {
      init.body = JSON.stringify(json);
      init.headers["Content-Type"] = "application/json";
    }
    if (sentKey) init.headers.Authorization = `Bearer ${sentKey}`;
    const response = await fetch(path, init);
    if (response.status !== 401 || !askForKey) return response;
    // Another request may have got a new key from the user while this one was in flight.
    if (apiKey() !== sentKey) continue;
    const key = await promptForKey(Boolean(sentKey));
    if (!key) throw new ApiError(401, "This server needs an API key.", "authentication_error");
  }
}

/** The error message of a failed response: the router's {"error": {"message"}} if present. */
export async function errorOf(response) {
  const text = await response.text().catch(() => "");
  let message = text || response.statusText || `HTTP ${response.status}`;
  let type = "";
  try {
    const body = JSON.parse(text);
    const error = body?.error;
    if (typeof error === "string") message = error;
    else if (error?.message) ({ message, type = "" } = error);
  } catch {
    // not JSON: keep the text
  }
  return new ApiError(response.status, message, type);
}

/** A JSON request; resolves to the parsed body (null for 204), rejects with an ApiError. */
export async function apiJson(path, options = {}) {
  const response = await api(path, options);
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return null;
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

// --- Server-Sent Events -----------------------------------------------------------------------

const LF = 10;
const CR = 13;

// The end of the first event in `bytes` (just past its blank line), or -1.
function eventEnd(bytes) {
  for (let i = 0; i < bytes.length - 1; i++) {
    if (bytes[i] !== LF) continue;
    if (bytes[i + 1] === LF) return i + 2;
    if (bytes[i + 1] === CR && bytes[i + 2] === LF) return i + 3;
  }
  return -1;
}

/**
 * Read an SSE body and call `onData(data, offset)` for every event with data lines, where
 * `offset` is the byte offset just past that event, counted from `startOffset`.
 *
 * Offsets are counted in raw bytes and only at event boundaries, because a resumable stream
 * is replayed with GET /v1/stream?from=<bytes>: saving the offset of the last *complete*
 * event together with the text it produced lets a reloaded page continue exactly there.
 * Resolves to the final offset when the body ends.
 */
export async function readEvents(response, startOffset, onData) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let pending = new Uint8Array(0);
  let offset = startOffset;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return offset;
    const joined = new Uint8Array(pending.length + value.length);
    joined.set(pending);
    joined.set(value, pending.length);
    pending = joined;
    let end;
    while ((end = eventEnd(pending)) >= 0) {
      const text = decoder.decode(pending.subarray(0, end));
      pending = pending.slice(end);
      offset += end;
      const data = text
        .split(/\r?\n/)
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) onData(data, offset);
    }
  }
}

export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason ?? new DOMException("Aborted", "AbortError"));
    }, { once: true });
  });
}
