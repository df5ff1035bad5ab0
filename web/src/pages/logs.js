// Logs explore: a LogQL query's lines (newest first) with their labels,
// structured metadata and parsed fields, the log-volume histogram by level,
// and live tail over Loki's tail WebSocket. A metric query draws a graph.
// URL: #/logs?q=<logql>&from=now-1h&to=now&limit=500&live=1
import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { loki } from '../lib/api.js';
import { alignMatrix } from '../lib/series.js';
import { autoStep } from '../lib/time.js';
import { buildHash } from '../lib/url.js';
import { commonContext } from '../lib/context.js';
import { flattenStreams, isLogQuery, levelColor, mergeTail, volumeQuery } from '../lib/logs.js';
import { useAsync, useRange } from '../components/hooks.js';
import { TimeRange } from '../components/TimeRange.js';
import { Editor } from '../components/Editor.js';
import { Graph } from '../components/Graph.js';
import { LogLines } from '../components/LogLines.js';
import { ContextLinks } from '../components/ContextLinks.js';

const DEFAULT_LIMIT = 500;
// VOLUME_BARS is how many bars the volume histogram has at most.
const VOLUME_BARS = 120;
// TAIL_KEEP bounds the lines a live tail keeps in the page.
const TAIL_KEEP = 2000;

export default function LogsPage({ params, navigate }) {
  const r = useRange(params);
  const q = params.get('q') || '';
  const limit = Number(params.get('limit')) || DEFAULT_LIMIT;
  const live = params.get('live') === '1';
  const [draft, setDraft] = useState(q);
  useEffect(() => setDraft(q), [q]);
  const state = { q, from: r.from, to: r.to, refresh: r.refresh, limit: limit === DEFAULT_LIMIT ? '' : limit, live };
  const go = (c, push = true) => navigate(buildHash(['logs'], { ...state, ...c }), push);
  const run = (v = draft) => {
    const h = buildHash(['logs'], { ...state, q: v.trim() });
    if (h === location.hash) r.reload();
    else navigate(h, true);
  };
  const logQuery = isLogQuery(q);
  return html`
    <section class="panel" data-testid="logs-page">
      <${TimeRange} ...${r} error=${r.range.error} onChange=${(c) => go(c)} onReload=${r.reload} />
      <div class="query-row">
        <${Editor} lang="logql" value=${draft} testid="logql-editor" placeholder='LogQL, e.g. {run_id="r42"} |= "error" (Enter runs)' onChange=${setDraft} onRun=${run} />
      </div>
      <div class="toolbar">
        <button data-testid="run" onClick=${() => run()}>Run</button>
        <label>lines <select value=${limit} onChange=${(e) => go({ limit: e.target.value }, false)}>${[100, 500, 1000, 5000].map((n) => html`<option value=${n}>${n}</option>`)}</select></label>
        ${logQuery && html`<label title="stream new lines as they are stored"><input type="checkbox" data-testid="live" checked=${live} onChange=${(e) => go({ live: e.target.checked }, false)} /> live tail</label>`}
      </div>
      ${!q
        ? html`<p class="muted">Type a LogQL query and press Enter: a stream selector such as <code>{run_id="r42"}</code>, with filters and parsers.</p>`
        : r.range.error
          ? null
          : !logQuery
            ? html`<${MetricQuery} q=${q} range=${r.range} tick=${r.tick} from=${r.from} to=${r.to} />`
            : live
              ? html`<${Tail} q=${q} limit=${Math.min(limit, 1000)} params=${{ from: r.from, to: r.to }} />`
              : html`<${Volume} q=${q} range=${r.range} tick=${r.tick} from=${r.from} to=${r.to} onZoom=${(a, b) => go({ from: String(a), to: String(b) })} />
                  <${Lines} q=${q} range=${r.range} tick=${r.tick} limit=${limit} from=${r.from} to=${r.to} />`}
    </section>
  `;
}

