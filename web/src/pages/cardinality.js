// Cardinality explorer: top metric names, label names and label pairs by
// series, for the whole store (/api/v1/status/tsdb, the last day) or for
// the series of a selector (/weft/api/v1/cardinality), and the values of a
// focus label (which run, which team has the most series); below them the
// churn of the last 7 days (/weft/api/v1/cardinality/churn): series
// created per hour, and per day the series active, created and ended.
// URL: #/cardinality?match={team="vision"}&limit=10&focus=run_id
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { prom, weft } from '../lib/api.js';
import { CONTEXT_KEYS, escapeValue, isContextKey } from '../lib/context.js';
import { formatBytes, formatCount } from '../lib/format.js';
import { churnSummary } from '../lib/churn.js';
import { formatTime } from '../lib/time.js';
import { buildHash } from '../lib/url.js';
import { useAsync } from '../components/hooks.js';
import { LabelValue } from '../components/Pivot.js';

const LIMITS = [10, 20, 50, 100];

export default function CardinalityPage({ params, navigate }) {
  const match = params.get('match') || '';
  const limit = Number(params.get('limit')) || 10;
  const focus = params.get('focus') || '';
  const [draft, setDraft] = useState(match);
  useEffect(() => setDraft(match), [match]);
  const go = (c) => navigate(buildHash(['cardinality'], { match, limit: limit === 10 ? '' : limit, focus, ...c }), true);
  const st = useAsync(
    async (signal) => (match || focus ? weft.cardinality(match ? [match] : [], limit, focus, { signal }) : prom.tsdbStatus(limit, { signal })),
    [match, limit, focus],
  );
  return html`<section class="panel" data-testid="cardinality-page">
    <form class="toolbar" onSubmit=${(e) => (e.preventDefault(), go({ match: draft.trim() }))}>
      <input class="wide" aria-label="selector" placeholder='series selector to drill into, e.g. {run_id="r42"} (empty: the whole store)' value=${draft} onInput=${(e) => setDraft(e.target.value)} />
      <button type="submit">Show</button>
      <label>top <select value=${limit} onChange=${(e) => go({ limit: e.target.value })}>${LIMITS.map((n) => html`<option value=${n}>${n}</option>`)}</select></label>
      <label>focus label <select value=${focus} onChange=${(e) => go({ focus: e.target.value })}>
        <option value="">none</option>${CONTEXT_KEYS.map((k) => html`<option value=${k}>${k}</option>`)}</select></label>
    </form>
    ${st.error && html`<div class="error">${st.error.message}</div>`}
    ${st.loading && !st.data && html`<div class="loading">Counting…</div>`}
    ${st.data && html`<${Report} d=${st.data} match=${match} go=${go} focus=${focus} />`}
    <${Churn} match=${match} />
  </section>`;
}

