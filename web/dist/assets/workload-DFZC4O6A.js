import{a as lt,f as ct}from"./chunk-X53AU7W7.js";import{a as J,b as it}from"./chunk-64TZZIZX.js";import{a as dt,c as T,n as ut,s as mt}from"./chunk-2HUWU542.js";import{a as st}from"./chunk-YWEBOPWF.js";import{a as pt,b as ft,e as $t,f as K}from"./chunk-HEDM3C6X.js";import{b as ht}from"./chunk-5AIR3XJI.js";import{a as nt}from"./chunk-ZBFHLYCE.js";import{a as z,c as at,d as ot,h as W,i as rt,j as C}from"./chunk-ZGKEYWBR.js";import{a as S,b as L,c as q,d as Z,i as H,j as O,o as E,q as tt,r as et,s as R}from"./chunk-JIL5HOX7.js";import{c as I,d as U,e as D,g as i,i as M}from"./chunk-OKC6WX42.js";import"./chunk-QTRUX7X6.js";var Gt=["Hostname","host","node","instance"],Et=["gpu","gpu_index","minor_number","device"],At=["UUID","gpu_uuid","hw_id"];function V(t,a){for(let s of a)if(t[s]!==void 0&&t[s]!=="")return[s,t[s]];return[null,""]}function Pt(t){let[a,s]=V(t,Gt),[o,r]=V(t,Et),[e,n]=V(t,At),u=t.rank||"",p=[s,r,n,n||r?"":u].join("\0"),c=s||"";return r!==""?c+=(c?" ":"")+"gpu "+r:n?c+=(c?" ":"")+n.slice(0,12):u&&(c+=(c?" ":"")+"rank "+u),{key:p,label:c||"(unlabelled)",host:s,hostKey:a,gpu:r,gpuKey:o,uuid:n,uuidKey:e,rank:u}}function Tt(t,a){if(t.host!==a.host)return t.host<a.host?-1:1;let s=Number(t.gpu),o=Number(a.gpu);return t.gpu!==a.gpu?Number.isFinite(s)&&Number.isFinite(o)&&t.gpu!==""&&a.gpu!==""?s-o:t.gpu<a.gpu?-1:1:t.uuid<a.uuid?-1:t.uuid>a.uuid?1:0}function vt(t,a,s,o){let r=Math.floor((s-a)/o)+1,e=new Map;for(let d of t||[]){let f=Pt(d.metric||{}),m=e.get(f.key);m||(m={id:f,metric:d.metric||{},values:new Float64Array(r).fill(NaN)},e.set(f.key,m));for(let[v,$]of d.values||[]){let w=Math.round((v*1e3-a)/o);if(w<0||w>=r)continue;let l=Number($);Number.isFinite(l)&&(Number.isNaN(m.values[w])||l>m.values[w])&&(m.values[w]=l)}}let n=[...e.values()].sort((d,f)=>Tt(d.id,f.id)),u=new Float64Array(n.length*r),p=1/0,c=-1/0;return n.forEach((d,f)=>{u.set(d.values,f*r);for(let m of d.values)Number.isNaN(m)||(m<p&&(p=m),m>c&&(c=m))}),p>c&&(p=0,c=0),{rows:n.map(d=>({id:d.id,metric:d.metric})),cols:r,start:a,step:o,values:u,min:p,max:c}}function gt(t){if(!t.length)return NaN;t.sort((s,o)=>s-o);let a=t.length>>1;return t.length%2?t[a]:(t[a-1]+t[a])/2}var Ft=1.4826,It={zThreshold:3.5,rowFraction:.2,minRows:3,madFloorFrac:.02};function wt(t,a={}){let s={...It,...a},{rows:o,cols:r,values:e}=t,n=o.length,u=new Float64Array(n*r).fill(NaN),p=new Float64Array(r).fill(NaN),c=Math.max(1e-9,(t.max-t.min)*.001),d=[];for(let m=0;m<r;m++){d.length=0;for(let l=0;l<n;l++){let h=e[l*r+m];Number.isNaN(h)||d.push(h)}if(d.length<s.minRows)continue;let v=gt(d);for(let l=0;l<d.length;l++)d[l]=Math.abs(d[l]-v);let $=gt(d),w=Math.max(Ft*$,s.madFloorFrac*Math.abs(v),c);p[m]=v;for(let l=0;l<n;l++){let h=e[l*r+m];Number.isNaN(h)||(u[l*r+m]=(h-v)/w)}}let f=[];for(let m=0;m<n;m++){let v=0,$=0,w=0;for(let l=0;l<r;l++){let h=u[m*r+l];Number.isNaN(h)||(v++,Math.abs(h)>=s.zThreshold&&($++,w+=h))}v&&$/v>=s.rowFraction&&f.push({row:m,fraction:$/v,direction:w<0?"low":"high",meanZ:w/$})}return f.sort((m,v)=>v.fraction-m.fraction),{z:u,colMedian:p,marked:f,threshold:s.zThreshold}}var F=[[68,1,84],[59,82,139],[33,145,140],[94,201,98],[253,231,37]];function _t(t){Number.isFinite(t)||(t=0),t=Math.min(1,Math.max(0,t));let a=t*(F.length-1),s=Math.min(F.length-2,Math.floor(a)),o=a-s,r=F[s],e=F[s+1];return[0,1,2].map(n=>Math.round(r[n]+(e[n]-r[n])*o))}var B=18;function kt({hm:t,outliers:a,unit:s,params:o,testid:r="heatmap"}){let e=D(null),n=D(null),[u,p]=I(null),[c,d]=I(800),f=t.rows.length,m=new Map(a.marked.map(l=>[l.row,l]));U(()=>{let l=new ResizeObserver(()=>n.current&&d(Math.max(200,n.current.clientWidth)));return l.observe(n.current),()=>l.disconnect()},[]),U(()=>{let l=e.current;if(!l||!f)return;let h=devicePixelRatio||1,_=f*B;l.width=Math.round(c*h),l.height=Math.round(_*h),l.style.width=c+"px",l.style.height=_+"px";let g=l.getContext("2d"),N=new ImageData(t.cols,f),Rt=t.max-t.min||1;for(let y=0;y<f;y++)for(let k=0;k<t.cols;k++){let x=t.values[y*t.cols+k],b=(y*t.cols+k)*4;if(Number.isNaN(x))N.data[b]=N.data[b+1]=N.data[b+2]=238;else{let[P,St,Ct]=_t((x-t.min)/Rt);N.data[b]=P,N.data[b+1]=St,N.data[b+2]=Ct}N.data[b+3]=255}let A=document.createElement("canvas");A.width=t.cols,A.height=f,A.getContext("2d").putImageData(N,0,0),g.imageSmoothingEnabled=!1,g.drawImage(A,0,0,l.width,l.height);let j=l.width/t.cols,Q=l.height/f;g.strokeStyle="#ff1744",g.lineWidth=Math.max(1.5,h*1.5);for(let y=0;y<f;y++){let k=-1;for(let x=0;x<=t.cols;x++){let b=x<t.cols?a.z[y*t.cols+x]:NaN,P=Math.abs(b)>=a.threshold;P&&k<0&&(k=x),!P&&k>=0&&(g.strokeRect(k*j+1,y*Q+1,(x-k)*j-2,Q-2),k=-1)}}l.dataset.drawnAt||(l.dataset.drawnAt=String(Math.round(performance.now()))),l.dataset.state="drawn"},[t,a,c]);let v=l=>{let h=e.current.getBoundingClientRect(),_=Math.floor((l.clientX-h.left)/h.width*t.cols),g=Math.floor((l.clientY-h.top)/B);if(_<0||_>=t.cols||g<0||g>=f)return p(null);p({r:g,col:_,x:l.clientX-h.left,y:g*B})},$=[],w=6;for(let l=0;l<=w;l++)$.push(t.start+(t.cols-1)*t.step*l/w);return i`
    <div class="heatmap" data-testid=${r} data-rows=${f} data-cols=${t.cols}>
      <div class="hm-labels">
        ${t.rows.map((l,h)=>{let _=m.get(h),g=l.id;return i`<div class=${"hm-label"+(_?" outlier":"")} data-testid="gpu-row" data-gpu=${g.label} data-outlier=${_?"true":"false"}>
            ${_&&i`<span class="badge" title=${`${Math.round(_.fraction*100)}% of buckets are outliers (robust z \u2265 ${a.threshold})`}>${_.direction==="low"?"\u25BC":"\u25B2"} outlier</span>`}
            ${g.host&&i`<${C} name=${g.hostKey} value=${g.host} params=${o} />`}
            ${g.gpu!==""&&i`<span class="lbl">gpu ${g.gpu}</span>`}
            ${g.uuid&&i`<${C} name=${g.uuidKey} value=${g.uuid} params=${o} short=${12} />`}
            ${!g.host&&!g.uuid&&g.rank&&i`<${C} name="rank" value=${g.rank} params=${o} />`}
          </div>`})}
      </div>
      <div class="hm-canvas" ref=${n}>
        <canvas ref=${e} onMouseMove=${v} onMouseLeave=${()=>p(null)}></canvas>
        <div class="hm-axis">${$.map((l,h)=>i`<span style=${{left:`${h/w*100}%`}}>${O(l).slice(11,16)}</span>`)}</div>
        ${u&&i`<${Ut} hm=${t} outliers=${a} hover=${u} unit=${s} />`}
      </div>
      <div class="hm-scale">
        <span>${E(t.min)}</span><span class="ramp"></span><span>${E(t.max)} ${s||""}</span>
        <span class="outline-key">outliers outlined</span>
      </div>
    </div>
  `}function Ut({hm:t,outliers:a,hover:s,unit:o}){let r=s.r*t.cols+s.col,e=t.values[r],n=a.z[r],u=t.start+s.col*t.step;return i`<div class="tooltip" style=${{left:`${s.x+12}px`,top:`${s.y}px`}}>
    <div class="muted">${O(u)}</div>
    <div><b>${t.rows[s.r].id.label}</b>: ${E(e)} ${o||""}</div>
    <div class="muted">median of GPUs ${E(a.colMedian[s.col])} · robust z ${Number.isNaN(n)?"\u2014":n.toFixed(1)}</div>
  </div>`}var yt=20;function X(t,a){return M(["alerts"],{match:`{${t}="${at(a)}"}`})}function xt({k:t,v:a,context:s,tick:o}){let r=R(async c=>{let{all:d,logql:f}=await Z.groups("alert",{signal:c});return $t(ft(pt(d,f)),t,a,s)},[t,a,s,o]),e=c=>i`<div class="card-head"><h2>Alerts</h2>${c}<a href=${X(t,a)}>open in alerts</a></div>`;if(r.error)return i`<div class="card" data-testid="workload-alerts">${e(null)}<div class="error">${r.error.message}</div></div>`;if(!r.data)return i`<div class="card" data-testid="workload-alerts">${e(null)}<div class="loading">Reading alerts…</div></div>`;let{direct:n,related:u}=r.data,p=n.filter(c=>c.state==="firing").length;return!n.length&&!u.length?i`<div class="card compact" data-testid="workload-alerts" data-firing="0" data-count="0" data-related="0">
      ${e(i`<span class="muted">no alert with ${t}="${a}", or on its hosts, GPUs and pods, is pending or firing</span>`)}
    </div>`:i`<div class="card" data-testid="workload-alerts" data-firing=${p} data-count=${n.length} data-related=${u.length}>
    ${e(i`<span class=${p?"err-count":"muted"}>${p} firing · ${n.length-p} pending</span>`)}
    <${K} alerts=${n} testid="workload-alert-list" empty=${`No alert with ${t}="${a}" is pending or firing.`} />
    ${u.length>0&&i`<h2 class="sub">On its hosts, GPUs and pods <span class="muted">(${u.length})</span></h2>
      <${K} alerts=${u} testid="related-alert-list" />`}
  </div>`}function bt({k:t,v:a,r:s}){let{start:o,end:r}=s.range,e=R(async u=>{let c=(((await q.tags("resource",o,r,{signal:u})).scopes||[]).find(f=>f.name==="resource")||{}).tags||[],d=T(t,a,c);return d?{q:d,rows:ut(await q.search(d,o,r,{limit:yt,spss:3,signal:u}))}:{q:d,rows:[]}},[t,a,o,r,s.tick]),n=e.data;return i`<div class="card" data-testid="workload-traces">
    <div class="card-head">
      <h2>Traces</h2>
      ${n&&n.q&&i`<code class="muted small">${n.q}</code><a href=${M(["traces"],{q:n.q,from:s.from,to:s.to})}>open in traces search</a>`}
    </div>
    ${e.error?i`<div class="error">${e.error.message}</div>`:n?n.q?i`<${mt} rows=${n.rows} limit=${yt} testid="workload-trace-list" />`:i`<p class="muted" data-testid="no-trace-context">No trace resource in this range carries ${t} (as ${dt(t).join(", ")}).</p>`:i`<div class="loading">Searching traces…</div>`}
  </div>`}var Y=[{id:"util",title:"utilization",names:["DCGM_FI_DEV_GPU_UTIL","hw_gpu_utilization"],unit:"%"},{id:"power",title:"power",names:["DCGM_FI_DEV_POWER_USAGE","hw_power"],unit:"W"},{id:"temp",title:"temperature",names:["DCGM_FI_DEV_GPU_TEMP","hw_gpu_temperature"],unit:"\xB0C"},{id:"mem",title:"memory used",names:["DCGM_FI_DEV_FB_USED","hw_gpu_memory_usage"],unit:"MiB"},{id:"nvlink",title:"NVLink",names:["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"],unit:"MiB/s"},{id:"smclock",title:"SM clock",names:["DCGM_FI_DEV_SM_CLOCK"],unit:"MHz"}],Dt=/(step_?time|step_duration|step_seconds|iteration_time|iter_time|throughput|tokens_per_s|samples_per_s|tokens_total|samples_total|tflops|mfu)/i,Lt=720,Mt=15e3,qt=4;function Ht({path:t,params:a,navigate:s}){let[o,r]=t,e=et(a);if(!o||r===void 0)return i`<section class="panel"><p>Open a workload from any label value: a click on <code>run_id="…"</code>, <code>model="…"</code>, <code>gpu_uuid="…"</code>, … anywhere in the UI.</p></section>`;let n=[[o,r]],u=ot(n),p=(c,d=!0)=>s(M(["workload",o,r],{from:e.from,to:e.to,refresh:e.refresh,gpu:a.get("gpu")||"",...c}),d);return i`
    <section class="panel" data-testid="workload-page" data-key=${o} data-value=${r}>
      <h1 class="workload-title"><span class="muted">${o}</span> = <span data-testid="workload-value">${r}</span></h1>
      <${st} ...${e} error=${e.range.error} onChange=${c=>p(c)} onReload=${e.reload} />
      <div class="links-out" data-testid="links-out">
        <a href=${rt(n,e.from,e.to)}>metrics</a>
        <a href=${W(n,e.from,e.to)}>logs</a>
        <a href=${M(["cardinality"],{match:u})}>cardinality</a>
        <a href=${M(["traces"],{q:T(o,r,null),from:e.from,to:e.to})}>traces</a>
        <a href=${X(o,r)}>alerts</a>
        <a href=${ht({selector:u},e.to)} data-link="investigate">investigate</a>
      </div>
      ${e.range.error?null:i`<${Ot} key=${o+"\0"+r} k=${o} v=${r} sel=${u} r=${e} gpu=${a.get("gpu")} go=${p} />`}
    </section>
  `}function Ot({k:t,v:a,sel:s,r:o,gpu:r,go:e}){let{start:n,end:u}=o.range,p=R(async $=>{let w=Y.find(_=>_.id===r)||Y[0];Vt(Nt(w,w.names[0],s,o.range),$);let[l,h]=await Promise.all([S.series([s],n,u,{signal:$}),L.series([s],n,u,{signal:$}).catch(()=>[])]);return zt(l,h)},[s,n,u,o.tick]);if(p.error)return i`<div class="error">${p.error.message}</div>`;if(!p.data)return i`<div class="loading">Finding the workload's series and streams…</div>`;let c=p.data,d=Y.map($=>({...$,name:$.names.find(w=>c.metrics.has(w))})).filter($=>$.name),f=d.find($=>$.id===r)||d[0],m=[...c.metrics].filter($=>Dt.test($)&&!$.startsWith("DCGM_")).sort().slice(0,qt),v={from:o.from,to:o.to};return i`
    <${Wt} c=${c} k=${t} params=${v} />
    <${xt} k=${t} v=${a} context=${c.values} tick=${o.tick} />
    <div class="card">
      <div class="card-head">
        <h2>GPUs × time</h2>
        <span class="tabs">
          ${d.map($=>i`<button class=${$===f?"on":""} data-signal=${$.id} onClick=${()=>e({gpu:$.id},!1)}>${$.title}</button>`)}
        </span>
        <${nt} pairs=${[[t,a]]} from=${o.from} to=${o.to} workload=${!1} />
      </div>
      ${f?i`<${Xt} key=${f.id} signal=${f} sel=${s} r=${o} params=${v} />`:i`<p class="muted">No GPU metrics (DCGM or OpenTelemetry hardware names) for ${s} in this range.</p>`}
    </div>
    ${m.map($=>i`<div class="card"><${Yt} name=${$} sel=${s} r=${o} /></div>`)}
    <${bt} k=${t} v=${a} r=${o} />
    <div class="card">
      <div class="card-head"><h2>Logs</h2><span class="muted">${c.streams.length} streams</span><a href=${W([[t,a]],o.from,o.to)}>open in logs explore</a></div>
      ${c.streams.length?i`<${jt} sel=${s} r=${o} params=${v} />`:i`<p class="muted">No log streams with ${s} in this range.</p>`}
    </div>
  `}function zt(t,a){let s=new Set,o=new Map,r=e=>{for(let[n,u]of Object.entries(e))n!=="__name__"&&(o.has(n)||o.set(n,new Set),o.get(n).add(u))};for(let e of t||[])e.__name__&&s.add(e.__name__),r(e);for(let e of a||[])r(e);return{metrics:s,values:o,series:t||[],streams:a||[]}}function Wt({c:t,k:a,params:s}){let o=z.filter(e=>e!==a&&t.values.has(e)),r=[...t.values.keys()].filter(e=>!z.includes(e)).sort();return i`<div class="card" data-testid="workload-context">
    <div class="card-head"><h2>Context</h2><span class="muted">${tt(t.series.length)} series of ${t.metrics.size} metrics · ${t.streams.length} log streams</span></div>
    <div class="context-grid">
      ${o.map(e=>{let n=[...t.values.get(e)].sort(Kt);return i`<div class="ctx-key"><span class="muted">${e}</span>
          ${n.slice(0,24).map(u=>i`<${C} name=${e} value=${u} params=${s} short=${e==="UUID"||e==="gpu_uuid"?16:0} />`)}
          ${n.length>24&&i`<span class="muted">+${n.length-24} more</span>`}
        </div>`})}
      ${!o.length&&i`<span class="muted">no other workload labels on this workload's signals</span>`}
    </div>
    ${r.length>0&&i`<details><summary>other labels (${r.length})</summary>
      <div class="context-grid">${r.map(e=>i`<div class="ctx-key"><span class="muted">${e}</span> ${t.values.get(e).size} values</div>`)}</div>
    </details>`}
  </div>`}function Kt(t,a){return t.localeCompare(a,void 0,{numeric:!0})}function Nt(t,a,s,o){let r=H(o.end-o.start,Lt,Mt),e=Math.floor(o.start/r)*r;return{q:`avg_over_time(${a||t.name}${s}[${r/1e3}s])`,gs:e,end:o.end,step:r}}var G=null;function Vt(t,a){G={key:`${t.q}\0${t.gs}\0${t.end}\0${t.step}`,p:S.queryRange(t.q,t.gs,t.end,t.step,{signal:a})},G.p.catch(()=>{})}function Bt(t){let a=`${t.q}\0${t.gs}\0${t.end}\0${t.step}`;if(!G||G.key!==a)return null;let s=G.p;return G=null,s}function Xt({signal:t,sel:a,r:s,params:o}){let r=Nt(t,t.name,a,s.range),{q:e,gs:n,end:u,step:p}=r,c=R(async m=>{let v=await(Bt(r)||S.queryRange(e,n,u,p,{signal:m})).catch(()=>S.queryRange(e,n,u,p,{signal:m})),$=vt(v.result,n,u,p);return{hm:$,outliers:wt($)}},[e,n,u,p,s.tick]);if(c.error)return i`<div class="error">${c.error.message}</div>`;if(!c.data)return i`<div class="loading">Reading ${t.name}…</div>`;let{hm:d,outliers:f}=c.data;return d.rows.length?i`<div>
    <div class="outlier-summary" data-testid="outlier-summary">
      ${f.marked.length===0?i`<span class="ok">No outlier GPU: every GPU within ${f.threshold} robust deviations of the median in most buckets.</span>`:f.marked.map(m=>i`<span class="outlier-item" data-gpu=${d.rows[m.row].id.label}>
              ${d.rows[m.row].id.label}: ${m.direction} ${t.title} in ${Math.round(m.fraction*100)}% of buckets
            </span>`)}
    </div>
    <${kt} hm=${d} outliers=${f} unit=${t.unit} params=${o} />
    <div class="muted small"><code>${e}</code> · ${d.rows.length} GPUs × ${d.cols} buckets of ${p/1e3}s · <a href=${M(["metrics"],{q:e,from:s.from,to:s.to})}>open in metrics explore</a></div>
  </div>`:i`<p class="muted">No ${t.name} samples in this range.</p>`}function Yt({name:t,sel:a,r:s}){let{start:o,end:r}=s.range,e=H(r-o,300,Mt),n=Math.floor(o/e)*e,u=/_total$/.test(t),p=t+a,c=u?`sum by (run_id, rank) (rate(${p}[${Math.max(60,2*e/1e3)}s]))`:p,d=R(async f=>{let m=await S.queryRange(c,n,r,e,{signal:f});return J([{query:c,result:m.result}],n,r,e)},[c,n,r,e,s.tick]);return i`<div>
    <div class="card-head"><h2>${t}</h2><a href=${M(["metrics"],{q:c,from:s.from,to:s.to})}>open in metrics explore</a></div>
    ${d.error?i`<div class="error">${d.error.message}</div>`:d.data?i`<${it} data=${d.data} from=${s.from} to=${s.to} height=${200} testid=${"progress-"+t} />`:i`<div class="loading">…</div>`}
  </div>`}function jt({sel:t,r:a,params:s}){let o=R(async r=>{let e=await L.queryRange(t,a.range.start,a.range.end,{limit:100,direction:"backward",signal:r});return lt(e.result)},[t,a.range.start,a.range.end,a.tick]);return o.error?i`<div class="error">${o.error.message}</div>`:o.data?i`<div class="scroll"><${ct} entries=${o.data} params=${s} max=${100} testid="workload-logs" /></div>`:i`<div class="loading">Reading lines…</div>`}export{Y as GPU_SIGNALS,Ht as default,zt as summarize};
