// The workload heatmap: one row per GPU, one column per time bucket, and
// the outlier marks. Outliers are robust z-scores across GPUs per bucket
// (median and MAD), so one bad GPU cannot hide itself by moving the mean.
// Computed in the browser until the investigation API answers it.

// Label names that identify the host and the GPU of a series, in order of
// preference (dcgm-exporter, weft-agent, OpenTelemetry, Kubernetes).
const HOST_KEYS = ['Hostname', 'host', 'node', 'instance'];
const GPU_KEYS = ['gpu', 'gpu_index', 'minor_number', 'device'];
const UUID_KEYS = ['UUID', 'gpu_uuid', 'hw_id'];

function first(metric, keys) {
  for (const k of keys) if (metric[k] !== undefined && metric[k] !== '') return [k, metric[k]];
  return [null, ''];
}

// gpuIdentity names the GPU a series is about: its host, index and UUID
// (each with the label it came from), a stable key and a short label.
export function gpuIdentity(metric) {
  const [hostKey, host] = first(metric, HOST_KEYS);
  const [gpuKey, gpu] = first(metric, GPU_KEYS);
  const [uuidKey, uuid] = first(metric, UUID_KEYS);
  const rank = metric.rank || '';
  const key = [host, gpu, uuid, uuid || gpu ? '' : rank].join('\u0000');
  let label = host || '';
  if (gpu !== '') label += (label ? ' ' : '') + 'gpu ' + gpu;
  else if (uuid) label += (label ? ' ' : '') + uuid.slice(0, 12);
  else if (rank) label += (label ? ' ' : '') + 'rank ' + rank;
  return { key, label: label || '(unlabelled)', host, hostKey, gpu, gpuKey, uuid, uuidKey, rank };
}

// compareIdentity orders GPUs by host, then numeric index, then UUID.
export function compareIdentity(a, b) {
  if (a.host !== b.host) return a.host < b.host ? -1 : 1;
  const ga = Number(a.gpu);
  const gb = Number(b.gpu);
  if (a.gpu !== b.gpu) {
    if (Number.isFinite(ga) && Number.isFinite(gb) && a.gpu !== '' && b.gpu !== '') return ga - gb;
    return a.gpu < b.gpu ? -1 : 1;
  }
  return a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0;
}

// buildHeatmap turns a query_range result into rows × cols values (NaN where
// a GPU has no sample), on the grid start..end by step (ms). Several series
// of one GPU (differing in other labels) are merged by their maximum.
export function buildHeatmap(result, start, end, step) {
  const cols = Math.floor((end - start) / step) + 1;
  const byKey = new Map();
  for (const s of result || []) {
    const id = gpuIdentity(s.metric || {});
    let row = byKey.get(id.key);
    if (!row) {
      row = { id, metric: s.metric || {}, values: new Float64Array(cols).fill(NaN) };
      byKey.set(id.key, row);
    }
    for (const [t, v] of s.values || []) {
      const i = Math.round((t * 1e3 - start) / step);
      if (i < 0 || i >= cols) continue;
      const x = Number(v);
      if (!Number.isFinite(x)) continue;
      if (Number.isNaN(row.values[i]) || x > row.values[i]) row.values[i] = x;
    }
  }
  const rows = [...byKey.values()].sort((a, b) => compareIdentity(a.id, b.id));
  const values = new Float64Array(rows.length * cols);
  let min = Infinity;
  let max = -Infinity;
  rows.forEach((r, ri) => {
    values.set(r.values, ri * cols);
    for (const x of r.values) {
      if (Number.isNaN(x)) continue;
      if (x < min) min = x;
      if (x > max) max = x;
    }
  });
  if (min > max) {
    min = 0;
    max = 0;
  }
  return { rows: rows.map((r) => ({ id: r.id, metric: r.metric })), cols, start, step, values, min, max };
}

// median of a numeric array (it is sorted in place); NaN when empty.
export function median(a) {
  if (!a.length) return NaN;
  a.sort((x, y) => x - y);
  const m = a.length >> 1;
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2;
}

// The scale factor that makes the MAD estimate a normal distribution's
// standard deviation (1 / Φ⁻¹(3/4)).
const MAD_SCALE = 1.4826;

// Defaults of the outlier marks. A cell is an outlier when its robust
// z-score (|x − median| / (1.4826 · MAD)) is at least zThreshold; a GPU is
// marked when at least rowFraction of its buckets are. minRows GPUs must
// report in a bucket for it to be judged. The MAD is floored at
// madFloorFrac of the bucket's |median| (and at the range's 0.1 %), so
// identical GPUs with tiny jitter are not all "outliers".
export const OUTLIER_DEFAULTS = { zThreshold: 3.5, rowFraction: 0.2, minRows: 3, madFloorFrac: 0.02 };

// markOutliers scores every cell of a heatmap. It returns per-cell robust
// z-scores (NaN where missing or unjudged), each column's median, and the
// marked rows with the fraction of their buckets that are outliers and the
// direction of the deviation ("low" or "high").
export function markOutliers(hm, options = {}) {
  const o = { ...OUTLIER_DEFAULTS, ...options };
  const { rows, cols, values } = hm;
  const n = rows.length;
  const z = new Float64Array(n * cols).fill(NaN);
  const colMedian = new Float64Array(cols).fill(NaN);
  const rangeFloor = Math.max(1e-9, (hm.max - hm.min) * 1e-3);
  const buf = [];
  for (let c = 0; c < cols; c++) {
    buf.length = 0;
    for (let r = 0; r < n; r++) {
      const x = values[r * cols + c];
      if (!Number.isNaN(x)) buf.push(x);
    }
    if (buf.length < o.minRows) continue;
    const med = median(buf);
    for (let i = 0; i < buf.length; i++) buf[i] = Math.abs(buf[i] - med);
    const mad = median(buf);
    const scale = Math.max(MAD_SCALE * mad, o.madFloorFrac * Math.abs(med), rangeFloor);
    colMedian[c] = med;
    for (let r = 0; r < n; r++) {
      const x = values[r * cols + c];
      if (!Number.isNaN(x)) z[r * cols + c] = (x - med) / scale;
    }
  }
  const marked = [];
  for (let r = 0; r < n; r++) {
    let judged = 0;
    let out = 0;
    let sum = 0;
    for (let c = 0; c < cols; c++) {
      const s = z[r * cols + c];
      if (Number.isNaN(s)) continue;
      judged++;
      if (Math.abs(s) >= o.zThreshold) {
        out++;
        sum += s;
      }
    }
    if (judged && out / judged >= o.rowFraction) {
      marked.push({ row: r, fraction: out / judged, direction: sum < 0 ? 'low' : 'high', meanZ: sum / out });
    }
  }
  marked.sort((a, b) => b.fraction - a.fraction);
  return { z, colMedian, marked, threshold: o.zThreshold };
}

// Colour stops of the heatmap ramp (dark blue → teal → yellow, in the
// manner of viridis), as [r, g, b].
const RAMP = [
  [68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37],
];

// rampColor maps t in [0, 1] onto the ramp.
export function rampColor(t) {
  if (!Number.isFinite(t)) t = 0;
  t = Math.min(1, Math.max(0, t));
  const x = t * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const f = x - i;
  const a = RAMP[i];
  const b = RAMP[i + 1];
  return [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * f));
}
