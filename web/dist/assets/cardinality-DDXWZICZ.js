import{a as C,b as S,c as B,j as f}from"./chunk-ZGKEYWBR.js";import{a as w,e as p,j as m,p as x,q as d,s as y}from"./chunk-JIL5HOX7.js";import{c as v,d as g,g as e,i as h}from"./chunk-OKC6WX42.js";import"./chunk-QTRUX7X6.js";function L(n){let i=n&&n.hours||[],r=0,t=null;for(let l of i)r+=l.created,(!t||l.created>t.created)&&(t=l);let o=Math.max(1,t?t.created:0);return{total:r,peak:t&&t.created>0?{start:t.start*1e3,created:t.created}:null,hours:i.map(l=>({start:l.start*1e3,created:l.created,height:l.created/o})),days:(n&&n.partitions||[]).map(l=>({start:l.start*1e3,end:l.end*1e3,active:l.active,created:l.created,ended:l.ended}))}}var V=[10,20,50,100];function _({params:n,navigate:i}){let r=n.get("match")||"",t=Number(n.get("limit"))||10,o=n.get("focus")||"",[l,u]=v(r);g(()=>u(r),[r]);let c=s=>i(h(["cardinality"],{match:r,limit:t===10?"":t,focus:o,...s}),!0),a=y(async s=>r||o?p.cardinality(r?[r]:[],t,o,{signal:s}):w.tsdbStatus(t,{signal:s}),[r,t,o]);return e`<section class="panel" data-testid="cardinality-page">
    <form class="toolbar" onSubmit=${s=>(s.preventDefault(),c({match:l.trim()}))}>
      <input class="wide" aria-label="selector" placeholder='series selector to drill into, e.g. {run_id="r42"} (empty: the whole store)' value=${l} onInput=${s=>u(s.target.value)} />
      <button type="submit">Show</button>
      <label>top <select value=${t} onChange=${s=>c({limit:s.target.value})}>${V.map(s=>e`<option value=${s}>${s}</option>`)}</select></label>
      <label>focus label <select value=${o} onChange=${s=>c({focus:s.target.value})}>
        <option value="">none</option>${C.map(s=>e`<option value=${s}>${s}</option>`)}</select></label>
    </form>
    ${a.error&&e`<div class="error">${a.error.message}</div>`}
    ${a.loading&&!a.data&&e`<div class="loading">Counting…</div>`}
    ${a.data&&e`<${M} d=${a.data} match=${r} go=${c} focus=${o} />`}
    <${k} match=${r} />
  </section>`}function k({match:n}){let i=y(t=>p.churn(n?[n]:[],{signal:t}),[n]);if(i.error)return e`<div class="card" data-testid="churn"><h2>churn</h2><div class="error">${i.error.message}</div></div>`;if(!i.data)return null;let r=L(i.data);return e`<div class="card" data-testid="churn">
    <h2>churn, last 7 days</h2>
    <div class="stats-line" data-testid="churn-totals">
      <b>${d(r.total)}</b> series created
      ${r.peak&&e` · busiest hour ${m(r.peak.start)} with <b>${d(r.peak.created)}</b>`}
    </div>
    <div class="churn-bars" role="img" aria-label="series created per hour">
      ${r.hours.map(t=>e`<span class="churn-bar" data-testid="churn-hour" data-created=${t.created}
          title=${`${m(t.start)}: ${t.created} created`} style=${{height:`${Math.max(t.height*100,t.created?4:0)}%`}}></span>`)}
    </div>
    <table class="tbl">
      <thead><tr><th>day from</th><th class="num">active</th><th class="num">created</th><th class="num">ended</th></tr></thead>
      <tbody>
        ${r.days.map(t=>e`<tr data-testid="churn-day">
            <td>${m(t.start)}</td>
            <td class="num">${d(t.active)}</td>
            <td class="num">${t.created==null?e`<span class="muted" title="older than the index's creation record">?</span>`:d(t.created)}</td>
            <td class="num">${t.ended==null?e`<span class="muted" title="the newest day: its series may go on">–</span>`:d(t.ended)}</td>
          </tr>`)}
      </tbody>
    </table>
  </div>`}function M({d:n,match:i,go:r,focus:t}){let o=n.headStats||{},l=o.numSeries||0,u=(a,s)=>{let $=`${a}="${B(s)}"`,T=i?i.replace(/\}\s*$/,`, ${$}}`):`{${$}}`;return h(["cardinality"],{match:T,focus:t})},c=a=>{let s=a.name.indexOf("=");return[a.name.slice(0,s),a.name.slice(s+1)]};return e`<div>
    <div class="stats-line" data-testid="cardinality-totals">
      <b>${d(l)}</b> series · <b>${d(o.numLabelPairs||0)}</b> label pairs
      ${o.minTime>0&&e` · samples ${m(o.minTime)} → ${m(o.maxTime)}`}
      ${i?e` · selector <code>${i}</code> <a href=${h(["cardinality"],{})}>whole store</a>`:e` · whole store, last day`}
      ${n.truncated&&e` · <span class="error inline">counted the first ${d(l)} series only</span>`}
    </div>
    ${t&&n.seriesCountByFocusLabelValue&&e`<${b} title=${`series by ${t}`} rows=${n.seriesCountByFocusLabelValue} total=${l} testid="focus"
      cell=${a=>e`<${f} name=${t} value=${a.name} /> <a class="small" href=${u(t,a.name)}>drill down</a>`} />`}
    <div class="tables">
      <${b} title="series by metric name" rows=${n.seriesCountByMetricName} total=${l} testid="metric-names"
        cell=${a=>e`<a href=${u("__name__",a.name)} title="drill down">${a.name}</a>`} />
      <${b} title="values by label name" rows=${n.labelValueCountByLabelName} testid="label-names"
        cell=${a=>S(a.name)?e`<a href=${h(["cardinality"],{match:i,focus:a.name})} title="focus on this label">${a.name}</a>`:a.name} />
      <${b} title="series by label pair" rows=${n.seriesCountByLabelValuePair} total=${l} testid="label-pairs"
        cell=${a=>{let[s,$]=c(a);return e`<${f} name=${s} value=${$} /> <a class="small" href=${u(s,$)}>drill down</a>`}} />
      <${b} title="label bytes by name" rows=${n.memoryInBytesByLabelName} fmt=${x} testid="label-bytes" cell=${a=>a.name} />
    </div>
  </div>`}function b({title:n,rows:i,total:r,cell:t,fmt:o=d,testid:l}){let u=Math.max(1,...(i||[]).map(c=>c.value));return e`<div class="card" data-testid=${l}>
    <h2>${n}</h2>
    <table class="tbl">
      <tbody>
        ${(i||[]).length===0&&e`<tr><td class="muted">none</td></tr>`}
        ${(i||[]).map(c=>e`<tr data-testid="card-row">
            <td>${t(c)}</td>
            <td class="num">${o(c.value)}${r?e` <span class="muted">${(100*c.value/r).toFixed(1)}%</span>`:""}</td>
            <td class="bar-cell"><span class="bar" style=${{width:`${100*c.value/u}%`}}></span></td>
          </tr>`)}
      </tbody>
    </table>
  </div>`}export{_ as default};
