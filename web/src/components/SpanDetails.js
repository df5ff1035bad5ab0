// One span's details under its waterfall row: service, kind, status,
// times and IDs; links to its logs (its trace_id and span_id), the whole
// trace's logs, its span metrics, and the logs, metrics and workload page
// of its resource's workload context; its attributes, resource attributes
// (context keys as pivots), events and links.
import { html } from '../html.js';
import { formatAttr, formatNs, nsToMsNum, resourceContext, spanMetricsQueries, spanWindow, traceLogsQuery } from '../lib/traces.js';
import { formatTime } from '../lib/time.js';
import { buildHash } from '../lib/url.js';
import { LabelValue } from './Pivot.js';
import { ContextLinks } from './ContextLinks.js';

// Windows of the links: logs around the span (Grafana's trace-to-logs
// default is ±5 minutes), metrics wider so rates have points around it.
const LOGS_PAD_MS = 5 * 60e3;
const METRICS_PAD_MS = 30 * 60e3;

export function SpanDetails({ span, trace }) {
  const lw = spanWindow(span, LOGS_PAD_MS);
  const mw = spanWindow(span, METRICS_PAD_MS);
  const tw = spanWindow({ startNs: trace.startNs, endNs: trace.endNs }, LOGS_PAD_MS);
  const ctx = resourceContext(span.resource);
  const services = trace.services.map((s) => s.name);
  const params = { from: mw.from, to: mw.to };
  return html`<div class="span-details" data-testid="span-details" data-span=${span.id}>
    <div class="span-facts">
      <span><span class="muted">service</span> <b>${span.service}</b></span>
      <span><span class="muted">kind</span> ${span.kind}</span>
      <span><span class="muted">status</span> <span class=${span.status === 'error' ? 'err-count' : ''} data-testid="span-status">${span.status}</span>${span.statusMessage && html`: ${span.statusMessage}`}</span>
      <span><span class="muted">duration</span> ${formatNs(span.durationNs)}</span>
      <span><span class="muted">start</span> ${formatTime(nsToMsNum(span.startNs), true)} (+${formatNs(span.offsetNs)})</span>
      <span><span class="muted">span</span> <code>${span.id}</code></span>
      ${span.parentId && html`<span><span class="muted">parent</span> <code>${span.parentId}</code></span>`}
      ${span.scope && html`<span><span class="muted">scope</span> ${span.scope}</span>`}
    </div>
    <div class="span-links" data-testid="span-links">
      <a href=${buildHash(['logs'], { q: traceLogsQuery([span.service], trace.traceId, span.id), ...lw })} data-link="span-logs">logs of this span</a>
      <a href=${buildHash(['logs'], { q: traceLogsQuery(services, trace.traceId), ...tw })} data-link="trace-logs">logs of this trace</a>
      <a href=${buildHash(['metrics'], { q: spanMetricsQueries(span), ...mw })} data-link="span-metrics">span metrics (rate, p90)</a>
      <${ContextLinks} pairs=${ctx} from=${lw.from} to=${lw.to} />
    </div>
    ${ctx.length > 0 && html`<div class="fields" data-testid="span-context"><span class="muted">context</span>
      ${ctx.map(([k, v]) => html`<${LabelValue} name=${k} value=${v} params=${params} />`)}</div>`}
    <${Attrs} title="span attributes" obj=${span.attrs} testid="span-attrs" />
    <${Attrs} title="resource" obj=${span.resource} testid="resource-attrs" />
    ${span.events.length > 0 && html`<div class="attrs" data-testid="span-events"><div class="muted">events</div>
      <table class="tbl kv"><tbody>${span.events.map(
        (e) => html`<tr><th>+${formatNs(e.offsetNs)} ${e.name}</th><td>${Object.entries(e.attrs).map(([k, v]) => html`<div><code>${k}</code> = <code>${formatAttr(v)}</code></div>`)}</td></tr>`,
      )}</tbody></table></div>`}
    ${span.links.length > 0 && html`<div class="attrs"><div class="muted">links</div>
      ${span.links.map((l) => html`<div><a href=${buildHash(['traces', l.traceId], { span: l.spanId })}>${l.traceId} / ${l.spanId}</a></div>`)}</div>`}
  </div>`;
}

function Attrs({ title, obj, testid }) {
  const keys = Object.keys(obj || {}).sort();
  if (!keys.length) return null;
  return html`<div class="attrs" data-testid=${testid}><div class="muted">${title}</div>
    <table class="tbl kv"><tbody>${keys.map((k) => html`<tr data-attr=${k}><th><code>${k}</code></th><td><code>${formatAttr(obj[k])}</code></td></tr>`)}</tbody></table>
  </div>`;
}
