// Turning Prometheus matrices into uPlot's columnar data.

// alignMatrix lays query_range results of one or more queries on the grid
// start, start+step, ..., end (all in ms). results is a list of
// {query, result: [{metric, values: [[sec, "v"], ...]}]}. It returns xs
// (seconds), one ys array per series (null where there is no sample) and a
// meta per series ({metric, query, queryIndex}).
export function alignMatrix(results, start, end, step) {
  const n = Math.floor((end - start) / step) + 1;
  const xs = new Float64Array(n);
  for (let i = 0; i < n; i++) xs[i] = (start + i * step) / 1e3;
  const ys = [];
  const metas = [];
  for (const [queryIndex, { query, result }] of results.entries()) {
    for (const s of result || []) {
      const y = new Array(n).fill(null);
      for (const [t, v] of s.values || []) {
        const i = Math.round((t * 1e3 - start) / step);
        if (i >= 0 && i < n) y[i] = parseSample(v);
      }
      ys.push(y);
      metas.push({ metric: s.metric || {}, query, queryIndex });
    }
  }
  return { xs, ys, metas };
}

// parseSample reads a sample value string, keeping NaN and ±Inf.
export function parseSample(v) {
  if (v === '+Inf' || v === 'Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

// stack returns the running sums of ys (series order), null counting as 0
// in the sum, but staying null where the series itself has no sample.
export function stack(ys) {
  if (!ys.length) return [];
  const n = ys[0].length;
  const acc = new Float64Array(n);
  return ys.map((y) => {
    const out = new Array(n);
    for (let i = 0; i < n; i++) {
      const v = y[i];
      if (v === null || !Number.isFinite(v)) {
        out[i] = null;
      } else {
        acc[i] += v;
        out[i] = acc[i];
      }
    }
    return out;
  });
}

// nearestSeries returns the index of the visible series whose value at idx
// is closest to y, or -1. visible may be undefined (all visible).
export function nearestSeries(ys, idx, y, visible) {
  let best = -1;
  let bestD = Infinity;
  for (let s = 0; s < ys.length; s++) {
    if (visible && !visible[s]) continue;
    const v = ys[s][idx];
    if (v === null || v === undefined || !Number.isFinite(v)) continue;
    const d = Math.abs(v - y);
    if (d < bestD) {
      bestD = d;
      best = s;
    }
  }
  return best;
}

// nearestIndex returns the index of the grid time closest to t (seconds).
export function nearestIndex(xs, t) {
  if (!xs.length) return -1;
  let lo = 0;
  let hi = xs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && Math.abs(xs[lo - 1] - t) <= Math.abs(xs[lo] - t)) return lo - 1;
  return lo;
}

// color returns series i's colour: hues spread by the golden angle, so
// neighbours differ and any count of series gets distinct colours.
export function color(i, alpha = 1) {
  const h = (i * 137.508 + 200) % 360;
  return `hsla(${h.toFixed(1)}, 65%, 48%, ${alpha})`;
}
