// The notice a planned page's URL answers with (see routes.js): it says
// what is missing.
import { html } from '../html.js';

export function Pending({ route }) {
  return html`
    <section class="panel pending" data-testid="pending" data-route=${route.name}>
      <h1>${route.title}: not in this build yet</h1>
      <p>${route.pending}</p>
    </section>
  `;
}
