// Loki answers → log lines for the logs view.

// flattenStreams turns a streams result into entries, newest first. With
// categorize-labels each value has a third element
// {structuredMetadata, parsed}; without it every label is a stream label.
export function flattenStreams(result) {
  const out = [];
  for (const s of result || []) {
    const stream = s.stream || {};
    for (const v of s.values || []) {
      const cat = v[2] || {};
      out.push({
        ts: v[0],
        ms: nsToMs(v[0]),
        line: v[1],
        stream,
        metadata: cat.structuredMetadata || {},
        parsed: cat.parsed || {},
      });
    }
  }
  out.sort((a, b) => compareNs(b.ts, a.ts));
  return out;
}

// nsToMs converts a nanosecond timestamp string to milliseconds.
export function nsToMs(ns) {
  const s = String(ns);
  if (s.length <= 6) return Number(s) / 1e6;
  return Number(s.slice(0, -6)) + Number(s.slice(-6)) / 1e6;
}

// compareNs orders nanosecond strings numerically without losing precision.
export function compareNs(a, b) {
  a = String(a);
  b = String(b);
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

// levelOf is an entry's level: detected_level (weft sets it on every line),
// else a level label or field, else "unknown".
export function levelOf(e) {
  for (const src of [e.metadata, e.stream, e.parsed]) {
    for (const k of ['detected_level', 'level', 'severity', 'lvl']) {
      if (src && src[k]) return String(src[k]).toLowerCase();
    }
  }
  return 'unknown';
}

export const LEVEL_COLORS = {
  critical: '#8e1b9b', fatal: '#8e1b9b', error: '#d63b3b', warn: '#e39a1c', warning: '#e39a1c',
  info: '#2f8f4e', debug: '#3d7dd8', trace: '#7b8ea8', unknown: '#9aa0a6',
};

export function levelColor(level) {
  return LEVEL_COLORS[level] || LEVEL_COLORS.unknown;
}

// isLogQuery tells a log query (a selector with a pipeline) from a metric
// query: log queries start with the stream selector.
export function isLogQuery(expr) {
  return /^\s*\{/.test(expr || '');
}

// volumeQuery is the log-volume histogram's query: lines per level per step.
export function volumeQuery(expr, stepMs) {
  const step = Math.max(1, Math.round(stepMs / 1e3));
  return `sum by (detected_level) (count_over_time(${expr.trim()} [${step}s]))`;
}

const TRACE_KEYS = ['trace_id', 'traceid', 'traceID', 'traceId', 'trace'];
const TRACE_IN_LINE = /\btrace_?id["']?\s*[=:]\s*["']?([0-9a-fA-F]{16,32})\b/i;

// traceIdOf finds an entry's trace ID: structured metadata first, then
// parsed fields, then a trace_id=... in the line.
export function traceIdOf(e) {
  for (const src of [e.metadata, e.parsed, e.stream]) {
    for (const k of TRACE_KEYS) if (src && src[k]) return String(src[k]);
  }
  const m = TRACE_IN_LINE.exec(e.line || '');
  return m ? m[1].toLowerCase() : '';
}

// isTraceKey reports whether a field holds a trace ID (its value links to
// the trace page).
export function isTraceKey(k) {
  return TRACE_KEYS.includes(k);
}

// Tail keeps a bounded, newest-first list of tailed entries.
export function mergeTail(entries, incoming, max) {
  const all = incoming.concat(entries);
  all.sort((a, b) => compareNs(b.ts, a.ts));
  return all.length > max ? all.slice(0, max) : all;
}
