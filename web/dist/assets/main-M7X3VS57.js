import{b as f,c as l,d,g as t,h as m,i as s}from"./chunk-OKC6WX42.js";var g=[{name:"metrics",title:"Metrics",load:()=>import("./metrics-4FU4FGFC.js")},{name:"logs",title:"Logs",load:()=>import("./logs-GEYOYJD6.js")},{name:"traces",title:"Traces",pending:"The trace view (TraceQL search, waterfall, span details) lands with weft's trace store and Tempo API."},{name:"workload",title:"Workload",nav:!1,load:()=>import("./workload-JWFBM6KQ.js")},{name:"cardinality",title:"Cardinality",load:()=>import("./cardinality-HRNOS3F6.js")},{name:"alerts",title:"Alerts",pending:"Alerts and rules land with weft's rule evaluation (issue: rules and alerting)."},{name:"investigate",title:"Investigation",pending:"Investigation (symptom \u2192 ranked causes) lands with the /weft/api/v1/investigate API."},{name:"status",title:"Status",load:()=>import("./status-BWLSQO4B.js")}],w="metrics";function u(e,a=g){let o=e.length?e[0]:w;return a.find(i=>i.name===o)||null}function h({route:e,path:a}){let o=e.name==="traces"&&a[0]?a[0]:"";return t`
    <section class="panel pending" data-testid="pending" data-route=${e.name}>
      <h1>${e.title}: not in this build yet</h1>
      <p>${e.pending}</p>
      ${o&&t`<p>
        Trace <code data-testid="trace-id">${o}</code>:
        <a href=${s(["logs"],{q:`{service_name=~".+"} | trace_id="${o}"`})}>logs of this trace</a>
        (lines whose structured metadata has this trace_id).
      </p>`}
    </section>
  `}function y(){let[e,a]=l(location.hash);return d(()=>{let o=()=>a(location.hash);return addEventListener("hashchange",o),()=>removeEventListener("hashchange",o)},[]),e}function k(e,a=!0){e!==location.hash&&(a?location.hash=e:(history.replaceState(null,"",e),dispatchEvent(new HashChangeEvent("hashchange"))))}var x=new Map;function $({route:e,path:a,params:o}){let[i,n]=l(()=>x.get(e.name)||null),[r,b]=l(null);if(d(()=>{if(e.pending)return;if(x.has(e.name)){n(x.get(e.name));return}n(null);let c=!0;return e.load().then(p=>{x.set(e.name,p),c&&n(p)},p=>c&&b(p)),()=>{c=!1}},[e]),e.pending)return t`<${h} route=${e} path=${a} />`;if(r)return t`<div class="error">Loading the page failed: ${String(r)}</div>`;if(!i)return t`<div class="loading">Loading…</div>`;let v=i.default;return t`<${v} path=${a} params=${o} navigate=${k} />`}function z(){let e=y(),{path:a,params:o}=m(e),i=u(a),n=i?i.name:"";return d(()=>{document.title=i?`${i.title} \xB7 weft`:"weft"},[n]),t`
    <header class="top">
      <a class="brand" href="#/">weft</a>
      <nav>
        ${g.filter(r=>r.nav!==!1).map(r=>r.pending?t`<span class="nav-pending" title=${r.pending} data-pending=${r.name}>${r.title}<small>soon</small></span>`:t`<a href=${s([r.name],{})} class=${n===r.name?"active":""}>${r.title}</a>`)}
      </nav>
    </header>
    <main>
      ${i?t`<${$} key=${i.name} route=${i} path=${a.slice(1)} params=${o} />`:t`<div class="error">No page at "${e}". <a href="#/">Go to the metrics page</a>.</div>`}
    </main>
  `}f(t`<${z} />`,document.getElementById("app"));export{k as navigate};
