// Label values as pivots: a value of a workload-context key links to that
// workload's page, wherever it is shown.
import { html } from '../html.js';
import { isContextKey, workloadHash } from '../lib/context.js';
import { labelKeys } from '../lib/format.js';

// LabelValue writes name="value"; short cuts long values to that many
// characters (the title has them whole).
export function LabelValue({ name, value, params, short }) {
  const shown = short && value.length > short ? value.slice(0, short) + '…' : value;
  if (isContextKey(name)) {
    return html`<a class="pivot" href=${workloadHash(name, value, params)} data-pivot=${name} title=${`Open the workload page of ${name}="${value}"`}
      >${name}="<b>${shown}</b>"</a
    >`;
  }
  return html`<span class="lbl">${name}="${value}"</span>`;
}

// Labels writes a label set as {a="b", c="d"}, each value a pivot where it
// names a workload. params (from, to) are carried into the pivot links.
export function Labels({ metric, params, name = true }) {
  const keys = labelKeys(metric);
  return html`<span class="labels"
    >${name && metric.__name__ ? html`<span class="mname">${metric.__name__}</span>` : ''}{${keys.map(
      (k, i) => html`${i ? ', ' : ''}<${LabelValue} name=${k} value=${metric[k]} params=${params} />`,
    )}}</span
  >`;
}
