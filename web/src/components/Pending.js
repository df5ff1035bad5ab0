// The notice a planned page's URL answers with (see routes.js): it says
// what is missing and offers what already works for the same thing.
import { html } from '../html.js';
import { buildHash } from '../lib/url.js';

export function Pending({ route, path }) {
  const id = route.name === 'traces' && path[0] ? path[0] : '';
  return html`
    <section class="panel pending" data-testid="pending" data-route=${route.name}>
      <h1>${route.title}: not in this build yet</h1>
      <p>${route.pending}</p>
      ${id &&
      html`<p>
        Trace <code data-testid="trace-id">${id}</code>:
        <a href=${buildHash(['logs'], { q: `{service_name=~".+"} | trace_id="${id}"` })}>logs of this trace</a>
        (lines whose structured metadata has this trace_id).
      </p>`}
    </section>
  `;
}
