// Metrics explore: several PromQL queries on one graph (or table), with
// exemplars, a stacked option, zoom by dragging, and every label a pivot.
// URL: #/metrics?q=<expr>&q=<expr>&from=now-1h&to=now&tab=graph&stacked=1&ex=0
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { prom } from '../lib/api.js';
import { alignMatrix } from '../lib/series.js';
import { autoStep, formatTime } from '../lib/time.js';
import { buildHash } from '../lib/url.js';
import { formatValue } from '../lib/format.js';
import { useAsync, useRange } from '../components/hooks.js';
import { TimeRange } from '../components/TimeRange.js';
import { Editor } from '../components/Editor.js';
import { Graph, exemplarPoints } from '../components/Graph.js';
import { Labels } from '../components/Pivot.js';

// GRAPH_POINTS is how many steps a graph's range is cut into at most.
const GRAPH_POINTS = 300;

export default function MetricsPage({ params, navigate }) {
  const r = useRange(params);
  const queries = params.getAll('q').filter((q) => q.trim() !== '');
  const tab = params.get('tab') === 'table' ? 'table' : 'graph';
  const stacked = params.get('stacked') === '1';
  const showEx = params.get('ex') !== '0';
  const [drafts, setDrafts] = useState(queries.length ? queries : ['']);
  const key = queries.join('\u0000');
  useEffect(() => setDrafts(queries.length ? queries : ['']), [key]);

  const state = { q: queries, from: r.from, to: r.to, refresh: r.refresh, tab: tab === 'table' ? 'table' : '', stacked, ex: showEx ? '' : '0' };
  const go = (changes, push = true) => navigate(buildHash(['metrics'], { ...state, ...changes }), push);
  const run = (list = drafts) => {
    const q = list.filter((x) => x.trim() !== '');
    const h = buildHash(['metrics'], { ...state, q });
    if (h === location.hash) r.reload();
    else navigate(h, true);
  };

  return html`
    <section class="panel" data-testid="metrics-page">
      <${TimeRange} ...${r} error=${r.range.error} onChange=${(c) => go(c)} onReload=${r.reload} />
      <div class="queries">
        ${drafts.map(
          (d, i) => html`<div class="query-row" key=${i}>
            <span class="qtag">#${i + 1}</span>
            <${Editor}
              lang="promql"
              value=${d}
              testid=${'promql-editor-' + i}
              placeholder="PromQL, e.g. DCGM_FI_DEV_GPU_UTIL (Enter runs, Shift+Enter: new line)"
              onChange=${(v) => setDrafts((ds) => ds.map((x, j) => (j === i ? v : x)))}
              onRun=${(v) => run(drafts.map((x, j) => (j === i ? v : x)))}
            />
            ${drafts.length > 1 && html`<button class="link" title="remove this query" onClick=${() => run(drafts.filter((_, j) => j !== i))}>✕</button>`}
          </div>`,
        )}
      </div>
      <div class="toolbar">
        <button data-testid="run" onClick=${() => run()}>Run</button>
        <button class="link" onClick=${() => setDrafts([...drafts, ''])}>+ query</button>
        <span class="tabs">
          <button class=${tab === 'graph' ? 'on' : ''} onClick=${() => go({ tab: '' }, false)}>Graph</button>
          <button class=${tab === 'table' ? 'on' : ''} data-testid="tab-table" onClick=${() => go({ tab: 'table' }, false)}>Table</button>
        </span>
        ${tab === 'graph' &&
        html`<label><input type="checkbox" checked=${stacked} onChange=${(e) => go({ stacked: e.target.checked }, false)} /> stacked</label>
          <label><input type="checkbox" checked=${showEx} onChange=${(e) => go({ ex: e.target.checked ? '' : '0' }, false)} /> exemplars</label>`}
      </div>
      ${queries.length === 0
        ? html`<p class="muted">Type a PromQL query and press Enter. Label values of workload keys (run_id, model, gpu_uuid, …) open their workload page.</p>`
        : r.range.error
          ? null
          : tab === 'graph'
            ? html`<${GraphView} queries=${queries} range=${r.range} tick=${r.tick} from=${r.from} to=${r.to} stacked=${stacked} showEx=${showEx}
                onZoom=${(a, b) => go({ from: String(a), to: String(b) })} />`
            : html`<${TableView} queries=${queries} range=${r.range} tick=${r.tick} from=${r.from} to=${r.to} />`}
    </section>
  `;
}

function GraphView({ queries, range, tick, from, to, stacked, showEx, onZoom }) {
  const { start, end } = range;
  const step = autoStep(end - start, GRAPH_POINTS);
  // Align the grid to the step, so refreshes do not shift the buckets.
  const gs = Math.floor(start / step) * step;
  const st = useAsync(
    async (signal) => {
      // Samples and exemplars in parallel; a failed exemplar query only
      // loses the dots.
      const exsP = showEx ? Promise.all(queries.map((q) => prom.exemplars(q, gs, end, { signal }).then((d) => d || [], () => []))) : Promise.resolve([]);
      const answers = await Promise.all(queries.map((q) => prom.queryRange(q, gs, end, step, { signal }).then((d) => ({ query: q, result: d.result }), (e) => ({ query: q, result: [], error: e }))));
      const exs = await exsP;
      const data = alignMatrix(answers, gs, end, step);
      data.multi = queries.length > 1;
      return { data, errors: answers.filter((a) => a.error), exemplars: exemplarPoints(exs.flat()) };
    },
    [queries.join('\u0000'), gs, end, step, showEx, tick],
  );
  return html`<div>
    ${st.error && html`<div class="error">${String(st.error.message || st.error)}</div>`}
    ${st.data && st.data.errors.map((e) => html`<div class="error" data-testid="query-error">${e.query}: ${e.error.message}</div>`)}
    ${st.loading && !st.data && html`<div class="loading">Querying…</div>`}
    ${st.data && html`<${Graph} data=${st.data.data} stacked=${stacked} exemplars=${st.data.exemplars} from=${from} to=${to} onZoom=${onZoom} />`}
    <div class="muted small">step ${step / 1e3}s · ${formatTime(gs)} → ${formatTime(end)}</div>
  </div>`;
}

function TableView({ queries, range, tick, from, to }) {
  const st = useAsync((signal) => Promise.all(queries.map((q) => prom.query(q, range.end, { signal }).then((d) => ({ q, d }), (e) => ({ q, e })))), [queries.join('\u0000'), range.end, tick]);
  if (st.loading && !st.data) return html`<div class="loading">Querying…</div>`;
  if (st.error) return html`<div class="error">${String(st.error.message)}</div>`;
  return html`<div data-testid="table-view">
    ${st.data.map(
      ({ q, d, e }) => html`<div class="result-table">
        <div class="muted"><code>${q}</code> at ${formatTime(range.end)}</div>
        ${e
          ? html`<div class="error">${e.message}</div>`
          : d.resultType === 'vector'
            ? html`<table class="tbl">
                <thead><tr><th>series</th><th class="num">value</th></tr></thead>
                <tbody>
                  ${d.result.length === 0 && html`<tr><td colspan="2" class="muted">empty result</td></tr>`}
                  ${d.result.map((s) => html`<tr data-testid="table-row"><td><${Labels} metric=${s.metric} params=${{ from, to }} /></td><td class="num">${formatValue(s.value[1])}</td></tr>`)}
                </tbody>
              </table>`
            : html`<div>${d.resultType}: <b>${d.resultType === 'scalar' || d.resultType === 'string' ? d.result[1] : JSON.stringify(d.result)}</b></div>`}
      </div>`,
    )}
  </div>`;
}
