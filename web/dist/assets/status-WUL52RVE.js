import{a as o,i as h,n as g,p as u,r as y}from"./chunk-IQWNYB5I.js";import{c as v,g as n}from"./chunk-OKC6WX42.js";function x(a){let s=[];for(let l of String(a).split(`
`)){let r=l.trim();if(!r||r.startsWith("#"))continue;let e=/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(r);if(!e)continue;let c={};if(e[3]){let m=/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;for(let i of e[3].matchAll(m))c[i[1]]=i[2].replace(/\\(.)/g,(p,t)=>t==="n"?`
`:t)}let d=e[4]==="+Inf"?1/0:e[4]==="-Inf"?-1/0:Number(e[4]);Number.isNaN(d)&&e[4]!=="NaN"||s.push({name:e[1],labels:c,value:d})}return s}function N(){let a=y(async t=>{let[b,$,S,T,I]=await Promise.all([o.buildInfo({signal:t}),o.runtimeInfo({signal:t}),o.flags({signal:t}),o.tsdbStatus(1,{signal:t}),o.metricsText({signal:t})]);return{build:b,runtime:$,flags:S,tsdb:T,metrics:x(I)}},[]),[s,l]=v("weft_");if(a.error)return n`<section class="panel"><div class="error">${a.error.message}</div></section>`;if(!a.data)return n`<section class="panel"><div class="loading">Loading…</div></section>`;let{build:r,runtime:e,flags:c,tsdb:d,metrics:m}=a.data,i=d.headStats||{},p=m.filter(t=>t.name.includes(s)&&!t.name.endsWith("_bucket"));return n`<section class="panel" data-testid="status-page">
    <div class="tables">
      <${f} title="build" testid="buildinfo" obj=${r} />
      <${f} title="runtime" testid="runtimeinfo" obj=${e} />
      <${f} title="storage" testid="storage" obj=${{series:u(i.numSeries||0),"label pairs":u(i.numLabelPairs||0),"open head chunks":u(i.chunkCount||0),"oldest sample":i.minTime>0?h(i.minTime):"\u2014","newest sample":i.maxTime>0?h(i.maxTime):"\u2014"}} />
    </div>
    <div class="card" data-testid="self-metrics">
      <div class="card-head"><h2>weft's metrics</h2><input aria-label="filter metrics" value=${s} onInput=${t=>l(t.target.value)} /><span class="muted">${p.length} of ${m.length} samples from /metrics</span></div>
      <div class="scroll"><table class="tbl">
        <tbody>
          ${p.slice(0,500).map(t=>n`<tr><td><code>${t.name}</code>${Object.keys(t.labels).length?n` <span class="muted">${Object.entries(t.labels).map(([b,$])=>`${b}="${$}"`).join(", ")}</span>`:""}</td><td class="num">${g(t.value)}</td></tr>`)}
        </tbody>
      </table></div>
    </div>
    <${f} title="flags" testid="flags" obj=${c} />
  </section>`}function f({title:a,obj:s,testid:l}){let r=Object.keys(s||{}).sort();return n`<div class="card" data-testid=${l}>
    <h2>${a}</h2>
    <table class="tbl kv">
      <tbody>${r.map(e=>n`<tr><th>${e}</th><td><code>${typeof s[e]=="object"?JSON.stringify(s[e]):String(s[e])}</code></td></tr>`)}</tbody>
    </table>
  </div>`}export{N as default};
