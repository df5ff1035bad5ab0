import{a as R}from"./chunk-ENSSQM62.js";import{a as C,b as E,d as L,e as M}from"./chunk-QJ7L5W7W.js";import{j as G}from"./chunk-LEDDEFYE.js";import{a as k,e as P,f as y,k as S,n as _,o as q}from"./chunk-46JSN3HS.js";import{c as w,d as T,g as t,i as x}from"./chunk-OKC6WX42.js";var Q=300;function V({params:l,navigate:h}){let a=_(l),n=l.getAll("q").filter(r=>r.trim()!==""),g=l.get("tab")==="table"?"table":"graph",c=l.get("stacked")==="1",$=l.get("ex")!=="0",[e,i]=w(n.length?n:[""]),m=n.join("\0");T(()=>i(n.length?n:[""]),[m]);let f={q:n,from:a.from,to:a.to,refresh:a.refresh,tab:g==="table"?"table":"",stacked:c,ex:$?"":"0"},d=(r,o=!0)=>h(x(["metrics"],{...f,...r}),o),s=(r=e)=>{let o=r.filter(p=>p.trim()!==""),b=x(["metrics"],{...f,q:o});b===location.hash?a.reload():h(b,!0)};return t`
    <section class="panel" data-testid="metrics-page">
      <${E} ...${a} error=${a.range.error} onChange=${r=>d(r)} onReload=${a.reload} />
      <div class="queries">
        ${e.map((r,o)=>t`<div class="query-row" key=${o}>
            <span class="qtag">#${o+1}</span>
            <${R}
              lang="promql"
              value=${r}
              testid=${"promql-editor-"+o}
              placeholder="PromQL, e.g. DCGM_FI_DEV_GPU_UTIL (Enter runs, Shift+Enter: new line)"
              onChange=${b=>i(p=>p.map((u,v)=>v===o?b:u))}
              onRun=${b=>s(e.map((p,u)=>u===o?b:p))}
            />
            ${e.length>1&&t`<button class="link" title="remove this query" onClick=${()=>s(e.filter((b,p)=>p!==o))}>✕</button>`}
          </div>`)}
      </div>
      <div class="toolbar">
        <button data-testid="run" onClick=${()=>s()}>Run</button>
        <button class="link" onClick=${()=>i([...e,""])}>+ query</button>
        <span class="tabs">
          <button class=${g==="graph"?"on":""} onClick=${()=>d({tab:""},!1)}>Graph</button>
          <button class=${g==="table"?"on":""} data-testid="tab-table" onClick=${()=>d({tab:"table"},!1)}>Table</button>
        </span>
        ${g==="graph"&&t`<label><input type="checkbox" checked=${c} onChange=${r=>d({stacked:r.target.checked},!1)} /> stacked</label>
          <label><input type="checkbox" checked=${$} onChange=${r=>d({ex:r.target.checked?"":"0"},!1)} /> exemplars</label>`}
      </div>
      ${n.length===0?t`<p class="muted">Type a PromQL query and press Enter. Label values of workload keys (run_id, model, gpu_uuid, …) open their workload page.</p>`:a.range.error?null:g==="graph"?t`<${j} queries=${n} range=${a.range} tick=${a.tick} from=${a.from} to=${a.to} stacked=${c} showEx=${$}
                onZoom=${(r,o)=>d({from:String(r),to:String(o)})} />`:t`<${A} queries=${n} range=${a.range} tick=${a.tick} from=${a.from} to=${a.to} />`}
    </section>
  `}function j({queries:l,range:h,tick:a,from:n,to:g,stacked:c,showEx:$,onZoom:e}){let{start:i,end:m}=h,f=P(m-i,Q),d=Math.floor(i/f)*f,s=q(async r=>{let o=await Promise.all(l.map(u=>k.queryRange(u,d,m,f,{signal:r}).then(v=>({query:u,result:v.result}),v=>({query:u,result:[],error:v})))),b=$?await Promise.all(l.map(u=>k.exemplars(u,d,m,{signal:r}).then(v=>v||[],()=>[]))):[],p=C(o,d,m,f);return p.multi=l.length>1,{data:p,errors:o.filter(u=>u.error),exemplars:M(b.flat())}},[l.join("\0"),d,m,f,$,a]);return t`<div>
    ${s.error&&t`<div class="error">${String(s.error.message||s.error)}</div>`}
    ${s.data&&s.data.errors.map(r=>t`<div class="error" data-testid="query-error">${r.query}: ${r.error.message}</div>`)}
    ${s.loading&&!s.data&&t`<div class="loading">Querying…</div>`}
    ${s.data&&t`<${L} data=${s.data.data} stacked=${c} exemplars=${s.data.exemplars} from=${n} to=${g} onZoom=${e} />`}
    <div class="muted small">step ${f/1e3}s · ${y(d)} → ${y(m)}</div>
  </div>`}function A({queries:l,range:h,tick:a,from:n,to:g}){let c=q($=>Promise.all(l.map(e=>k.query(e,h.end,{signal:$}).then(i=>({q:e,d:i}),i=>({q:e,e:i})))),[l.join("\0"),h.end,a]);return c.loading&&!c.data?t`<div class="loading">Querying…</div>`:c.error?t`<div class="error">${String(c.error.message)}</div>`:t`<div data-testid="table-view">
    ${c.data.map(({q:$,d:e,e:i})=>t`<div class="result-table">
        <div class="muted"><code>${$}</code> at ${y(h.end)}</div>
        ${i?t`<div class="error">${i.message}</div>`:e.resultType==="vector"?t`<table class="tbl">
                <thead><tr><th>series</th><th class="num">value</th></tr></thead>
                <tbody>
                  ${e.result.length===0&&t`<tr><td colspan="2" class="muted">empty result</td></tr>`}
                  ${e.result.map(m=>t`<tr data-testid="table-row"><td><${G} metric=${m.metric} params=${{from:n,to:g}} /></td><td class="num">${S(m.value[1])}</td></tr>`)}
                </tbody>
              </table>`:t`<div>${e.resultType}: <b>${e.resultType==="scalar"||e.resultType==="string"?e.result[1]:JSON.stringify(e.result)}</b></div>`}
      </div>`)}
  </div>`}export{V as default};
