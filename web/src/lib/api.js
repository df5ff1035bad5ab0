// The API client: every request the UI makes goes through here, relative
// to the document's base URL (index.html's <base href>, which weft sets to
// its route prefix or external URL path), so the UI works behind a proxy.
// A page that needs a new endpoint adds a method here. With a tenant set
// (lib/tenant.js) every request carries it in X-Scope-OrgID.
import { TENANT_HEADER, getTenant, needsTenant, withTenant } from './tenant.js';

export class APIError extends Error {
  constructor(message, status, type) {
    super(message);
    this.status = status;
    this.type = type || '';
  }
}

// baseURL is the absolute URL API paths are resolved against.
export function baseURL() {
  return typeof document !== 'undefined' ? document.baseURI : 'http://localhost/';
}

// toSeconds writes milliseconds as the API's float seconds.
const sec = (ms) => (ms / 1e3).toFixed(3);
// toNanos writes milliseconds as Loki's integer nanoseconds.
const ns = (ms) => String(Math.round(ms)) + '000000';

function buildURL(path, params) {
  const u = new URL(path, baseURL());
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '') continue;
    for (const x of Array.isArray(v) ? v : [v]) u.searchParams.append(k, String(x));
  }
  return u;
}

async function request(path, params, { signal, headers, text } = {}) {
  let resp;
  try {
    resp = await fetch(buildURL(path, params), { signal, headers: withTenant(headers), credentials: 'same-origin' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new APIError(`${path}: ${e.message}`, 0);
  }
  const body = await resp.text();
  if (needsTenant(resp.status, body)) {
    if (typeof dispatchEvent === 'function') dispatchEvent(new Event('weft-tenant-needed'));
    throw new APIError(`${body.trim()}${getTenant() ? '' : ' — set the tenant in the top bar'}`, resp.status);
  }
  if (text) {
    if (!resp.ok) throw new APIError(body.trim() || resp.statusText, resp.status);
    return body;
  }
  let j;
  try {
    j = JSON.parse(body);
  } catch {
    throw new APIError(body.trim() || `${resp.status} ${resp.statusText}`, resp.status);
  }
  if (!resp.ok || j.status === 'error') throw new APIError(j.error || resp.statusText, resp.status, j.errorType);
  return j.data !== undefined ? j.data : j;
}

// Prometheus API.
export const prom = {
  queryRange: (query, start, end, step, o) =>
    request('api/v1/query_range', { query, start: sec(start), end: sec(end), step: (step / 1e3).toString() }, o),
  query: (query, time, o) => request('api/v1/query', { query, time: sec(time) }, o),
  exemplars: (query, start, end, o) => request('api/v1/query_exemplars', { query, start: sec(start), end: sec(end) }, o),
  series: (match, start, end, o) => request('api/v1/series', { 'match[]': match, start: sec(start), end: sec(end) }, o),
  labelValues: (name, match, start, end, o) =>
    request(`api/v1/label/${encodeURIComponent(name)}/values`, { 'match[]': match, start: start && sec(start), end: end && sec(end) }, o),
  tsdbStatus: (limit, o) => request('api/v1/status/tsdb', { limit }, o),
  buildInfo: (o) => request('api/v1/status/buildinfo', {}, o),
  runtimeInfo: (o) => request('api/v1/status/runtimeinfo', {}, o),
  flags: (o) => request('api/v1/status/flags', {}, o),
  config: (o) => request('api/v1/status/config', {}, o),
  metricsText: (o) => request('metrics', {}, { ...o, text: true }),
};

// Loki API.
export const loki = {
  queryRange: (query, start, end, { limit, direction, step, signal } = {}) =>
    request(
      'loki/api/v1/query_range',
      { query, start: ns(start), end: ns(end), limit, direction, step: step && `${Math.max(1, Math.round(step / 1e3))}s` },
      { signal, headers: { 'X-Loki-Response-Encoding-Flags': 'categorize-labels' } },
    ),
  series: (match, start, end, o) => request('loki/api/v1/series', { 'match[]': match, start: ns(start), end: ns(end) }, o),
  labels: (start, end, o) => request('loki/api/v1/labels', { start: ns(start), end: ns(end) }, o),
  // tailURL is the WebSocket URL of a live tail. A browser cannot put a
  // header on a WebSocket, so the tenant rides in a query parameter of the
  // header's name, which weft takes on the tail's handshake only.
  tailURL: (query, startMs, limit, tenant = getTenant()) => {
    const u = buildURL('loki/api/v1/tail', { query, start: ns(startMs), limit, [TENANT_HEADER]: tenant });
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    return u.toString();
  },
};

// Tempo API (the trace store). Times are unix seconds; a search without
// them covers the last hour.
const secFloor = (ms) => ms && String(Math.floor(ms / 1e3));
const secCeil = (ms) => ms && String(Math.ceil(ms / 1e3));
export const tempo = {
  search: (q, start, end, { limit, spss, signal } = {}) =>
    request('api/search', { q, start: secFloor(start), end: secCeil(end), limit, spss }, { signal }),
  trace: (id, o) => request(`api/v2/traces/${encodeURIComponent(id)}`, {}, { ...o, headers: { Accept: 'application/json' } }),
  tags: (scope, start, end, o) => request('api/v2/search/tags', { scope, start: secFloor(start), end: secCeil(end) }, o),
  tagValues: (tag, q, start, end, o) =>
    request(`api/v2/search/tag/${encodeURIComponent(tag)}/values`, { q, start: secFloor(start), end: secCeil(end), limit: 100 }, o),
};

// Rules and alerts: every group (PromQL and LogQL) with its rules and
// their alerts (/api/v1/rules), and the LogQL groups alone
// (/prometheus/api/v1/rules), which tells the languages apart; logql is
// null when that listing fails. type is '', 'alert' or 'record'.
export const rules = {
  groups: async (type, { signal } = {}) => {
    const [all, logql] = await Promise.all([
      request('api/v1/rules', { type }, { signal }),
      request('prometheus/api/v1/rules', { type }, { signal }).catch((e) => {
        if (e.name === 'AbortError') throw e;
        return null;
      }),
    ]);
    return { all, logql };
  },
};

// weft's own API.
export const weft = {
  cardinality: (match, limit, focusLabel, o) => request('weft/api/v1/cardinality', { 'match[]': match, limit, focusLabel }, o),
  // churn: series created per hour and per-day active / created / ended
  // (default: the last 7 days).
  churn: (match, o) => request('weft/api/v1/cardinality/churn', { 'match[]': match }, o),
  // investigate takes the form fields of lib/investigate.js
  // investigateRequest (selector, query, log_query, alert, time).
  investigate: (fields, o) => request('weft/api/v1/investigate', fields, o),
};

// promBase is the URL codemirror-promql's completion client is given.
export function promBase() {
  return new URL('.', baseURL()).toString().replace(/\/$/, '');
}
