import{d as a,g as l,h as c,i}from"./chunk-ZGKEYWBR.js";import{g as o}from"./chunk-OKC6WX42.js";function k({pairs:t,from:e,to:n,workload:r=!0}){if(!t||!t.length)return o`<span class="ctx-links muted">no shared workload context</span>`;let s=a(t);return o`<span class="ctx-links" data-testid="context-links">
    <a href=${c(t,e,n)} data-link="logs" title=${`Logs of ${s}, same window`}>logs of this context</a>
    <a href=${i(t,e,n)} data-link="metrics" title=${`Metrics of ${s}`}>metrics of this context</a>
    ${r&&o`<a href=${l(t[0][0],t[0][1],{from:e,to:n})} data-link="workload">workload ${t[0][0]}="${t[0][1]}"</a>`}
  </span>`}export{k as a};
