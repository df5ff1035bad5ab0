// Investigation: from the page's URL state to a /weft/api/v1/investigate
// request, and from its report to what the page shows (where a cause is,
// as workload pivots; the window and links of its evidence). Pure
// functions, tested in test/investigate.test.js.

import { buildHash } from './url.js';
import { parseTime } from './time.js';

// SYMPTOM_FIELDS are the URL params that name a symptom, as the API
// calls them: a workload selector, a PromQL or LogQL query, or an alert's
// labels (a JSON object).
export const SYMPTOM_FIELDS = ['selector', 'query', 'log_query', 'alert'];

// investigateRequest reads the page's URL params: the API's form fields, or
// an error to show. No symptom at all is not an error: the page shows its
// form. `at` is when to investigate (parseTime syntax; default now).
export function investigateRequest(params, now) {
  const req = {};
  for (const f of SYMPTOM_FIELDS) {
    const v = (params.get(f) || '').trim();
    if (v) req[f] = v;
  }
  if (!Object.keys(req).length) return { empty: true };
  if (req.alert) {
    let labels;
    try {
      labels = JSON.parse(req.alert);
    } catch (e) {
      return { error: `alert: not a JSON object of labels: ${e.message}` };
    }
    if (!labels || typeof labels !== 'object' || Array.isArray(labels)) return { error: 'alert: not a JSON object of labels' };
  }
  const at = (params.get('at') || 'now').trim();
  const ms = parseTime(at, now);
  if (Number.isNaN(ms)) return { error: `at: cannot read ${JSON.stringify(at)} as a time (now, now-10m, unix seconds or RFC 3339)` };
  req.time = (ms / 1e3).toFixed(3);
  return { req, at };
}

// investigateHash is the URL of an investigation: #/investigate?selector=…&at=….
export function investigateHash(symptom, at) {
  const p = {};
  for (const f of SYMPTOM_FIELDS) if (symptom[f]) p[f] = symptom[f];
  if (at && at !== 'now') p.at = at;
  return buildHash(['investigate'], p);
}

// alertInvestigateHash investigates an alert from its labels, at the time
// it is looked at (an alert that still fires is still the symptom).
export function alertInvestigateHash(labels) {
  const { alertname, severity, ...rest } = labels || {};
  return investigateHash({ alert: JSON.stringify(rest) });
}

// WHERE_KEYS maps a cause's location fields to the label each value is a
// value of (the canonical workload-context names) or, with no label, is
// shown as text.
const WHERE_KEYS = [
  ['run_id', 'run_id'],
  ['nodes', 'host'],
  ['gpu_uuids', 'gpu_uuid'],
  ['ranks', 'rank'],
  ['pods', 'pod'],
  ['team', 'team'],
  ['model', 'model'],
  ['version', 'model_version'],
  ['previous_version', 'model_version', 'previous'],
  ['service', 'service'],
  ['dependency', 'dependency'],
];

// wherePairs lists a cause's location as [label, value, note] triples, in
// WHERE_KEYS order; note says how a value relates ("previous").
export function wherePairs(where) {
  const out = [];
  for (const [field, label, note] of WHERE_KEYS) {
    const v = where && where[field];
    if (v === undefined || v === '' || v === null) continue;
    for (const x of Array.isArray(v) ? v : [v]) out.push([label, String(x), note || '']);
  }
  return out;
}

// reportWindow is the report's time window in milliseconds, and its range
// params as unix seconds for the links.
export function reportWindow(rep) {
  const start = Date.parse(rep.start);
  const end = Date.parse(rep.end);
  return { start, end, from: String(Math.floor(start / 1e3)), to: String(Math.ceil(end / 1e3)) };
}

// evidenceHash opens one piece of evidence in the explore page of its
// signal, over the report's window.
export function evidenceHash(e, win) {
  return buildHash([e.signal === 'logs' ? 'logs' : 'metrics'], { q: e.query, from: win.from, to: win.to });
}

// formatOffset says where a cause's onset falls against the symptom's:
// -41 → "41 s before the symptom".
export function formatOffset(seconds) {
  if (!Number.isFinite(seconds)) return '';
  const s = Math.round(Math.abs(seconds));
  const d = s >= 120 ? `${Math.round(s / 60)} min` : `${s} s`;
  if (s === 0) return 'with the symptom';
  return seconds < 0 ? `${d} before the symptom` : `${d} after the symptom`;
}

// graphedEvidence groups the metric evidence of a cause worth a graph by
// what it shows (the same measure on several GPUs is one graph of their
// series, its queries joined with `or`): the group with the strongest
// evidence first, at most max groups of at most perGraph series.
export function graphedEvidence(evidence, max, perGraph = 8) {
  const groups = new Map();
  for (const e of evidence || []) {
    if (e.signal === 'logs' || !e.query) continue;
    let g = groups.get(e.what);
    if (!g) groups.set(e.what, (g = { what: e.what, queries: [], z: 0 }));
    if (g.queries.length < perGraph && !g.queries.includes(e.query)) g.queries.push(e.query);
    g.z = Math.max(g.z, Math.abs(e.z));
  }
  return [...groups.values()]
    .sort((a, b) => b.z - a.z)
    .slice(0, max)
    .map((g) => ({ what: g.what, z: g.z, query: g.queries.length === 1 ? g.queries[0] : g.queries.map((q) => `(${q})`).join(' or ') }));
}
