import{b as c,c as l,d,g as a,h as g,i as u}from"./chunk-OKC6WX42.js";var f=[{name:"metrics",title:"Metrics",load:()=>import("./metrics-2ZHW2KCJ.js")},{name:"logs",title:"Logs",load:()=>import("./logs-7OCRJMIV.js")},{name:"traces",title:"Traces",load:()=>import("./traces-KUZLRWDI.js")},{name:"workload",title:"Workload",nav:!1,load:()=>import("./workload-HAYK2GAE.js")},{name:"cardinality",title:"Cardinality",load:()=>import("./cardinality-ZCUOAMVA.js")},{name:"alerts",title:"Alerts",load:()=>import("./alerts-7O3ZSPX3.js")},{name:"investigate",title:"Investigation",pending:"Investigation (symptom \u2192 ranked causes) lands with the /weft/api/v1/investigate API."},{name:"status",title:"Status",load:()=>import("./status-Q4SK5KWL.js")}],w="metrics";function m(e,t=f){let i=e.length?e[0]:w;return t.find(r=>r.name===i)||null}function b({route:e}){return a`
    <section class="panel pending" data-testid="pending" data-route=${e.name}>
      <h1>${e.title}: not in this build yet</h1>
      <p>${e.pending}</p>
    </section>
  `}function y(){let[e,t]=l(location.hash);return d(()=>{let i=()=>t(location.hash);return addEventListener("hashchange",i),()=>removeEventListener("hashchange",i)},[]),e}function k(e,t=!0){e!==location.hash&&(t?location.hash=e:(history.replaceState(null,"",e),dispatchEvent(new HashChangeEvent("hashchange"))))}var s=new Map;function z({route:e,path:t,params:i}){let[r,n]=l(()=>s.get(e.name)||null),[o,h]=l(null);if(d(()=>{if(e.pending)return;if(s.has(e.name)){n(s.get(e.name));return}n(null);let x=!0;return e.load().then(p=>{s.set(e.name,p),x&&n(p)},p=>x&&h(p)),()=>{x=!1}},[e]),e.pending)return a`<${b} route=${e} path=${t} />`;if(o)return a`<div class="error">Loading the page failed: ${String(o)}</div>`;if(!r)return a`<div class="loading">Loading…</div>`;let v=r.default;return a`<${v} path=${t} params=${i} navigate=${k} />`}function $(){let e=y(),{path:t,params:i}=g(e),r=m(t),n=r?r.name:"";return d(()=>{document.title=r?`${r.title} \xB7 weft`:"weft"},[n]),a`
    <header class="top">
      <a class="brand" href="#/">weft</a>
      <nav>
        ${f.filter(o=>o.nav!==!1).map(o=>o.pending?a`<span class="nav-pending" title=${o.pending} data-pending=${o.name}>${o.title}<small>soon</small></span>`:a`<a href=${u([o.name],{})} class=${n===o.name?"active":""}>${o.title}</a>`)}
      </nav>
    </header>
    <main>
      ${r?a`<${z} key=${r.name} route=${r} path=${t.slice(1)} params=${i} />`:a`<div class="error">No page at "${e}". <a href="#/">Go to the metrics page</a>.</div>`}
    </main>
  `}c(a`<${$} />`,document.getElementById("app"));export{k as navigate};
