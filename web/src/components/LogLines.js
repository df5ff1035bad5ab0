// Log lines with their labels: a click on a line opens its stream labels
// (pivots), structured metadata and parsed fields; trace IDs link to the
// trace page.
import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { isTraceKey, levelColor, levelOf, traceIdOf } from '../lib/logs.js';
import { formatTime } from '../lib/time.js';
import { buildHash } from '../lib/url.js';
import { LabelValue } from './Pivot.js';

export function LogLines({ entries, params, max = 1000, testid = 'log-lines' }) {
  const [open, setOpen] = useState(() => new Set());
  const shown = entries.slice(0, max);
  const toggle = (k) => {
    const next = new Set(open);
    next.has(k) ? next.delete(k) : next.add(k);
    setOpen(next);
  };
  if (!entries.length) return html`<div class="muted" data-testid=${testid} data-count="0">No log lines in this range.</div>`;
  return html`<div class="loglines" data-testid=${testid} data-count=${shown.length}>
    ${shown.map((e, i) => {
      const k = e.ts + '\u0000' + i;
      const lvl = levelOf(e);
      const tid = traceIdOf(e);
      return html`<div class="logline" data-testid="log-line" data-level=${lvl}>
        <div class="logline-main" onClick=${() => toggle(k)}>
          <span class="lvl" style=${{ background: levelColor(lvl) }} title=${lvl}></span>
          <span class="ts">${formatTime(e.ms, true)}</span>
          <span class="text">${e.line}</span>
          ${tid && html`<a class="trace" href=${buildHash(['traces', tid], {})} data-trace=${tid} onClick=${(ev) => ev.stopPropagation()}>trace</a>`}
        </div>
        ${open.has(k) && html`<${Details} e=${e} params=${params} />`}
      </div>`;
    })}
    ${entries.length > max && html`<div class="muted">${entries.length - max} more lines not shown</div>`}
  </div>`;
}

function Fields({ title, obj, params }) {
  const keys = Object.keys(obj || {}).sort();
  if (!keys.length) return null;
  return html`<div class="fields"><span class="muted">${title}</span>
    ${keys.map((k) =>
      isTraceKey(k)
        ? html`<a class="lbl trace" href=${buildHash(['traces', obj[k]], {})} data-trace=${obj[k]}>${k}="${obj[k]}"</a>`
        : html`<${LabelValue} name=${k} value=${obj[k]} params=${params} />`,
    )}
  </div>`;
}

function Details({ e, params }) {
  return html`<div class="logline-details" data-testid="log-details">
    <${Fields} title="labels" obj=${e.stream} params=${params} />
    <${Fields} title="metadata" obj=${e.metadata} params=${params} />
    <${Fields} title="parsed" obj=${e.parsed} params=${params} />
  </div>`;
}
