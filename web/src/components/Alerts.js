// Alerts (from lib/alerts.js activeAlerts) and a group's rules, shared by
// the alerts page and the workload page. Each alert shows its state,
// labels (workload keys as pivots), annotations and how long it has been
// active, and links to the query behind it and to the logs and metrics of
// its workload context; each rule its health, last error and evaluation.
import { html } from '../html.js';
import { queryHash, since } from '../lib/alerts.js';
import { alertInvestigateHash } from '../lib/investigate.js';
import { contextOf } from '../lib/context.js';
import { formatValue } from '../lib/format.js';
import { formatDuration, formatTime } from '../lib/time.js';
import { buildHash } from '../lib/url.js';
import { Labels } from './Pivot.js';
import { ContextLinks } from './ContextLinks.js';

// Annotations shown in the row itself; the rest are listed under it.
const HEADLINE = ['summary', 'description', 'message'];

export function AlertList({ alerts, empty = 'No alerts.', testid = 'alert-list', max = 500 }) {
  if (!alerts.length) return html`<p class="muted" data-testid=${testid} data-count="0">${empty}</p>`;
  const now = Date.now();
  return html`<div class="alert-list" data-testid=${testid} data-count=${alerts.length}>
    ${alerts.slice(0, max).map((a) => html`<${AlertRow} a=${a} now=${now} />`)}
    ${alerts.length > max && html`<div class="muted">${alerts.length - max} more alerts not shown</div>`}
  </div>`;
}

function AlertRow({ a, now }) {
  const { alertname, ...rest } = a.labels;
  const ctx = contextOf(a.labels);
  const from = Number.isFinite(a.activeMs) ? String(Math.floor(a.activeMs / 1e3) - 3600) : 'now-1h';
  const params = { from, to: 'now' };
  const other = Object.keys(a.annotations).filter((k) => !HEADLINE.includes(k)).sort();
  return html`<div class="alert-row" data-testid="alert-row" data-alert=${alertname} data-state=${a.state}>
    <div class="alert-head">
      <span class=${'state ' + a.state}>${a.state}</span>
      <b class="alertname">${alertname}</b>
      ${rest.severity && html`<span class=${'sev ' + rest.severity}>${rest.severity}</span>`}
      <span class="muted small" title=${a.activeAt}>active since ${Number.isFinite(a.activeMs) ? formatTime(a.activeMs) : '—'} (${since(a.activeMs, now)})</span>
      ${a.value !== undefined && html`<span class="muted small">value ${formatValue(a.value)}</span>`}
      ${a.via && html`<span class="muted small" title="an alert on one of this workload's hosts, GPUs or pods">via ${a.via}="${a.labels[a.via]}"</span>`}
    </div>
    ${HEADLINE.filter((k) => a.annotations[k]).map((k) => html`<div class=${'annotation ' + k}>${a.annotations[k]}</div>`)}
    <div class="alert-labels"><${Labels} metric=${rest} params=${params} name=${false} /></div>
    <div class="alert-links">
      <a href=${queryHash(a.rule, a.activeMs)} data-link="query" title=${a.rule.query}>${a.rule.lang === 'logql' ? 'LogQL' : 'PromQL'} query</a>
      ${a.state === 'firing' && html`<a href=${alertInvestigateHash(a.labels)} data-link="investigate" title="rank the probable causes of this alert">investigate</a>`}
      <span class="muted small">rule ${a.rule.group} / ${a.rule.name}</span>
      <${ContextLinks} pairs=${ctx} from=${from} to="now" />
    </div>
    ${other.length > 0 && html`<div class="fields">${other.map((k) =>
      /^https?:\/\//.test(a.annotations[k])
        ? html`<a class="lbl" href=${a.annotations[k]} target="_blank" rel="noopener noreferrer">${k}</a>`
        : html`<span class="lbl">${k}="${a.annotations[k]}"</span>`,
    )}</div>`}
  </div>`;
}

export function RuleRows({ rules }) {
  const now = Date.now();
  return html`<table class="tbl rules">
    <colgroup><col class="c-type" /><col /><col class="c-health" /><col class="c-eval" /><col class="c-state" /></colgroup>
    <tbody>
      ${rules.map((r) => {
        const evalMs = r.lastEvaluation ? Date.parse(r.lastEvaluation) : NaN;
        const never = !Number.isFinite(evalMs) || evalMs <= 0;
        return html`<tr data-testid="rule-row" data-rule=${r.name} data-health=${r.health} data-type=${r.type}>
          <td class="small"><span class=${'rule-type ' + r.type}>${r.type === 'alerting' ? 'alert' : 'record'}</span></td>
          <td>
            <b>${r.name}</b>
            ${r.type === 'recording' && html` <a class="small" href=${buildHash(['metrics'], { q: r.name })} title="the recorded series">series</a>`}
            <div><a href=${queryHash(r, NaN)} data-link="query"><code class="expr">${r.query}</code></a></div>
            ${r.duration > 0 && html`<span class="muted small">for ${formatDuration(r.duration * 1e3)} </span>`}
            ${Object.keys(r.labels || {}).length > 0 && html`<span class="muted small">${Object.entries(r.labels).map(([k, v]) => `${k}="${v}"`).join(', ')}</span>`}
          </td>
          <td>
            <span class=${'health ' + r.health}>${r.health}</span>
            ${r.lastError && html`<div class="error inline-block" data-testid="rule-error">${r.lastError}</div>`}
          </td>
          <td class="small" title=${r.lastEvaluation || ''}>${never ? 'not evaluated yet' : html`evaluated ${since(evalMs, now)} ago<br /><span class="muted">in ${formatEvalTime(r.evaluationTime)}</span>`}</td>
          <td class="small">${r.type === 'alerting' && html`<span class=${'state ' + (r.state || 'inactive')}>${r.state || 'inactive'}</span>${r.alerts.length ? ` ${r.alerts.length}` : ''}`}</td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

function formatEvalTime(s) {
  if (!(s >= 0)) return '—';
  return s < 1 ? `${(s * 1e3).toFixed(s < 0.01 ? 2 : 1)} ms` : `${s.toFixed(2)} s`;
}
