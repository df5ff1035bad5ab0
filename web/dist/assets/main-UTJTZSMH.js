import{b as g,c as l,d,g as o,h as m,i as h}from"./chunk-OKC6WX42.js";import{b as u,c as b}from"./chunk-QTRUX7X6.js";var c=[{name:"metrics",title:"Metrics",load:()=>import("./metrics-VLT4OJSW.js")},{name:"logs",title:"Logs",load:()=>import("./logs-YXZ6SCMB.js")},{name:"traces",title:"Traces",load:()=>import("./traces-N44NVR6J.js")},{name:"workload",title:"Workload",nav:!1,load:()=>import("./workload-DFZC4O6A.js")},{name:"cardinality",title:"Cardinality",load:()=>import("./cardinality-DDXWZICZ.js")},{name:"alerts",title:"Alerts",load:()=>import("./alerts-NZBJWSR6.js")},{name:"investigate",title:"Investigation",load:()=>import("./investigate-L3IIPVSI.js")},{name:"status",title:"Status",load:()=>import("./status-VXPHEVH4.js")}],y="metrics";function v(e,a=c){let t=e.length?e[0]:y;return a.find(r=>r.name===t)||null}function k(){let[e,a]=l(location.hash);return d(()=>{let t=()=>a(location.hash);return addEventListener("hashchange",t),()=>removeEventListener("hashchange",t)},[]),e}function z(e,a=!0){e!==location.hash&&(a?location.hash=e:(history.replaceState(null,"",e),dispatchEvent(new HashChangeEvent("hashchange"))))}var x=new Map;function $({route:e,path:a,params:t}){let[r,n]=l(()=>x.get(e.name)||null),[i,p]=l(null);if(d(()=>{if(x.has(e.name)){n(x.get(e.name));return}n(null);let f=!0;return e.load().then(s=>{x.set(e.name,s),f&&n(s)},s=>f&&p(s)),()=>{f=!1}},[e]),i)return o`<div class="error">Loading the page failed: ${String(i)}</div>`;if(!r)return o`<div class="loading">Loading…</div>`;let w=r.default;return o`<${w} path=${a} params=${t} navigate=${z} />`}function E(){let e=k(),{path:a,params:t}=m(e),r=v(a),n=r?r.name:"";return d(()=>{document.title=r?`${r.title} \xB7 weft`:"weft"},[n]),o`
    <header class="top">
      <a class="brand" href="#/">weft</a>
      <nav>
        ${c.filter(i=>i.nav!==!1).map(i=>o`<a href=${h([i.name],{})} class=${n===i.name?"active":""}>${i.title}</a>`)}
      </nav>
      <${S} />
    </header>
    <main>
      ${r?o`<${$} key=${r.name} route=${r} path=${a.slice(1)} params=${t} />`:o`<div class="error">No page at "${e}". <a href="#/">Go to the metrics page</a>.</div>`}
    </main>
  `}function S(){let[e]=l(u),[a,t]=l(e),[r,n]=l(!1);return d(()=>{let p=()=>n(!0);return addEventListener("weft-tenant-needed",p),()=>removeEventListener("weft-tenant-needed",p)},[]),!e&&!r?null:o`<form class="tenant" data-testid="tenant-picker" onSubmit=${p=>{p.preventDefault(),a.trim()!==e&&(b(a),location.reload())}} title="the tenant every request names (X-Scope-OrgID); a|b reads several where federation is on">
    <label>tenant <input aria-label="tenant" data-testid="tenant-input" size="12" value=${a} onInput=${p=>t(p.target.value)} /></label>
    <button type="submit">set</button>
  </form>`}g(o`<${E} />`,document.getElementById("app"));export{z as navigate};
