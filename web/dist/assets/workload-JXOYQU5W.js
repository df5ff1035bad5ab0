import{a as tt,f as et}from"./chunk-FNZBLUEH.js";import{a as B,b as Y,c as J,d as Q}from"./chunk-MS3KVX4R.js";import{a as A,d as j,g as O,h as Z,i as N}from"./chunk-NW7JSHH6.js";import{a as G,b as T,e as L,f as z,k as C,m as q,n as X,o as E}from"./chunk-J4NSEN2R.js";import{b as D,c as I,d as U,f as l,h as S}from"./chunk-2CBU4SAF.js";var ut=["Hostname","host","node","instance"],mt=["gpu","gpu_index","minor_number","device"],pt=["UUID","gpu_uuid","hw_id"];function H(t,o){for(let e of o)if(t[e]!==void 0&&t[e]!=="")return[e,t[e]];return[null,""]}function ft(t){let[o,e]=H(t,ut),[a,r]=H(t,mt),[s,n]=H(t,pt),m=t.rank||"",$=[e,r,n,n||r?"":m].join("\0"),d=e||"";return r!==""?d+=(d?" ":"")+"gpu "+r:n?d+=(d?" ":"")+n.slice(0,12):m&&(d+=(d?" ":"")+"rank "+m),{key:$,label:d||"(unlabelled)",host:e,hostKey:o,gpu:r,gpuKey:a,uuid:n,uuidKey:s,rank:m}}function $t(t,o){if(t.host!==o.host)return t.host<o.host?-1:1;let e=Number(t.gpu),a=Number(o.gpu);return t.gpu!==o.gpu?Number.isFinite(e)&&Number.isFinite(a)&&t.gpu!==""&&o.gpu!==""?e-a:t.gpu<o.gpu?-1:1:t.uuid<o.uuid?-1:t.uuid>o.uuid?1:0}function ot(t,o,e,a){let r=Math.floor((e-o)/a)+1,s=new Map;for(let c of t||[]){let f=ft(c.metric||{}),u=s.get(f.key);u||(u={id:f,metric:c.metric||{},values:new Float64Array(r).fill(NaN)},s.set(f.key,u));for(let[v,p]of c.values||[]){let _=Math.round((v*1e3-o)/a);if(_<0||_>=r)continue;let i=Number(p);Number.isFinite(i)&&(Number.isNaN(u.values[_])||i>u.values[_])&&(u.values[_]=i)}}let n=[...s.values()].sort((c,f)=>$t(c.id,f.id)),m=new Float64Array(n.length*r),$=1/0,d=-1/0;return n.forEach((c,f)=>{m.set(c.values,f*r);for(let u of c.values)Number.isNaN(u)||(u<$&&($=u),u>d&&(d=u))}),$>d&&($=0,d=0),{rows:n.map(c=>({id:c.id,metric:c.metric})),cols:r,start:o,step:a,values:m,min:$,max:d}}function st(t){if(!t.length)return NaN;t.sort((e,a)=>e-a);let o=t.length>>1;return t.length%2?t[o]:(t[o-1]+t[o])/2}var ht=1.4826,gt={zThreshold:3.5,rowFraction:.2,minRows:3,madFloorFrac:.02};function at(t,o={}){let e={...gt,...o},{rows:a,cols:r,values:s}=t,n=a.length,m=new Float64Array(n*r).fill(NaN),$=new Float64Array(r).fill(NaN),d=Math.max(1e-9,(t.max-t.min)*.001),c=[];for(let u=0;u<r;u++){c.length=0;for(let i=0;i<n;i++){let g=s[i*r+u];Number.isNaN(g)||c.push(g)}if(c.length<e.minRows)continue;let v=st(c);for(let i=0;i<c.length;i++)c[i]=Math.abs(c[i]-v);let p=st(c),_=Math.max(ht*p,e.madFloorFrac*Math.abs(v),d);$[u]=v;for(let i=0;i<n;i++){let g=s[i*r+u];Number.isNaN(g)||(m[i*r+u]=(g-v)/_)}}let f=[];for(let u=0;u<n;u++){let v=0,p=0,_=0;for(let i=0;i<r;i++){let g=m[u*r+i];Number.isNaN(g)||(v++,Math.abs(g)>=e.zThreshold&&(p++,_+=g))}v&&p/v>=e.rowFraction&&f.push({row:u,fraction:p/v,direction:_<0?"low":"high",meanZ:_/p})}return f.sort((u,v)=>v.fraction-u.fraction),{z:m,colMedian:$,marked:f,threshold:e.zThreshold}}var P=[[68,1,84],[59,82,139],[33,145,140],[94,201,98],[253,231,37]];function nt(t){Number.isFinite(t)||(t=0),t=Math.min(1,Math.max(0,t));let o=t*(P.length-1),e=Math.min(P.length-2,Math.floor(o)),a=o-e,r=P[e],s=P[e+1];return[0,1,2].map(n=>Math.round(r[n]+(s[n]-r[n])*a))}var K=18;function rt({hm:t,outliers:o,unit:e,params:a,testid:r="heatmap"}){let s=U(null),n=U(null),[m,$]=D(null),[d,c]=D(800),f=t.rows.length,u=new Map(o.marked.map(i=>[i.row,i]));I(()=>{let i=new ResizeObserver(()=>n.current&&c(Math.max(200,n.current.clientWidth)));return i.observe(n.current),()=>i.disconnect()},[]),I(()=>{let i=s.current;if(!i||!f)return;let g=devicePixelRatio||1,w=f*K;i.width=Math.round(d*g),i.height=Math.round(w*g),i.style.width=d+"px",i.style.height=w+"px";let h=i.getContext("2d"),M=new ImageData(t.cols,f),lt=t.max-t.min||1;for(let y=0;y<f;y++)for(let k=0;k<t.cols;k++){let x=t.values[y*t.cols+k],b=(y*t.cols+k)*4;if(Number.isNaN(x))M.data[b]=M.data[b+1]=M.data[b+2]=238;else{let[F,ct,dt]=nt((x-t.min)/lt);M.data[b]=F,M.data[b+1]=ct,M.data[b+2]=dt}M.data[b+3]=255}let R=document.createElement("canvas");R.width=t.cols,R.height=f,R.getContext("2d").putImageData(M,0,0),h.imageSmoothingEnabled=!1,h.drawImage(R,0,0,i.width,i.height);let V=i.width/t.cols,W=i.height/f;h.strokeStyle="#ff1744",h.lineWidth=Math.max(1.5,g*1.5);for(let y=0;y<f;y++){let k=-1;for(let x=0;x<=t.cols;x++){let b=x<t.cols?o.z[y*t.cols+x]:NaN,F=Math.abs(b)>=o.threshold;F&&k<0&&(k=x),!F&&k>=0&&(h.strokeRect(k*V+1,y*W+1,(x-k)*V-2,W-2),k=-1)}}i.dataset.state="drawn"},[t,o,d]);let v=i=>{let g=s.current.getBoundingClientRect(),w=Math.floor((i.clientX-g.left)/g.width*t.cols),h=Math.floor((i.clientY-g.top)/K);if(w<0||w>=t.cols||h<0||h>=f)return $(null);$({r:h,col:w,x:i.clientX-g.left,y:h*K})},p=[],_=6;for(let i=0;i<=_;i++)p.push(t.start+(t.cols-1)*t.step*i/_);return l`
    <div class="heatmap" data-testid=${r} data-rows=${f} data-cols=${t.cols}>
      <div class="hm-labels">
        ${t.rows.map((i,g)=>{let w=u.get(g),h=i.id;return l`<div class=${"hm-label"+(w?" outlier":"")} data-testid="gpu-row" data-gpu=${h.label} data-outlier=${w?"true":"false"}>
            ${w&&l`<span class="badge" title=${`${Math.round(w.fraction*100)}% of buckets are outliers (robust z \u2265 ${o.threshold})`}>${w.direction==="low"?"\u25BC":"\u25B2"} outlier</span>`}
            ${h.host&&l`<${N} name=${h.hostKey} value=${h.host} params=${a} />`}
            ${h.gpu!==""&&l`<span class="lbl">gpu ${h.gpu}</span>`}
            ${h.uuid&&l`<${N} name=${h.uuidKey} value=${h.uuid} params=${a} />`}
            ${!h.host&&!h.uuid&&h.rank&&l`<${N} name="rank" value=${h.rank} params=${a} />`}
          </div>`})}
      </div>
      <div class="hm-canvas" ref=${n}>
        <canvas ref=${s} onMouseMove=${v} onMouseLeave=${()=>$(null)}></canvas>
        <div class="hm-axis">${p.map((i,g)=>l`<span style=${{left:`${g/_*100}%`}}>${z(i).slice(11,16)}</span>`)}</div>
        ${m&&l`<${vt} hm=${t} outliers=${o} hover=${m} unit=${e} />`}
      </div>
      <div class="hm-scale">
        <span>${C(t.min)}</span><span class="ramp"></span><span>${C(t.max)} ${e||""}</span>
        <span class="outline-key">outliers outlined</span>
      </div>
    </div>
  `}function vt({hm:t,outliers:o,hover:e,unit:a}){let r=e.r*t.cols+e.col,s=t.values[r],n=o.z[r],m=t.start+e.col*t.step;return l`<div class="tooltip" style=${{left:`${e.x+12}px`,top:`${e.y}px`}}>
    <div class="muted">${z(m)}</div>
    <div><b>${t.rows[e.r].id.label}</b>: ${C(s)} ${a||""}</div>
    <div class="muted">median of GPUs ${C(o.colMedian[e.col])} · robust z ${Number.isNaN(n)?"\u2014":n.toFixed(1)}</div>
  </div>`}var _t=[{id:"util",title:"utilization",names:["DCGM_FI_DEV_GPU_UTIL","hw_gpu_utilization"],unit:"%"},{id:"power",title:"power",names:["DCGM_FI_DEV_POWER_USAGE","hw_power"],unit:"W"},{id:"temp",title:"temperature",names:["DCGM_FI_DEV_GPU_TEMP","hw_gpu_temperature"],unit:"\xB0C"},{id:"mem",title:"memory used",names:["DCGM_FI_DEV_FB_USED","hw_gpu_memory_usage"],unit:"MiB"},{id:"nvlink",title:"NVLink",names:["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"],unit:"MiB/s"},{id:"smclock",title:"SM clock",names:["DCGM_FI_DEV_SM_CLOCK"],unit:"MHz"}],wt=/(step_?time|step_duration|iteration_time|iter_time|throughput|tokens_per_s|samples_per_s|tokens_total|samples_total|tflops|mfu)/i,kt=720,it=15e3,yt=4;function xt({path:t,params:o,navigate:e}){let[a,r]=t,s=X(o);if(!a||r===void 0)return l`<section class="panel"><p>Open a workload from any label value: a click on <code>run_id="…"</code>, <code>model="…"</code>, <code>gpu_uuid="…"</code>, … anywhere in the UI.</p></section>`;let n=[[a,r]],m=j(n),$=(d,c=!0)=>e(S(["workload",a,r],{from:s.from,to:s.to,refresh:s.refresh,gpu:o.get("gpu")||"",...d}),c);return l`
    <section class="panel" data-testid="workload-page" data-key=${a} data-value=${r}>
      <h1 class="workload-title"><span class="muted">${a}</span> = <span data-testid="workload-value">${r}</span></h1>
      <${Y} ...${s} error=${s.range.error} onChange=${d=>$(d)} onReload=${s.reload} />
      <div class="links-out" data-testid="links-out">
        <a href=${Z(n,s.from,s.to)}>metrics</a>
        <a href=${O(n,s.from,s.to)}>logs</a>
        <a href=${S(["cardinality"],{match:m})}>cardinality</a>
        <span class="nav-pending" title="lands with the trace store">traces<small>soon</small></span>
        <span class="nav-pending" title="lands with rule evaluation">alerts<small>soon</small></span>
      </div>
      ${s.range.error?null:l`<${bt} k=${a} v=${r} sel=${m} r=${s} gpu=${o.get("gpu")} go=${$} />`}
    </section>
  `}function bt({k:t,v:o,sel:e,r:a,gpu:r,go:s}){let{start:n,end:m}=a.range,$=E(async p=>{let[_,i]=await Promise.all([G.series([e],n,m,{signal:p}),T.series([e],n,m,{signal:p}).catch(()=>[])]);return Mt(_,i)},[e,n,m,a.tick]);if($.error)return l`<div class="error">${$.error.message}</div>`;if(!$.data)return l`<div class="loading">Finding the workload's series and streams…</div>`;let d=$.data,c=_t.map(p=>({...p,name:p.names.find(_=>d.metrics.has(_))})).filter(p=>p.name),f=c.find(p=>p.id===r)||c[0],u=[...d.metrics].filter(p=>wt.test(p)).sort().slice(0,yt),v={from:a.from,to:a.to};return l`
    <${Nt} c=${d} k=${t} params=${v} />
    <div class="card">
      <div class="card-head">
        <h2>GPUs × time</h2>
        <span class="tabs">
          ${c.map(p=>l`<button class=${p===f?"on":""} data-signal=${p.id} onClick=${()=>s({gpu:p.id},!1)}>${p.title}</button>`)}
        </span>
        <${J} pairs=${[[t,o]]} from=${a.from} to=${a.to} workload=${!1} />
      </div>
      ${f?l`<${Ct} signal=${f} sel=${e} r=${a} params=${v} />`:l`<p class="muted">No GPU metrics (DCGM or OpenTelemetry hardware names) for ${e} in this range.</p>`}
    </div>
    ${u.map(p=>l`<div class="card"><${Et} name=${p} sel=${e} r=${a} /></div>`)}
    <div class="card">
      <div class="card-head"><h2>Logs</h2><span class="muted">${d.streams.length} streams</span><a href=${O([[t,o]],a.from,a.to)}>open in logs explore</a></div>
      ${d.streams.length?l`<${Rt} sel=${e} r=${a} params=${v} />`:l`<p class="muted">No log streams with ${e} in this range.</p>`}
    </div>
  `}function Mt(t,o){let e=new Set,a=new Map,r=s=>{for(let[n,m]of Object.entries(s))n!=="__name__"&&(a.has(n)||a.set(n,new Set),a.get(n).add(m))};for(let s of t||[])s.__name__&&e.add(s.__name__),r(s);for(let s of o||[])r(s);return{metrics:e,values:a,series:t||[],streams:o||[]}}function Nt({c:t,k:o,params:e}){let a=A.filter(s=>s!==o&&t.values.has(s)),r=[...t.values.keys()].filter(s=>!A.includes(s)).sort();return l`<div class="card" data-testid="workload-context">
    <div class="card-head"><h2>Context</h2><span class="muted">${q(t.series.length)} series of ${t.metrics.size} metrics · ${t.streams.length} log streams</span></div>
    <div class="context-grid">
      ${a.map(s=>{let n=[...t.values.get(s)].sort(St);return l`<div class="ctx-key"><span class="muted">${s}</span>
          ${n.slice(0,24).map(m=>l`<${N} name=${s} value=${m} params=${e} />`)}
          ${n.length>24&&l`<span class="muted">+${n.length-24} more</span>`}
        </div>`})}
      ${!a.length&&l`<span class="muted">no other workload labels on this workload's signals</span>`}
    </div>
    ${r.length>0&&l`<details><summary>other labels (${r.length})</summary>
      <div class="context-grid">${r.map(s=>l`<div class="ctx-key"><span class="muted">${s}</span> ${t.values.get(s).size} values</div>`)}</div>
    </details>`}
  </div>`}function St(t,o){return t.localeCompare(o,void 0,{numeric:!0})}function Ct({signal:t,sel:o,r:e,params:a}){let{start:r,end:s}=e.range,n=L(s-r,kt,it),m=Math.floor(r/n)*n,$=`avg_over_time(${t.name}${o}[${n/1e3}s])`,d=E(async u=>{let v=await G.queryRange($,m,s,n,{signal:u}),p=ot(v.result,m,s,n);return{hm:p,outliers:at(p)}},[$,m,s,n,e.tick]);if(d.error)return l`<div class="error">${d.error.message}</div>`;if(!d.data)return l`<div class="loading">Reading ${t.name}…</div>`;let{hm:c,outliers:f}=d.data;return c.rows.length?l`<div>
    <div class="outlier-summary" data-testid="outlier-summary">
      ${f.marked.length===0?l`<span class="ok">No outlier GPU: every GPU within ${f.threshold} robust deviations of the median in most buckets.</span>`:f.marked.map(u=>l`<span class="outlier-item" data-gpu=${c.rows[u.row].id.label}>
              ${c.rows[u.row].id.label}: ${u.direction} ${t.title} in ${Math.round(u.fraction*100)}% of buckets
            </span>`)}
    </div>
    <${rt} hm=${c} outliers=${f} unit=${t.unit} params=${a} />
    <div class="muted small"><code>${$}</code> · ${c.rows.length} GPUs × ${c.cols} buckets of ${n/1e3}s · <a href=${S(["metrics"],{q:$,from:e.from,to:e.to})}>open in metrics explore</a></div>
  </div>`:l`<p class="muted">No ${t.name} samples in this range.</p>`}function Et({name:t,sel:o,r:e}){let{start:a,end:r}=e.range,s=L(r-a,300,it),n=Math.floor(a/s)*s,m=/_total$/.test(t),$=t+o,d=m?`sum by (run_id, rank) (rate(${$}[${Math.max(60,2*s/1e3)}s]))`:$,c=E(async f=>{let u=await G.queryRange(d,n,r,s,{signal:f});return B([{query:d,result:u.result}],n,r,s)},[d,n,r,s,e.tick]);return l`<div>
    <div class="card-head"><h2>${t}</h2><a href=${S(["metrics"],{q:d,from:e.from,to:e.to})}>open in metrics explore</a></div>
    ${c.error?l`<div class="error">${c.error.message}</div>`:c.data?l`<${Q} data=${c.data} from=${e.from} to=${e.to} height=${200} testid=${"progress-"+t} />`:l`<div class="loading">…</div>`}
  </div>`}function Rt({sel:t,r:o,params:e}){let a=E(async r=>{let s=await T.queryRange(t,o.range.start,o.range.end,{limit:100,direction:"backward",signal:r});return tt(s.result)},[t,o.range.start,o.range.end,o.tick]);return a.error?l`<div class="error">${a.error.message}</div>`:a.data?l`<${et} entries=${a.data} params=${e} max=${100} testid="workload-logs" />`:l`<div class="loading">Reading lines…</div>`}export{_t as GPU_SIGNALS,xt as default,Mt as summarize};
