// The workload page: one run, model, node, GPU or team (any context key).
// Its context (label values on its series and log streams), its pending
// and firing alerts, a GPUs × time heatmap with outliers marked,
// throughput and step-time graphs when the workload has them, its traces,
// its logs, and links to every signal.
// URL: #/workload/<key>/<value>?from=now-1h&to=now&gpu=util
import { html } from '../html.js';
import { loki, prom } from '../lib/api.js';
import { CONTEXT_KEYS, logsHash, metricsHash, selector } from '../lib/context.js';
import { buildHeatmap, markOutliers } from '../lib/heatmap.js';
import { alignMatrix } from '../lib/series.js';
import { flattenStreams } from '../lib/logs.js';
import { autoStep } from '../lib/time.js';
import { buildHash } from '../lib/url.js';
import { formatCount } from '../lib/format.js';
import { useAsync, useRange } from '../components/hooks.js';
import { TimeRange } from '../components/TimeRange.js';
import { Heatmap } from '../components/Heatmap.js';
import { Graph } from '../components/Graph.js';
import { LogLines } from '../components/LogLines.js';
import { LabelValue } from '../components/Pivot.js';
import { ContextLinks } from '../components/ContextLinks.js';
import { WorkloadAlerts, WorkloadTraces, alertsHash } from '../components/WorkloadSignals.js';
import { workloadTraceQL } from '../lib/traces.js';
import { investigateHash } from '../lib/investigate.js';

// The heatmap's signals: the first name the workload has of each is used
// (dcgm-exporter's and weft-agent's names, then OpenTelemetry's).
export const GPU_SIGNALS = [
  { id: 'util', title: 'utilization', names: ['DCGM_FI_DEV_GPU_UTIL', 'hw_gpu_utilization'], unit: '%' },
  { id: 'power', title: 'power', names: ['DCGM_FI_DEV_POWER_USAGE', 'hw_power'], unit: 'W' },
  { id: 'temp', title: 'temperature', names: ['DCGM_FI_DEV_GPU_TEMP', 'hw_gpu_temperature'], unit: '°C' },
  { id: 'mem', title: 'memory used', names: ['DCGM_FI_DEV_FB_USED', 'hw_gpu_memory_usage'], unit: 'MiB' },
  { id: 'nvlink', title: 'NVLink', names: ['DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL'], unit: 'MiB/s' },
  { id: 'smclock', title: 'SM clock', names: ['DCGM_FI_DEV_SM_CLOCK'], unit: 'MHz' },
];

// Names of training progress metrics (step time, throughput), drawn when the
// workload has them.
const PROGRESS_RE = /(step_?time|step_duration|step_seconds|iteration_time|iter_time|throughput|tokens_per_s|samples_per_s|tokens_total|samples_total|tflops|mfu)/i;
// HEATMAP_COLS bounds the heatmap's time buckets; MIN_STEP is the finest
// bucket (a typical scrape interval).
const HEATMAP_COLS = 720;
const MIN_STEP = 15e3;
const MAX_PROGRESS_GRAPHS = 4;

export default function WorkloadPage({ path, params, navigate }) {
  const [key, value] = path;
  const r = useRange(params);
  if (!key || value === undefined) {
    return html`<section class="panel"><p>Open a workload from any label value: a click on <code>run_id="…"</code>, <code>model="…"</code>, <code>gpu_uuid="…"</code>, … anywhere in the UI.</p></section>`;
  }
  const pairs = [[key, value]];
  const sel = selector(pairs);
  const go = (c, push = true) => navigate(buildHash(['workload', key, value], { from: r.from, to: r.to, refresh: r.refresh, gpu: params.get('gpu') || '', ...c }), push);
  return html`
    <section class="panel" data-testid="workload-page" data-key=${key} data-value=${value}>
      <h1 class="workload-title"><span class="muted">${key}</span> = <span data-testid="workload-value">${value}</span></h1>
      <${TimeRange} ...${r} error=${r.range.error} onChange=${(c) => go(c)} onReload=${r.reload} />
      <div class="links-out" data-testid="links-out">
        <a href=${metricsHash(pairs, r.from, r.to)}>metrics</a>
        <a href=${logsHash(pairs, r.from, r.to)}>logs</a>
        <a href=${buildHash(['cardinality'], { match: sel })}>cardinality</a>
        <a href=${buildHash(['traces'], { q: workloadTraceQL(key, value, null), from: r.from, to: r.to })}>traces</a>
        <a href=${alertsHash(key, value)}>alerts</a>
        <a href=${investigateHash({ selector: sel }, r.to)} data-link="investigate">investigate</a>
      </div>
      ${r.range.error ? null : html`<${Body} key=${key + '\u0000' + value} k=${key} v=${value} sel=${sel} r=${r} gpu=${params.get('gpu')} go=${go} />`}
    </section>
  `;
}

