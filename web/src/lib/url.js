// URL state: every page keeps what it shows in the location hash, so a URL
// is a shareable view: "#/metrics?q=up&from=now-1h&to=now".

// parseHash splits "#/a/b?x=1&x=2" into path segments (decoded) and params.
export function parseHash(hash) {
  let h = hash || '';
  if (h.startsWith('#')) h = h.slice(1);
  const qi = h.indexOf('?');
  const pathPart = qi < 0 ? h : h.slice(0, qi);
  const query = qi < 0 ? '' : h.slice(qi + 1);
  const path = pathPart.split('/').filter((s) => s !== '').map(safeDecode);
  return { path, params: new URLSearchParams(query) };
}

function safeDecode(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

// buildHash writes path segments and params (an object whose values are a
// string, an array of strings, or empty to drop; or URLSearchParams) back
// into a hash. Object key order is kept, so URLs are stable.
export function buildHash(path, params) {
  const segs = path.map((s) => encodeURIComponent(s)).join('/');
  const qs = toSearch(params).toString();
  return '#/' + segs + (qs ? '?' + qs : '');
}

function toSearch(params) {
  if (params instanceof URLSearchParams) return params;
  const out = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    if (Array.isArray(v)) {
      for (const x of v) out.append(k, String(x));
    } else {
      out.append(k, v === true ? '1' : String(v));
    }
  }
  return out;
}

// withParams returns hash with some params changed: a value of null or
// undefined deletes the key, an array replaces every value of it.
export function withParams(hash, changes) {
  const { path, params } = parseHash(hash);
  for (const [k, v] of Object.entries(changes)) {
    params.delete(k);
    if (v === undefined || v === null || v === '' || v === false) continue;
    for (const x of Array.isArray(v) ? v : [v]) params.append(k, x === true ? '1' : String(x));
  }
  return buildHash(path, params);
}

// rangeParams reads the range state shared by every page, with defaults.
export function rangeParams(params, defaults = { from: 'now-1h', to: 'now' }) {
  return {
    from: params.get('from') || defaults.from,
    to: params.get('to') || defaults.to,
    refresh: params.get('refresh') || '',
  };
}
