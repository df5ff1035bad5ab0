import{a as k,b as L}from"./chunk-7GEB2JPF.js";import{a as S,b as C,d as P,e as O,f as u,g as H,h as R}from"./chunk-SAZOM7ZX.js";import"./chunk-LHFAWOS6.js";import{b as v,g as _,j as f}from"./chunk-JUOU7EUU.js";import{a as w,e as q,i as x,j as $,o as h,q as c,s as g}from"./chunk-55NYBRMF.js";import{c as m,d as b,g as a}from"./chunk-OKC6WX42.js";import"./chunk-4BWHTT6A.js";var E=3,Q=2;function A({params:t,navigate:o}){let e=t.get("query")?"query":t.get("log_query")?"log_query":t.get("alert")?"alert":"selector",[s,r]=m({field:e,text:t.get(e)||"",at:t.get("at")||"now"});b(()=>r({field:e,text:t.get(e)||"",at:t.get("at")||"now"}),[t.toString()]);let[i,d]=m(0),n=S(t,Date.now());return a`<section class="panel" data-testid="investigate-page">
    <form class="toolbar" data-testid="investigate-form" onSubmit=${l=>{l.preventDefault();let y=C({[s.field]:s.text.trim()},s.at.trim());y===location.hash?d(D=>D+1):o(y,!0)}}>
      <select aria-label="symptom kind" value=${s.field} onChange=${l=>r({...s,field:l.target.value})}>
        <option value="selector">workload</option>
        <option value="query">PromQL symptom</option>
        <option value="log_query">LogQL symptom</option>
        <option value="alert">alert labels</option>
      </select>
      <input class="wide" aria-label="symptom" data-testid="symptom-input" value=${s.text}
        placeholder=${F[s.field]} onInput=${l=>r({...s,text:l.target.value})} />
      <label class="muted small">at <input aria-label="investigate at" data-testid="at-input" size="14" value=${s.at} onInput=${l=>r({...s,at:l.target.value})} /></label>
      <button type="submit" data-testid="run">Investigate</button>
    </form>
    ${n.empty?a`<p class="muted">Name a symptom: a workload (<code>{run_id="r42"}</code>), a PromQL or LogQL query that shows it, or an alert's labels, and the time to look at. weft finds the symptom's onset, reads the workload's series, its nodes' and its logs, and ranks what changed first and stands out among peers (docs/investigation.md). Alerts and workload pages link here.</p>`:n.error?a`<div class="error">${n.error}</div>`:a`<${I} key=${JSON.stringify(n.req)+i} req=${n.req} />`}
  </section>`}var F={selector:'the workload, e.g. {run_id="r42"}',query:'a PromQL expression that shows the symptom, e.g. rate(train_steps_total{run_id="r42"}[1m])',log_query:'a LogQL query that shows the symptom, e.g. {run_id="r42"} |= "NCCL"',alert:`an alert's labels as JSON, e.g. {"run_id":"r42"}`};function I({req:t}){let o=g(i=>q.investigate(t,{signal:i}),[]);if(o.error)return a`<div class="error" data-testid="investigate-error">${o.error.message}</div>`;if(!o.data)return a`<div class="loading">Investigating… (the symptom's onset, then every series of the workload and its nodes)</div>`;let e=o.data,s=O(e),r={from:s.from,to:s.to};return a`
    <${N} rep=${e} params=${r} />
    ${e.causes.length===0?a`<div class="card" data-testid="no-cause"><p>No probable cause stands out: nothing in the workload or on its nodes changed before the symptom more than its own noise and its peers'. docs/investigation.md says what weft cannot see.</p></div>`:e.causes.map(i=>a`<${G} c=${i} win=${s} params=${r} open=${i.rank===1} />`)}
  `}function N({rep:t,params:o}){let e=t.symptom,s=Object.entries(e.context||{}).filter(([r])=>v(r)).sort(([r],[i])=>r.localeCompare(i));return a`<div class="card" data-testid="symptom" data-class=${e.class} data-onset-found=${String(e.onset_found)}>
    <div class="card-head">
      <h2>Symptom: ${e.class}</h2>
      <span class="muted small">${e.onset_found?`onset ${$(Date.parse(e.onset))}`:"no onset found: the window ends at the time asked"}</span>
      <span class="muted small" data-testid="scope">read ${c(t.scope.series)} series, ${c(t.scope.log_streams)} log streams, ${c(t.scope.log_lines)} lines in ${t.seconds.toFixed(2)} s</span>
    </div>
    <div><code>${e.selector}</code>${e.query&&a` · <a href=${u({signal:"metrics",query:e.query},o)} title="open the symptom query">${e.query}</a>`}</div>
    ${s.length>0&&a`<div class="fields" data-testid="symptom-context">
      ${s.map(([r,i])=>i.slice(0,8).map(d=>a`<${f} name=${r} value=${d} params=${o} short=${40} />`))}
    </div>`}
  </div>`}function G({c:t,win:o,params:e,open:s}){let[r,i]=m(s),d=P(t.where);return a`<div class="card cause" data-testid="cause" data-rank=${t.rank} data-kind=${t.kind}>
    <div class="card-head" onClick=${()=>i(!r)}>
      <span class="wf-toggle">${r?"\u25BE":"\u25B8"}</span>
      <h2><span class="muted">#${t.rank}</span> <span data-testid="cause-summary">${t.summary}</span></h2>
      <span class="muted small">score ${t.score.toFixed(2)} · ${t.shared?"shared by every consumer":`peer deviation ${t.peer_deviation.toFixed(1)}`} · magnitude ${t.magnitude.toFixed(1)} · ${H(t.onset_offset_seconds)}</span>
    </div>
    <div class="fields" data-testid="cause-where">
      ${d.map(([n,p,l])=>v(n)?a`<span>${l&&a`<span class="muted small">${l} </span>`}<${f} name=${n} value=${p} params=${e} short=${40} /></span>`:a`<span class="lbl">${l?l+" ":""}${n}="${p}"</span>`)}
      ${d.length>0&&a`<a href=${_(d[0][0],d[0][1],e)} data-link="workload" class="small">open ${d[0][0]}="${d[0][1]}"</a>`}
    </div>
    ${r&&a`<div data-testid="cause-evidence">
      ${R(t.evidence,t.rank===1?E:Q).map(n=>a`<${T} e=${n} win=${o} />`)}
      <table class="tbl">
        <thead><tr><th>signal</th><th>evidence</th><th class="num">baseline</th><th class="num">then</th><th class="num">z</th><th>onset</th></tr></thead>
        <tbody>
          ${t.evidence.map(n=>a`<tr data-testid="evidence-row" data-signal=${n.signal}>
              <td>${n.signal}</td>
              <td><a href=${u(n,o)} title="open in its explore page">${n.what}</a> <code class="muted small">${n.query}</code></td>
              <td class="num">${h(n.baseline)}</td>
              <td class="num">${h(n.value)}</td>
              <td class="num">${n.z.toFixed(1)}</td>
              <td class="small">${$(Date.parse(n.onset))}</td>
            </tr>`)}
        </tbody>
      </table>
    </div>`}
  </div>`}function T({e:t,win:o}){let e=x(o.end-o.start,240,1e3),s=Math.floor(o.start/e)*e,r=g(async i=>{let d=await w.queryRange(t.query,s,o.end,e,{signal:i});return k([{query:t.query,result:d.result}],s,o.end,e)},[t.query,s,o.end,e]);return a`<div class="evidence-graph">
    <div class="card-head"><b>${t.what}</b><a href=${u(t,o)}>open in metrics explore</a></div>
    ${r.error?a`<div class="error">${r.error.message}</div>`:r.data?a`<${L} data=${r.data} from=${o.from} to=${o.to} height=${160} testid="evidence-graph" legend=${!1} />`:a`<div class="loading">…</div>`}
  </div>`}export{A as default};
