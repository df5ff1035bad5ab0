import{c as y}from"./chunk-5AIR3XJI.js";import{a as w}from"./chunk-ZBFHLYCE.js";import{e as g,k as b}from"./chunk-ZGKEYWBR.js";import{g as f,j as h,o as v}from"./chunk-JIL5HOX7.js";import{g as i,i as m}from"./chunk-OKC6WX42.js";function k(t,r){let e=new Set((r&&r.groups||[]).map(a=>a.file+"\0"+a.name));return(t&&t.groups||[]).map(a=>{let n=e.has(a.file+"\0"+a.name)?"logql":"promql",s=(a.rules||[]).map(l=>({...l,lang:n,alerts:l.alerts||[],health:l.health||"unknown",lastError:l.lastError||""})),u=s.some(l=>l.health==="err")?"err":s.some(l=>l.health!=="ok")?"unknown":"ok";return{name:a.name,file:a.file,interval:a.interval,limit:a.limit||0,lastEvaluation:a.lastEvaluation,evaluationTime:a.evaluationTime,lang:n,health:u,rules:s,errors:s.filter(l=>l.health==="err").length,firing:s.reduce((l,o)=>l+o.alerts.filter(c=>c.state==="firing").length,0),pending:s.reduce((l,o)=>l+o.alerts.filter(c=>c.state==="pending").length,0)}})}var E={firing:0,pending:1},q={critical:0,page:0,error:1,warning:2,ticket:2,info:3};function R(t){let r=[];for(let a of t)for(let n of a.rules)for(let s of n.alerts)r.push({labels:s.labels||{},annotations:s.annotations||{},state:s.state||"firing",activeAt:s.activeAt||"",activeMs:s.activeAt?Date.parse(s.activeAt):NaN,value:s.value,rule:{name:n.name,query:n.query,lang:n.lang,group:a.name,file:a.file,duration:n.duration||0}});let e=a=>q[String(a.labels.severity||"").toLowerCase()]??4;return r.sort((a,n)=>(E[a.state]??2)-(E[n.state]??2)||e(a)-e(n)||(n.activeMs||0)-(a.activeMs||0)||String(a.labels.alertname).localeCompare(String(n.labels.alertname))),r}function T(t){let r=String(t||"").trim();if(r.startsWith("{")){if(!r.endsWith("}"))throw new Error('missing closing "}"');r=r.slice(1,-1)}let e=[],a=/\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,|$)/y,n=0;for(;r.slice(n).trim()!=="";){a.lastIndex=n;let s=a.exec(r);if(!s)throw new Error(`bad matcher at "${r.slice(n).trim()}": want name="value"`);let u=s[3].replace(/\\(.)/g,(o,c)=>c==="n"?`
`:c),l={name:s[1],op:s[2],value:u};if(s[2]==="=~"||s[2]==="!~")try{l.re=new RegExp("^(?:"+u+")$")}catch(o){throw new Error(`bad regular expression "${u}": ${o.message}`)}if(e.push(l),n=a.lastIndex,s[4]==="")break}return e}function _(t,r){return r.every(e=>{let a=t[e.name]??"";switch(e.op){case"=":return a===e.value;case"!=":return a!==e.value;case"=~":return e.re.test(a);default:return!e.re.test(a)}})}var A=[["host","Hostname","hostname"],["gpu_uuid","UUID"]],M=t=>A.find(r=>r.includes(t))||[t],N=["host","Hostname","hostname","node","gpu_uuid","UUID","pod"];function H(t,r,e,a){let n=[],s=[],u=M(r);for(let l of t){if(u.some(c=>l.labels[c]===e)){n.push(l);continue}if(!a)continue;let o=N.find(c=>l.labels[c]!==void 0&&M(c).some($=>a.get($)&&a.get($).has(l.labels[c])));o&&s.push({...l,via:o})}return{direct:n,related:s}}function d(t,r){let e=Number.isFinite(r)?String(Math.floor(r/1e3)-3600):"now-1h";return m([t.lang==="logql"?"logs":"metrics"],{q:t.query,from:e,to:"now"})}function p(t,r){let e=Math.max(0,Math.round((r-t)/1e3));if(!Number.isFinite(e))return"\u2014";if(e<60)return`${e}s`;let a=Math.floor(e/86400);e%=86400;let n=Math.floor(e/3600);e%=3600;let s=Math.floor(e/60);return a?`${a}d${n?n+"h":""}`:n?`${n}h${s?s+"m":""}`:`${s}m`}var x=["summary","description","message"];function V({alerts:t,empty:r="No alerts.",testid:e="alert-list",max:a=500}){if(!t.length)return i`<p class="muted" data-testid=${e} data-count="0">${r}</p>`;let n=Date.now();return i`<div class="alert-list" data-testid=${e} data-count=${t.length}>
    ${t.slice(0,a).map(s=>i`<${D} a=${s} now=${n} />`)}
    ${t.length>a&&i`<div class="muted">${t.length-a} more alerts not shown</div>`}
  </div>`}function D({a:t,now:r}){let{alertname:e,...a}=t.labels,n=g(t.labels),s=Number.isFinite(t.activeMs)?String(Math.floor(t.activeMs/1e3)-3600):"now-1h",u={from:s,to:"now"},l=Object.keys(t.annotations).filter(o=>!x.includes(o)).sort();return i`<div class="alert-row" data-testid="alert-row" data-alert=${e} data-state=${t.state}>
    <div class="alert-head">
      <span class=${"state "+t.state}>${t.state}</span>
      <b class="alertname">${e}</b>
      ${a.severity&&i`<span class=${"sev "+a.severity}>${a.severity}</span>`}
      <span class="muted small" title=${t.activeAt}>active since ${Number.isFinite(t.activeMs)?h(t.activeMs):"\u2014"} (${p(t.activeMs,r)})</span>
      ${t.value!==void 0&&i`<span class="muted small">value ${v(t.value)}</span>`}
      ${t.via&&i`<span class="muted small" title="an alert on one of this workload's hosts, GPUs or pods">via ${t.via}="${t.labels[t.via]}"</span>`}
    </div>
    ${x.filter(o=>t.annotations[o]).map(o=>i`<div class=${"annotation "+o}>${t.annotations[o]}</div>`)}
    <div class="alert-labels"><${b} metric=${a} params=${u} name=${!1} /></div>
    <div class="alert-links">
      <a href=${d(t.rule,t.activeMs)} data-link="query" title=${t.rule.query}>${t.rule.lang==="logql"?"LogQL":"PromQL"} query</a>
      ${t.state==="firing"&&i`<a href=${y(t.labels)} data-link="investigate" title="rank the probable causes of this alert">investigate</a>`}
      <span class="muted small">rule ${t.rule.group} / ${t.rule.name}</span>
      <${w} pairs=${n} from=${s} to="now" />
    </div>
    ${l.length>0&&i`<div class="fields">${l.map(o=>/^https?:\/\//.test(t.annotations[o])?i`<a class="lbl" href=${t.annotations[o]} target="_blank" rel="noopener noreferrer">${o}</a>`:i`<span class="lbl">${o}="${t.annotations[o]}"</span>`)}</div>`}
  </div>`}function W({rules:t}){let r=Date.now();return i`<table class="tbl rules">
    <colgroup><col class="c-type" /><col /><col class="c-health" /><col class="c-eval" /><col class="c-state" /></colgroup>
    <tbody>
      ${t.map(e=>{let a=e.lastEvaluation?Date.parse(e.lastEvaluation):NaN,n=!Number.isFinite(a)||a<=0;return i`<tr data-testid="rule-row" data-rule=${e.name} data-health=${e.health} data-type=${e.type}>
          <td class="small"><span class=${"rule-type "+e.type}>${e.type==="alerting"?"alert":"record"}</span></td>
          <td>
            <b>${e.name}</b>
            ${e.type==="recording"&&i` <a class="small" href=${m(["metrics"],{q:e.name})} title="the recorded series">series</a>`}
            <div><a href=${d(e,NaN)} data-link="query"><code class="expr">${e.query}</code></a></div>
            ${e.duration>0&&i`<span class="muted small">for ${f(e.duration*1e3)} </span>`}
            ${Object.keys(e.labels||{}).length>0&&i`<span class="muted small">${Object.entries(e.labels).map(([s,u])=>`${s}="${u}"`).join(", ")}</span>`}
          </td>
          <td>
            <span class=${"health "+e.health}>${e.health}</span>
            ${e.lastError&&i`<div class="error inline-block" data-testid="rule-error">${e.lastError}</div>`}
          </td>
          <td class="small" title=${e.lastEvaluation||""}>${n?"not evaluated yet":i`evaluated ${p(a,r)} ago<br /><span class="muted">in ${L(e.evaluationTime)}</span>`}</td>
          <td class="small">${e.type==="alerting"&&i`<span class=${"state "+(e.state||"inactive")}>${e.state||"inactive"}</span>${e.alerts.length?` ${e.alerts.length}`:""}`}</td>
        </tr>`})}
    </tbody>
  </table>`}function L(t){return t>=0?t<1?`${(t*1e3).toFixed(t<.01?2:1)} ms`:`${t.toFixed(2)} s`:"\u2014"}export{k as a,R as b,T as c,_ as d,H as e,V as f,W as g};
