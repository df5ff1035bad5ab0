// The GPUs × time heatmap: one canvas pixel per cell, scaled up without
// smoothing (a 64 × 1440 map is one putImageData), outlier runs outlined
// in red, and the marked GPUs flagged beside their row.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from '../html.js';
import { rampColor } from '../lib/heatmap.js';
import { formatValue } from '../lib/format.js';
import { formatTime } from '../lib/time.js';
import { LabelValue } from './Pivot.js';

const ROW_PX = 18;

export function Heatmap({ hm, outliers, unit, params, testid = 'heatmap' }) {
  const canvas = useRef(null);
  const wrap = useRef(null);
  const [hover, setHover] = useState(null);
  const [width, setWidth] = useState(800);
  const rows = hm.rows.length;
  const marked = new Map(outliers.marked.map((m) => [m.row, m]));

  useEffect(() => {
    const ro = new ResizeObserver(() => wrap.current && setWidth(Math.max(200, wrap.current.clientWidth)));
    ro.observe(wrap.current);
    return () => ro.disconnect();
  }, []);

  useEffect(() => {
    const c = canvas.current;
    if (!c || !rows) return;
    const dpr = devicePixelRatio || 1;
    const h = rows * ROW_PX;
    c.width = Math.round(width * dpr);
    c.height = Math.round(h * dpr);
    c.style.width = width + 'px';
    c.style.height = h + 'px';
    const ctx = c.getContext('2d');
    const img = new ImageData(hm.cols, rows);
    const span = hm.max - hm.min || 1;
    for (let r = 0; r < rows; r++) {
      for (let col = 0; col < hm.cols; col++) {
        const v = hm.values[r * hm.cols + col];
        const o = (r * hm.cols + col) * 4;
        if (Number.isNaN(v)) {
          img.data[o] = img.data[o + 1] = img.data[o + 2] = 238;
        } else {
          const [R, G, B] = rampColor((v - hm.min) / span);
          img.data[o] = R;
          img.data[o + 1] = G;
          img.data[o + 2] = B;
        }
        img.data[o + 3] = 255;
      }
    }
    const off = document.createElement('canvas');
    off.width = hm.cols;
    off.height = rows;
    off.getContext('2d').putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, 0, 0, c.width, c.height);
    // Outlier runs.
    const cw = c.width / hm.cols;
    const rh = c.height / rows;
    ctx.strokeStyle = '#ff1744';
    ctx.lineWidth = Math.max(1.5, dpr * 1.5);
    for (let r = 0; r < rows; r++) {
      let runStart = -1;
      for (let col = 0; col <= hm.cols; col++) {
        const z = col < hm.cols ? outliers.z[r * hm.cols + col] : NaN;
        const out = Math.abs(z) >= outliers.threshold;
        if (out && runStart < 0) runStart = col;
        if (!out && runStart >= 0) {
          ctx.strokeRect(runStart * cw + 1, r * rh + 1, (col - runStart) * cw - 2, rh - 2);
          runStart = -1;
        }
      }
    }
    if (!c.dataset.drawnAt) c.dataset.drawnAt = String(Math.round(performance.now()));
    c.dataset.state = 'drawn';
  }, [hm, outliers, width]);

  const onMove = (e) => {
    const rect = canvas.current.getBoundingClientRect();
    const col = Math.floor(((e.clientX - rect.left) / rect.width) * hm.cols);
    const r = Math.floor((e.clientY - rect.top) / ROW_PX);
    if (col < 0 || col >= hm.cols || r < 0 || r >= rows) return setHover(null);
    setHover({ r, col, x: e.clientX - rect.left, y: r * ROW_PX });
  };

  const ticks = [];
  const n = 6;
  for (let i = 0; i <= n; i++) ticks.push(hm.start + ((hm.cols - 1) * hm.step * i) / n);

  return html`
    <div class="heatmap" data-testid=${testid} data-rows=${rows} data-cols=${hm.cols}>
      <div class="hm-labels">
        ${hm.rows.map((row, r) => {
          const m = marked.get(r);
          const id = row.id;
          return html`<div class=${'hm-label' + (m ? ' outlier' : '')} data-testid="gpu-row" data-gpu=${id.label} data-outlier=${m ? 'true' : 'false'}>
            ${m && html`<span class="badge" title=${`${Math.round(m.fraction * 100)}% of buckets are outliers (robust z ≥ ${outliers.threshold})`}>${m.direction === 'low' ? '▼' : '▲'} outlier</span>`}
            ${id.host && html`<${LabelValue} name=${id.hostKey} value=${id.host} params=${params} />`}
            ${id.gpu !== '' && html`<span class="lbl">gpu ${id.gpu}</span>`}
            ${id.uuid && html`<${LabelValue} name=${id.uuidKey} value=${id.uuid} params=${params} short=${12} />`}
            ${!id.host && !id.uuid && id.rank && html`<${LabelValue} name="rank" value=${id.rank} params=${params} />`}
          </div>`;
        })}
      </div>
      <div class="hm-canvas" ref=${wrap}>
        <canvas ref=${canvas} onMouseMove=${onMove} onMouseLeave=${() => setHover(null)}></canvas>
        <div class="hm-axis">${ticks.map((t, i) => html`<span style=${{ left: `${(i / n) * 100}%` }}>${formatTime(t).slice(11, 16)}</span>`)}</div>
        ${hover && html`<${CellTip} hm=${hm} outliers=${outliers} hover=${hover} unit=${unit} />`}
      </div>
      <div class="hm-scale">
        <span>${formatValue(hm.min)}</span><span class="ramp"></span><span>${formatValue(hm.max)} ${unit || ''}</span>
        <span class="outline-key">outliers outlined</span>
      </div>
    </div>
  `;
}

function CellTip({ hm, outliers, hover, unit }) {
  const i = hover.r * hm.cols + hover.col;
  const v = hm.values[i];
  const z = outliers.z[i];
  const t = hm.start + hover.col * hm.step;
  return html`<div class="tooltip" style=${{ left: `${hover.x + 12}px`, top: `${hover.y}px` }}>
    <div class="muted">${formatTime(t)}</div>
    <div><b>${hm.rows[hover.r].id.label}</b>: ${formatValue(v)} ${unit || ''}</div>
    <div class="muted">median of GPUs ${formatValue(outliers.colMedian[hover.col])} · robust z ${Number.isNaN(z) ? '—' : z.toFixed(1)}</div>
  </div>`;
}
