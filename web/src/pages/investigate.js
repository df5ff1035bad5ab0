// Investigation: a symptom (a workload selector, a PromQL or LogQL query,
// or an alert's labels) and the time to look at → the symptom's onset and
// class, what weft read, and the ranked probable causes with where they are
// (workload pivots) and their evidence: the top cause's strongest metric
// evidence drawn over the investigation's window (one graph per measure), every piece of
// evidence a link to its explore page. From /weft/api/v1/investigate
// (docs/investigation.md).
// URL: #/investigate?selector={run_id="r42"}&at=now-5m
import { useEffect, useMemo, useState } from 'preact/hooks';
import { html } from '../html.js';
import { prom, weft } from '../lib/api.js';
import { evidenceHash, formatOffset, graphedEvidence, investigateHash, investigateRequest, reportWindow, wherePairs } from '../lib/investigate.js';
import { isContextKey, workloadHash } from '../lib/context.js';
import { alignMatrix } from '../lib/series.js';
import { autoStep, formatTime } from '../lib/time.js';
import { formatCount, formatValue } from '../lib/format.js';
import { useAsync } from '../components/hooks.js';
import { Graph } from '../components/Graph.js';
import { LabelValue } from '../components/Pivot.js';

// TOP_GRAPHS is how many evidence graphs (one per measure) the top cause
// draws; the other causes draw theirs when opened.
const TOP_GRAPHS = 3;
const OTHER_GRAPHS = 2;

export default function InvestigatePage({ params, navigate }) {
  const field = params.get('query') ? 'query' : params.get('log_query') ? 'log_query' : params.get('alert') ? 'alert' : 'selector';
  const [draft, setDraft] = useState({ field, text: params.get(field) || '', at: params.get('at') || 'now' });
  useEffect(() => setDraft({ field, text: params.get(field) || '', at: params.get('at') || 'now' }), [params.toString()]);
  const [tick, setTick] = useState(0);
  // "now" is read once per visit (or Investigate press): read at every
  // render, a keystroke in the form would change the request and run the
  // investigation again.
  const now = useMemo(() => Date.now(), [params.toString(), tick]);
  const parsed = investigateRequest(params, now);
  const submit = (e) => {
    e.preventDefault();
    const next = investigateHash({ [draft.field]: draft.text.trim() }, draft.at.trim());
    if (next === location.hash) setTick((t) => t + 1);
    else navigate(next, true);
  };
  return html`<section class="panel" data-testid="investigate-page">
    <form class="toolbar" data-testid="investigate-form" onSubmit=${submit}>
      <select aria-label="symptom kind" value=${draft.field} onChange=${(e) => setDraft({ ...draft, field: e.target.value })}>
        <option value="selector">workload</option>
        <option value="query">PromQL symptom</option>
        <option value="log_query">LogQL symptom</option>
        <option value="alert">alert labels</option>
      </select>
      <input class="wide" aria-label="symptom" data-testid="symptom-input" value=${draft.text}
        placeholder=${PLACEHOLDER[draft.field]} onInput=${(e) => setDraft({ ...draft, text: e.target.value })} />
      <label class="muted small">at <input aria-label="investigate at" data-testid="at-input" size="14" value=${draft.at} onInput=${(e) => setDraft({ ...draft, at: e.target.value })} /></label>
      <button type="submit" data-testid="run">Investigate</button>
    </form>
    ${parsed.empty
      ? html`<p class="muted">Name a symptom: a workload (<code>{run_id="r42"}</code>), a PromQL or LogQL query that shows it, or an alert's labels, and the time to look at. weft finds the symptom's onset, reads the workload's series, its nodes' and its logs, and ranks what changed first and stands out among peers (docs/investigation.md). Alerts and workload pages link here.</p>`
      : parsed.error
        ? html`<div class="error">${parsed.error}</div>`
        : html`<${Result} key=${JSON.stringify(parsed.req) + tick} req=${parsed.req} />`}
  </section>`;
}

const PLACEHOLDER = {
  selector: 'the workload, e.g. {run_id="r42"}',
  query: 'a PromQL expression that shows the symptom, e.g. rate(train_steps_total{run_id="r42"}[1m])',
  log_query: 'a LogQL query that shows the symptom, e.g. {run_id="r42"} |= "NCCL"',
  alert: 'an alert\'s labels as JSON, e.g. {"run_id":"r42"}',
};

