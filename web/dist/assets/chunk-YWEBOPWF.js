import{k as r,l as f}from"./chunk-JIL5HOX7.js";import{c as l,d as i,g as e}from"./chunk-OKC6WX42.js";function R({from:a,to:n,refresh:b,onChange:o,onReload:s,error:u}){let[p,$]=l(a),[m,c]=l(n);i(()=>$(a),[a]),i(()=>c(n),[n]);let v=n==="now"&&a.startsWith("now-")?a.slice(4):"";return e`
    <form class="timerange" onSubmit=${t=>{t.preventDefault(),o({from:p.trim(),to:m.trim()})}} data-testid="timerange">
      <select aria-label="range" value=${r.includes(v)?v:""} onChange=${t=>t.target.value&&o({from:"now-"+t.target.value,to:"now"})}>
        <option value="">custom</option>
        ${r.map(t=>e`<option value=${t}>last ${t}</option>`)}
      </select>
      <input aria-label="from" size="16" value=${p} onInput=${t=>$(t.target.value)} />
      <span>→</span>
      <input aria-label="to" size="16" value=${m} onInput=${t=>c(t.target.value)} />
      <button type="submit" title="Apply the range and run">Run</button>
      <select aria-label="auto-refresh" value=${b} onChange=${t=>o({refresh:t.target.value})} title="auto-refresh">
        ${f.map(t=>e`<option value=${t}>${t?"every "+t:"no refresh"}</option>`)}
      </select>
      ${s&&e`<button type="button" onClick=${s} title="Run again now">⟳</button>`}
      ${u&&e`<span class="error inline">${u}</span>`}
    </form>
  `}export{R as a};