function Churn({ match }) {
  const st = useAsync((signal) => weft.churn(match ? [match] : [], { signal }), [match]);
  if (st.error) return html`<div class="card" data-testid="churn"><h2>churn</h2><div class="error">${st.error.message}</div></div>`;
  if (!st.data) return null;
  const c = churnSummary(st.data);
  return html`<div class="card" data-testid="churn">
    <h2>churn, last 7 days</h2>
    <div class="stats-line" data-testid="churn-totals">
      <b>${formatCount(c.total)}</b> series created
      ${c.peak && html` · busiest hour ${formatTime(c.peak.start)} with <b>${formatCount(c.peak.created)}</b>`}
    </div>
    <div class="churn-bars" role="img" aria-label="series created per hour">
      ${c.hours.map(
        (h) => html`<span class="churn-bar" data-testid="churn-hour" data-created=${h.created}
          title=${`${formatTime(h.start)}: ${h.created} created`} style=${{ height: `${Math.max(h.height * 100, h.created ? 4 : 0)}%` }}></span>`,
      )}
    </div>
    <table class="tbl">
      <thead><tr><th>day from</th><th class="num">active</th><th class="num">created</th><th class="num">ended</th></tr></thead>
      <tbody>
        ${c.days.map(
          (d) => html`<tr data-testid="churn-day">
            <td>${formatTime(d.start)}</td>
            <td class="num">${formatCount(d.active)}</td>
            <td class="num">${d.created == null ? html`<span class="muted" title="older than the index's creation record">?</span>` : formatCount(d.created)}</td>
            <td class="num">${d.ended == null ? html`<span class="muted" title="the newest day: its series may go on">–</span>` : formatCount(d.ended)}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function Report({ d, match, go, focus }) {
  const head = d.headStats || {};
  const total = head.numSeries || 0;
  const drill = (k, v) => {
    const m = `${k}="${escapeValue(v)}"`;
    const next = match ? match.replace(/\}\s*$/, `, ${m}}`) : `{${m}}`;
    return buildHash(['cardinality'], { match: next, focus });
  };
  const pair = (s) => {
    const i = s.name.indexOf('=');
    return [s.name.slice(0, i), s.name.slice(i + 1)];
  };
  return html`<div>
    <div class="stats-line" data-testid="cardinality-totals">
      <b>${formatCount(total)}</b> series · <b>${formatCount(head.numLabelPairs || 0)}</b> label pairs
      ${head.minTime > 0 && html` · samples ${formatTime(head.minTime)} → ${formatTime(head.maxTime)}`}
      ${match ? html` · selector <code>${match}</code> <a href=${buildHash(['cardinality'], {})}>whole store</a>` : html` · whole store, last day`}
      ${d.truncated && html` · <span class="error inline">counted the first ${formatCount(total)} series only</span>`}
    </div>
    ${focus && d.seriesCountByFocusLabelValue &&
    html`<${Table} title=${`series by ${focus}`} rows=${d.seriesCountByFocusLabelValue} total=${total} testid="focus"
      cell=${(s) => html`<${LabelValue} name=${focus} value=${s.name} /> <a class="small" href=${drill(focus, s.name)}>drill down</a>`} />`}
    <div class="tables">
      <${Table} title="series by metric name" rows=${d.seriesCountByMetricName} total=${total} testid="metric-names"
        cell=${(s) => html`<a href=${drill('__name__', s.name)} title="drill down">${s.name}</a>`} />
      <${Table} title="values by label name" rows=${d.labelValueCountByLabelName} testid="label-names"
        cell=${(s) => (isContextKey(s.name) ? html`<a href=${buildHash(['cardinality'], { match, focus: s.name })} title="focus on this label">${s.name}</a>` : s.name)} />
      <${Table} title="series by label pair" rows=${d.seriesCountByLabelValuePair} total=${total} testid="label-pairs"
        cell=${(s) => {
          const [k, v] = pair(s);
          return html`<${LabelValue} name=${k} value=${v} /> <a class="small" href=${drill(k, v)}>drill down</a>`;
        }} />
      <${Table} title="label bytes by name" rows=${d.memoryInBytesByLabelName} fmt=${formatBytes} testid="label-bytes" cell=${(s) => s.name} />
    </div>
  </div>`;
}

function Table({ title, rows, total, cell, fmt = formatCount, testid }) {
  const max = Math.max(1, ...(rows || []).map((r) => r.value));
  return html`<div class="card" data-testid=${testid}>
    <h2>${title}</h2>
    <table class="tbl">
      <tbody>
        ${(rows || []).length === 0 && html`<tr><td class="muted">none</td></tr>`}
        ${(rows || []).map(
          (r) => html`<tr data-testid="card-row">
            <td>${cell(r)}</td>
            <td class="num">${fmt(r.value)}${total ? html` <span class="muted">${((100 * r.value) / total).toFixed(1)}%</span>` : ''}</td>
            <td class="bar-cell"><span class="bar" style=${{ width: `${(100 * r.value) / max}%` }}></span></td>
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
