import{a as O}from"./chunk-YDVJ5YTJ.js";import{b as V,d as M,e as X,f as q,g as j,h as F,i as v,j as I,k as y,l as w,m as H,n as G,o as b,p as K,q as U,r as z,s as B}from"./chunk-2HUWU542.js";import{a as P}from"./chunk-YWEBOPWF.js";import{a as W}from"./chunk-ZBFHLYCE.js";import{j as Q}from"./chunk-ZGKEYWBR.js";import{c as k,j as C,q as R,r as _,s as N}from"./chunk-JIL5HOX7.js";import{c as h,d as T,e as D,f as E,g as a,i as u}from"./chunk-OKC6WX42.js";import"./chunk-QTRUX7X6.js";var J=5*6e4,et=30*6e4;function Z({span:t,trace:i}){let o=b(t,J),e=b(t,et),c=b({startNs:i.startNs,endNs:i.endNs},J),r=V(t.resource),$=i.services.map(n=>n.name),l={from:e.from,to:e.to};return a`<div class="span-details" data-testid="span-details" data-span=${t.id}>
    <div class="span-facts">
      <span><span class="muted">service</span> <b>${t.service}</b></span>
      <span><span class="muted">kind</span> ${t.kind}</span>
      <span><span class="muted">status</span> <span class=${t.status==="error"?"err-count":""} data-testid="span-status">${t.status}</span>${t.statusMessage&&a`: ${t.statusMessage}`}</span>
      <span><span class="muted">duration</span> ${v(t.durationNs)}</span>
      <span><span class="muted">start</span> ${C(I(t.startNs),!0)} (+${v(t.offsetNs)})</span>
      <span><span class="muted">span</span> <code>${t.id}</code></span>
      ${t.parentId&&a`<span><span class="muted">parent</span> <code>${t.parentId}</code></span>`}
      ${t.scope&&a`<span><span class="muted">scope</span> ${t.scope}</span>`}
    </div>
    <div class="span-links" data-testid="span-links">
      <a href=${u(["logs"],{q:w([t.service],i.traceId,t.id),...o})} data-link="span-logs">logs of this span</a>
      <a href=${u(["logs"],{q:w($,i.traceId),...c})} data-link="trace-logs">logs of this trace</a>
      <a href=${u(["metrics"],{q:H(t),...e})} data-link="span-metrics">span metrics (rate, p90)</a>
      <${W} pairs=${r} from=${o.from} to=${o.to} />
    </div>
    ${r.length>0&&a`<div class="fields" data-testid="span-context"><span class="muted">context</span>
      ${r.map(([n,m])=>a`<${Q} name=${n} value=${m} params=${l} />`)}</div>`}
    <${Y} title="span attributes" obj=${t.attrs} testid="span-attrs" />
    <${Y} title="resource" obj=${t.resource} testid="resource-attrs" />
    ${t.events.length>0&&a`<div class="attrs" data-testid="span-events"><div class="muted">events</div>
      <table class="tbl kv"><tbody>${t.events.map(n=>a`<tr><th>+${v(n.offsetNs)} ${n.name}</th><td>${Object.entries(n.attrs).map(([m,d])=>a`<div><code>${m}</code> = <code>${q(d)}</code></div>`)}</td></tr>`)}</tbody></table></div>`}
    ${t.links.length>0&&a`<div class="attrs"><div class="muted">links</div>
      ${t.links.map(n=>a`<div><a href=${u(["traces",n.traceId],{span:n.spanId})}>${n.traceId} / ${n.spanId}</a></div>`)}</div>`}
  </div>`}function Y({title:t,obj:i,testid:o}){let e=Object.keys(i||{}).sort();return e.length?a`<div class="attrs" data-testid=${o}><div class="muted">${t}</div>
    <table class="tbl kv"><tbody>${e.map(c=>a`<tr data-attr=${c}><th><code>${c}</code></th><td><code>${q(i[c])}</code></td></tr>`)}</tbody></table>
  </div>`:null}var L=2e3,rt=14,nt=24,ot=[0,.25,.5,.75,1];function tt({trace:t,selected:i,onSelect:o}){let[e,c]=h(()=>new Set),[r,$]=h(!1),l=D(null);T(()=>{l.current&&(l.current.dataset.drawnAt=String(performance.now()))},[t]);let n=E(()=>F(t.spans,e),[t,e]),m=i&&n.length>L&&n.findIndex(s=>s.id===i)>=L,d=r||m?n:n.slice(0,L),f=Math.max(1,t.durationNs),g=s=>{let p=new Set(e);p.has(s)?p.delete(s):p.add(s),c(p)};return a`<div class="waterfall" ref=${l} data-testid="waterfall" data-rows=${d.length}>
    <div class="wf-row wf-head">
      <div class="wf-name muted">service · span</div>
      <div class="wf-bar-cell wf-ruler">
        ${ot.map(s=>a`<span style=${{left:`${s*100}%`}}>${v(s*t.durationNs)}</span>`)}
      </div>
    </div>
    ${d.map(s=>{let p=100*s.offsetNs/f,S=Math.max(.15,100*s.durationNs/f),A=y(s.service),x=s.id===i;return a`<div key=${s.id} class=${"wf-item"+(x?" selected":"")}>
        <div class=${"wf-row"+(s.status==="error"?" error":"")} data-testid="span-row" data-span=${s.id} data-depth=${s.depth}
          data-service=${s.service} data-status=${s.status} onClick=${()=>o(x?"":s.id)}>
          <div class="wf-name" style=${{paddingLeft:`${Math.min(s.depth,nt)*rt}px`}} title=${`${s.service}: ${s.name}`}>
            ${s.childCount>0?a`<button class="wf-toggle" data-testid="span-toggle" title=${e.has(s.id)?"show its children":"fold its children"}
                  onClick=${at=>{at.stopPropagation(),g(s.id)}}>${e.has(s.id)?"\u25B8":"\u25BE"}</button>`:a`<span class="wf-toggle"></span>`}
            <span class="dot" style=${{background:A}}></span>
            <span class="wf-svc">${s.service}</span>
            <span class="wf-op">${s.name}</span>
            ${s.status==="error"&&a`<span class="badge" title=${s.statusMessage||"status error"}>error</span>`}
            ${s.orphan&&a`<span class="muted small" title="its parent span was not received">(parent missing)</span>`}
            ${e.has(s.id)&&a`<span class="muted small">+${s.childCount}</span>`}
          </div>
          <div class="wf-bar-cell">
            <div class="wf-bar" style=${{left:`${p}%`,width:`${S}%`,background:A}}></div>
            <span class="wf-dur" style=${p+S>85?{right:`${100-p+.5}%`}:{left:`${p+S+.5}%`}}>${v(s.durationNs)}</span>
          </div>
        </div>
        ${x&&a`<${Z} span=${s} trace=${t} />`}
      </div>`})}
    ${d.length<n.length&&a`<div class="muted">${n.length-d.length} more spans not shown. <button class="link" onClick=${()=>$(!0)}>show all ${n.length}</button></div>`}
  </div>`}var st=20,it=["{ status = error }","{ duration > 100ms }","{ kind = server } | count() > 2"];function ct({path:t,params:i,navigate:o}){return t[0]?a`<${$t} id=${t[0]} span=${i.get("span")||""} navigate=${o} />`:a`<${dt} params=${i} navigate=${o} />`}function dt({params:t,navigate:i}){let o=_(t),e=t.get("q")||"",c=Number(t.get("limit"))||st,[r,$]=h(e);T(()=>$(e),[e]);let l={q:e,from:o.from,to:o.to,refresh:o.refresh,limit:c===st?"":c},n=(d,f=!0)=>i(u(["traces"],{...l,...d}),f),m=(d=r)=>{let f=d.trim();if(X(f)&&f.length>=16)return i(u(["traces",M(f)],{}),!0);let g=u(["traces"],{...l,q:f});g===location.hash?o.reload():i(g,!0)};return a`<section class="panel" data-testid="traces-page">
    <${P} ...${o} error=${o.range.error} onChange=${d=>n(d)} onReload=${o.reload} />
    <div class="query-row">
      <${O} lang="traceql" value=${r} testid="traceql-editor" placeholder='TraceQL, e.g. { resource.service.name = "api" && status = error }, or a trace ID (Enter runs)' onChange=${$} onRun=${m} />
    </div>
    <div class="toolbar">
      <button data-testid="run" onClick=${()=>m()}>Run</button>
      <label>traces <select value=${c} onChange=${d=>n({limit:d.target.value},!1)}>${[20,50,100,500].map(d=>a`<option value=${d}>${d}</option>`)}</select></label>
      ${!o.range.error&&a`<${pt} range=${o.range} q=${r} onAdd=${d=>$(z(r,d))} />`}
    </div>
    ${e?o.range.error?null:a`<${lt} q=${e} range=${o.range} tick=${o.tick} limit=${c} />`:a`<p class="muted">Type a TraceQL query and press Enter, or pick a tag and a value above. For example:
          ${it.map(d=>a` <a href=${u(["traces"],{...l,q:d})}><code>${d}</code></a>`)}</p>`}
  </section>`}function lt({q:t,range:i,tick:o,limit:e}){let c=N(async $=>{let l=await k.search(t,i.start,i.end,{limit:e,spss:3,signal:$});return{rows:G(l),metrics:l.metrics||{}}},[t,i.start,i.end,e,o]);if(c.error)return a`<div class="error" data-testid="query-error">${c.error.message}</div>`;if(!c.data)return a`<div class="loading">Searching…</div>`;let r=c.data.metrics;return a`<div>
    <div class="graph-head"><span class="muted">${c.data.rows.length} traces${r.inspectedTraces?` \xB7 ${R(r.inspectedTraces)} inspected`:""}</span></div>
    <${B} rows=${c.data.rows} limit=${e} />
  </div>`}function pt({range:t,q:i,onAdd:o}){let[e,c]=h(!1),[r,$]=h(""),l=N(async s=>e?k.tags("",t.start,t.end,{signal:s}):null,[e]),[n,m]=r?[r.slice(0,r.indexOf(":")),r.slice(r.indexOf(":")+1)]:["",""],d=N(async s=>r?k.tagValues(U(n,m),i.trim()||void 0,t.start,t.end,{signal:s}):null,[r]);if(!e)return a`<button class="link" data-testid="tag-picker" onClick=${()=>c(!0)}>+ tag = value</button>`;let f=l.data&&l.data.scopes||[],g=d.data&&d.data.tagValues||[];return a`<span class="tag-picker" data-testid="tag-picker-open">
    <select aria-label="tag" value=${r} onChange=${s=>$(s.target.value)}>
      <option value="">${l.data?"tag\u2026":l.error?"tags failed":"loading tags\u2026"}</option>
      ${f.map(s=>a`<optgroup label=${s.name}>${(s.tags||[]).map(p=>a`<option value=${s.name+":"+p}>${s.name==="intrinsic"?p:`${s.name}.${p}`}</option>`)}</optgroup>`)}
    </select>
    ${r&&a`<select aria-label="value" data-testid="tag-value" onChange=${s=>{let p=g[Number(s.target.value)];p&&o(K(n,m,p)),s.target.value=""}}>
      <option value="">${d.data?`${g.length} values\u2026`:d.error?"values failed":"loading values\u2026"}</option>
      ${g.map((s,p)=>a`<option value=${p}>${s.value}</option>`)}
    </select>`}
  </span>`}function $t({id:t,span:i,navigate:o}){let e=M(t),c=N(async n=>j(await k.trace(e,{signal:n})),[e]);if(c.error)return c.error.status===404?a`<section class="panel" data-testid="trace-missing">
        <h1>Trace <code data-testid="trace-id">${e}</code> not found</h1>
        <p>weft holds no span of this trace (it may be older than the trace retention, or not sent yet).
          <a href=${u(["logs"],{q:w([],e)})}>Logs with this trace_id</a>.</p>
      </section>`:a`<section class="panel"><div class="error">${c.error.message}</div></section>`;if(!c.data)return a`<section class="panel"><div class="loading">Reading trace ${e}…</div></section>`;let r=c.data;if(!r.spans.length)return a`<section class="panel"><p class="muted">Trace ${e} has no spans.</p></section>`;let $=r.spans[0],l=b({startNs:r.startNs,endNs:r.endNs},5*6e4);return a`<section class="panel" data-testid="trace-view" data-trace=${e} data-spans=${r.spans.length}>
    <h1 class="trace-title"><span class="dot" style=${{background:y($.service)}}></span>${$.service}: ${$.name}</h1>
    <div class="span-facts" data-testid="trace-facts">
      <span><span class="muted">trace</span> <code data-testid="trace-id">${e}</code></span>
      <span><span class="muted">start</span> ${C(I(r.startNs),!0)}</span>
      <span><span class="muted">duration</span> <b>${v(r.durationNs)}</b></span>
      <span><span class="muted">spans</span> ${r.spans.length}</span>
      ${r.errors>0&&a`<span class="err-count">${r.errors} error${r.errors>1?"s":""}</span>`}
      ${r.partial&&a`<span class="muted">partial</span>`}
      <a href=${u(["logs"],{q:w(r.services.map(n=>n.name),e),...l})} data-link="trace-logs">logs of this trace</a>
      <a href=${u(["traces"],{q:`{ trace:id = "${e}" }`,...l})}>in search</a>
    </div>
    <div class="svc-legend">${r.services.map(n=>a`<span class="svc-chip" data-testid="service-chip"><span class="dot" style=${{background:y(n.name)}}></span>${n.name} <span class="muted">${n.spans}${n.errors?`, ${n.errors} err`:""}</span></span>`)}</div>
    <${tt} trace=${r} selected=${i} onSelect=${n=>o(u(["traces",e],{span:n}),!1)} />
  </section>`}export{ct as default};