function Volume({ q, range, tick, from, to, onZoom }) {
  const step = autoStep(range.end - range.start, VOLUME_BARS);
  const gs = Math.floor(range.start / step) * step;
  const st = useAsync(
    async (signal) => {
      const d = await loki.queryRange(volumeQuery(q, step), gs, range.end, { step, signal });
      const data = alignMatrix([{ query: 'volume', result: d.result }], gs, range.end, step);
      return data;
    },
    [q, gs, range.end, step, tick],
  );
  if (st.error) return html`<div class="error">volume: ${st.error.message}</div>`;
  if (!st.data) return html`<div class="loading">Counting lines…</div>`;
  return html`<div class="volume">
    <${Graph} data=${st.data} bars stacked height=${120} testid="volume" seriesColor=${(m) => levelColor(m.metric.detected_level || 'unknown')} onZoom=${onZoom} from=${undefined} />
  </div>`;
}

function Lines({ q, range, tick, limit, from, to }) {
  const st = useAsync(
    async (signal) => {
      const d = await loki.queryRange(q, range.start, range.end, { limit, direction: 'backward', signal });
      return flattenStreams(d.result);
    },
    [q, range.start, range.end, limit, tick],
  );
  if (st.error) return html`<div class="error" data-testid="query-error">${st.error.message}</div>`;
  if (!st.data) return html`<div class="loading">Reading lines…</div>`;
  const ctx = commonContext(uniqueStreams(st.data));
  return html`<div>
    <div class="graph-head"><span class="muted">${st.data.length} lines${st.data.length >= limit ? ` (the newest ${limit})` : ''}</span>
      <${ContextLinks} pairs=${ctx} from=${from} to=${to} />
    </div>
    <${LogLines} entries=${st.data} params=${{ from, to }} max=${limit} />
  </div>`;
}

function uniqueStreams(entries) {
  const seen = new Set();
  const out = [];
  for (const e of entries) {
    if (seen.has(e.stream)) continue;
    seen.add(e.stream);
    out.push(e.stream);
  }
  return out;
}

function MetricQuery({ q, range, tick, from, to }) {
  const step = autoStep(range.end - range.start, 300);
  const gs = Math.floor(range.start / step) * step;
  const st = useAsync(async (signal) => {
    const d = await loki.queryRange(q, gs, range.end, { step, signal });
    return alignMatrix([{ query: q, result: d.result }], gs, range.end, step);
  }, [q, gs, range.end, step, tick]);
  if (st.error) return html`<div class="error" data-testid="query-error">${st.error.message}</div>`;
  if (!st.data) return html`<div class="loading">Querying…</div>`;
  return html`<${Graph} data=${st.data} from=${from} to=${to} />`;
}

// Tail streams a live tail: the newest lines first, then each line as weft
// stores it. The socket closes when the page or the query changes.
function Tail({ q, limit, params }) {
  const [entries, setEntries] = useState([]);
  const [status, setStatus] = useState('connecting');
  useEffect(() => {
    setEntries([]);
    const ws = new WebSocket(loki.tailURL(q, Date.now() - 3600e3, limit));
    ws.onopen = () => setStatus('live');
    ws.onerror = () => setStatus('error');
    ws.onclose = (e) => setStatus(e.code === 1000 ? 'closed' : `closed (${e.code}${e.reason ? ': ' + e.reason : ''})`);
    ws.onmessage = (m) => {
      let msg;
      try {
        msg = JSON.parse(m.data);
      } catch {
        return;
      }
      const got = flattenStreams(msg.streams);
      if (got.length) setEntries((old) => mergeTail(old, got, TAIL_KEEP));
    };
    return () => ws.close(1000);
  }, [q, limit]);
  return html`<div data-testid="tail">
    <div class="graph-head"><span class=${'tail-status ' + status}>● ${status}</span><span class="muted">${entries.length} lines</span></div>
    <${LogLines} entries=${entries} params=${params} max=${TAIL_KEEP} />
  </div>`;
}
