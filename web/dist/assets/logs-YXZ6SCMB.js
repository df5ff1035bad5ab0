import{a as C}from"./chunk-YDVJ5YTJ.js";import{a as b,b as M,c as Q,d as T,e as _,f as w}from"./chunk-X53AU7W7.js";import{a as y,b as q}from"./chunk-64TZZIZX.js";import{a as S}from"./chunk-YWEBOPWF.js";import{a as x}from"./chunk-ZBFHLYCE.js";import{f as E}from"./chunk-ZGKEYWBR.js";import{b as g,i as k,r as R,s as v}from"./chunk-JIL5HOX7.js";import{c as p,d as h,g as i,i as L}from"./chunk-OKC6WX42.js";import"./chunk-QTRUX7X6.js";var A=500,I=120,D=2e3;function U({params:s,navigate:e}){let t=R(s),r=s.get("q")||"",c=Number(s.get("limit"))||A,l=s.get("live")==="1",[o,n]=p(r);h(()=>n(r),[r]);let a={q:r,from:t.from,to:t.to,refresh:t.refresh,limit:c===A?"":c,live:l},d=(u,$=!0)=>e(L(["logs"],{...a,...u}),$),m=(u=o)=>{let $=L(["logs"],{...a,q:u.trim()});$===location.hash?t.reload():e($,!0)},f=Q(r);return i`
    <section class="panel" data-testid="logs-page">
      <${S} ...${t} error=${t.range.error} onChange=${u=>d(u)} onReload=${t.reload} />
      <div class="query-row">
        <${C} lang="logql" value=${o} testid="logql-editor" placeholder='LogQL, e.g. {run_id="r42"} |= "error" (Enter runs)' onChange=${n} onRun=${m} />
      </div>
      <div class="toolbar">
        <button data-testid="run" onClick=${()=>m()}>Run</button>
        <label>lines <select value=${c} onChange=${u=>d({limit:u.target.value},!1)}>${[100,500,1e3,5e3].map(u=>i`<option value=${u}>${u}</option>`)}</select></label>
        ${f&&i`<label title="stream new lines as they are stored"><input type="checkbox" data-testid="live" checked=${l} onChange=${u=>d({live:u.target.checked},!1)} /> live tail</label>`}
      </div>
      ${r?t.range.error?null:f?l?i`<${Z} q=${r} limit=${Math.min(c,1e3)} params=${{from:t.from,to:t.to}} />`:i`<${N} q=${r} range=${t.range} tick=${t.tick} from=${t.from} to=${t.to} onZoom=${(u,$)=>d({from:String(u),to:String($)})} />
                  <${O} q=${r} range=${t.range} tick=${t.tick} limit=${c} from=${t.from} to=${t.to} />`:i`<${V} q=${r} range=${t.range} tick=${t.tick} from=${t.from} to=${t.to} />`:i`<p class="muted">Type a LogQL query and press Enter: a stream selector such as <code>{run_id="r42"}</code>, with filters and parsers.</p>`}
    </section>
  `}function N({q:s,range:e,tick:t,from:r,to:c,onZoom:l}){let o=k(e.end-e.start,I),n=Math.floor(e.start/o)*o,a=v(async d=>{let m=await g.queryRange(T(s,o),n,e.end,{step:o,signal:d});return y([{query:"volume",result:m.result}],n,e.end,o)},[s,n,e.end,o,t]);return a.error?i`<div class="error">volume: ${a.error.message}</div>`:a.data?i`<div class="volume">
    <${q} data=${a.data} bars stacked height=${120} testid="volume" seriesColor=${d=>M(d.metric.detected_level||"unknown")} onZoom=${l} from=${void 0} />
  </div>`:i`<div class="loading">Counting lines…</div>`}function O({q:s,range:e,tick:t,limit:r,from:c,to:l}){let o=v(async a=>{let d=await g.queryRange(s,e.start,e.end,{limit:r,direction:"backward",signal:a});return b(d.result)},[s,e.start,e.end,r,t]);if(o.error)return i`<div class="error" data-testid="query-error">${o.error.message}</div>`;if(!o.data)return i`<div class="loading">Reading lines…</div>`;let n=E(P(o.data));return i`<div>
    <div class="graph-head"><span class="muted">${o.data.length} lines${o.data.length>=r?` (the newest ${r})`:""}</span>
      <${x} pairs=${n} from=${c} to=${l} />
    </div>
    <${w} entries=${o.data} params=${{from:c,to:l}} max=${r} />
  </div>`}function P(s){let e=new Set,t=[];for(let r of s)e.has(r.stream)||(e.add(r.stream),t.push(r.stream));return t}function V({q:s,range:e,tick:t,from:r,to:c}){let l=k(e.end-e.start,300),o=Math.floor(e.start/l)*l,n=v(async a=>{let d=await g.queryRange(s,o,e.end,{step:l,signal:a});return y([{query:s,result:d.result}],o,e.end,l)},[s,o,e.end,l,t]);return n.error?i`<div class="error" data-testid="query-error">${n.error.message}</div>`:n.data?i`<${q} data=${n.data} from=${r} to=${c} />`:i`<div class="loading">Querying…</div>`}function Z({q:s,limit:e,params:t}){let[r,c]=p([]),[l,o]=p("connecting");return h(()=>{c([]);let n=new WebSocket(g.tailURL(s,Date.now()-36e5,e));return n.onopen=()=>o("live"),n.onerror=()=>o("error"),n.onclose=a=>o(a.code===1e3?"closed":`closed (${a.code}${a.reason?": "+a.reason:""})`),n.onmessage=a=>{let d;try{d=JSON.parse(a.data)}catch{return}let m=b(d.streams);m.length&&c(f=>_(f,m,D))},()=>n.close(1e3)},[s,e]),i`<div data-testid="tail">
    <div class="graph-head"><span class=${"tail-status "+l}>● ${l}</span><span class="muted">${r.length} lines</span></div>
    <${w} entries=${r} params=${t} max=${D} />
  </div>`}export{U as default};
