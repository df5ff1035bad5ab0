import{a as st,f as ot}from"./chunk-L46MQAZN.js";import{a as X,b as Q,c as tt,d as et}from"./chunk-YWXZSHQN.js";import{a as O,d as Z,g as H,h as J,i as S}from"./chunk-LEDDEFYE.js";import{a as N,b as T,e as L,f as z,k as E,m as Y,n as j,o as G}from"./chunk-46JSN3HS.js";import{c as I,d as U,e as A,g as l,i as R}from"./chunk-OKC6WX42.js";var ft=["Hostname","host","node","instance"],$t=["gpu","gpu_index","minor_number","device"],gt=["UUID","gpu_uuid","hw_id"];function K(t,o){for(let e of o)if(t[e]!==void 0&&t[e]!=="")return[e,t[e]];return[null,""]}function ht(t){let[o,e]=K(t,ft),[a,n]=K(t,$t),[s,i]=K(t,gt),p=t.rank||"",$=[e,n,i,i||n?"":p].join("\0"),u=e||"";return n!==""?u+=(u?" ":"")+"gpu "+n:i?u+=(u?" ":"")+i.slice(0,12):p&&(u+=(u?" ":"")+"rank "+p),{key:$,label:u||"(unlabelled)",host:e,hostKey:o,gpu:n,gpuKey:a,uuid:i,uuidKey:s,rank:p}}function vt(t,o){if(t.host!==o.host)return t.host<o.host?-1:1;let e=Number(t.gpu),a=Number(o.gpu);return t.gpu!==o.gpu?Number.isFinite(e)&&Number.isFinite(a)&&t.gpu!==""&&o.gpu!==""?e-a:t.gpu<o.gpu?-1:1:t.uuid<o.uuid?-1:t.uuid>o.uuid?1:0}function nt(t,o,e,a){let n=Math.floor((e-o)/a)+1,s=new Map;for(let c of t||[]){let f=ht(c.metric||{}),d=s.get(f.key);d||(d={id:f,metric:c.metric||{},values:new Float64Array(n).fill(NaN)},s.set(f.key,d));for(let[v,m]of c.values||[]){let _=Math.round((v*1e3-o)/a);if(_<0||_>=n)continue;let r=Number(m);Number.isFinite(r)&&(Number.isNaN(d.values[_])||r>d.values[_])&&(d.values[_]=r)}}let i=[...s.values()].sort((c,f)=>vt(c.id,f.id)),p=new Float64Array(i.length*n),$=1/0,u=-1/0;return i.forEach((c,f)=>{p.set(c.values,f*n);for(let d of c.values)Number.isNaN(d)||(d<$&&($=d),d>u&&(u=d))}),$>u&&($=0,u=0),{rows:i.map(c=>({id:c.id,metric:c.metric})),cols:n,start:o,step:a,values:p,min:$,max:u}}function at(t){if(!t.length)return NaN;t.sort((e,a)=>e-a);let o=t.length>>1;return t.length%2?t[o]:(t[o-1]+t[o])/2}var _t=1.4826,wt={zThreshold:3.5,rowFraction:.2,minRows:3,madFloorFrac:.02};function rt(t,o={}){let e={...wt,...o},{rows:a,cols:n,values:s}=t,i=a.length,p=new Float64Array(i*n).fill(NaN),$=new Float64Array(n).fill(NaN),u=Math.max(1e-9,(t.max-t.min)*.001),c=[];for(let d=0;d<n;d++){c.length=0;for(let r=0;r<i;r++){let g=s[r*n+d];Number.isNaN(g)||c.push(g)}if(c.length<e.minRows)continue;let v=at(c);for(let r=0;r<c.length;r++)c[r]=Math.abs(c[r]-v);let m=at(c),_=Math.max(_t*m,e.madFloorFrac*Math.abs(v),u);$[d]=v;for(let r=0;r<i;r++){let g=s[r*n+d];Number.isNaN(g)||(p[r*n+d]=(g-v)/_)}}let f=[];for(let d=0;d<i;d++){let v=0,m=0,_=0;for(let r=0;r<n;r++){let g=p[d*n+r];Number.isNaN(g)||(v++,Math.abs(g)>=e.zThreshold&&(m++,_+=g))}v&&m/v>=e.rowFraction&&f.push({row:d,fraction:m/v,direction:_<0?"low":"high",meanZ:_/m})}return f.sort((d,v)=>v.fraction-d.fraction),{z:p,colMedian:$,marked:f,threshold:e.zThreshold}}var D=[[68,1,84],[59,82,139],[33,145,140],[94,201,98],[253,231,37]];function it(t){Number.isFinite(t)||(t=0),t=Math.min(1,Math.max(0,t));let o=t*(D.length-1),e=Math.min(D.length-2,Math.floor(o)),a=o-e,n=D[e],s=D[e+1];return[0,1,2].map(i=>Math.round(n[i]+(s[i]-n[i])*a))}var q=18;function lt({hm:t,outliers:o,unit:e,params:a,testid:n="heatmap"}){let s=A(null),i=A(null),[p,$]=I(null),[u,c]=I(800),f=t.rows.length,d=new Map(o.marked.map(r=>[r.row,r]));U(()=>{let r=new ResizeObserver(()=>i.current&&c(Math.max(200,i.current.clientWidth)));return r.observe(i.current),()=>r.disconnect()},[]),U(()=>{let r=s.current;if(!r||!f)return;let g=devicePixelRatio||1,w=f*q;r.width=Math.round(u*g),r.height=Math.round(w*g),r.style.width=u+"px",r.style.height=w+"px";let h=r.getContext("2d"),b=new ImageData(t.cols,f),ut=t.max-t.min||1;for(let y=0;y<f;y++)for(let k=0;k<t.cols;k++){let x=t.values[y*t.cols+k],M=(y*t.cols+k)*4;if(Number.isNaN(x))b.data[M]=b.data[M+1]=b.data[M+2]=238;else{let[P,mt,pt]=it((x-t.min)/ut);b.data[M]=P,b.data[M+1]=mt,b.data[M+2]=pt}b.data[M+3]=255}let F=document.createElement("canvas");F.width=t.cols,F.height=f,F.getContext("2d").putImageData(b,0,0),h.imageSmoothingEnabled=!1,h.drawImage(F,0,0,r.width,r.height);let W=r.width/t.cols,B=r.height/f;h.strokeStyle="#ff1744",h.lineWidth=Math.max(1.5,g*1.5);for(let y=0;y<f;y++){let k=-1;for(let x=0;x<=t.cols;x++){let M=x<t.cols?o.z[y*t.cols+x]:NaN,P=Math.abs(M)>=o.threshold;P&&k<0&&(k=x),!P&&k>=0&&(h.strokeRect(k*W+1,y*B+1,(x-k)*W-2,B-2),k=-1)}}r.dataset.drawnAt||(r.dataset.drawnAt=String(Math.round(performance.now()))),r.dataset.state="drawn"},[t,o,u]);let v=r=>{let g=s.current.getBoundingClientRect(),w=Math.floor((r.clientX-g.left)/g.width*t.cols),h=Math.floor((r.clientY-g.top)/q);if(w<0||w>=t.cols||h<0||h>=f)return $(null);$({r:h,col:w,x:r.clientX-g.left,y:h*q})},m=[],_=6;for(let r=0;r<=_;r++)m.push(t.start+(t.cols-1)*t.step*r/_);return l`
    <div class="heatmap" data-testid=${n} data-rows=${f} data-cols=${t.cols}>
      <div class="hm-labels">
        ${t.rows.map((r,g)=>{let w=d.get(g),h=r.id;return l`<div class=${"hm-label"+(w?" outlier":"")} data-testid="gpu-row" data-gpu=${h.label} data-outlier=${w?"true":"false"}>
            ${w&&l`<span class="badge" title=${`${Math.round(w.fraction*100)}% of buckets are outliers (robust z \u2265 ${o.threshold})`}>${w.direction==="low"?"\u25BC":"\u25B2"} outlier</span>`}
            ${h.host&&l`<${S} name=${h.hostKey} value=${h.host} params=${a} />`}
            ${h.gpu!==""&&l`<span class="lbl">gpu ${h.gpu}</span>`}
            ${h.uuid&&l`<${S} name=${h.uuidKey} value=${h.uuid} params=${a} short=${12} />`}
            ${!h.host&&!h.uuid&&h.rank&&l`<${S} name="rank" value=${h.rank} params=${a} />`}
          </div>`})}
      </div>
      <div class="hm-canvas" ref=${i}>
        <canvas ref=${s} onMouseMove=${v} onMouseLeave=${()=>$(null)}></canvas>
        <div class="hm-axis">${m.map((r,g)=>l`<span style=${{left:`${g/_*100}%`}}>${z(r).slice(11,16)}</span>`)}</div>
        ${p&&l`<${kt} hm=${t} outliers=${o} hover=${p} unit=${e} />`}
      </div>
      <div class="hm-scale">
        <span>${E(t.min)}</span><span class="ramp"></span><span>${E(t.max)} ${e||""}</span>
        <span class="outline-key">outliers outlined</span>
      </div>
    </div>
  `}function kt({hm:t,outliers:o,hover:e,unit:a}){let n=e.r*t.cols+e.col,s=t.values[n],i=o.z[n],p=t.start+e.col*t.step;return l`<div class="tooltip" style=${{left:`${e.x+12}px`,top:`${e.y}px`}}>
    <div class="muted">${z(p)}</div>
    <div><b>${t.rows[e.r].id.label}</b>: ${E(s)} ${a||""}</div>
    <div class="muted">median of GPUs ${E(o.colMedian[e.col])} · robust z ${Number.isNaN(i)?"\u2014":i.toFixed(1)}</div>
  </div>`}var V=[{id:"util",title:"utilization",names:["DCGM_FI_DEV_GPU_UTIL","hw_gpu_utilization"],unit:"%"},{id:"power",title:"power",names:["DCGM_FI_DEV_POWER_USAGE","hw_power"],unit:"W"},{id:"temp",title:"temperature",names:["DCGM_FI_DEV_GPU_TEMP","hw_gpu_temperature"],unit:"\xB0C"},{id:"mem",title:"memory used",names:["DCGM_FI_DEV_FB_USED","hw_gpu_memory_usage"],unit:"MiB"},{id:"nvlink",title:"NVLink",names:["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"],unit:"MiB/s"},{id:"smclock",title:"SM clock",names:["DCGM_FI_DEV_SM_CLOCK"],unit:"MHz"}],yt=/(step_?time|step_duration|step_seconds|iteration_time|iter_time|throughput|tokens_per_s|samples_per_s|tokens_total|samples_total|tflops|mfu)/i,xt=720,ct=15e3,Mt=4;function bt({path:t,params:o,navigate:e}){let[a,n]=t,s=j(o);if(!a||n===void 0)return l`<section class="panel"><p>Open a workload from any label value: a click on <code>run_id="…"</code>, <code>model="…"</code>, <code>gpu_uuid="…"</code>, … anywhere in the UI.</p></section>`;let i=[[a,n]],p=Z(i),$=(u,c=!0)=>e(R(["workload",a,n],{from:s.from,to:s.to,refresh:s.refresh,gpu:o.get("gpu")||"",...u}),c);return l`
    <section class="panel" data-testid="workload-page" data-key=${a} data-value=${n}>
      <h1 class="workload-title"><span class="muted">${a}</span> = <span data-testid="workload-value">${n}</span></h1>
      <${Q} ...${s} error=${s.range.error} onChange=${u=>$(u)} onReload=${s.reload} />
      <div class="links-out" data-testid="links-out">
        <a href=${J(i,s.from,s.to)}>metrics</a>
        <a href=${H(i,s.from,s.to)}>logs</a>
        <a href=${R(["cardinality"],{match:p})}>cardinality</a>
        <span class="nav-pending" title="lands with the trace store">traces<small>soon</small></span>
        <span class="nav-pending" title="lands with rule evaluation">alerts<small>soon</small></span>
      </div>
      ${s.range.error?null:l`<${Nt} key=${a+"\0"+n} k=${a} v=${n} sel=${p} r=${s} gpu=${o.get("gpu")} go=${$} />`}
    </section>
  `}function Nt({k:t,v:o,sel:e,r:a,gpu:n,go:s}){let{start:i,end:p}=a.range,$=G(async m=>{let _=V.find(w=>w.id===n)||V[0];Et(dt(_,_.names[0],e,a.range),m);let[r,g]=await Promise.all([N.series([e],i,p,{signal:m}),T.series([e],i,p,{signal:m}).catch(()=>[])]);return St(r,g)},[e,i,p,a.tick]);if($.error)return l`<div class="error">${$.error.message}</div>`;if(!$.data)return l`<div class="loading">Finding the workload's series and streams…</div>`;let u=$.data,c=V.map(m=>({...m,name:m.names.find(_=>u.metrics.has(_))})).filter(m=>m.name),f=c.find(m=>m.id===n)||c[0],d=[...u.metrics].filter(m=>yt.test(m)&&!m.startsWith("DCGM_")).sort().slice(0,Mt),v={from:a.from,to:a.to};return l`
    <${Ct} c=${u} k=${t} params=${v} />
    <div class="card">
      <div class="card-head">
        <h2>GPUs × time</h2>
        <span class="tabs">
          ${c.map(m=>l`<button class=${m===f?"on":""} data-signal=${m.id} onClick=${()=>s({gpu:m.id},!1)}>${m.title}</button>`)}
        </span>
        <${tt} pairs=${[[t,o]]} from=${a.from} to=${a.to} workload=${!1} />
      </div>
      ${f?l`<${Ft} key=${f.id} signal=${f} sel=${e} r=${a} params=${v} />`:l`<p class="muted">No GPU metrics (DCGM or OpenTelemetry hardware names) for ${e} in this range.</p>`}
    </div>
    ${d.map(m=>l`<div class="card"><${Pt} name=${m} sel=${e} r=${a} /></div>`)}
    <div class="card">
      <div class="card-head"><h2>Logs</h2><span class="muted">${u.streams.length} streams</span><a href=${H([[t,o]],a.from,a.to)}>open in logs explore</a></div>
      ${u.streams.length?l`<${Dt} sel=${e} r=${a} params=${v} />`:l`<p class="muted">No log streams with ${e} in this range.</p>`}
    </div>
  `}function St(t,o){let e=new Set,a=new Map,n=s=>{for(let[i,p]of Object.entries(s))i!=="__name__"&&(a.has(i)||a.set(i,new Set),a.get(i).add(p))};for(let s of t||[])s.__name__&&e.add(s.__name__),n(s);for(let s of o||[])n(s);return{metrics:e,values:a,series:t||[],streams:o||[]}}function Ct({c:t,k:o,params:e}){let a=O.filter(s=>s!==o&&t.values.has(s)),n=[...t.values.keys()].filter(s=>!O.includes(s)).sort();return l`<div class="card" data-testid="workload-context">
    <div class="card-head"><h2>Context</h2><span class="muted">${Y(t.series.length)} series of ${t.metrics.size} metrics · ${t.streams.length} log streams</span></div>
    <div class="context-grid">
      ${a.map(s=>{let i=[...t.values.get(s)].sort(Rt);return l`<div class="ctx-key"><span class="muted">${s}</span>
          ${i.slice(0,24).map(p=>l`<${S} name=${s} value=${p} params=${e} short=${s==="UUID"||s==="gpu_uuid"?16:0} />`)}
          ${i.length>24&&l`<span class="muted">+${i.length-24} more</span>`}
        </div>`})}
      ${!a.length&&l`<span class="muted">no other workload labels on this workload's signals</span>`}
    </div>
    ${n.length>0&&l`<details><summary>other labels (${n.length})</summary>
      <div class="context-grid">${n.map(s=>l`<div class="ctx-key"><span class="muted">${s}</span> ${t.values.get(s).size} values</div>`)}</div>
    </details>`}
  </div>`}function Rt(t,o){return t.localeCompare(o,void 0,{numeric:!0})}function dt(t,o,e,a){let n=L(a.end-a.start,xt,ct),s=Math.floor(a.start/n)*n;return{q:`avg_over_time(${o||t.name}${e}[${n/1e3}s])`,gs:s,end:a.end,step:n}}var C=null;function Et(t,o){C={key:`${t.q}\0${t.gs}\0${t.end}\0${t.step}`,p:N.queryRange(t.q,t.gs,t.end,t.step,{signal:o})},C.p.catch(()=>{})}function Gt(t){let o=`${t.q}\0${t.gs}\0${t.end}\0${t.step}`;if(!C||C.key!==o)return null;let e=C.p;return C=null,e}function Ft({signal:t,sel:o,r:e,params:a}){let n=dt(t,t.name,o,e.range),{q:s,gs:i,end:p,step:$}=n,u=G(async d=>{let v=await(Gt(n)||N.queryRange(s,i,p,$,{signal:d})).catch(()=>N.queryRange(s,i,p,$,{signal:d})),m=nt(v.result,i,p,$);return{hm:m,outliers:rt(m)}},[s,i,p,$,e.tick]);if(u.error)return l`<div class="error">${u.error.message}</div>`;if(!u.data)return l`<div class="loading">Reading ${t.name}…</div>`;let{hm:c,outliers:f}=u.data;return c.rows.length?l`<div>
    <div class="outlier-summary" data-testid="outlier-summary">
      ${f.marked.length===0?l`<span class="ok">No outlier GPU: every GPU within ${f.threshold} robust deviations of the median in most buckets.</span>`:f.marked.map(d=>l`<span class="outlier-item" data-gpu=${c.rows[d.row].id.label}>
              ${c.rows[d.row].id.label}: ${d.direction} ${t.title} in ${Math.round(d.fraction*100)}% of buckets
            </span>`)}
    </div>
    <${lt} hm=${c} outliers=${f} unit=${t.unit} params=${a} />
    <div class="muted small"><code>${s}</code> · ${c.rows.length} GPUs × ${c.cols} buckets of ${$/1e3}s · <a href=${R(["metrics"],{q:s,from:e.from,to:e.to})}>open in metrics explore</a></div>
  </div>`:l`<p class="muted">No ${t.name} samples in this range.</p>`}function Pt({name:t,sel:o,r:e}){let{start:a,end:n}=e.range,s=L(n-a,300,ct),i=Math.floor(a/s)*s,p=/_total$/.test(t),$=t+o,u=p?`sum by (run_id, rank) (rate(${$}[${Math.max(60,2*s/1e3)}s]))`:$,c=G(async f=>{let d=await N.queryRange(u,i,n,s,{signal:f});return X([{query:u,result:d.result}],i,n,s)},[u,i,n,s,e.tick]);return l`<div>
    <div class="card-head"><h2>${t}</h2><a href=${R(["metrics"],{q:u,from:e.from,to:e.to})}>open in metrics explore</a></div>
    ${c.error?l`<div class="error">${c.error.message}</div>`:c.data?l`<${et} data=${c.data} from=${e.from} to=${e.to} height=${200} testid=${"progress-"+t} />`:l`<div class="loading">…</div>`}
  </div>`}function Dt({sel:t,r:o,params:e}){let a=G(async n=>{let s=await T.queryRange(t,o.range.start,o.range.end,{limit:100,direction:"backward",signal:n});return st(s.result)},[t,o.range.start,o.range.end,o.tick]);return a.error?l`<div class="error">${a.error.message}</div>`:a.data?l`<div class="scroll"><${ot} entries=${a.data} params=${e} max=${100} testid="workload-logs" /></div>`:l`<div class="loading">Reading lines…</div>`}export{V as GPU_SIGNALS,bt as default,St as summarize};
