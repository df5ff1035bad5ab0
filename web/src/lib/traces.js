// Tempo answers → the trace view and the trace search list, and the TraceQL
// and LogQL the trace pages build. Pure functions: no DOM, no fetch.
//
// A trace comes from /api/v2/traces/<id> as protojson of tempopb's
// TraceByIDResponse: resourceSpans → scopeSpans → spans, IDs in base64,
// times as decimal strings of nanoseconds (beyond a double's precision, so
// offsets are taken with BigInt), enums by name, zero fields left out.

import { CONTEXT_KEYS, escapeValue } from './context.js';

// RESOURCE_ALIASES are weft's default workload-context mapping
// (ingest/workload, docs/workload-context.md): the OTLP resource attributes
// each canonical label is read from, most specific first; a resource
// attribute named like the label itself counts as its last alias. A server
// configured with another mapping labels its streams accordingly, but the
// trace search reads resource attributes, so the UI needs their names.
export const RESOURCE_ALIASES = {
  namespace: ['k8s.namespace.name', 'k8s_namespace_name'],
  pod: ['k8s.pod.name', 'k8s_pod_name'],
  container: ['k8s.container.name', 'k8s_container_name'],
  node: ['k8s.node.name', 'k8s_node_name'],
  cluster: ['k8s.cluster.name', 'k8s_cluster_name'],
  host: ['host.name', 'host_name', 'Hostname', 'hostname'],
  model: ['ai.model.name', 'ai_model_name', 'gen_ai.request.model', 'gen_ai_request_model', 'model_name', 'model'],
  model_version: ['ai.model.version', 'ai_model_version', 'model_version'],
  run_id: ['ai.run.id', 'ai_run_id', 'run_id'],
  dataset: ['ai.dataset.name', 'ai_dataset_name', 'dataset'],
  team: ['ai.team', 'ai_team', 'team'],
  rank: ['ai.rank', 'ai_rank', 'rank'],
  gpu_uuid: ['gpu.uuid', 'hw.id', 'UUID'],
};

// CANONICAL maps the context keys the UI shows under their exporter names
// (dcgm-exporter's Hostname and UUID) to the canonical label.
const CANONICAL = { Hostname: 'host', UUID: 'gpu_uuid' };

// aliasesOf lists the resource attributes that carry a context key.
export function aliasesOf(key) {
  const k = CANONICAL[key] || key;
  const a = RESOURCE_ALIASES[k];
  if (!a) return [key];
  return a.includes(k) ? a : [...a, k];
}

// resourceContext returns the context pairs of a resource's attributes, in
// CONTEXT_KEYS order, under their canonical names: the first alias present
// with a non-empty value wins, as at ingest.
export function resourceContext(attrs) {
  const out = [];
  for (const k of CONTEXT_KEYS) {
    if (!RESOURCE_ALIASES[k]) continue;
    for (const a of aliasesOf(k)) {
      const v = attrs && attrs[a];
      if (v !== undefined && v !== '') {
        out.push([k, String(v)]);
        break;
      }
    }
  }
  return out;
}

// traceqlString quotes a TraceQL string literal (Go escapes).
export function traceqlString(v) {
  return '"' + String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') + '"';
}

// traceqlAttr writes a scoped attribute name, quoting names TraceQL would
// not read bare: resource.ai.run.id, resource."my attr".
export function traceqlAttr(scope, name) {
  return /^[A-Za-z_][A-Za-z0-9_.]*$/.test(name) && !name.endsWith('.') ? `${scope}.${name}` : `${scope}.${traceqlString(name)}`;
}

// workloadTraceQL is the search for a workload's traces: a resource
// attribute of its key equals its value. With the resource tag names the
// store holds (/api/v2/search/tags), only the aliases present are asked for
// (one alias keeps the query on the store's indexed path); without them,
// every alias. It returns '' when no alias is among the tags.
export function workloadTraceQL(key, value, resourceTags) {
  let names = aliasesOf(key);
  if (resourceTags) {
    const have = new Set(resourceTags);
    names = names.filter((n) => have.has(n));
  }
  if (!names.length) return '';
  return '{ ' + names.map((n) => `${traceqlAttr('resource', n)} = ${traceqlString(value)}`).join(' || ') + ' }';
}

// b64ToHex decodes a protojson bytes field to lowercase hex.
export function b64ToHex(s) {
  if (!s) return '';
  let bin;
  try {
    bin = atob(s);
  } catch {
    return '';
  }
  let out = '';
  for (let i = 0; i < bin.length; i++) out += bin.charCodeAt(i).toString(16).padStart(2, '0');
  return out;
}

