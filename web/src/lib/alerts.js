// Rules and alerts (Prometheus' /api/v1/rules shape) → the alerts page and
// the workload page's alert list; label matchers for filtering them. Pure
// functions: no DOM, no fetch.

import { buildHash } from './url.js';

// ruleGroups normalises /api/v1/rules' groups, marking the language of
// each from the LogQL groups (/prometheus/api/v1/rules lists only those;
// /api/v1/rules does not say). Each group gets lang ('promql'|'logql'),
// health (the worst of its rules': err, unknown, ok) and counts.
export function ruleGroups(all, logql) {
  const isLogQL = new Set(((logql && logql.groups) || []).map((g) => g.file + '\u0000' + g.name));
  return ((all && all.groups) || []).map((g) => {
    const lang = isLogQL.has(g.file + '\u0000' + g.name) ? 'logql' : 'promql';
    const rules = (g.rules || []).map((r) => ({
      ...r,
      lang,
      alerts: r.alerts || [],
      health: r.health || 'unknown',
      lastError: r.lastError || '',
    }));
    const health = rules.some((r) => r.health === 'err') ? 'err' : rules.some((r) => r.health !== 'ok') ? 'unknown' : 'ok';
    return {
      name: g.name,
      file: g.file,
      interval: g.interval,
      limit: g.limit || 0,
      lastEvaluation: g.lastEvaluation,
      evaluationTime: g.evaluationTime,
      lang,
      health,
      rules,
      errors: rules.filter((r) => r.health === 'err').length,
      firing: rules.reduce((n, r) => n + r.alerts.filter((a) => a.state === 'firing').length, 0),
      pending: rules.reduce((n, r) => n + r.alerts.filter((a) => a.state === 'pending').length, 0),
    };
  });
}

const STATE_ORDER = { firing: 0, pending: 1 };
const SEVERITY_ORDER = { critical: 0, page: 0, error: 1, warning: 2, ticket: 2, info: 3 };

// activeAlerts lists every alert of the groups with its rule (name, query,
// language, group, file), firing before pending, then by severity, then
// the most recently active first.
export function activeAlerts(groups) {
  const out = [];
  for (const g of groups) {
    for (const r of g.rules) {
      for (const a of r.alerts) {
        out.push({
          labels: a.labels || {},
          annotations: a.annotations || {},
          state: a.state || 'firing',
          activeAt: a.activeAt || '',
          activeMs: a.activeAt ? Date.parse(a.activeAt) : NaN,
          value: a.value,
          rule: { name: r.name, query: r.query, lang: r.lang, group: g.name, file: g.file, duration: r.duration || 0 },
        });
      }
    }
  }
  const sev = (a) => SEVERITY_ORDER[String(a.labels.severity || '').toLowerCase()] ?? 4;
  out.sort(
    (a, b) =>
      (STATE_ORDER[a.state] ?? 2) - (STATE_ORDER[b.state] ?? 2) ||
      sev(a) - sev(b) ||
      (b.activeMs || 0) - (a.activeMs || 0) ||
      String(a.labels.alertname).localeCompare(String(b.labels.alertname)),
  );
  return out;
}

// parseMatchers reads a label-matcher filter: `{a="b", c=~"d.*"}` or the
// same without braces. Operators = != =~ !~; regular expressions are
// anchored, as in PromQL. It throws Error with the reason on bad input.
export function parseMatchers(s) {
  let t = String(s || '').trim();
  if (t.startsWith('{')) {
    if (!t.endsWith('}')) throw new Error('missing closing "}"');
    t = t.slice(1, -1);
  }
  const out = [];
  const re = /\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,|$)/y;
  let i = 0;
  while (t.slice(i).trim() !== '') {
    re.lastIndex = i;
    const m = re.exec(t);
    if (!m) throw new Error(`bad matcher at "${t.slice(i).trim()}": want name="value"`);
    const value = m[3].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    const mt = { name: m[1], op: m[2], value };
    if (m[2] === '=~' || m[2] === '!~') {
      try {
        mt.re = new RegExp('^(?:' + value + ')$');
      } catch (e) {
        throw new Error(`bad regular expression "${value}": ${e.message}`);
      }
    }
    out.push(mt);
    i = re.lastIndex;
    if (m[4] === '') break;
  }
  return out;
}

// matches reports whether a label set satisfies every matcher (a missing
// label is the empty string, as in PromQL).
export function matches(labels, matchers) {
  return matchers.every((m) => {
    const v = labels[m.name] ?? '';
    switch (m.op) {
      case '=':
        return v === m.value;
      case '!=':
        return v !== m.value;
      case '=~':
        return m.re.test(v);
      default:
        return !m.re.test(v);
    }
  });
}

// Label names that mean the same host or GPU (canonical names beside the
// exporters'), for matching a workload's alerts.
const SAME = [
  ['host', 'Hostname', 'hostname'],
  ['gpu_uuid', 'UUID'],
];
const family = (k) => SAME.find((f) => f.includes(k)) || [k];
// RELATED_KEYS are the labels through which an alert concerns a workload
// without naming it: its hosts, nodes, GPUs and pods.
const RELATED_KEYS = ['host', 'Hostname', 'hostname', 'node', 'gpu_uuid', 'UUID', 'pod'];

// workloadAlerts splits alerts into those of the workload key=value (a
// label of the key, or of a name for the same thing, equals the value) and
// those related to it: an alert on one of its hosts, nodes, GPUs or pods,
// as its context (a Map label → Set of values, the workload page's)
// lists them.
export function workloadAlerts(alerts, key, value, context) {
  const direct = [];
  const related = [];
  const names = family(key);
  for (const a of alerts) {
    if (names.some((n) => a.labels[n] === value)) {
      direct.push(a);
      continue;
    }
    if (!context) continue;
    const hit = RELATED_KEYS.find((k) => a.labels[k] !== undefined && family(k).some((n) => context.get(n) && context.get(n).has(a.labels[k])));
    if (hit) related.push({ ...a, via: hit });
  }
  return { direct, related };
}

// queryHash is the explore page of the query behind an alert or rule
// (PromQL → metrics, LogQL → logs), over the hour before the alert became
// active until now (the last hour without activeMs).
export function queryHash(rule, activeMs) {
  const from = Number.isFinite(activeMs) ? String(Math.floor(activeMs / 1e3) - 3600) : 'now-1h';
  return buildHash([rule.lang === 'logql' ? 'logs' : 'metrics'], { q: rule.query, from, to: 'now' });
}

// since writes how long ago a time was: "45s", "12m", "3h5m", "2d4h".
export function since(ms, now) {
  let s = Math.max(0, Math.round((now - ms) / 1e3));
  if (!Number.isFinite(s)) return '—';
  if (s < 60) return `${s}s`;
  const d = Math.floor(s / 86400);
  s %= 86400;
  const h = Math.floor(s / 3600);
  s %= 3600;
  const m = Math.floor(s / 60);
  if (d) return `${d}d${h ? h + 'h' : ''}`;
  if (h) return `${h}h${m ? m + 'm' : ''}`;
  return `${m}m`;
}
