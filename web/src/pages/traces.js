// Traces: TraceQL search with its results, and one trace as a waterfall
// with span details and links to the span's logs and metrics.
// URLs: #/traces?q=<traceql>&from=now-1h&to=now&limit=20
//       #/traces/<trace id>?span=<span id>
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { tempo } from '../lib/api.js';
import { addCondition, formatNs, isTraceID, normTraceID, nsToMsNum, parseTrace, searchRows, serviceColor, spanWindow, tagCondition, tagPath, traceLogsQuery } from '../lib/traces.js';
import { formatCount } from '../lib/format.js';
import { formatTime } from '../lib/time.js';
import { buildHash } from '../lib/url.js';
import { useAsync, useRange } from '../components/hooks.js';
import { TimeRange } from '../components/TimeRange.js';
import { Editor } from '../components/Editor.js';
import { TraceList } from '../components/TraceList.js';
import { Waterfall } from '../components/Waterfall.js';

const DEFAULT_LIMIT = 20;
const EXAMPLES = ['{ status = error }', '{ duration > 100ms }', '{ kind = server } | count() > 2'];

export default function TracesPage({ path, params, navigate }) {
  if (path[0]) return html`<${TraceView} id=${path[0]} span=${params.get('span') || ''} navigate=${navigate} />`;
  return html`<${Search} params=${params} navigate=${navigate} />`;
}

function Search({ params, navigate }) {
  const r = useRange(params);
  const q = params.get('q') || '';
  const limit = Number(params.get('limit')) || DEFAULT_LIMIT;
  const [draft, setDraft] = useState(q);
  useEffect(() => setDraft(q), [q]);
  const state = { q, from: r.from, to: r.to, refresh: r.refresh, limit: limit === DEFAULT_LIMIT ? '' : limit };
  const go = (c, push = true) => navigate(buildHash(['traces'], { ...state, ...c }), push);
  const run = (v = draft) => {
    const t = v.trim();
    // A trace ID typed in the search box opens that trace.
    if (isTraceID(t) && t.length >= 16) return navigate(buildHash(['traces', normTraceID(t)], {}), true);
    const h = buildHash(['traces'], { ...state, q: t });
    if (h === location.hash) r.reload();
    else navigate(h, true);
  };
  return html`<section class="panel" data-testid="traces-page">
    <${TimeRange} ...${r} error=${r.range.error} onChange=${(c) => go(c)} onReload=${r.reload} />
    <div class="query-row">
      <${Editor} lang="traceql" value=${draft} testid="traceql-editor" placeholder='TraceQL, e.g. { resource.service.name = "api" && status = error }, or a trace ID (Enter runs)' onChange=${setDraft} onRun=${run} />
    </div>
    <div class="toolbar">
      <button data-testid="run" onClick=${() => run()}>Run</button>
      <label>traces <select value=${limit} onChange=${(e) => go({ limit: e.target.value }, false)}>${[20, 50, 100, 500].map((n) => html`<option value=${n}>${n}</option>`)}</select></label>
      ${!r.range.error && html`<${TagPicker} range=${r.range} q=${draft} onAdd=${(cond) => setDraft(addCondition(draft, cond))} />`}
    </div>
    ${!q
      ? html`<p class="muted">Type a TraceQL query and press Enter, or pick a tag and a value above. For example:
          ${EXAMPLES.map((e) => html` <a href=${buildHash(['traces'], { ...state, q: e })}><code>${e}</code></a>`)}</p>`
      : r.range.error
        ? null
        : html`<${Results} q=${q} range=${r.range} tick=${r.tick} limit=${limit} />`}
  </section>`;
}

function Results({ q, range, tick, limit }) {
  const st = useAsync(
    async (signal) => {
      const d = await tempo.search(q, range.start, range.end, { limit, spss: 3, signal });
      return { rows: searchRows(d), metrics: d.metrics || {} };
    },
    [q, range.start, range.end, limit, tick],
  );
  if (st.error) return html`<div class="error" data-testid="query-error">${st.error.message}</div>`;
  if (!st.data) return html`<div class="loading">Searching…</div>`;
  const m = st.data.metrics;
  return html`<div>
    <div class="graph-head"><span class="muted">${st.data.rows.length} traces${m.inspectedTraces ? ` · ${formatCount(m.inspectedTraces)} inspected` : ''}</span></div>
    <${TraceList} rows=${st.data.rows} limit=${limit} />
  </div>`;
}

