import{a as o,f as h,k as v,m as u,o as y}from"./chunk-J4NSEN2R.js";import{b as g,f as r}from"./chunk-2CBU4SAF.js";function x(a){let s=[];for(let l of String(a).split(`
`)){let n=l.trim();if(!n||n.startsWith("#"))continue;let e=/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(n);if(!e)continue;let m={};if(e[3]){let p=/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;for(let c of e[3].matchAll(p))m[c[1]]=c[2].replace(/\\(.)/g,(i,d)=>d==="n"?`
`:d)}s.push({name:e[1],labels:m,value:Number(e[4])})}return s}function w(){let a=y(async t=>{let[b,$,S,T,j]=await Promise.all([o.buildInfo({signal:t}),o.runtimeInfo({signal:t}),o.flags({signal:t}),o.tsdbStatus(1,{signal:t}),o.metricsText({signal:t})]);return{build:b,runtime:$,flags:S,tsdb:T,metrics:x(j)}},[]),[s,l]=g("weft_");if(a.error)return r`<section class="panel"><div class="error">${a.error.message}</div></section>`;if(!a.data)return r`<section class="panel"><div class="loading">Loading…</div></section>`;let{build:n,runtime:e,flags:m,tsdb:p,metrics:c}=a.data,i=p.headStats||{},d=c.filter(t=>t.name.includes(s));return r`<section class="panel" data-testid="status-page">
    <div class="tables">
      <${f} title="build" testid="buildinfo" obj=${n} />
      <${f} title="runtime" testid="runtimeinfo" obj=${e} />
      <${f} title="storage" testid="storage" obj=${{series:u(i.numSeries||0),"label pairs":u(i.numLabelPairs||0),"open head chunks":u(i.chunkCount||0),"oldest sample":i.minTime>0?h(i.minTime):"\u2014","newest sample":i.maxTime>0?h(i.maxTime):"\u2014"}} />
    </div>
    <div class="card" data-testid="self-metrics">
      <div class="card-head"><h2>weft's metrics</h2><input aria-label="filter metrics" value=${s} onInput=${t=>l(t.target.value)} /><span class="muted">${d.length} of ${c.length} samples from /metrics</span></div>
      <table class="tbl">
        <tbody>
          ${d.slice(0,500).map(t=>r`<tr><td><code>${t.name}</code>${Object.keys(t.labels).length?r` <span class="muted">${Object.entries(t.labels).map(([b,$])=>`${b}="${$}"`).join(", ")}</span>`:""}</td><td class="num">${v(t.value)}</td></tr>`)}
        </tbody>
      </table>
    </div>
    <${f} title="flags" testid="flags" obj=${m} />
  </section>`}function f({title:a,obj:s,testid:l}){let n=Object.keys(s||{}).sort();return r`<div class="card" data-testid=${l}>
    <h2>${a}</h2>
    <table class="tbl kv">
      <tbody>${n.map(e=>r`<tr><th>${e}</th><td><code>${typeof s[e]=="object"?JSON.stringify(s[e]):String(s[e])}</code></td></tr>`)}</tbody>
    </table>
  </div>`}export{w as default};
