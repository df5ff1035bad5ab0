import{b as c,c as l,d,g as a,h as g,i as u}from"./chunk-OKC6WX42.js";var f=[{name:"metrics",title:"Metrics",load:()=>import("./metrics-LIVNWWRU.js")},{name:"logs",title:"Logs",load:()=>import("./logs-O3CU2HHE.js")},{name:"traces",title:"Traces",load:()=>import("./traces-7CJTSM2H.js")},{name:"workload",title:"Workload",nav:!1,load:()=>import("./workload-DH62UNXT.js")},{name:"cardinality",title:"Cardinality",load:()=>import("./cardinality-JTXWIBDR.js")},{name:"alerts",title:"Alerts",load:()=>import("./alerts-4W4OSXSM.js")},{name:"investigate",title:"Investigation",load:()=>import("./investigate-O5QZLT67.js")},{name:"status",title:"Status",load:()=>import("./status-E3QUCTLT.js")}],v="metrics";function b(e,o=f){let t=e.length?e[0]:v;return o.find(r=>r.name===t)||null}function w(){let[e,o]=l(location.hash);return d(()=>{let t=()=>o(location.hash);return addEventListener("hashchange",t),()=>removeEventListener("hashchange",t)},[]),e}function y(e,o=!0){e!==location.hash&&(o?location.hash=e:(history.replaceState(null,"",e),dispatchEvent(new HashChangeEvent("hashchange"))))}var s=new Map;function k({route:e,path:o,params:t}){let[r,n]=l(()=>s.get(e.name)||null),[i,m]=l(null);if(d(()=>{if(s.has(e.name)){n(s.get(e.name));return}n(null);let x=!0;return e.load().then(p=>{s.set(e.name,p),x&&n(p)},p=>x&&m(p)),()=>{x=!1}},[e]),i)return a`<div class="error">Loading the page failed: ${String(i)}</div>`;if(!r)return a`<div class="loading">Loading…</div>`;let h=r.default;return a`<${h} path=${o} params=${t} navigate=${y} />`}function z(){let e=w(),{path:o,params:t}=g(e),r=b(o),n=r?r.name:"";return d(()=>{document.title=r?`${r.title} \xB7 weft`:"weft"},[n]),a`
    <header class="top">
      <a class="brand" href="#/">weft</a>
      <nav>
        ${f.filter(i=>i.nav!==!1).map(i=>a`<a href=${u([i.name],{})} class=${n===i.name?"active":""}>${i.title}</a>`)}
      </nav>
    </header>
    <main>
      ${r?a`<${k} key=${r.name} route=${r} path=${o.slice(1)} params=${t} />`:a`<div class="error">No page at "${e}". <a href="#/">Go to the metrics page</a>.</div>`}
    </main>
  `}c(a`<${z} />`,document.getElementById("app"));export{y as navigate};
