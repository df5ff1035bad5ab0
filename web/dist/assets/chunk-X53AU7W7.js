import{j as v}from"./chunk-ZGKEYWBR.js";import{j as g}from"./chunk-JIL5HOX7.js";import{c as $,g as a,i as u}from"./chunk-OKC6WX42.js";function E(t){let e=[];for(let n of t||[]){let r=n.stream||{};for(let s of n.values||[]){let l=s[2]||{};e.push({ts:s[0],ms:O(s[0]),line:s[1],stream:r,metadata:l.structuredMetadata||{},parsed:l.parsed||{}})}}return e.sort((n,r)=>b(r.ts,n.ts)),e}function O(t){let e=String(t);return e.length<=6?Number(e)/1e6:Number(e.slice(0,-6))+Number(e.slice(-6))/1e6}function b(t,e){return t=String(t),e=String(e),t.length!==e.length?t.length-e.length:t<e?-1:t>e?1:0}function x(t){for(let e of[t.metadata,t.stream,t.parsed])for(let n of["detected_level","level","severity","lvl"])if(e&&e[n])return String(e[n]).toLowerCase();return"unknown"}var h={critical:"#8e1b9b",fatal:"#8e1b9b",error:"#d63b3b",warn:"#e39a1c",warning:"#e39a1c",info:"#2f8f4e",debug:"#3d7dd8",trace:"#7b8ea8",unknown:"#9aa0a6"};function w(t){return h[t]||h.unknown}function I(t){return/^\s*\{/.test(t||"")}function M(t,e){let n=Math.max(1,Math.round(e/1e3));return`sum by (detected_level) (count_over_time(${t.trim()} [${n}s]))`}var S=["trace_id","traceid","traceID","traceId","trace"],N=/\btrace_?id["']?\s*[=:]\s*["']?([0-9a-fA-F]{16,32})\b/i;function L(t){for(let n of[t.metadata,t.parsed,t.stream])for(let r of S)if(n&&n[r])return String(n[r]);let e=N.exec(t.line||"");return e?e[1].toLowerCase():""}function _(t){return S.includes(t)}function k(t,e,n){let r=e.concat(t);return r.sort((s,l)=>b(l.ts,s.ts)),r.length>n?r.slice(0,n):r}function H({entries:t,params:e,max:n=1e3,testid:r="log-lines"}){let[s,l]=$(()=>new Set),m=t.slice(0,n),y=o=>{let c=new Set(s);c.has(o)?c.delete(o):c.add(o),l(c)};return t.length?a`<div class="loglines" data-testid=${r} data-count=${m.length}>
    ${m.map((o,c)=>{let p=o.ts+"\0"+c,i=x(o),d=L(o);return a`<div class="logline" data-testid="log-line" data-level=${i}>
        <div class="logline-main" onClick=${()=>y(p)}>
          <span class="lvl" style=${{background:w(i)}} title=${i}></span>
          <span class="ts">${g(o.ms,!0)}</span>
          <span class="text">${o.line}</span>
          ${d&&a`<a class="trace" href=${u(["traces",d],{})} data-trace=${d} onClick=${C=>C.stopPropagation()}>trace</a>`}
        </div>
        ${s.has(p)&&a`<${T} e=${o} params=${e} />`}
      </div>`})}
    ${t.length>n&&a`<div class="muted">${t.length-n} more lines not shown</div>`}
  </div>`:a`<div class="muted" data-testid=${r} data-count="0">No log lines in this range.</div>`}function f({title:t,obj:e,params:n}){let r=Object.keys(e||{}).sort();return r.length?a`<div class="fields"><span class="muted">${t}</span>
    ${r.map(s=>_(s)?a`<a class="lbl trace" href=${u(["traces",e[s]],{})} data-trace=${e[s]}>${s}="${e[s]}"</a>`:a`<${v} name=${s} value=${e[s]} params=${n} />`)}
  </div>`:null}function T({e:t,params:e}){return a`<div class="logline-details" data-testid="log-details">
    <${f} title="labels" obj=${t.stream} params=${e} />
    <${f} title="metadata" obj=${t.metadata} params=${e} />
    <${f} title="parsed" obj=${t.parsed} params=${e} />
  </div>`}export{E as a,w as b,I as c,M as d,k as e,H as f};
