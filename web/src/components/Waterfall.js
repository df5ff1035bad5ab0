// A trace's spans as a waterfall: one row per span in tree order (indented
// by depth, with a toggle to fold a span's descendants), its service
// colour, name and status, and a bar on the trace's timeline. A click on a
// row selects the span (the page keeps it in the URL) and opens its
// details under it. Rows are DOM elements; traces over MAX_ROWS spans show
// the first MAX_ROWS until asked for all.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { html } from '../html.js';
import { formatNs, serviceColor, visibleSpans } from '../lib/traces.js';
import { SpanDetails } from './SpanDetails.js';

const MAX_ROWS = 2000;
// INDENT_PX and MAX_INDENT bound how far deep spans are indented.
const INDENT_PX = 14;
const MAX_INDENT = 24;
const TICKS = [0, 0.25, 0.5, 0.75, 1];

export function Waterfall({ trace, selected, onSelect }) {
  const [collapsed, setCollapsed] = useState(() => new Set());
  const [all, setAll] = useState(false);
  const box = useRef(null);
  // The time the rows were first drawn (BenchmarkUI reads it).
  useEffect(() => {
    if (box.current) box.current.dataset.drawnAt = String(performance.now());
  }, [trace]);
  const rows = useMemo(() => visibleSpans(trace.spans, collapsed), [trace, collapsed]);
  // A selected span (from the URL) beyond the first rows shows them all.
  const deep = selected && rows.length > MAX_ROWS && rows.findIndex((s) => s.id === selected) >= MAX_ROWS;
  const shown = all || deep ? rows : rows.slice(0, MAX_ROWS);
  const total = Math.max(1, trace.durationNs);
  const toggle = (id) => {
    const next = new Set(collapsed);
    next.has(id) ? next.delete(id) : next.add(id);
    setCollapsed(next);
  };
  return html`<div class="waterfall" ref=${box} data-testid="waterfall" data-rows=${shown.length}>
    <div class="wf-row wf-head">
      <div class="wf-name muted">service · span</div>
      <div class="wf-bar-cell wf-ruler">
        ${TICKS.map((f) => html`<span style=${{ left: `${f * 100}%` }}>${formatNs(f * trace.durationNs)}</span>`)}
      </div>
    </div>
    ${shown.map((s) => {
      const left = (100 * s.offsetNs) / total;
      const width = Math.max(0.15, (100 * s.durationNs) / total);
      const c = serviceColor(s.service);
      const sel = s.id === selected;
      return html`<div key=${s.id} class=${'wf-item' + (sel ? ' selected' : '')}>
        <div class=${'wf-row' + (s.status === 'error' ? ' error' : '')} data-testid="span-row" data-span=${s.id} data-depth=${s.depth}
          data-service=${s.service} data-status=${s.status} onClick=${() => onSelect(sel ? '' : s.id)}>
          <div class="wf-name" style=${{ paddingLeft: `${Math.min(s.depth, MAX_INDENT) * INDENT_PX}px` }} title=${`${s.service}: ${s.name}`}>
            ${s.childCount > 0
              ? html`<button class="wf-toggle" data-testid="span-toggle" title=${collapsed.has(s.id) ? 'show its children' : 'fold its children'}
                  onClick=${(e) => { e.stopPropagation(); toggle(s.id); }}>${collapsed.has(s.id) ? '▸' : '▾'}</button>`
              : html`<span class="wf-toggle"></span>`}
            <span class="dot" style=${{ background: c }}></span>
            <span class="wf-svc">${s.service}</span>
            <span class="wf-op">${s.name}</span>
            ${s.status === 'error' && html`<span class="badge" title=${s.statusMessage || 'status error'}>error</span>`}
            ${s.orphan && html`<span class="muted small" title="its parent span was not received">(parent missing)</span>`}
            ${collapsed.has(s.id) && html`<span class="muted small">+${s.childCount}</span>`}
          </div>
          <div class="wf-bar-cell">
            <div class="wf-bar" style=${{ left: `${left}%`, width: `${width}%`, background: c }}></div>
            <span class="wf-dur" style=${left + width > 85 ? { right: `${100 - left + 0.5}%` } : { left: `${left + width + 0.5}%` }}>${formatNs(s.durationNs)}</span>
          </div>
        </div>
        ${sel && html`<${SpanDetails} span=${s} trace=${trace} />`}
      </div>`;
    })}
    ${shown.length < rows.length &&
    html`<div class="muted">${rows.length - shown.length} more spans not shown. <button class="link" onClick=${() => setAll(true)}>show all ${rows.length}</button></div>`}
  </div>`;
}
