import{a as w,b as R,c as A,d as C,f as k,g as E}from"./chunk-HEDM3C6X.js";import"./chunk-5AIR3XJI.js";import"./chunk-ZBFHLYCE.js";import"./chunk-ZGKEYWBR.js";import{d as m,l as g,r as b,s as y}from"./chunk-JIL5HOX7.js";import{c as h,d as f,g as s,i as v}from"./chunk-OKC6WX42.js";import"./chunk-QTRUX7X6.js";function L({params:e,navigate:l}){let n=b(e),r=e.get("state")||"",i=e.get("match")||"",[u,p]=h(i);f(()=>p(i),[i]);let o=(t,d=!1)=>l(v(["alerts"],{state:r,match:i,refresh:n.refresh,...t}),d),a=y(async t=>{let{all:d,logql:S}=await m.groups("",{signal:t});return w(d,S)},[n.tick]),c=[],$="";try{c=A(i)}catch(t){$=t.message}return s`<section class="panel" data-testid="alerts-page">
    <form class="toolbar" onSubmit=${t=>{t.preventDefault(),o({match:u.trim()},!0)}}>
      <span class="tabs">
        ${[["","all"],["firing","firing"],["pending","pending"]].map(([t,d])=>s`<button type="button" class=${r===t?"on":""} data-state=${d} onClick=${()=>o({state:t})}>${d}</button>`)}
      </span>
      <input class="wide" aria-label="label matchers" data-testid="alert-match" placeholder='labels, e.g. {run_id="r42", severity="critical"}' value=${u} onInput=${t=>p(t.target.value)} />
      <button type="submit">Filter</button>
      <select aria-label="auto-refresh" value=${n.refresh} onChange=${t=>o({refresh:t.target.value})} title="auto-refresh">
        ${g.map(t=>s`<option value=${t}>${t?"every "+t:"no refresh"}</option>`)}
      </select>
      <button type="button" onClick=${n.reload} title="Read again now">⟳</button>
      ${$&&s`<span class="error inline">${$}</span>`}
    </form>
    ${a.error?s`<div class="error">${a.error.message}</div>`:a.data?s`<${H} groups=${a.data} state=${r} matchers=${c} />`:s`<div class="loading">Reading rules…</div>`}
  </section>`}function H({groups:e,state:l,matchers:n}){let r=R(e),i=r.filter(a=>(!l||a.state===l)&&C(a.labels,n)),u=r.filter(a=>a.state==="firing").length,p=e.reduce((a,c)=>a+c.rules.length,0),o=e.reduce((a,c)=>a+c.errors,0);return s`
    <div class="stats-line" data-testid="alerts-totals">
      <b>${u}</b> firing · <b>${r.length-u}</b> pending · ${p} rules in ${e.length} groups
      ${o>0&&s` · <span class="err-count">${o} ${o>1?"rules":"rule"} failing</span>`}
    </div>
    <div class="card">
      <div class="card-head"><h2>Alerts</h2><span class="muted">${i.length} of ${r.length}</span></div>
      <${k} alerts=${i} empty=${r.length?"No alert matches the filter.":"No alert is pending or firing."} />
    </div>
    <div class="card" data-testid="rule-groups">
      <div class="card-head"><h2>Rules</h2></div>
      ${e.length===0?s`<p class="muted">No rules are loaded. Start weft with <code>-rules.file</code> or <code>rule_files</code> (docs/rules.md).</p>`:e.map(a=>s`<${I} g=${a} />`)}
    </div>
  `}function I({g:e}){let[l,n]=h(e.health!=="ok"||e.firing+e.pending>0);return s`<div class="rule-group" data-testid="rule-group" data-group=${e.name} data-health=${e.health}>
    <div class="rule-group-head" onClick=${()=>n(!l)}>
      <span class="wf-toggle">${l?"\u25BE":"\u25B8"}</span>
      <span class=${"health "+e.health}>${e.health}</span>
      <b>${e.name}</b>
      <span class="lang">${e.lang==="logql"?"LogQL":"PromQL"}</span>
      <span class="muted small">${e.file} · every ${e.interval}s${e.limit?` \xB7 limit ${e.limit}`:""} · ${e.rules.length} rules</span>
      ${e.firing>0&&s`<span class="state firing">${e.firing} firing</span>`}
      ${e.pending>0&&s`<span class="state pending">${e.pending} pending</span>`}
      ${e.errors>0&&s`<span class="err-count">${e.errors} failing</span>`}
    </div>
    ${l&&s`<${E} rules=${e.rules} />`}
  </div>`}export{L as default};
