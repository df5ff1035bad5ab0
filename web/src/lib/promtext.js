// A small reader of the Prometheus text format, for the status page's
// storage and ingest figures from weft's own /metrics.

// parseMetricsText returns [{name, labels, value}] for every sample line.
// Comments, HELP/TYPE lines and malformed lines are skipped.
export function parseMetricsText(text) {
  const out = [];
  for (const raw of String(text).split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      for (const lm of m[3].matchAll(re)) labels[lm[1]] = lm[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    const value = m[4] === '+Inf' ? Infinity : m[4] === '-Inf' ? -Infinity : Number(m[4]);
    if (Number.isNaN(value) && m[4] !== 'NaN') continue;
    out.push({ name: m[1], labels, value });
  }
  return out;
}