function Result({ req }) {
  const st = useAsync((signal) => weft.investigate(req, { signal }), []);
  if (st.error) return html`<div class="error" data-testid="investigate-error">${st.error.message}</div>`;
  if (!st.data) return html`<div class="loading">Investigating… (the symptom's onset, then every series of the workload and its nodes)</div>`;
  const rep = st.data;
  const win = reportWindow(rep);
  const params = { from: win.from, to: win.to };
  return html`
    <${Symptom} rep=${rep} params=${params} />
    ${rep.causes.length === 0
      ? html`<div class="card" data-testid="no-cause"><p>No probable cause stands out: nothing in the workload or on its nodes changed before the symptom more than its own noise and its peers'. docs/investigation.md says what weft cannot see.</p></div>`
      : rep.causes.map((c) => html`<${CauseCard} c=${c} win=${win} params=${params} open=${c.rank === 1} />`)}
  `;
}

function Symptom({ rep, params }) {
  const s = rep.symptom;
  const ctx = Object.entries(s.context || {}).filter(([k]) => isContextKey(k)).sort(([a], [b]) => a.localeCompare(b));
  return html`<div class="card" data-testid="symptom" data-class=${s.class} data-onset-found=${String(s.onset_found)}>
    <div class="card-head">
      <h2>Symptom: ${s.class}</h2>
      <span class="muted small">${s.onset_found ? `onset ${formatTime(Date.parse(s.onset))}` : 'no onset found: the window ends at the time asked'}</span>
      <span class="muted small" data-testid="scope">read ${formatCount(rep.scope.series)} series, ${formatCount(rep.scope.log_streams)} log streams, ${formatCount(rep.scope.log_lines)} lines in ${rep.seconds.toFixed(2)} s</span>
    </div>
    <div><code>${s.selector}</code>${s.query && html` · <a href=${evidenceHash({ signal: 'metrics', query: s.query }, params)} title="open the symptom query">${s.query}</a>`}</div>
    ${ctx.length > 0 &&
    html`<div class="fields" data-testid="symptom-context">
      ${ctx.map(([k, vs]) => vs.slice(0, 8).map((v) => html`<${LabelValue} name=${k} value=${v} params=${params} short=${40} />`))}
    </div>`}
  </div>`;
}

function CauseCard({ c, win, params, open: initial }) {
  const [open, setOpen] = useState(initial);
  const where = wherePairs(c.where);
  return html`<div class="card cause" data-testid="cause" data-rank=${c.rank} data-kind=${c.kind}>
    <div class="card-head" onClick=${() => setOpen(!open)}>
      <span class="wf-toggle">${open ? '▾' : '▸'}</span>
      <h2><span class="muted">#${c.rank}</span> <span data-testid="cause-summary">${c.summary}</span></h2>
      <span class="muted small">score ${c.score.toFixed(2)} · ${c.shared ? 'shared by every consumer' : `peer deviation ${c.peer_deviation.toFixed(1)}`} · magnitude ${c.magnitude.toFixed(1)} · ${formatOffset(c.onset_offset_seconds)}</span>
    </div>
    <div class="fields" data-testid="cause-where">
      ${where.map(([k, v, note]) =>
        isContextKey(k)
          ? html`<span>${note && html`<span class="muted small">${note} </span>`}<${LabelValue} name=${k} value=${v} params=${params} short=${40} /></span>`
          : html`<span class="lbl">${note ? note + ' ' : ''}${k}="${v}"</span>`,
      )}
      ${where.length > 0 && html`<a href=${workloadHash(where[0][0], where[0][1], params)} data-link="workload" class="small">open ${where[0][0]}="${where[0][1]}"</a>`}
    </div>
    ${open &&
    html`<div data-testid="cause-evidence">
      ${graphedEvidence(c.evidence, c.rank === 1 ? TOP_GRAPHS : OTHER_GRAPHS).map((e) => html`<${EvidenceGraph} e=${e} win=${win} />`)}
      <table class="tbl">
        <thead><tr><th>signal</th><th>evidence</th><th class="num">baseline</th><th class="num">then</th><th class="num">z</th><th>onset</th></tr></thead>
        <tbody>
          ${c.evidence.map(
            (e) => html`<tr data-testid="evidence-row" data-signal=${e.signal}>
              <td>${e.signal}</td>
              <td><a href=${evidenceHash(e, win)} title="open in its explore page">${e.what}</a> <code class="muted small">${e.query}</code></td>
              <td class="num">${formatValue(e.baseline)}</td>
              <td class="num">${formatValue(e.value)}</td>
              <td class="num">${e.z.toFixed(1)}</td>
              <td class="small">${formatTime(Date.parse(e.onset))}</td>
            </tr>`,
          )}
        </tbody>
      </table>
    </div>`}
  </div>`;
}

function EvidenceGraph({ e, win }) {
  const step = autoStep(win.end - win.start, 240, 1e3);
  const gs = Math.floor(win.start / step) * step;
  const st = useAsync(async (signal) => {
    const d = await prom.queryRange(e.query, gs, win.end, step, { signal });
    return alignMatrix([{ query: e.query, result: d.result }], gs, win.end, step);
  }, [e.query, gs, win.end, step]);
  return html`<div class="evidence-graph">
    <div class="card-head"><b>${e.what}</b><a href=${evidenceHash(e, win)}>open in metrics explore</a></div>
    ${st.error
      ? html`<div class="error">${st.error.message}</div>`
      : st.data
        ? html`<${Graph} data=${st.data} from=${win.from} to=${win.to} height=${160} testid="evidence-graph" legend=${false} />`
        : html`<div class="loading">…</div>`}
  </div>`;
}
