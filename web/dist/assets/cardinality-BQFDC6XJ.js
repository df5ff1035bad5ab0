import{a as x,b as B,c as L,j as f}from"./chunk-VR5J33EE.js";import{a as h,e as g,j as p,p as w,q as u,s as C}from"./chunk-QHFXQTYC.js";import{c as y,d as v,g as a,i as d}from"./chunk-OKC6WX42.js";import"./chunk-QTRUX7X6.js";var T=[10,20,50,100];function V({params:l,navigate:n}){let o=l.get("match")||"",s=Number(l.get("limit"))||10,i=l.get("focus")||"",[m,c]=y(o);v(()=>c(o),[o]);let r=t=>n(d(["cardinality"],{match:o,limit:s===10?"":s,focus:i,...t}),!0),e=C(async t=>o||i?g.cardinality(o?[o]:[],s,i,{signal:t}):h.tsdbStatus(s,{signal:t}),[o,s,i]);return a`<section class="panel" data-testid="cardinality-page">
    <form class="toolbar" onSubmit=${t=>(t.preventDefault(),r({match:m.trim()}))}>
      <input class="wide" aria-label="selector" placeholder='series selector to drill into, e.g. {run_id="r42"} (empty: the whole store)' value=${m} onInput=${t=>c(t.target.value)} />
      <button type="submit">Show</button>
      <label>top <select value=${s} onChange=${t=>r({limit:t.target.value})}>${T.map(t=>a`<option value=${t}>${t}</option>`)}</select></label>
      <label>focus label <select value=${i} onChange=${t=>r({focus:t.target.value})}>
        <option value="">none</option>${x.map(t=>a`<option value=${t}>${t}</option>`)}</select></label>
    </form>
    ${e.error&&a`<div class="error">${e.error.message}</div>`}
    ${e.loading&&!e.data&&a`<div class="loading">Counting…</div>`}
    ${e.data&&a`<${_} d=${e.data} match=${o} go=${r} focus=${i} />`}
  </section>`}function _({d:l,match:n,go:o,focus:s}){let i=l.headStats||{},m=i.numSeries||0,c=(e,t)=>{let $=`${e}="${L(t)}"`,S=n?n.replace(/\}\s*$/,`, ${$}}`):`{${$}}`;return d(["cardinality"],{match:S,focus:s})},r=e=>{let t=e.name.indexOf("=");return[e.name.slice(0,t),e.name.slice(t+1)]};return a`<div>
    <div class="stats-line" data-testid="cardinality-totals">
      <b>${u(m)}</b> series · <b>${u(i.numLabelPairs||0)}</b> label pairs
      ${i.minTime>0&&a` · samples ${p(i.minTime)} → ${p(i.maxTime)}`}
      ${n?a` · selector <code>${n}</code> <a href=${d(["cardinality"],{})}>whole store</a>`:a` · whole store, last day`}
      ${l.truncated&&a` · <span class="error inline">counted the first ${u(m)} series only</span>`}
    </div>
    ${s&&l.seriesCountByFocusLabelValue&&a`<${b} title=${`series by ${s}`} rows=${l.seriesCountByFocusLabelValue} total=${m} testid="focus"
      cell=${e=>a`<${f} name=${s} value=${e.name} /> <a class="small" href=${c(s,e.name)}>drill down</a>`} />`}
    <div class="tables">
      <${b} title="series by metric name" rows=${l.seriesCountByMetricName} total=${m} testid="metric-names"
        cell=${e=>a`<a href=${c("__name__",e.name)} title="drill down">${e.name}</a>`} />
      <${b} title="values by label name" rows=${l.labelValueCountByLabelName} testid="label-names"
        cell=${e=>B(e.name)?a`<a href=${d(["cardinality"],{match:n,focus:e.name})} title="focus on this label">${e.name}</a>`:e.name} />
      <${b} title="series by label pair" rows=${l.seriesCountByLabelValuePair} total=${m} testid="label-pairs"
        cell=${e=>{let[t,$]=r(e);return a`<${f} name=${t} value=${$} /> <a class="small" href=${c(t,$)}>drill down</a>`}} />
      <${b} title="label bytes by name" rows=${l.memoryInBytesByLabelName} fmt=${w} testid="label-bytes" cell=${e=>e.name} />
    </div>
  </div>`}function b({title:l,rows:n,total:o,cell:s,fmt:i=u,testid:m}){let c=Math.max(1,...(n||[]).map(r=>r.value));return a`<div class="card" data-testid=${m}>
    <h2>${l}</h2>
    <table class="tbl">
      <tbody>
        ${(n||[]).length===0&&a`<tr><td class="muted">none</td></tr>`}
        ${(n||[]).map(r=>a`<tr data-testid="card-row">
            <td>${s(r)}</td>
            <td class="num">${i(r.value)}${o?a` <span class="muted">${(100*r.value/o).toFixed(1)}%</span>`:""}</td>
            <td class="bar-cell"><span class="bar" style=${{width:`${100*r.value/c}%`}}></span></td>
          </tr>`)}
      </tbody>
    </table>
  </div>`}export{V as default};
