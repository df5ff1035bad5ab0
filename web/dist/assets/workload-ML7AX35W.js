import{a as tt,f as et}from"./chunk-L46MQAZN.js";import{a as B,b as Y,c as J,d as Q}from"./chunk-QJ7L5W7W.js";import{a as A,d as j,g as O,h as Z,i as N}from"./chunk-LEDDEFYE.js";import{a as G,b as T,e as L,f as z,k as C,m as q,n as X,o as E}from"./chunk-46JSN3HS.js";import{c as D,d as I,e as U,g as l,i as S}from"./chunk-OKC6WX42.js";var ut=["Hostname","host","node","instance"],mt=["gpu","gpu_index","minor_number","device"],pt=["UUID","gpu_uuid","hw_id"];function H(t,o){for(let s of o)if(t[s]!==void 0&&t[s]!=="")return[s,t[s]];return[null,""]}function ft(t){let[o,s]=H(t,ut),[a,n]=H(t,mt),[e,r]=H(t,pt),m=t.rank||"",$=[s,n,r,r||n?"":m].join("\0"),d=s||"";return n!==""?d+=(d?" ":"")+"gpu "+n:r?d+=(d?" ":"")+r.slice(0,12):m&&(d+=(d?" ":"")+"rank "+m),{key:$,label:d||"(unlabelled)",host:s,hostKey:o,gpu:n,gpuKey:a,uuid:r,uuidKey:e,rank:m}}function $t(t,o){if(t.host!==o.host)return t.host<o.host?-1:1;let s=Number(t.gpu),a=Number(o.gpu);return t.gpu!==o.gpu?Number.isFinite(s)&&Number.isFinite(a)&&t.gpu!==""&&o.gpu!==""?s-a:t.gpu<o.gpu?-1:1:t.uuid<o.uuid?-1:t.uuid>o.uuid?1:0}function ot(t,o,s,a){let n=Math.floor((s-o)/a)+1,e=new Map;for(let c of t||[]){let p=ft(c.metric||{}),u=e.get(p.key);u||(u={id:p,metric:c.metric||{},values:new Float64Array(n).fill(NaN)},e.set(p.key,u));for(let[v,f]of c.values||[]){let _=Math.round((v*1e3-o)/a);if(_<0||_>=n)continue;let i=Number(f);Number.isFinite(i)&&(Number.isNaN(u.values[_])||i>u.values[_])&&(u.values[_]=i)}}let r=[...e.values()].sort((c,p)=>$t(c.id,p.id)),m=new Float64Array(r.length*n),$=1/0,d=-1/0;return r.forEach((c,p)=>{m.set(c.values,p*n);for(let u of c.values)Number.isNaN(u)||(u<$&&($=u),u>d&&(d=u))}),$>d&&($=0,d=0),{rows:r.map(c=>({id:c.id,metric:c.metric})),cols:n,start:o,step:a,values:m,min:$,max:d}}function st(t){if(!t.length)return NaN;t.sort((s,a)=>s-a);let o=t.length>>1;return t.length%2?t[o]:(t[o-1]+t[o])/2}var ht=1.4826,gt={zThreshold:3.5,rowFraction:.2,minRows:3,madFloorFrac:.02};function at(t,o={}){let s={...gt,...o},{rows:a,cols:n,values:e}=t,r=a.length,m=new Float64Array(r*n).fill(NaN),$=new Float64Array(n).fill(NaN),d=Math.max(1e-9,(t.max-t.min)*.001),c=[];for(let u=0;u<n;u++){c.length=0;for(let i=0;i<r;i++){let g=e[i*n+u];Number.isNaN(g)||c.push(g)}if(c.length<s.minRows)continue;let v=st(c);for(let i=0;i<c.length;i++)c[i]=Math.abs(c[i]-v);let f=st(c),_=Math.max(ht*f,s.madFloorFrac*Math.abs(v),d);$[u]=v;for(let i=0;i<r;i++){let g=e[i*n+u];Number.isNaN(g)||(m[i*n+u]=(g-v)/_)}}let p=[];for(let u=0;u<r;u++){let v=0,f=0,_=0;for(let i=0;i<n;i++){let g=m[u*n+i];Number.isNaN(g)||(v++,Math.abs(g)>=s.zThreshold&&(f++,_+=g))}v&&f/v>=s.rowFraction&&p.push({row:u,fraction:f/v,direction:_<0?"low":"high",meanZ:_/f})}return p.sort((u,v)=>v.fraction-u.fraction),{z:m,colMedian:$,marked:p,threshold:s.zThreshold}}var P=[[68,1,84],[59,82,139],[33,145,140],[94,201,98],[253,231,37]];function nt(t){Number.isFinite(t)||(t=0),t=Math.min(1,Math.max(0,t));let o=t*(P.length-1),s=Math.min(P.length-2,Math.floor(o)),a=o-s,n=P[s],e=P[s+1];return[0,1,2].map(r=>Math.round(n[r]+(e[r]-n[r])*a))}var K=18;function rt({hm:t,outliers:o,unit:s,params:a,testid:n="heatmap"}){let e=U(null),r=U(null),[m,$]=D(null),[d,c]=D(800),p=t.rows.length,u=new Map(o.marked.map(i=>[i.row,i]));I(()=>{let i=new ResizeObserver(()=>r.current&&c(Math.max(200,r.current.clientWidth)));return i.observe(r.current),()=>i.disconnect()},[]),I(()=>{let i=e.current;if(!i||!p)return;let g=devicePixelRatio||1,w=p*K;i.width=Math.round(d*g),i.height=Math.round(w*g),i.style.width=d+"px",i.style.height=w+"px";let h=i.getContext("2d"),M=new ImageData(t.cols,p),lt=t.max-t.min||1;for(let y=0;y<p;y++)for(let k=0;k<t.cols;k++){let x=t.values[y*t.cols+k],b=(y*t.cols+k)*4;if(Number.isNaN(x))M.data[b]=M.data[b+1]=M.data[b+2]=238;else{let[F,ct,dt]=nt((x-t.min)/lt);M.data[b]=F,M.data[b+1]=ct,M.data[b+2]=dt}M.data[b+3]=255}let R=document.createElement("canvas");R.width=t.cols,R.height=p,R.getContext("2d").putImageData(M,0,0),h.imageSmoothingEnabled=!1,h.drawImage(R,0,0,i.width,i.height);let V=i.width/t.cols,W=i.height/p;h.strokeStyle="#ff1744",h.lineWidth=Math.max(1.5,g*1.5);for(let y=0;y<p;y++){let k=-1;for(let x=0;x<=t.cols;x++){let b=x<t.cols?o.z[y*t.cols+x]:NaN,F=Math.abs(b)>=o.threshold;F&&k<0&&(k=x),!F&&k>=0&&(h.strokeRect(k*V+1,y*W+1,(x-k)*V-2,W-2),k=-1)}}i.dataset.state="drawn"},[t,o,d]);let v=i=>{let g=e.current.getBoundingClientRect(),w=Math.floor((i.clientX-g.left)/g.width*t.cols),h=Math.floor((i.clientY-g.top)/K);if(w<0||w>=t.cols||h<0||h>=p)return $(null);$({r:h,col:w,x:i.clientX-g.left,y:h*K})},f=[],_=6;for(let i=0;i<=_;i++)f.push(t.start+(t.cols-1)*t.step*i/_);return l`
    <div class="heatmap" data-testid=${n} data-rows=${p} data-cols=${t.cols}>
      <div class="hm-labels">
        ${t.rows.map((i,g)=>{let w=u.get(g),h=i.id;return l`<div class=${"hm-label"+(w?" outlier":"")} data-testid="gpu-row" data-gpu=${h.label} data-outlier=${w?"true":"false"}>
            ${w&&l`<span class="badge" title=${`${Math.round(w.fraction*100)}% of buckets are outliers (robust z \u2265 ${o.threshold})`}>${w.direction==="low"?"\u25BC":"\u25B2"} outlier</span>`}
            ${h.host&&l`<${N} name=${h.hostKey} value=${h.host} params=${a} />`}
            ${h.gpu!==""&&l`<span class="lbl">gpu ${h.gpu}</span>`}
            ${h.uuid&&l`<${N} name=${h.uuidKey} value=${h.uuid} params=${a} short=${12} />`}
            ${!h.host&&!h.uuid&&h.rank&&l`<${N} name="rank" value=${h.rank} params=${a} />`}
          </div>`})}
      </div>
      <div class="hm-canvas" ref=${r}>
        <canvas ref=${e} onMouseMove=${v} onMouseLeave=${()=>$(null)}></canvas>
        <div class="hm-axis">${f.map((i,g)=>l`<span style=${{left:`${g/_*100}%`}}>${z(i).slice(11,16)}</span>`)}</div>
        ${m&&l`<${vt} hm=${t} outliers=${o} hover=${m} unit=${s} />`}
      </div>
      <div class="hm-scale">
        <span>${C(t.min)}</span><span class="ramp"></span><span>${C(t.max)} ${s||""}</span>
        <span class="outline-key">outliers outlined</span>
      </div>
    </div>
  `}function vt({hm:t,outliers:o,hover:s,unit:a}){let n=s.r*t.cols+s.col,e=t.values[n],r=o.z[n],m=t.start+s.col*t.step;return l`<div class="tooltip" style=${{left:`${s.x+12}px`,top:`${s.y}px`}}>
    <div class="muted">${z(m)}</div>
    <div><b>${t.rows[s.r].id.label}</b>: ${C(e)} ${a||""}</div>
    <div class="muted">median of GPUs ${C(o.colMedian[s.col])} · robust z ${Number.isNaN(r)?"\u2014":r.toFixed(1)}</div>
  </div>`}var _t=[{id:"util",title:"utilization",names:["DCGM_FI_DEV_GPU_UTIL","hw_gpu_utilization"],unit:"%"},{id:"power",title:"power",names:["DCGM_FI_DEV_POWER_USAGE","hw_power"],unit:"W"},{id:"temp",title:"temperature",names:["DCGM_FI_DEV_GPU_TEMP","hw_gpu_temperature"],unit:"\xB0C"},{id:"mem",title:"memory used",names:["DCGM_FI_DEV_FB_USED","hw_gpu_memory_usage"],unit:"MiB"},{id:"nvlink",title:"NVLink",names:["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"],unit:"MiB/s"},{id:"smclock",title:"SM clock",names:["DCGM_FI_DEV_SM_CLOCK"],unit:"MHz"}],wt=/(step_?time|step_duration|step_seconds|iteration_time|iter_time|throughput|tokens_per_s|samples_per_s|tokens_total|samples_total|tflops|mfu)/i,kt=720,it=15e3,yt=4;function xt({path:t,params:o,navigate:s}){let[a,n]=t,e=X(o);if(!a||n===void 0)return l`<section class="panel"><p>Open a workload from any label value: a click on <code>run_id="…"</code>, <code>model="…"</code>, <code>gpu_uuid="…"</code>, … anywhere in the UI.</p></section>`;let r=[[a,n]],m=j(r),$=(d,c=!0)=>s(S(["workload",a,n],{from:e.from,to:e.to,refresh:e.refresh,gpu:o.get("gpu")||"",...d}),c);return l`
    <section class="panel" data-testid="workload-page" data-key=${a} data-value=${n}>
      <h1 class="workload-title"><span class="muted">${a}</span> = <span data-testid="workload-value">${n}</span></h1>
      <${Y} ...${e} error=${e.range.error} onChange=${d=>$(d)} onReload=${e.reload} />
      <div class="links-out" data-testid="links-out">
        <a href=${Z(r,e.from,e.to)}>metrics</a>
        <a href=${O(r,e.from,e.to)}>logs</a>
        <a href=${S(["cardinality"],{match:m})}>cardinality</a>
        <span class="nav-pending" title="lands with the trace store">traces<small>soon</small></span>
        <span class="nav-pending" title="lands with rule evaluation">alerts<small>soon</small></span>
      </div>
      ${e.range.error?null:l`<${bt} key=${a+"\0"+n} k=${a} v=${n} sel=${m} r=${e} gpu=${o.get("gpu")} go=${$} />`}
    </section>
  `}function bt({k:t,v:o,sel:s,r:a,gpu:n,go:e}){let{start:r,end:m}=a.range,$=E(async f=>{let[_,i]=await Promise.all([G.series([s],r,m,{signal:f}),T.series([s],r,m,{signal:f}).catch(()=>[])]);return Mt(_,i)},[s,r,m,a.tick]);if($.error)return l`<div class="error">${$.error.message}</div>`;if(!$.data)return l`<div class="loading">Finding the workload's series and streams…</div>`;let d=$.data,c=_t.map(f=>({...f,name:f.names.find(_=>d.metrics.has(_))})).filter(f=>f.name),p=c.find(f=>f.id===n)||c[0],u=[...d.metrics].filter(f=>wt.test(f)).sort().slice(0,yt),v={from:a.from,to:a.to};return l`
    <${Nt} c=${d} k=${t} params=${v} />
    <div class="card">
      <div class="card-head">
        <h2>GPUs × time</h2>
        <span class="tabs">
          ${c.map(f=>l`<button class=${f===p?"on":""} data-signal=${f.id} onClick=${()=>e({gpu:f.id},!1)}>${f.title}</button>`)}
        </span>
        <${J} pairs=${[[t,o]]} from=${a.from} to=${a.to} workload=${!1} />
      </div>
      ${p?l`<${Ct} key=${p.id} signal=${p} sel=${s} r=${a} params=${v} />`:l`<p class="muted">No GPU metrics (DCGM or OpenTelemetry hardware names) for ${s} in this range.</p>`}
    </div>
    ${u.map(f=>l`<div class="card"><${Et} name=${f} sel=${s} r=${a} /></div>`)}
    <div class="card">
      <div class="card-head"><h2>Logs</h2><span class="muted">${d.streams.length} streams</span><a href=${O([[t,o]],a.from,a.to)}>open in logs explore</a></div>
      ${d.streams.length?l`<${Rt} sel=${s} r=${a} params=${v} />`:l`<p class="muted">No log streams with ${s} in this range.</p>`}
    </div>
  `}function Mt(t,o){let s=new Set,a=new Map,n=e=>{for(let[r,m]of Object.entries(e))r!=="__name__"&&(a.has(r)||a.set(r,new Set),a.get(r).add(m))};for(let e of t||[])e.__name__&&s.add(e.__name__),n(e);for(let e of o||[])n(e);return{metrics:s,values:a,series:t||[],streams:o||[]}}function Nt({c:t,k:o,params:s}){let a=A.filter(e=>e!==o&&t.values.has(e)),n=[...t.values.keys()].filter(e=>!A.includes(e)).sort();return l`<div class="card" data-testid="workload-context">
    <div class="card-head"><h2>Context</h2><span class="muted">${q(t.series.length)} series of ${t.metrics.size} metrics · ${t.streams.length} log streams</span></div>
    <div class="context-grid">
      ${a.map(e=>{let r=[...t.values.get(e)].sort(St);return l`<div class="ctx-key"><span class="muted">${e}</span>
          ${r.slice(0,24).map(m=>l`<${N} name=${e} value=${m} params=${s} short=${e==="UUID"||e==="gpu_uuid"?16:0} />`)}
          ${r.length>24&&l`<span class="muted">+${r.length-24} more</span>`}
        </div>`})}
      ${!a.length&&l`<span class="muted">no other workload labels on this workload's signals</span>`}
    </div>
    ${n.length>0&&l`<details><summary>other labels (${n.length})</summary>
      <div class="context-grid">${n.map(e=>l`<div class="ctx-key"><span class="muted">${e}</span> ${t.values.get(e).size} values</div>`)}</div>
    </details>`}
  </div>`}function St(t,o){return t.localeCompare(o,void 0,{numeric:!0})}function Ct({signal:t,sel:o,r:s,params:a}){let{start:n,end:e}=s.range,r=L(e-n,kt,it),m=Math.floor(n/r)*r,$=`avg_over_time(${t.name}${o}[${r/1e3}s])`,d=E(async u=>{let v=await G.queryRange($,m,e,r,{signal:u}),f=ot(v.result,m,e,r);return{hm:f,outliers:at(f)}},[$,m,e,r,s.tick]);if(d.error)return l`<div class="error">${d.error.message}</div>`;if(!d.data)return l`<div class="loading">Reading ${t.name}…</div>`;let{hm:c,outliers:p}=d.data;return c.rows.length?l`<div>
    <div class="outlier-summary" data-testid="outlier-summary">
      ${p.marked.length===0?l`<span class="ok">No outlier GPU: every GPU within ${p.threshold} robust deviations of the median in most buckets.</span>`:p.marked.map(u=>l`<span class="outlier-item" data-gpu=${c.rows[u.row].id.label}>
              ${c.rows[u.row].id.label}: ${u.direction} ${t.title} in ${Math.round(u.fraction*100)}% of buckets
            </span>`)}
    </div>
    <${rt} hm=${c} outliers=${p} unit=${t.unit} params=${a} />
    <div class="muted small"><code>${$}</code> · ${c.rows.length} GPUs × ${c.cols} buckets of ${r/1e3}s · <a href=${S(["metrics"],{q:$,from:s.from,to:s.to})}>open in metrics explore</a></div>
  </div>`:l`<p class="muted">No ${t.name} samples in this range.</p>`}function Et({name:t,sel:o,r:s}){let{start:a,end:n}=s.range,e=L(n-a,300,it),r=Math.floor(a/e)*e,m=/_total$/.test(t),$=t+o,d=m?`sum by (run_id, rank) (rate(${$}[${Math.max(60,2*e/1e3)}s]))`:$,c=E(async p=>{let u=await G.queryRange(d,r,n,e,{signal:p});return B([{query:d,result:u.result}],r,n,e)},[d,r,n,e,s.tick]);return l`<div>
    <div class="card-head"><h2>${t}</h2><a href=${S(["metrics"],{q:d,from:s.from,to:s.to})}>open in metrics explore</a></div>
    ${c.error?l`<div class="error">${c.error.message}</div>`:c.data?l`<${Q} data=${c.data} from=${s.from} to=${s.to} height=${200} testid=${"progress-"+t} />`:l`<div class="loading">…</div>`}
  </div>`}function Rt({sel:t,r:o,params:s}){let a=E(async n=>{let e=await T.queryRange(t,o.range.start,o.range.end,{limit:100,direction:"backward",signal:n});return tt(e.result)},[t,o.range.start,o.range.end,o.tick]);return a.error?l`<div class="error">${a.error.message}</div>`:a.data?l`<div class="scroll"><${et} entries=${a.data} params=${s} max=${100} testid="workload-logs" /></div>`:l`<div class="loading">Reading lines…</div>`}export{_t as GPU_SIGNALS,xt as default,Mt as summarize};
