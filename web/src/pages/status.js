// Status: build and runtime information, flags, the effective
// configuration, the head's figures and weft's own storage and ingest
// metrics (from /metrics).
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { prom } from '../lib/api.js';
import { parseMetricsText } from '../lib/promtext.js';
import { formatCount, formatValue } from '../lib/format.js';
import { formatTime } from '../lib/time.js';
import { useAsync } from '../components/hooks.js';

export default function StatusPage() {
  const st = useAsync(async (signal) => {
    const [build, runtime, flags, tsdb, text, config] = await Promise.all([
      prom.buildInfo({ signal }),
      prom.runtimeInfo({ signal }),
      prom.flags({ signal }),
      prom.tsdbStatus(1, { signal }),
      prom.metricsText({ signal }),
      prom.config({ signal }).catch((e) => ({ error: e.message })),
    ]);
    return { build, runtime, flags, tsdb, metrics: parseMetricsText(text), config };
  }, []);
  const [filter, setFilter] = useState('weft_');
  if (st.error) return html`<section class="panel"><div class="error">${st.error.message}</div></section>`;
  if (!st.data) return html`<section class="panel"><div class="loading">Loading…</div></section>`;
  const { build, runtime, flags, tsdb, metrics, config } = st.data;
  const head = tsdb.headStats || {};
  // Histogram buckets are left out: their _sum and _count say enough here.
  const shown = metrics.filter((m) => m.name.includes(filter) && !m.name.endsWith('_bucket'));
  return html`<section class="panel" data-testid="status-page">
    <div class="tables">
      <${KV} title="build" testid="buildinfo" obj=${build} />
      <${KV} title="runtime" testid="runtimeinfo" obj=${runtime} />
      <${KV} title="storage" testid="storage" obj=${{
        series: formatCount(head.numSeries || 0),
        'label pairs': formatCount(head.numLabelPairs || 0),
        'open head chunks': formatCount(head.chunkCount || 0),
        'oldest sample': head.minTime > 0 ? formatTime(head.minTime) : '—',
        'newest sample': head.maxTime > 0 ? formatTime(head.maxTime) : '—',
      }} />
    </div>
    <div class="card" data-testid="self-metrics">
      <div class="card-head"><h2>weft's metrics</h2><input aria-label="filter metrics" value=${filter} onInput=${(e) => setFilter(e.target.value)} /><span class="muted">${shown.length} of ${metrics.length} samples from /metrics</span></div>
      <div class="scroll"><table class="tbl">
        <tbody>
          ${shown.slice(0, 500).map(
            (m) => html`<tr><td><code>${m.name}</code>${Object.keys(m.labels).length ? html` <span class="muted">${Object.entries(m.labels).map(([k, v]) => `${k}="${v}"`).join(', ')}</span>` : ''}</td><td class="num">${formatValue(m.value)}</td></tr>`,
          )}
        </tbody>
      </table></div>
    </div>
    <${KV} title="flags" testid="flags" obj=${flags} />
    <div class="card" data-testid="config">
      <details>
        <summary><b>configuration</b> <span class="muted">the effective configuration (defaults, the -config file, the flags; secrets redacted), as a -config file</span></summary>
        ${config.error ? html`<div class="error">${config.error}</div>` : html`<pre class="config">${config.yaml}</pre>`}
      </details>
    </div>
  </section>`;
}

function KV({ title, obj, testid }) {
  const keys = Object.keys(obj || {}).sort();
  return html`<div class="card" data-testid=${testid}>
    <h2>${title}</h2>
    <table class="tbl kv">
      <tbody>${keys.map((k) => html`<tr><th>${k}</th><td><code>${typeof obj[k] === 'object' ? JSON.stringify(obj[k]) : String(obj[k])}</code></td></tr>`)}</tbody>
    </table>
  </div>`;
}
