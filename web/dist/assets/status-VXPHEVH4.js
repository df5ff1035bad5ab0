import{a as o,j as h,o as y,q as p,s as x}from"./chunk-JIL5HOX7.js";import{c as v,g as a}from"./chunk-OKC6WX42.js";import"./chunk-QTRUX7X6.js";function S(i){let s=[];for(let l of String(i).split(`
`)){let n=l.trim();if(!n||n.startsWith("#"))continue;let e=/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(n);if(!e)continue;let m={};if(e[3]){let u=/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;for(let c of e[3].matchAll(u))m[c[1]]=c[2].replace(/\\(.)/g,(r,d)=>d==="n"?`
`:d)}let f=e[4]==="+Inf"?1/0:e[4]==="-Inf"?-1/0:Number(e[4]);Number.isNaN(f)&&e[4]!=="NaN"||s.push({name:e[1],labels:m,value:f})}return s}function w(){let i=x(async t=>{let[$,g,T,I,N,_]=await Promise.all([o.buildInfo({signal:t}),o.runtimeInfo({signal:t}),o.flags({signal:t}),o.tsdbStatus(1,{signal:t}),o.metricsText({signal:t}),o.config({signal:t}).catch(j=>({error:j.message}))]);return{build:$,runtime:g,flags:T,tsdb:I,metrics:S(N),config:_}},[]),[s,l]=v("weft_");if(i.error)return a`<section class="panel"><div class="error">${i.error.message}</div></section>`;if(!i.data)return a`<section class="panel"><div class="loading">Loading…</div></section>`;let{build:n,runtime:e,flags:m,tsdb:f,metrics:u,config:c}=i.data,r=f.headStats||{},d=u.filter(t=>t.name.includes(s)&&!t.name.endsWith("_bucket"));return a`<section class="panel" data-testid="status-page">
    <div class="tables">
      <${b} title="build" testid="buildinfo" obj=${n} />
      <${b} title="runtime" testid="runtimeinfo" obj=${e} />
      <${b} title="storage" testid="storage" obj=${{series:p(r.numSeries||0),"label pairs":p(r.numLabelPairs||0),"open head chunks":p(r.chunkCount||0),"oldest sample":r.minTime>0?h(r.minTime):"\u2014","newest sample":r.maxTime>0?h(r.maxTime):"\u2014"}} />
    </div>
    <div class="card" data-testid="self-metrics">
      <div class="card-head"><h2>weft's metrics</h2><input aria-label="filter metrics" value=${s} onInput=${t=>l(t.target.value)} /><span class="muted">${d.length} of ${u.length} samples from /metrics</span></div>
      <div class="scroll"><table class="tbl">
        <tbody>
          ${d.slice(0,500).map(t=>a`<tr><td><code>${t.name}</code>${Object.keys(t.labels).length?a` <span class="muted">${Object.entries(t.labels).map(([$,g])=>`${$}="${g}"`).join(", ")}</span>`:""}</td><td class="num">${y(t.value)}</td></tr>`)}
        </tbody>
      </table></div>
    </div>
    <${b} title="flags" testid="flags" obj=${m} />
    <div class="card" data-testid="config">
      <details>
        <summary><b>configuration</b> <span class="muted">the effective configuration (defaults, the -config file, the flags; secrets redacted), as a -config file</span></summary>
        ${c.error?a`<div class="error">${c.error}</div>`:a`<pre class="config">${c.yaml}</pre>`}
      </details>
    </div>
  </section>`}function b({title:i,obj:s,testid:l}){let n=Object.keys(s||{}).sort();return a`<div class="card" data-testid=${l}>
    <h2>${i}</h2>
    <table class="tbl kv">
      <tbody>${n.map(e=>a`<tr><th>${e}</th><td><code>${typeof s[e]=="object"?JSON.stringify(s[e]):String(s[e])}</code></td></tr>`)}</tbody>
    </table>
  </div>`}export{w as default};
