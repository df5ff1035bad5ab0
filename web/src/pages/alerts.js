// Alerts and rules: the pending and firing alerts (state, labels as
// pivots, annotations, active since, the query behind each), and every
// rule group, PromQL and LogQL, with its rules' health, last evaluation
// and errors. From /api/v1/rules (which carries each rule's alerts) and
// /prometheus/api/v1/rules (which of the groups are LogQL).
// URL: #/alerts?state=firing|pending&match={run_id="r42"}&refresh=30s
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { rules as rulesAPI } from '../lib/api.js';
import { activeAlerts, matches, parseMatchers, ruleGroups } from '../lib/alerts.js';
import { buildHash } from '../lib/url.js';
import { REFRESH_CHOICES } from '../lib/time.js';
import { useAsync, useRange } from '../components/hooks.js';
import { AlertList, RuleRows } from '../components/Alerts.js';

export default function AlertsPage({ params, navigate }) {
  const r = useRange(params);
  const state = params.get('state') || '';
  const match = params.get('match') || '';
  const [draft, setDraft] = useState(match);
  useEffect(() => setDraft(match), [match]);
  const go = (c, push = false) => navigate(buildHash(['alerts'], { state, match, refresh: r.refresh, ...c }), push);
  const st = useAsync(async (signal) => {
    const { all, logql } = await rulesAPI.groups('', { signal });
    return ruleGroups(all, logql);
  }, [r.tick]);
  let matchers = [];
  let matchErr = '';
  try {
    matchers = parseMatchers(match);
  } catch (e) {
    matchErr = e.message;
  }
  return html`<section class="panel" data-testid="alerts-page">
    <form class="toolbar" onSubmit=${(e) => { e.preventDefault(); go({ match: draft.trim() }, true); }}>
      <span class="tabs">
        ${[['', 'all'], ['firing', 'firing'], ['pending', 'pending']].map(
          ([v, t]) => html`<button type="button" class=${state === v ? 'on' : ''} data-state=${t} onClick=${() => go({ state: v })}>${t}</button>`,
        )}
      </span>
      <input class="wide" aria-label="label matchers" data-testid="alert-match" placeholder='labels, e.g. {run_id="r42", severity="critical"}' value=${draft} onInput=${(e) => setDraft(e.target.value)} />
      <button type="submit">Filter</button>
      <select aria-label="auto-refresh" value=${r.refresh} onChange=${(e) => go({ refresh: e.target.value })} title="auto-refresh">
        ${REFRESH_CHOICES.map((x) => html`<option value=${x}>${x ? 'every ' + x : 'no refresh'}</option>`)}
      </select>
      <button type="button" onClick=${r.reload} title="Read again now">⟳</button>
      ${matchErr && html`<span class="error inline">${matchErr}</span>`}
    </form>
    ${st.error
      ? html`<div class="error">${st.error.message}</div>`
      : !st.data
        ? html`<div class="loading">Reading rules…</div>`
        : html`<${Body} groups=${st.data} state=${state} matchers=${matchers} />`}
  </section>`;
}

function Body({ groups, state, matchers }) {
  const all = activeAlerts(groups);
  const shown = all.filter((a) => (!state || a.state === state) && matches(a.labels, matchers));
  const firing = all.filter((a) => a.state === 'firing').length;
  const nrules = groups.reduce((n, g) => n + g.rules.length, 0);
  const nerr = groups.reduce((n, g) => n + g.errors, 0);
  return html`
    <div class="stats-line" data-testid="alerts-totals">
      <b>${firing}</b> firing · <b>${all.length - firing}</b> pending · ${nrules} rules in ${groups.length} groups
      ${nerr > 0 && html` · <span class="err-count">${nerr} ${nerr > 1 ? 'rules' : 'rule'} failing</span>`}
    </div>
    <div class="card">
      <div class="card-head"><h2>Alerts</h2><span class="muted">${shown.length} of ${all.length}</span></div>
      <${AlertList} alerts=${shown} empty=${all.length ? 'No alert matches the filter.' : 'No alert is pending or firing.'} />
    </div>
    <div class="card" data-testid="rule-groups">
      <div class="card-head"><h2>Rules</h2></div>
      ${groups.length === 0
        ? html`<p class="muted">No rules are loaded. Start weft with <code>-rules.file</code> or <code>rule_files</code> (docs/rules.md).</p>`
        : groups.map((g) => html`<${Group} g=${g} />`)}
    </div>
  `;
}

function Group({ g }) {
  const [open, setOpen] = useState(g.health !== 'ok' || g.firing + g.pending > 0);
  return html`<div class="rule-group" data-testid="rule-group" data-group=${g.name} data-health=${g.health}>
    <div class="rule-group-head" onClick=${() => setOpen(!open)}>
      <span class="wf-toggle">${open ? '▾' : '▸'}</span>
      <span class=${'health ' + g.health}>${g.health}</span>
      <b>${g.name}</b>
      <span class="lang">${g.lang === 'logql' ? 'LogQL' : 'PromQL'}</span>
      <span class="muted small">${g.file} · every ${g.interval}s${g.limit ? ` · limit ${g.limit}` : ''} · ${g.rules.length} rules</span>
      ${g.firing > 0 && html`<span class="state firing">${g.firing} firing</span>`}
      ${g.pending > 0 && html`<span class="state pending">${g.pending} pending</span>`}
      ${g.errors > 0 && html`<span class="err-count">${g.errors} failing</span>`}
    </div>
    ${open && html`<${RuleRows} rules=${g.rules} />`}
  </div>`;
}
