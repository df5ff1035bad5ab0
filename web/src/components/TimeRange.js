// The time-range picker: a preset, or any start/end ("now-6h", unix
// seconds, RFC 3339), and the auto-refresh interval. Changes go to the URL.
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { RANGE_PRESETS, REFRESH_CHOICES } from '../lib/time.js';

export function TimeRange({ from, to, refresh, onChange, onReload, error }) {
  const [f, setF] = useState(from);
  const [t, setT] = useState(to);
  useEffect(() => setF(from), [from]);
  useEffect(() => setT(to), [to]);
  const preset = to === 'now' && from.startsWith('now-') ? from.slice(4) : '';
  const apply = (e) => {
    e.preventDefault();
    onChange({ from: f.trim(), to: t.trim() });
  };
  return html`
    <form class="timerange" onSubmit=${apply} data-testid="timerange">
      <select aria-label="range" value=${RANGE_PRESETS.includes(preset) ? preset : ''} onChange=${(e) => e.target.value && onChange({ from: 'now-' + e.target.value, to: 'now' })}>
        <option value="">custom</option>
        ${RANGE_PRESETS.map((p) => html`<option value=${p}>last ${p}</option>`)}
      </select>
      <input aria-label="from" size="16" value=${f} onInput=${(e) => setF(e.target.value)} />
      <span>→</span>
      <input aria-label="to" size="16" value=${t} onInput=${(e) => setT(e.target.value)} />
      <button type="submit" title="Apply the range and run">Run</button>
      <select aria-label="auto-refresh" value=${refresh} onChange=${(e) => onChange({ refresh: e.target.value })} title="auto-refresh">
        ${REFRESH_CHOICES.map((r) => html`<option value=${r}>${r ? 'every ' + r : 'no refresh'}</option>`)}
      </select>
      ${onReload && html`<button type="button" onClick=${onReload} title="Run again now">⟳</button>`}
      ${error && html`<span class="error inline">${error}</span>`}
    </form>
  `;
}
