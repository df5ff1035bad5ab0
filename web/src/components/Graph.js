// A time-series graph on uPlot, for any number of series: uPlot's own
// legend and cursor points (one DOM node per series) are off; the tooltip
// shows the series nearest the cursor, and the legend below lists the first
// LEGEND_ROWS series (all on demand). Exemplars are drawn as diamonds on the
// canvas; hovering one shows its trace link, clicking opens the trace.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { html } from '../html.js';
import { color, nearestIndex, nearestSeries, stack } from '../lib/series.js';
import { formatValue, seriesName } from '../lib/format.js';
import { formatTime } from '../lib/time.js';
import { commonContext } from '../lib/context.js';
import { buildHash } from '../lib/url.js';
import { Labels } from './Pivot.js';
import { ContextLinks } from './ContextLinks.js';

// LEGEND_ROWS bounds the legend's DOM for thousands of series.
const LEGEND_ROWS = 100;
// EXEMPLAR_PX is how near (CSS pixels) the cursor must be to pick an exemplar.
const EXEMPLAR_PX = 8;

export function Graph({ data, stacked, bars, exemplars, height = 320, from, to, seriesColor, onZoom, legend = true, testid = 'graph', title }) {
  const box = useRef(null);
  const plot = useRef(null);
  const [hover, setHover] = useState(null);
  const [hidden, setHidden] = useState(() => new Set());
  const hiddenRef = useRef(hidden);
  hiddenRef.current = hidden;
  const [allRows, setAllRows] = useState(false);
  const [drawn, setDrawn] = useState(0);
  const colorOf = (i) => (seriesColor ? seriesColor(data.metas[i], i) : color(i));
  const ys = useMemo(() => (stacked ? stack(data.ys) : data.ys), [data, stacked]);
  const exs = exemplars || [];

  useEffect(() => {
    const el = box.current;
    if (!el || !data.ys.length) return undefined;
    const width = Math.max(300, el.clientWidth);
    let raf = 0;
    const series = [{}];
    data.metas.forEach((m, i) => {
      const c = colorOf(i);
      series.push({
        label: String(i),
        stroke: c,
        width: bars ? 0 : 1.25,
        fill: bars ? c : stacked ? colorAlpha(c, 0.35) : undefined,
        points: { show: false },
        paths: bars ? uPlot.paths.bars({ size: [0.85, 60] }) : undefined,
        show: !hidden.has(i),
      });
    });
    const bands = stacked && !bars ? ys.slice(1).map((_, i) => ({ series: [i + 2, i + 1], fill: colorAlpha(colorOf(i + 1), 0.35) })) : undefined;
    const opts = {
      width,
      height,
      legend: { show: false },
      cursor: { points: { show: false }, drag: { x: true, y: false, setScale: false } },
      select: { show: true },
      series,
      bands,
      scales: { x: { time: true } },
      axes: [{ stroke: '#666', grid: { stroke: '#eee' } }, { stroke: '#666', grid: { stroke: '#eee' }, values: (u, vals) => vals.map(formatValue), size: 60 }],
      hooks: {
        draw: [
          (u) => {
            drawExemplars(u, exs);
            // When the first draw happened, in ms since navigation (for BenchmarkUI).
            if (!el.dataset.drawnAt) {
              el.dataset.drawnAt = String(Math.round(performance.now()));
              dispatchEvent(new Event('weft:drawn')); // the editor loads after the first graph
            }
            setDrawn((n) => n + 1);
          },
        ],
        setCursor: [
          (u) => {
            cancelAnimationFrame(raf);
            raf = requestAnimationFrame(() => setHover(hoverAt(u, ys, exs, hiddenRef.current)));
          },
        ],
        setSelect: [
          (u) => {
            if (u.select.width < 5 || !onZoom) return;
            const a = u.posToVal(u.select.left, 'x');
            const b = u.posToVal(u.select.left + u.select.width, 'x');
            onZoom(Math.round(a * 1e3), Math.round(b * 1e3));
          },
        ],
      },
    };
    const u = new uPlot(opts, [data.xs, ...ys], el.querySelector('.plot'));
    plot.current = u;
    const onClick = () => {
      const h = hoverAt(u, ys, exs, hiddenRef.current);
      if (h && h.exemplar && h.exemplar.traceId) location.hash = buildHash(['traces', h.exemplar.traceId], {});
    };
    u.over.addEventListener('click', onClick);
    u.over.addEventListener('mouseleave', () => setHover(null));
    const ro = new ResizeObserver(() => {
      const w = Math.max(300, el.clientWidth);
      if (w !== u.width) u.setSize({ width: w, height });
    });
    ro.observe(el);
    return () => {
      cancelAnimationFrame(raf);
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [data, ys, stacked, bars, exemplars, height]);

  const toggle = (i, only) => {
    const next = new Set(hidden);
    if (only) {
      const soloed = hidden.size === data.metas.length - 1 && !hidden.has(i);
      next.clear();
      if (!soloed) data.metas.forEach((_, j) => j !== i && next.add(j));
    } else if (next.has(i)) next.delete(i);
    else next.add(i);
    setHidden(next);
    const u = plot.current;
    if (u) u.batch(() => data.metas.forEach((_, j) => u.setSeries(j + 1, { show: !next.has(j) })));
  };

  if (!data.ys.length) return html`<div class="graph empty" data-testid=${testid} data-state="empty">No data in this range.</div>`;
  const shared = commonContext(data.metas.map((m) => m.metric));
  const rows = allRows ? data.metas : data.metas.slice(0, LEGEND_ROWS);
  return html`
    <div class="graph" data-testid=${testid} data-state=${drawn ? 'drawn' : 'drawing'} data-series=${data.ys.length}>
      <div class="graph-head">
        ${title && html`<span class="graph-title">${title}</span>`}
        <span class="muted">${data.ys.length} series</span>
        ${from !== undefined && html`<${ContextLinks} pairs=${shared} from=${from} to=${to} />`}
      </div>
      <div class="plot-box" ref=${box} data-testid="plot">
        <div class="plot"></div>
        ${hover && html`<${Tooltip} hover=${hover} metas=${data.metas} values=${data.ys} colorOf=${colorOf} />`}
      </div>
      ${legend &&
      html`<div class="legend" data-testid="legend">
        ${rows.map(
          (m, i) => html`<div class=${'legend-row' + (hidden.has(i) ? ' off' : '')} data-testid="series-row">
            <button class="swatch" style=${{ background: colorOf(i) }} title="click: show/hide; shift-click: only this" onClick=${(e) => toggle(i, e.shiftKey)}></button>
            ${data.multi ? html`<span class="qtag">#${m.queryIndex + 1}</span>` : ''}
            <${Labels} metric=${m.metric} params=${{ from, to }} />
          </div>`,
        )}
        ${data.metas.length > LEGEND_ROWS && !allRows && html`<button class="link" onClick=${() => setAllRows(true)}>show all ${data.metas.length} series</button>`}
      </div>`}
      ${exs.length > 0 && html`<${ExemplarList} exemplars=${exs} />`}
    </div>
  `;
}

function colorAlpha(c, a) {
  return c.startsWith('hsla(') ? c.replace(/, [\d.]+\)$/, `, ${a})`) : c;
}

// hoverAt finds what the cursor points at: the grid index, the nearest
// visible series there, and an exemplar within EXEMPLAR_PX.
function hoverAt(u, ys, exs, hidden) {
  const { left, top, idx } = u.cursor;
  if (left === undefined || left < 0 || idx === null || idx === undefined) return null;
  let exemplar = null;
  let best = EXEMPLAR_PX;
  for (const e of exs) {
    const dx = u.valToPos(e.t, 'x') - left;
    const dy = u.valToPos(e.v, 'y') - top;
    const d = Math.hypot(dx, dy);
    if (d <= best) {
      best = d;
      exemplar = e;
    }
  }
  const visible = ys.map((_, i) => !hidden.has(i));
  const y = u.posToVal(top, 'y');
  const s = nearestSeries(ys, idx, y, visible);
  return { idx, t: u.data[0][idx], s, left, top, exemplar };
}

function drawExemplars(u, exs) {
  if (!exs.length) return;
  const ctx = u.ctx;
  const r = 4 * devicePixelRatio;
  ctx.save();
  ctx.fillStyle = '#111';
  ctx.strokeStyle = '#fff';
  ctx.lineWidth = 1;
  for (const e of exs) {
    const x = u.valToPos(e.t, 'x', true);
    const y = u.valToPos(e.v, 'y', true);
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
    ctx.beginPath();
    ctx.moveTo(x, y - r);
    ctx.lineTo(x + r, y);
    ctx.lineTo(x, y + r);
    ctx.lineTo(x - r, y);
    ctx.closePath();
    ctx.fill();
    ctx.stroke();
  }
  ctx.restore();
}

function Tooltip({ hover, metas, values, colorOf }) {
  const { s, t, idx, left, top, exemplar } = hover;
  const style = { left: `${left + 70}px`, top: `${Math.max(0, top - 10)}px` };
  return html`<div class="tooltip" style=${style} data-testid="tooltip">
    <div class="muted">${formatTime(t * 1e3)}</div>
    ${s >= 0 &&
    html`<div><span class="dot" style=${{ background: colorOf(s) }}></span><b>${formatValue(values[s][idx])}</b> ${seriesName(metas[s].metric)}</div>`}
    ${exemplar &&
    html`<div class="exemplar-tip">exemplar ${formatValue(exemplar.v)} · trace <code>${exemplar.traceId || '—'}</code> ${exemplar.traceId ? '(click to open)' : ''}</div>`}
  </div>`;
}

function ExemplarList({ exemplars }) {
  const withTrace = exemplars.filter((e) => e.traceId);
  return html`<details class="exemplars" data-testid="exemplars">
    <summary>${exemplars.length} exemplars${withTrace.length ? `, ${withTrace.length} with a trace` : ''}</summary>
    <ul>
      ${exemplars.slice(0, 50).map(
        (e) => html`<li>
          ${formatTime(e.t * 1e3)} · ${formatValue(e.v)} ·
          ${e.traceId ? html`<a href=${buildHash(['traces', e.traceId], {})} data-trace=${e.traceId}>trace ${e.traceId}</a>` : 'no trace_id'}
        </li>`,
      )}
    </ul>
  </details>`;
}

// exemplarPoints flattens /api/v1/query_exemplars answers for the graph.
export function exemplarPoints(answers) {
  const out = [];
  for (const a of answers || []) {
    if (!a) continue;
    for (const e of a.exemplars || []) {
      const l = e.labels || {};
      out.push({ t: Number(e.timestamp), v: Number(e.value), labels: l, series: a.seriesLabels || {}, traceId: l.trace_id || l.traceID || l.traceId || '' });
    }
  }
  return out;
}