// normTraceID writes a trace ID as 32 lowercase hex digits (search answers
// leave out leading zeros, log lines and exemplars keep them).
export function normTraceID(id) {
  const s = String(id || '').trim().toLowerCase();
  return /^[0-9a-f]{1,32}$/.test(s) ? s.padStart(32, '0') : s;
}

// isTraceID reports whether s can be a trace ID (1–32 hex digits).
export function isTraceID(s) {
  return /^[0-9a-fA-F]{1,32}$/.test(String(s || '').trim());
}

// anyValue turns an OTLP AnyValue (protojson) into a JS value: strings,
// numbers (64-bit integers stay exact as strings of digits), booleans,
// arrays, objects; bytes as hex.
export function anyValue(v) {
  if (!v || typeof v !== 'object') return '';
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return String(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('boolValue' in v) return v.boolValue;
  if ('bytesValue' in v) return b64ToHex(v.bytesValue);
  if ('arrayValue' in v) return ((v.arrayValue && v.arrayValue.values) || []).map(anyValue);
  if ('kvlistValue' in v) return attrsToObject((v.kvlistValue && v.kvlistValue.values) || []);
  return '';
}

// attrsToObject turns a KeyValue list into an object (first key wins).
export function attrsToObject(list) {
  const out = {};
  for (const kv of list || []) if (kv && kv.key !== undefined && !(kv.key in out)) out[kv.key] = anyValue(kv.value);
  return out;
}

// formatAttr writes an attribute value for display.
export function formatAttr(v) {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

const KINDS = {
  SPAN_KIND_INTERNAL: 'internal', SPAN_KIND_SERVER: 'server', SPAN_KIND_CLIENT: 'client',
  SPAN_KIND_PRODUCER: 'producer', SPAN_KIND_CONSUMER: 'consumer',
};
const STATUSES = { STATUS_CODE_OK: 'ok', STATUS_CODE_ERROR: 'error' };

const big = (s) => {
  try {
    return BigInt(s || 0);
  } catch {
    return 0n;
  }
};

// parseTrace flattens a TraceByIDResponse (or a bare Trace, or v1's
// "batches") into spans in waterfall order: each root (no parent, or a
// parent not received) by start time, each span's children after it by
// start time. It returns {traceId, spans, services, startNs, endNs,
// durationNs, errors, partial}; times are BigInt nanoseconds, and each
// span's offsetNs and durationNs are Numbers relative to the trace's start.
export function parseTrace(resp) {
  const tr = (resp && resp.trace) || resp || {};
  const batches = tr.resourceSpans || tr.batches || [];
  const spans = [];
  for (const rs of batches) {
    const resource = attrsToObject(rs.resource && rs.resource.attributes);
    const service = resource['service.name'] ? String(resource['service.name']) : 'unknown_service';
    for (const ss of rs.scopeSpans || rs.instrumentationLibrarySpans || []) {
      const scope = (ss.scope || ss.instrumentationLibrary || {}).name || '';
      for (const s of ss.spans || []) {
        const startNs = big(s.startTimeUnixNano);
        let endNs = big(s.endTimeUnixNano);
        if (endNs < startNs) endNs = startNs;
        const st = s.status || {};
        spans.push({
          id: b64ToHex(s.spanId),
          parentId: b64ToHex(s.parentSpanId),
          traceId: b64ToHex(s.traceId),
          name: s.name || '',
          kind: KINDS[s.kind] || 'unspecified',
          service,
          scope,
          resource,
          attrs: attrsToObject(s.attributes),
          events: (s.events || []).map((e) => ({ name: e.name || '', timeNs: big(e.timeUnixNano), attrs: attrsToObject(e.attributes) })),
          links: (s.links || []).map((l) => ({ traceId: b64ToHex(l.traceId), spanId: b64ToHex(l.spanId), attrs: attrsToObject(l.attributes) })),
          status: STATUSES[st.code] || 'unset',
          statusMessage: st.message || '',
          startNs,
          endNs,
        });
      }
    }
  }
  if (!spans.length) return { traceId: '', spans: [], services: [], startNs: 0n, endNs: 0n, durationNs: 0, errors: 0, partial: !!(resp && resp.status === 'PARTIAL') };
  let startNs = spans[0].startNs;
  let endNs = spans[0].endNs;
  for (const s of spans) {
    if (s.startNs < startNs) startNs = s.startNs;
    if (s.endNs > endNs) endNs = s.endNs;
  }
  for (const s of spans) {
    s.offsetNs = Number(s.startNs - startNs);
    s.durationNs = Number(s.endNs - s.startNs);
    for (const e of s.events) e.offsetNs = Number(e.timeNs - startNs);
  }
  const ordered = orderSpans(spans);
  const svc = new Map();
  let errors = 0;
  for (const s of ordered) {
    const x = svc.get(s.service) || { name: s.service, spans: 0, errors: 0 };
    x.spans++;
    if (s.status === 'error') {
      x.errors++;
      errors++;
    }
    svc.set(s.service, x);
  }
  return {
    traceId: ordered[0].traceId,
    spans: ordered,
    services: [...svc.values()].sort((a, b) => b.spans - a.spans || a.name.localeCompare(b.name)),
    startNs,
    endNs,
    durationNs: Number(endNs - startNs),
    errors,
    partial: !!(resp && resp.status === 'PARTIAL'),
  };
}

// orderSpans returns spans depth-first (see parseTrace), setting depth,
// childCount and orphan (its parent was not received) on each. Bad data
// cannot loop it: a span is placed once, and spans only reachable through
// a cycle are placed as roots.
export function orderSpans(spans) {
  const byId = new Map();
  for (const s of spans) if (s.id && !byId.has(s.id)) byId.set(s.id, s);
  const children = new Map();
  const roots = [];
  for (const s of spans) {
    s.childCount = 0;
    s.orphan = false;
    const p = s.parentId && s.parentId !== s.id ? byId.get(s.parentId) : undefined;
    if (p) {
      if (!children.has(p)) children.set(p, []);
      children.get(p).push(s);
    } else {
      s.orphan = !!s.parentId;
      roots.push(s);
    }
  }
  const byStart = (a, b) => (a.startNs < b.startNs ? -1 : a.startNs > b.startNs ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  for (const c of children.values()) c.sort(byStart);
  roots.sort(byStart);
  const out = [];
  const placed = new Set();
  const place = (root) => {
    const stack = [[root, 0]];
    while (stack.length) {
      const [s, d] = stack.pop();
      if (placed.has(s)) continue;
      placed.add(s);
      s.depth = d;
      out.push(s);
      const c = children.get(s) || [];
      s.childCount = c.length;
      for (let i = c.length - 1; i >= 0; i--) stack.push([c[i], d + 1]);
    }
  };
  for (const r of roots) place(r);
  // Spans in a parent cycle were reached from no root.
  for (const s of spans) {
    if (!placed.has(s)) {
      s.orphan = true;
      place(s);
    }
  }
  return out;
}

// visibleSpans drops the descendants of collapsed spans (a Set of span
// IDs) from an ordered span list.
export function visibleSpans(spans, collapsed) {
  if (!collapsed || !collapsed.size) return spans;
  const out = [];
  let hideBelow = -1;
  for (const s of spans) {
    if (hideBelow >= 0) {
      if (s.depth > hideBelow) continue;
      hideBelow = -1;
    }
    out.push(s);
    if (collapsed.has(s.id) && s.childCount > 0) hideBelow = s.depth;
  }
  return out;
}

// formatNs writes a span duration: 850ns, 12.3µs, 45.6ms, 1.23s, 2m3s.
export function formatNs(ns) {
  ns = Number(ns);
  if (!Number.isFinite(ns) || ns < 0) return '—';
  if (ns < 1e3) return `${Math.round(ns)}ns`;
  if (ns < 1e6) return `${trim3(ns / 1e3)}µs`;
  if (ns < 1e9) return `${trim3(ns / 1e6)}ms`;
  if (ns < 60e9) return `${trim3(ns / 1e9)}s`;
  const s = Math.round(ns / 1e9);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return (h ? `${h}h` : '') + `${m}m${s % 60}s`;
}

function trim3(x) {
  const s = x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
  return s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}

// nsToMsNum converts BigInt nanoseconds to (float) milliseconds.
export function nsToMsNum(ns) {
  return Number(ns / 1000000n) + Number(ns % 1000000n) / 1e6;
}

// Service colours: a fixed palette, picked by a hash of the name, so a
// service keeps its colour across traces and pages.
const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#3d5a80', '#d4a017', '#6a994e', '#7f5539'];

export function serviceColor(name) {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return PALETTE[(h >>> 0) % PALETTE.length];
}

// regexEscape quotes a string for a LogQL/PromQL regular expression.
function regexEscape(s) {
  return String(s).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// traceLogsQuery finds the log lines of a trace: its services' streams,
// lines whose trace_id (structured metadata, or a parsed field) is the
// trace's; with spanId, only the span's lines.
export function traceLogsQuery(services, traceId, spanId) {
  const names = [...new Set(services)].filter(Boolean);
  const sel = !names.length
    ? '{service_name=~".+"}'
    : names.length === 1
      ? `{service_name="${escapeValue(names[0])}"}`
      : `{service_name=~"${escapeValue(names.map(regexEscape).join('|'))}"}`;
  return `${sel} | trace_id="${normTraceID(traceId)}"` + (spanId ? ` | span_id="${spanId}"` : '');
}

// spanMetricsQueries are the span metrics (docs/traces.md) of a span's
// service and name: calls per second by status, and the p90 latency.
export function spanMetricsQueries(span) {
  const m = `service="${escapeValue(span.service)}", span_name="${escapeValue(span.name)}"`;
  return [
    `sum by (status_code) (rate(traces_spanmetrics_calls_total{${m}}[1m]))`,
    `histogram_quantile(0.9, sum by (le) (rate(traces_spanmetrics_latency_bucket{${m}}[5m])))`,
  ];
}

// searchRows turns an /api/search answer into list rows, newest first:
// {traceId, rootService, rootName, startMs, durationMs, spans, errors,
// services: [{name, spans, errors}], matched: [{spanId, name, startMs,
// durationNs, attrs}], matchedCount}.
export function searchRows(resp) {
  const out = [];
  for (const t of (resp && resp.traces) || []) {
    const services = Object.entries(t.serviceStats || {}).map(([name, s]) => ({ name, spans: Number(s.spanCount || 0), errors: Number(s.errorCount || 0) }));
    services.sort((a, b) => b.spans - a.spans || a.name.localeCompare(b.name));
    const matched = [];
    let matchedCount = 0;
    for (const ss of t.spanSets || (t.spanSet ? [t.spanSet] : [])) {
      matchedCount += Number(ss.matched || 0);
      for (const sp of ss.spans || []) {
        matched.push({
          spanId: sp.spanID || '',
          name: sp.name || '',
          startMs: nsToMsNum(big(sp.startTimeUnixNano)),
          durationNs: Number(sp.durationNanos || 0),
          attrs: attrsToObject(sp.attributes),
        });
      }
    }
    const startNs = big(t.startTimeUnixNano);
    out.push({
      traceId: normTraceID(t.traceID),
      rootService: t.rootServiceName || '',
      rootName: t.rootTraceName || '',
      startMs: nsToMsNum(startNs),
      durationMs: Number(t.durationMs || 0),
      spans: services.reduce((n, s) => n + s.spans, 0),
      errors: services.reduce((n, s) => n + s.errors, 0),
      services,
      matched,
      matchedCount,
    });
  }
  out.sort((a, b) => b.startMs - a.startMs);
  return out;
}

// spanWindow is the [from, to] (unix seconds, as URL strings) of the links
// from a span to its logs and metrics: the span widened by pad ms.
export function spanWindow(span, padMs) {
  const start = nsToMsNum(span.startNs);
  const end = nsToMsNum(span.endNs);
  return { from: String(Math.floor((start - padMs) / 1e3)), to: String(Math.ceil((end + padMs) / 1e3)) };
}

// tagCondition writes the TraceQL condition tag = value for a tag of
// /api/v2/search/tags (scope resource, span or intrinsic) and a value of
// its /values answer ({type, value}: strings are quoted, keywords such as
// statuses and kinds, numbers and durations are not).
export function tagCondition(scope, tag, v) {
  const lhs = scope === 'intrinsic' ? tag : traceqlAttr(scope, tag);
  const rhs = !v.type || v.type === 'string' ? traceqlString(v.value) : String(v.value);
  return `${lhs} = ${rhs}`;
}

// tagPath is how the tag-values endpoint names a tag: resource.x, span.x,
// or the intrinsic's name.
export function tagPath(scope, tag) {
  return scope === 'intrinsic' ? tag : `${scope}.${tag}`;
}

// addCondition adds a condition to a TraceQL query: into its spanset
// filter when the query is one filter ({ a } → { a && c }), else as a
// spanset of its own that must also match ((q) && { c }).
export function addCondition(q, cond) {
  const t = String(q || '').trim();
  if (t === '' || /^\{\s*\}$/.test(t)) return `{ ${cond} }`;
  if (/^\{[^{}]*\}$/.test(t)) {
    const inner = t.slice(1, -1).trim();
    return inner.includes('||') ? `{ (${inner}) && ${cond} }` : `{ ${inner} && ${cond} }`;
  }
  return `(${t}) && { ${cond} }`;
}
