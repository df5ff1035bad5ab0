// Time and duration parsing for the URL state and the range picker. Pure
// functions: every one takes "now" as an argument, so tests are exact.

const UNIT_MS = { ms: 1, s: 1e3, m: 6e4, h: 36e5, d: 864e5, w: 6048e5, y: 31536e6 };
const DURATION_RE = /^((\d+(?:\.\d+)?)(ms|s|m|h|d|w|y))+$/;
const PART_RE = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)/g;

// parseDuration reads a Prometheus-style duration ("15s", "1h30m", "2d") or a
// plain number of seconds ("30", "0.5") and returns milliseconds, or NaN.
export function parseDuration(s) {
  if (typeof s !== 'string') return NaN;
  s = s.trim();
  if (s === '') return NaN;
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s) * 1e3;
  if (!DURATION_RE.test(s)) return NaN;
  let ms = 0;
  for (const m of s.matchAll(PART_RE)) ms += Number(m[1]) * UNIT_MS[m[2]];
  return ms;
}

// formatDuration writes milliseconds as the shortest Prometheus duration:
// 5400000 → "1h30m", 250 → "250ms". Sub-millisecond parts are dropped.
export function formatDuration(ms) {
  ms = Math.round(ms);
  if (!Number.isFinite(ms) || ms <= 0) return '0s';
  let out = '';
  for (const [u, n] of [['w', UNIT_MS.w], ['d', UNIT_MS.d], ['h', UNIT_MS.h], ['m', UNIT_MS.m], ['s', UNIT_MS.s], ['ms', 1]]) {
    if (ms >= n) {
      out += Math.floor(ms / n) + u;
      ms %= n;
    }
  }
  return out;
}

// parseTime reads a range end: "now", "now-1h", "now+5m", unix seconds
// ("1700000000", "1700000000.5"), unix milliseconds (13 digits) or an
// RFC 3339 / ISO date. It returns milliseconds since the epoch, or NaN.
export function parseTime(s, now) {
  if (typeof s !== 'string') return NaN;
  s = s.trim();
  if (s === 'now') return now;
  const rel = /^now\s*([+-])\s*(\S+)$/.exec(s);
  if (rel) {
    const d = parseDuration(rel[2]);
    if (Number.isNaN(d)) return NaN;
    return rel[1] === '-' ? now - d : now + d;
  }
  if (/^\d{13}$/.test(s)) return Number(s);
  if (/^\d{1,11}(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1e3);
  if (/^\d{4}-\d{2}-\d{2}/.test(s)) {
    const t = Date.parse(s);
    return Number.isNaN(t) ? NaN : t;
  }
  return NaN;
}

// isRelative reports whether a range end moves with the clock (auto-refresh
// only makes sense then).
export function isRelative(s) {
  return typeof s === 'string' && s.trim().startsWith('now');
}

// resolveRange turns the URL's from/to into milliseconds. It returns
// {start, end} or {error} when either end is invalid or start ≥ end.
export function resolveRange(from, to, now) {
  const start = parseTime(from, now);
  const end = parseTime(to, now);
  if (Number.isNaN(start)) return { error: `invalid start time "${from}"` };
  if (Number.isNaN(end)) return { error: `invalid end time "${to}"` };
  if (start >= end) return { error: 'the start of the range must be before its end' };
  return { start, end };
}

// Steps a graph or heatmap may use, so that buckets fall on round times.
const NICE_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800].map((s) => s * 1e3);

// autoStep picks the smallest round step (ms) that keeps a range within
// maxPoints points, never below minStep.
export function autoStep(rangeMs, maxPoints, minStep = 1e3) {
  const want = Math.max(rangeMs / Math.max(1, maxPoints), minStep);
  for (const s of NICE_STEPS) if (s >= want) return s;
  return Math.ceil(want / NICE_STEPS[NICE_STEPS.length - 1]) * NICE_STEPS[NICE_STEPS.length - 1];
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

// formatTime writes local time as "2026-12-01 14:05:09" (with ".123" when
// millis is set).
export function formatTime(ms, millis = false) {
  const d = new Date(ms);
  const s = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return millis ? `${s}.${pad(d.getMilliseconds(), 3)}` : s;
}

// The range picker's presets, newest first.
export const RANGE_PRESETS = ['5m', '15m', '30m', '1h', '3h', '6h', '12h', '24h', '2d', '7d'];
export const REFRESH_CHOICES = ['', '5s', '10s', '30s', '1m', '5m'];
