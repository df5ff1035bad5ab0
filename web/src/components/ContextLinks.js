// "Logs of this context and window" and "metrics of this context": the
// links every chart offers, built from the context the chart's series share.
import { html } from '../html.js';
import { logsHash, metricsHash, selector, workloadHash } from '../lib/context.js';

export function ContextLinks({ pairs, from, to, workload = true }) {
  if (!pairs || !pairs.length) return html`<span class="ctx-links muted">no shared workload context</span>`;
  const sel = selector(pairs);
  return html`<span class="ctx-links" data-testid="context-links">
    <a href=${logsHash(pairs, from, to)} data-link="logs" title=${`Logs of ${sel}, same window`}>logs of this context</a>
    <a href=${metricsHash(pairs, from, to)} data-link="metrics" title=${`Metrics of ${sel}`}>metrics of this context</a>
    ${workload && html`<a href=${workloadHash(pairs[0][0], pairs[0][1], { from, to })} data-link="workload">workload ${pairs[0][0]}="${pairs[0][1]}"</a>`}
  </span>`;
}
