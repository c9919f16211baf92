// Number, size and time formatting for labels.

const numberFormat = new Intl.NumberFormat();

export function formatNumber(value) {
  return numberFormat.format(value);
}

export function formatBytes(bytes) {
  if (!Number.isFinite(bytes) || bytes < 0) return "?";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  return `${value.toFixed(digits)} ${units[unit]}`;
}

export function formatSeconds(seconds) {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

/** "just now", "5 min ago", "yesterday", or a date: for the conversation list. */
export function formatAgo(timestamp, now = Date.now()) {
  const seconds = Math.max(0, (now - timestamp) / 1000);
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  if (seconds < 172800) return "yesterday";
  return new Date(timestamp).toLocaleDateString();
}

/** "1 model", "2 models": a count with its noun in agreement. */
export function plural(count, noun, nouns = `${noun}s`) {
  return `${formatNumber(count)} ${count === 1 ? noun : nouns}`;
}

/**
 * "Reload failed: …" without saying it twice when the server's message already starts with
 * the same words ("reload failed: catalogue …").
 */
export function prefixed(prefix, message) {
  const text = String(message ?? "");
  const head = prefix.toLowerCase();
  if (text.toLowerCase().startsWith(head)) {
    const rest = text.slice(prefix.length).replace(/^[:\s]+/, "");
    return rest ? `${prefix}: ${rest}` : prefix;
  }
  return `${prefix}: ${text}`;
}

export function percent(fraction) {
  return `${Math.round(Math.min(1, Math.max(0, fraction)) * 100)}%`;
}
