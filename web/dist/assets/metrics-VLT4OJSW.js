import{a as G}from"./chunk-YDVJ5YTJ.js";import{a as C,b as M,c as Q}from"./chunk-64TZZIZX.js";import{a as R}from"./chunk-YWEBOPWF.js";import"./chunk-ZBFHLYCE.js";import{k as L}from"./chunk-ZGKEYWBR.js";import{a as y,i as S,j as x,o as _,r as E,s as w}from"./chunk-JIL5HOX7.js";import{c as P,d as T,g as t,i as q}from"./chunk-OKC6WX42.js";import"./chunk-QTRUX7X6.js";var V=300;function j({params:l,navigate:h}){let a=E(l),n=l.getAll("q").filter(r=>r.trim()!==""),p=l.get("tab")==="table"?"table":"graph",c=l.get("stacked")==="1",u=l.get("ex")!=="0",[e,i]=P(n.length?n:[""]),m=n.join("\0");T(()=>i(n.length?n:[""]),[m]);let g={q:n,from:a.from,to:a.to,refresh:a.refresh,tab:p==="table"?"table":"",stacked:c,ex:u?"":"0"},d=(r,s=!0)=>h(q(["metrics"],{...g,...r}),s),o=(r=e)=>{let s=r.filter(f=>f.trim()!==""),$=q(["metrics"],{...g,q:s});$===location.hash?a.reload():h($,!0)};return t`
    <section class="panel" data-testid="metrics-page">
      <${R} ...${a} error=${a.range.error} onChange=${r=>d(r)} onReload=${a.reload} />
      <div class="queries">
        ${e.map((r,s)=>t`<div class="query-row" key=${s}>
            <span class="qtag">#${s+1}</span>
            <${G}
              lang="promql"
              value=${r}
              testid=${"promql-editor-"+s}
              placeholder="PromQL, e.g. DCGM_FI_DEV_GPU_UTIL (Enter runs, Shift+Enter: new line)"
              onChange=${$=>i(f=>f.map((v,b)=>b===s?$:v))}
              onRun=${$=>o(e.map((f,v)=>v===s?$:f))}
            />
            ${e.length>1&&t`<button class="link" title="remove this query" onClick=${()=>o(e.filter(($,f)=>f!==s))}>✕</button>`}
          </div>`)}
      </div>
      <div class="toolbar">
        <button data-testid="run" onClick=${()=>o()}>Run</button>
        <button class="link" onClick=${()=>i([...e,""])}>+ query</button>
        <span class="tabs">
          <button class=${p==="graph"?"on":""} onClick=${()=>d({tab:""},!1)}>Graph</button>
          <button class=${p==="table"?"on":""} data-testid="tab-table" onClick=${()=>d({tab:"table"},!1)}>Table</button>
        </span>
        ${p==="graph"&&t`<label><input type="checkbox" checked=${c} onChange=${r=>d({stacked:r.target.checked},!1)} /> stacked</label>
          <label><input type="checkbox" checked=${u} onChange=${r=>d({ex:r.target.checked?"":"0"},!1)} /> exemplars</label>`}
      </div>
      ${n.length===0?t`<p class="muted">Type a PromQL query and press Enter. Label values of workload keys (run_id, model, gpu_uuid, …) open their workload page.</p>`:a.range.error?null:p==="graph"?t`<${A} queries=${n} range=${a.range} tick=${a.tick} from=${a.from} to=${a.to} stacked=${c} showEx=${u}
                onZoom=${(r,s)=>d({from:String(r),to:String(s)})} />`:t`<${D} queries=${n} range=${a.range} tick=${a.tick} from=${a.from} to=${a.to} />`}
    </section>
  `}function A({queries:l,range:h,tick:a,from:n,to:p,stacked:c,showEx:u,onZoom:e}){let{start:i,end:m}=h,g=S(m-i,V),d=Math.floor(i/g)*g,o=w(async r=>{let s=u?Promise.all(l.map(b=>y.exemplars(b,d,m,{signal:r}).then(k=>k||[],()=>[]))):Promise.resolve([]),$=await Promise.all(l.map(b=>y.queryRange(b,d,m,g,{signal:r}).then(k=>({query:b,result:k.result}),k=>({query:b,result:[],error:k})))),f=await s,v=C($,d,m,g);return v.multi=l.length>1,{data:v,errors:$.filter(b=>b.error),exemplars:Q(f.flat())}},[l.join("\0"),d,m,g,u,a]);return t`<div>
    ${o.error&&t`<div class="error">${String(o.error.message||o.error)}</div>`}
    ${o.data&&o.data.errors.map(r=>t`<div class="error" data-testid="query-error">${r.query}: ${r.error.message}</div>`)}
    ${o.loading&&!o.data&&t`<div class="loading">Querying…</div>`}
    ${o.data&&t`<${M} data=${o.data.data} stacked=${c} exemplars=${o.data.exemplars} from=${n} to=${p} onZoom=${e} />`}
    <div class="muted small">step ${g/1e3}s · ${x(d)} → ${x(m)}</div>
  </div>`}function D({queries:l,range:h,tick:a,from:n,to:p}){let c=w(u=>Promise.all(l.map(e=>y.query(e,h.end,{signal:u}).then(i=>({q:e,d:i}),i=>({q:e,e:i})))),[l.join("\0"),h.end,a]);return c.loading&&!c.data?t`<div class="loading">Querying…</div>`:c.error?t`<div class="error">${String(c.error.message)}</div>`:t`<div data-testid="table-view">
    ${c.data.map(({q:u,d:e,e:i})=>t`<div class="result-table">
        <div class="muted"><code>${u}</code> at ${x(h.end)}</div>
        ${i?t`<div class="error">${i.message}</div>`:e.resultType==="vector"?t`<table class="tbl">
                <thead><tr><th>series</th><th class="num">value</th></tr></thead>
                <tbody>
                  ${e.result.length===0&&t`<tr><td colspan="2" class="muted">empty result</td></tr>`}
                  ${e.result.map(m=>t`<tr data-testid="table-row"><td><${L} metric=${m.metric} params=${{from:n,to:p}} /></td><td class="num">${_(m.value[1])}</td></tr>`)}
                </tbody>
              </table>`:t`<div>${e.resultType}: <b>${e.resultType==="scalar"||e.resultType==="string"?e.result[1]:JSON.stringify(e.result)}</b></div>`}
      </div>`)}
  </div>`}export{j as default};
