// The workload page's alerts and traces: the pending and firing alerts of
// the workload (a label of its key equals its value) and of its hosts,
// GPUs and pods; and its traces in the page's range (trace resources whose
// workload-context attribute is its value).
import { html } from '../html.js';
import { rules, tempo } from '../lib/api.js';
import { activeAlerts, ruleGroups, workloadAlerts } from '../lib/alerts.js';
import { escapeValue } from '../lib/context.js';
import { aliasesOf, searchRows, workloadTraceQL } from '../lib/traces.js';
import { buildHash } from '../lib/url.js';
import { useAsync } from './hooks.js';
import { AlertList } from './Alerts.js';
import { TraceList } from './TraceList.js';

const TRACE_LIMIT = 20;

// alertsHash is the alerts page filtered to key="value".
export function alertsHash(key, value) {
  return buildHash(['alerts'], { match: `{${key}="${escapeValue(value)}"}` });
}

export function WorkloadAlerts({ k, v, context, tick }) {
  const st = useAsync(
    async (signal) => {
      const { all, logql } = await rules.groups('alert', { signal });
      return workloadAlerts(activeAlerts(ruleGroups(all, logql)), k, v, context);
    },
    [k, v, context, tick],
  );
  const head = (extra) => html`<div class="card-head"><h2>Alerts</h2>${extra}<a href=${alertsHash(k, v)}>open in alerts</a></div>`;
  if (st.error) return html`<div class="card" data-testid="workload-alerts">${head(null)}<div class="error">${st.error.message}</div></div>`;
  if (!st.data) return html`<div class="card" data-testid="workload-alerts">${head(null)}<div class="loading">Reading alerts…</div></div>`;
  const { direct, related } = st.data;
  const firing = direct.filter((a) => a.state === 'firing').length;
  // Nothing to show: one line, so the heatmap stays near the top.
  if (!direct.length && !related.length) {
    return html`<div class="card compact" data-testid="workload-alerts" data-firing="0" data-count="0" data-related="0">
      ${head(html`<span class="muted">no alert with ${k}="${v}", or on its hosts, GPUs and pods, is pending or firing</span>`)}
    </div>`;
  }
  return html`<div class="card" data-testid="workload-alerts" data-firing=${firing} data-count=${direct.length} data-related=${related.length}>
    ${head(html`<span class=${firing ? 'err-count' : 'muted'}>${firing} firing · ${direct.length - firing} pending</span>`)}
    <${AlertList} alerts=${direct} testid="workload-alert-list" empty=${`No alert with ${k}="${v}" is pending or firing.`} />
    ${related.length > 0 &&
    html`<h2 class="sub">On its hosts, GPUs and pods <span class="muted">(${related.length})</span></h2>
      <${AlertList} alerts=${related} testid="related-alert-list" />`}
  </div>`;
}

export function WorkloadTraces({ k, v, r }) {
  const { start, end } = r.range;
  const st = useAsync(
    async (signal) => {
      const tags = await tempo.tags('resource', start, end, { signal });
      const res = ((tags.scopes || []).find((s) => s.name === 'resource') || {}).tags || [];
      const q = workloadTraceQL(k, v, res);
      if (!q) return { q, rows: [] };
      return { q, rows: searchRows(await tempo.search(q, start, end, { limit: TRACE_LIMIT, spss: 3, signal })) };
    },
    [k, v, start, end, r.tick],
  );
  const d = st.data;
  return html`<div class="card" data-testid="workload-traces">
    <div class="card-head">
      <h2>Traces</h2>
      ${d && d.q && html`<code class="muted small">${d.q}</code><a href=${buildHash(['traces'], { q: d.q, from: r.from, to: r.to })}>open in traces search</a>`}
    </div>
    ${st.error
      ? html`<div class="error">${st.error.message}</div>`
      : !d
        ? html`<div class="loading">Searching traces…</div>`
        : !d.q
          ? html`<p class="muted" data-testid="no-trace-context">No trace resource in this range carries ${k} (as ${aliasesOf(k).join(', ')}).</p>`
          : html`<${TraceList} rows=${d.rows} limit=${TRACE_LIMIT} testid="workload-trace-list" />`}
  </div>`;
}
