import{a as _,b as C}from"./chunk-64TZZIZX.js";import{a as P,b as O,d as H,e as R,f as $,g as D,h as E}from"./chunk-5AIR3XJI.js";import"./chunk-ZBFHLYCE.js";import{b as f,g as S,j as y}from"./chunk-ZGKEYWBR.js";import{a as k,e as x,i as L,j as h,o as g,q as p,s as v}from"./chunk-JIL5HOX7.js";import{c as u,d as w,f as q,g as s}from"./chunk-OKC6WX42.js";import"./chunk-QTRUX7X6.js";var A=3,F=2;function I({params:t,navigate:o}){let e=t.get("query")?"query":t.get("log_query")?"log_query":t.get("alert")?"alert":"selector",[a,r]=u({field:e,text:t.get(e)||"",at:t.get("at")||"now"});w(()=>r({field:e,text:t.get(e)||"",at:t.get("at")||"now"}),[t.toString()]);let[i,d]=u(0),n=q(()=>Date.now(),[t.toString(),i]),l=P(t,n);return s`<section class="panel" data-testid="investigate-page">
    <form class="toolbar" data-testid="investigate-form" onSubmit=${m=>{m.preventDefault();let b=O({[a.field]:a.text.trim()},a.at.trim());b===location.hash?d(Q=>Q+1):o(b,!0)}}>
      <select aria-label="symptom kind" value=${a.field} onChange=${m=>r({...a,field:m.target.value})}>
        <option value="selector">workload</option>
        <option value="query">PromQL symptom</option>
        <option value="log_query">LogQL symptom</option>
        <option value="alert">alert labels</option>
      </select>
      <input class="wide" aria-label="symptom" data-testid="symptom-input" value=${a.text}
        placeholder=${N[a.field]} onInput=${m=>r({...a,text:m.target.value})} />
      <label class="muted small">at <input aria-label="investigate at" data-testid="at-input" size="14" value=${a.at} onInput=${m=>r({...a,at:m.target.value})} /></label>
      <button type="submit" data-testid="run">Investigate</button>
    </form>
    ${l.empty?s`<p class="muted">Name a symptom: a workload (<code>{run_id="r42"}</code>), a PromQL or LogQL query that shows it, or an alert's labels, and the time to look at. weft finds the symptom's onset, reads the workload's series, its nodes' and its logs, and ranks what changed first and stands out among peers (docs/investigation.md). Alerts and workload pages link here.</p>`:l.error?s`<div class="error">${l.error}</div>`:s`<${G} key=${JSON.stringify(l.req)+i} req=${l.req} />`}
  </section>`}var N={selector:'the workload, e.g. {run_id="r42"}',query:'a PromQL expression that shows the symptom, e.g. rate(train_steps_total{run_id="r42"}[1m])',log_query:'a LogQL query that shows the symptom, e.g. {run_id="r42"} |= "NCCL"',alert:`an alert's labels as JSON, e.g. {"run_id":"r42"}`};function G({req:t}){let o=v(i=>x.investigate(t,{signal:i}),[]);if(o.error)return s`<div class="error" data-testid="investigate-error">${o.error.message}</div>`;if(!o.data)return s`<div class="loading">Investigating… (the symptom's onset, then every series of the workload and its nodes)</div>`;let e=o.data,a=R(e),r={from:a.from,to:a.to};return s`
    <${T} rep=${e} params=${r} />
    ${e.causes.length===0?s`<div class="card" data-testid="no-cause"><p>No probable cause stands out: nothing in the workload or on its nodes changed before the symptom more than its own noise and its peers'. docs/investigation.md says what weft cannot see.</p></div>`:e.causes.map(i=>s`<${z} c=${i} win=${a} params=${r} open=${i.rank===1} />`)}
  `}function T({rep:t,params:o}){let e=t.symptom,a=Object.entries(e.context||{}).filter(([r])=>f(r)).sort(([r],[i])=>r.localeCompare(i));return s`<div class="card" data-testid="symptom" data-class=${e.class} data-onset-found=${String(e.onset_found)}>
    <div class="card-head">
      <h2>Symptom: ${e.class}</h2>
      <span class="muted small">${e.onset_found?`onset ${h(Date.parse(e.onset))}`:"no onset found: the window ends at the time asked"}</span>
      <span class="muted small" data-testid="scope">read ${p(t.scope.series)} series, ${p(t.scope.log_streams)} log streams, ${p(t.scope.log_lines)} lines in ${t.seconds.toFixed(2)} s</span>
    </div>
    <div><code>${e.selector}</code>${e.query&&s` · <a href=${$({signal:"metrics",query:e.query},o)} title="open the symptom query">${e.query}</a>`}</div>
    ${a.length>0&&s`<div class="fields" data-testid="symptom-context">
      ${a.map(([r,i])=>i.slice(0,8).map(d=>s`<${y} name=${r} value=${d} params=${o} short=${40} />`))}
    </div>`}
  </div>`}function z({c:t,win:o,params:e,open:a}){let[r,i]=u(a),d=H(t.where);return s`<div class="card cause" data-testid="cause" data-rank=${t.rank} data-kind=${t.kind}>
    <div class="card-head" onClick=${()=>i(!r)}>
      <span class="wf-toggle">${r?"\u25BE":"\u25B8"}</span>
      <h2><span class="muted">#${t.rank}</span> <span data-testid="cause-summary">${t.summary}</span></h2>
      <span class="muted small">score ${t.score.toFixed(2)} · ${t.shared?"shared by every consumer":`peer deviation ${t.peer_deviation.toFixed(1)}`} · magnitude ${t.magnitude.toFixed(1)} · ${D(t.onset_offset_seconds)}</span>
    </div>
    <div class="fields" data-testid="cause-where">
      ${d.map(([n,l,c])=>f(n)?s`<span>${c&&s`<span class="muted small">${c} </span>`}<${y} name=${n} value=${l} params=${e} short=${40} /></span>`:s`<span class="lbl">${c?c+" ":""}${n}="${l}"</span>`)}
      ${d.length>0&&s`<a href=${S(d[0][0],d[0][1],e)} data-link="workload" class="small">open ${d[0][0]}="${d[0][1]}"</a>`}
    </div>
    ${r&&s`<div data-testid="cause-evidence">
      ${E(t.evidence,t.rank===1?A:F).map(n=>s`<${M} e=${n} win=${o} />`)}
      <table class="tbl">
        <thead><tr><th>signal</th><th>evidence</th><th class="num">baseline</th><th class="num">then</th><th class="num">z</th><th>onset</th></tr></thead>
        <tbody>
          ${t.evidence.map(n=>s`<tr data-testid="evidence-row" data-signal=${n.signal}>
              <td>${n.signal}</td>
              <td><a href=${$(n,o)} title="open in its explore page">${n.what}</a> <code class="muted small">${n.query}</code></td>
              <td class="num">${g(n.baseline)}</td>
              <td class="num">${g(n.value)}</td>
              <td class="num">${n.z.toFixed(1)}</td>
              <td class="small">${h(Date.parse(n.onset))}</td>
            </tr>`)}
        </tbody>
      </table>
    </div>`}
  </div>`}function M({e:t,win:o}){let e=L(o.end-o.start,240,1e3),a=Math.floor(o.start/e)*e,r=v(async i=>{let d=await k.queryRange(t.query,a,o.end,e,{signal:i});return _([{query:t.query,result:d.result}],a,o.end,e)},[t.query,a,o.end,e]);return s`<div class="evidence-graph">
    <div class="card-head"><b>${t.what}</b><a href=${$(t,o)}>open in metrics explore</a></div>
    ${r.error?s`<div class="error">${r.error.message}</div>`:r.data?s`<${C} data=${r.data} from=${o.from} to=${o.to} height=${160} testid="evidence-graph" legend=${!1} />`:s`<div class="loading">…</div>`}
  </div>`}export{I as default};