function Body({ k, v, sel, r, gpu, go }) {
  const { start, end } = r.range;
  const ctx = useAsync(
    async (signal) => {
      // The heatmap needs the context (which signals exist) before it
      // queries; start the likeliest query now, beside the context lookup.
      const likely = GPU_SIGNALS.find((s) => s.id === gpu) || GPU_SIGNALS[0];
      prefetch(heatmapQuery(likely, likely.names[0], sel, r.range), signal);
      const [series, streams] = await Promise.all([prom.series([sel], start, end, { signal }), loki.series([sel], start, end, { signal }).catch(() => [])]);
      return summarize(series, streams);
    },
    [sel, start, end, r.tick],
  );
  if (ctx.error) return html`<div class="error">${ctx.error.message}</div>`;
  if (!ctx.data) return html`<div class="loading">Finding the workload's series and streams…</div>`;
  const c = ctx.data;
  const signals = GPU_SIGNALS.map((s) => ({ ...s, name: s.names.find((n) => c.metrics.has(n)) })).filter((s) => s.name);
  const chosen = signals.find((s) => s.id === gpu) || signals[0];
  // GPU counters (DCGM's PCIe throughput) are in the heatmap, not progress.
  const progress = [...c.metrics].filter((n) => PROGRESS_RE.test(n) && !n.startsWith('DCGM_')).sort().slice(0, MAX_PROGRESS_GRAPHS);
  const params = { from: r.from, to: r.to };
  return html`
    <${Context} c=${c} k=${k} params=${params} />
    <${WorkloadAlerts} k=${k} v=${v} context=${c.values} tick=${r.tick} />
    <div class="card">
      <div class="card-head">
        <h2>GPUs × time</h2>
        <span class="tabs">
          ${signals.map((s) => html`<button class=${s === chosen ? 'on' : ''} data-signal=${s.id} onClick=${() => go({ gpu: s.id }, false)}>${s.title}</button>`)}
        </span>
        <${ContextLinks} pairs=${[[k, v]]} from=${r.from} to=${r.to} workload=${false} />
      </div>
      ${chosen ? html`<${GPUHeatmap} key=${chosen.id} signal=${chosen} sel=${sel} r=${r} params=${params} />` : html`<p class="muted">No GPU metrics (DCGM or OpenTelemetry hardware names) for ${sel} in this range.</p>`}
    </div>
    ${progress.map(
      (name) => html`<div class="card"><${Progress} name=${name} sel=${sel} r=${r} /></div>`,
    )}
    <${WorkloadTraces} k=${k} v=${v} r=${r} />
    <div class="card">
      <div class="card-head"><h2>Logs</h2><span class="muted">${c.streams.length} streams</span><a href=${logsHash([[k, v]], r.from, r.to)}>open in logs explore</a></div>
      ${c.streams.length ? html`<${WorkloadLogs} sel=${sel} r=${r} params=${params} />` : html`<p class="muted">No log streams with ${sel} in this range.</p>`}
    </div>
  `;
}

// summarize collects what a workload's series and streams say about it.
export function summarize(series, streams) {
  const metrics = new Set();
  const values = new Map();
  const add = (ls) => {
    for (const [n, val] of Object.entries(ls)) {
      if (n === '__name__') continue;
      if (!values.has(n)) values.set(n, new Set());
      values.get(n).add(val);
    }
  };
  for (const s of series || []) {
    if (s.__name__) metrics.add(s.__name__);
    add(s);
  }
  for (const s of streams || []) add(s);
  return { metrics, values, series: series || [], streams: streams || [] };
}

