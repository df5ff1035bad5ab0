// A trace search's results (rows from lib/traces.js searchRows): each
// trace's root service and name, start, duration (with a bar against the
// longest), spans, errors and services, and the spans the query matched,
// each a link into the trace view with that span open.
import { html } from '../html.js';
import { formatNs, serviceColor } from '../lib/traces.js';
import { formatTime } from '../lib/time.js';
import { buildHash } from '../lib/url.js';

export function TraceList({ rows, testid = 'trace-list', limit }) {
  if (!rows.length) return html`<p class="muted" data-testid=${testid} data-count="0">No traces matched in this range.</p>`;
  const longest = Math.max(1, ...rows.map((r) => r.durationMs));
  return html`<div data-testid=${testid} data-count=${rows.length}>
    ${limit && rows.length >= limit && html`<p class="muted small">the ${limit} most recent matching traces; raise the limit for more</p>`}
    <table class="tbl traces">
      <thead><tr><th>trace</th><th>started</th><th class="num">duration</th><th class="num">spans</th><th>services</th><th>matched spans</th></tr></thead>
      <tbody>
        ${rows.map(
          (r) => html`<tr data-testid="trace-row" data-trace=${r.traceId} data-errors=${r.errors}>
            <td>
              <a href=${buildHash(['traces', r.traceId], {})} data-trace=${r.traceId}>
                <b>${r.rootService || '?'}</b>: ${r.rootName || '?'}
              </a>
              <div class="muted mono small">${r.traceId}</div>
            </td>
            <td class="small">${formatTime(r.startMs)}</td>
            <td class="num">${r.durationMs ? formatNs(r.durationMs * 1e6) : '<1ms'}
              <span class="dur-bar"><span style=${{ width: `${Math.max(1, (100 * r.durationMs) / longest)}%` }}></span></span>
            </td>
            <td class="num">${r.spans}${r.errors ? html` <span class="err-count" title="spans with status error">${r.errors} err</span>` : ''}</td>
            <td>${r.services.map((s) => html`<span class="svc-chip" title=${`${s.spans} spans, ${s.errors} errors`}><span class="dot" style=${{ background: serviceColor(s.name) }}></span>${s.name}</span>`)}</td>
            <td class="small">
              ${r.matched.slice(0, 3).map(
                (m) => html`<a class="matched" href=${buildHash(['traces', r.traceId], { span: m.spanId })} data-span=${m.spanId}>${m.name} <span class="muted">${formatNs(m.durationNs)}</span></a>`,
              )}
              ${r.matchedCount > 3 && html`<span class="muted">+${r.matchedCount - 3}</span>`}
            </td>
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
