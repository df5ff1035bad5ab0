// Workload context: the label names that name a workload (docs/workload-context.md,
// plus the names dcgm-exporter uses). A value of one of them is a pivot to
// that workload's page wherever it is shown.

import { buildHash } from './url.js';

export const CONTEXT_KEYS = [
  'run_id', 'model', 'model_version', 'dataset', 'team', 'namespace', 'pod', 'container',
  'cluster', 'node', 'host', 'Hostname', 'gpu_uuid', 'UUID', 'rank',
];
const CONTEXT_SET = new Set(CONTEXT_KEYS);

export function isContextKey(name) {
  return CONTEXT_SET.has(name);
}

// escapeValue quotes a label value for PromQL and LogQL ("a\"b").
export function escapeValue(v) {
  return String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

// selector writes equality matchers: [["run_id","r42"]] → {run_id="r42"}.
export function selector(pairs) {
  return '{' + pairs.map(([k, v]) => `${k}="${escapeValue(v)}"`).join(', ') + '}';
}

// contextOf returns the context pairs of one label set, in CONTEXT_KEYS order.
export function contextOf(labels) {
  const out = [];
  for (const k of CONTEXT_KEYS) if (labels && labels[k] !== undefined && labels[k] !== '') out.push([k, labels[k]]);
  return out;
}

// commonContext returns the context pairs every label set shares (same
// value), the context of a chart that shows several series.
export function commonContext(labelSets) {
  if (!labelSets.length) return [];
  return contextOf(labelSets[0]).filter(([k, v]) => labelSets.every((ls) => ls[k] === v));
}

// workloadHash is the URL of a workload page: #/workload/run_id/r42.
export function workloadHash(key, value, params) {
  return buildHash(['workload', key, value], params || {});
}

// logsHash and metricsHash are the "logs / metrics of this context" links;
// from and to carry the window.
export function logsHash(pairs, from, to) {
  return buildHash(['logs'], { q: selector(pairs), from, to });
}

export function metricsHash(pairs, from, to) {
  return buildHash(['metrics'], { q: selector(pairs), from, to });
}