function Context({ c, k, params }) {
  const ctxKeys = CONTEXT_KEYS.filter((n) => n !== k && c.values.has(n));
  const others = [...c.values.keys()].filter((n) => !CONTEXT_KEYS.includes(n)).sort();
  return html`<div class="card" data-testid="workload-context">
    <div class="card-head"><h2>Context</h2><span class="muted">${formatCount(c.series.length)} series of ${c.metrics.size} metrics · ${c.streams.length} log streams</span></div>
    <div class="context-grid">
      ${ctxKeys.map((n) => {
        const vals = [...c.values.get(n)].sort(naturalCompare);
        return html`<div class="ctx-key"><span class="muted">${n}</span>
          ${vals.slice(0, 24).map((val) => html`<${LabelValue} name=${n} value=${val} params=${params} short=${n === 'UUID' || n === 'gpu_uuid' ? 16 : 0} />`)}
          ${vals.length > 24 && html`<span class="muted">+${vals.length - 24} more</span>`}
        </div>`;
      })}
      ${!ctxKeys.length && html`<span class="muted">no other workload labels on this workload's signals</span>`}
    </div>
    ${others.length > 0 && html`<details><summary>other labels (${others.length})</summary>
      <div class="context-grid">${others.map((n) => html`<div class="ctx-key"><span class="muted">${n}</span> ${c.values.get(n).size} values</div>`)}</div>
    </details>`}
  </div>`;
}

function naturalCompare(a, b) {
  return a.localeCompare(b, undefined, { numeric: true });
}

// heatmapQuery is the heatmap's query_range request for a signal.
function heatmapQuery(signal, name, sel, range) {
  const step = autoStep(range.end - range.start, HEATMAP_COLS, MIN_STEP);
  const gs = Math.floor(range.start / step) * step;
  return { q: `avg_over_time(${name || signal.name}${sel}[${step / 1e3}s])`, gs, end: range.end, step };
}

// prefetched holds at most one request started before its component
// mounts, keyed by its parameters.
let prefetched = null;

function prefetch(h, signal) {
  const key = `${h.q}\u0000${h.gs}\u0000${h.end}\u0000${h.step}`;
  prefetched = { key, p: prom.queryRange(h.q, h.gs, h.end, h.step, { signal }) };
  prefetched.p.catch(() => {}); // a failure is reported by the component's own request
}

function takePrefetched(h) {
  const key = `${h.q}\u0000${h.gs}\u0000${h.end}\u0000${h.step}`;
  if (!prefetched || prefetched.key !== key) return null;
  const p = prefetched.p;
  prefetched = null;
  return p;
}

function GPUHeatmap({ signal, sel, r, params }) {
  const h = heatmapQuery(signal, signal.name, sel, r.range);
  const { q, gs, end, step } = h;
  const st = useAsync(
    async (sg) => {
      const d = await (takePrefetched(h) || prom.queryRange(q, gs, end, step, { signal: sg })).catch(() => prom.queryRange(q, gs, end, step, { signal: sg }));
      const hm = buildHeatmap(d.result, gs, end, step);
      return { hm, outliers: markOutliers(hm) };
    },
    [q, gs, end, step, r.tick],
  );
  if (st.error) return html`<div class="error">${st.error.message}</div>`;
  if (!st.data) return html`<div class="loading">Reading ${signal.name}…</div>`;
  const { hm, outliers } = st.data;
  if (!hm.rows.length) return html`<p class="muted">No ${signal.name} samples in this range.</p>`;
  return html`<div>
    <div class="outlier-summary" data-testid="outlier-summary">
      ${outliers.marked.length === 0
        ? html`<span class="ok">No outlier GPU: every GPU within ${outliers.threshold} robust deviations of the median in most buckets.</span>`
        : outliers.marked.map(
            (m) => html`<span class="outlier-item" data-gpu=${hm.rows[m.row].id.label}>
              ${hm.rows[m.row].id.label}: ${m.direction} ${signal.title} in ${Math.round(m.fraction * 100)}% of buckets
            </span>`,
          )}
    </div>
    <${Heatmap} hm=${hm} outliers=${outliers} unit=${signal.unit} params=${params} />
    <div class="muted small"><code>${q}</code> · ${hm.rows.length} GPUs × ${hm.cols} buckets of ${step / 1e3}s · <a href=${buildHash(['metrics'], { q, from: r.from, to: r.to })}>open in metrics explore</a></div>
  </div>`;
}

function Progress({ name, sel, r }) {
  const { start, end } = r.range;
  const step = autoStep(end - start, 300, MIN_STEP);
  const gs = Math.floor(start / step) * step;
  const counter = /_total$/.test(name);
  const inner = name + sel;
  const q = counter ? `sum by (run_id, rank) (rate(${inner}[${Math.max(60, (2 * step) / 1e3)}s]))` : inner;
  const st = useAsync(async (signal) => {
    const d = await prom.queryRange(q, gs, end, step, { signal });
    return alignMatrix([{ query: q, result: d.result }], gs, end, step);
  }, [q, gs, end, step, r.tick]);
  return html`<div>
    <div class="card-head"><h2>${name}</h2><a href=${buildHash(['metrics'], { q, from: r.from, to: r.to })}>open in metrics explore</a></div>
    ${st.error ? html`<div class="error">${st.error.message}</div>` : st.data ? html`<${Graph} data=${st.data} from=${r.from} to=${r.to} height=${200} testid=${'progress-' + name} />` : html`<div class="loading">…</div>`}
  </div>`;
}

function WorkloadLogs({ sel, r, params }) {
  const st = useAsync(async (signal) => {
    const d = await loki.queryRange(sel, r.range.start, r.range.end, { limit: 100, direction: 'backward', signal });
    return flattenStreams(d.result);
  }, [sel, r.range.start, r.range.end, r.tick]);
  if (st.error) return html`<div class="error">${st.error.message}</div>`;
  if (!st.data) return html`<div class="loading">Reading lines…</div>`;
  return html`<div class="scroll"><${LogLines} entries=${st.data} params=${params} max=${100} testid="workload-logs" /></div>`;
}