// TagPicker adds "tag = value" to the query from the store's tag names and
// a tag's values (the Tempo tag endpoints), loaded on demand.
function TagPicker({ range, q, onAdd }) {
  const [open, setOpen] = useState(false);
  const [tag, setTag] = useState('');
  const tags = useAsync(async (signal) => (open ? tempo.tags('', range.start, range.end, { signal }) : null), [open]);
  const [scope, name] = tag ? [tag.slice(0, tag.indexOf(':')), tag.slice(tag.indexOf(':') + 1)] : ['', ''];
  const values = useAsync(
    async (signal) => (tag ? tempo.tagValues(tagPath(scope, name), q.trim() || undefined, range.start, range.end, { signal }) : null),
    [tag],
  );
  if (!open) return html`<button class="link" data-testid="tag-picker" onClick=${() => setOpen(true)}>+ tag = value</button>`;
  const scopes = (tags.data && tags.data.scopes) || [];
  const vals = (values.data && values.data.tagValues) || [];
  return html`<span class="tag-picker" data-testid="tag-picker-open">
    <select aria-label="tag" value=${tag} onChange=${(e) => setTag(e.target.value)}>
      <option value="">${tags.data ? 'tag…' : tags.error ? 'tags failed' : 'loading tags…'}</option>
      ${scopes.map((s) => html`<optgroup label=${s.name}>${(s.tags || []).map((t) => html`<option value=${s.name + ':' + t}>${s.name === 'intrinsic' ? t : `${s.name}.${t}`}</option>`)}</optgroup>`)}
    </select>
    ${tag &&
    html`<select aria-label="value" data-testid="tag-value" onChange=${(e) => {
      const v = vals[Number(e.target.value)];
      if (v) onAdd(tagCondition(scope, name, v));
      e.target.value = '';
    }}>
      <option value="">${values.data ? `${vals.length} values…` : values.error ? 'values failed' : 'loading values…'}</option>
      ${vals.map((v, i) => html`<option value=${i}>${v.value}</option>`)}
    </select>`}
  </span>`;
}

function TraceView({ id, span, navigate }) {
  const tid = normTraceID(id);
  const st = useAsync(async (signal) => parseTrace(await tempo.trace(tid, { signal })), [tid]);
  if (st.error) {
    if (st.error.status === 404) {
      return html`<section class="panel" data-testid="trace-missing">
        <h1>Trace <code data-testid="trace-id">${tid}</code> not found</h1>
        <p>weft holds no span of this trace (it may be older than the trace retention, or not sent yet).
          <a href=${buildHash(['logs'], { q: traceLogsQuery([], tid) })}>Logs with this trace_id</a>.</p>
      </section>`;
    }
    return html`<section class="panel"><div class="error">${st.error.message}</div></section>`;
  }
  if (!st.data) return html`<section class="panel"><div class="loading">Reading trace ${tid}…</div></section>`;
  const t = st.data;
  if (!t.spans.length) return html`<section class="panel"><p class="muted">Trace ${tid} has no spans.</p></section>`;
  const root = t.spans[0];
  const tw = spanWindow({ startNs: t.startNs, endNs: t.endNs }, 5 * 60e3);
  return html`<section class="panel" data-testid="trace-view" data-trace=${tid} data-spans=${t.spans.length}>
    <h1 class="trace-title"><span class="dot" style=${{ background: serviceColor(root.service) }}></span>${root.service}: ${root.name}</h1>
    <div class="span-facts" data-testid="trace-facts">
      <span><span class="muted">trace</span> <code data-testid="trace-id">${tid}</code></span>
      <span><span class="muted">start</span> ${formatTime(nsToMsNum(t.startNs), true)}</span>
      <span><span class="muted">duration</span> <b>${formatNs(t.durationNs)}</b></span>
      <span><span class="muted">spans</span> ${t.spans.length}</span>
      ${t.errors > 0 && html`<span class="err-count">${t.errors} error${t.errors > 1 ? 's' : ''}</span>`}
      ${t.partial && html`<span class="muted">partial</span>`}
      <a href=${buildHash(['logs'], { q: traceLogsQuery(t.services.map((s) => s.name), tid), ...tw })} data-link="trace-logs">logs of this trace</a>
      <a href=${buildHash(['traces'], { q: `{ trace:id = "${tid}" }`, ...tw })}>in search</a>
    </div>
    <div class="svc-legend">${t.services.map(
      (s) => html`<span class="svc-chip" data-testid="service-chip"><span class="dot" style=${{ background: serviceColor(s.name) }}></span>${s.name} <span class="muted">${s.spans}${s.errors ? `, ${s.errors} err` : ''}</span></span>`,
    )}</div>
    <${Waterfall} trace=${t} selected=${span} onSelect=${(sid) => navigate(buildHash(['traces', tid], { span: sid }), false)} />
  </section>`;
}
