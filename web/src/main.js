// The UI's shell: navigation, the hash router and page loading. Pages are
// code-split and loaded on first use.
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';
import { ROUTES, matchRoute } from './routes.js';
import { buildHash, parseHash } from './lib/url.js';
import { getTenant, setTenant } from './lib/tenant.js';

function useHash() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

// navigate changes the page's URL state. push adds a history entry (a new
// query, a pivot); without it the entry is replaced (typing, toggles).
export function navigate(hash, push = true) {
  if (hash === location.hash) return;
  if (push) {
    location.hash = hash;
  } else {
    history.replaceState(null, '', hash);
    dispatchEvent(new HashChangeEvent('hashchange'));
  }
}

const loaded = new Map();

function Page({ route, path, params }) {
  const [mod, setMod] = useState(() => loaded.get(route.name) || null);
  const [err, setErr] = useState(null);
  useEffect(() => {
    if (loaded.has(route.name)) {
      setMod(loaded.get(route.name));
      return;
    }
    setMod(null);
    let live = true;
    route.load().then(
      (m) => {
        loaded.set(route.name, m);
        if (live) setMod(m);
      },
      (e) => live && setErr(e),
    );
    return () => {
      live = false;
    };
  }, [route]);
  if (err) return html`<div class="error">Loading the page failed: ${String(err)}</div>`;
  if (!mod) return html`<div class="loading">Loading…</div>`;
  const C = mod.default;
  return html`<${C} path=${path} params=${params} navigate=${navigate} />`;
}

function App() {
  const hash = useHash();
  const { path, params } = parseHash(hash);
  const route = matchRoute(path);
  const current = route ? route.name : '';
  useEffect(() => {
    document.title = route ? `${route.title} · weft` : 'weft';
  }, [current]);
  return html`
    <header class="top">
      <a class="brand" href="#/">weft</a>
      <nav>
        ${ROUTES.filter((r) => r.nav !== false).map(
          (r) => html`<a href=${buildHash([r.name], {})} class=${current === r.name ? 'active' : ''}>${r.title}</a>`,
        )}
      </nav>
      <${TenantPicker} />
    </header>
    <main>
      ${route
        ? html`<${Page} key=${route.name} route=${route} path=${path.slice(1)} params=${params} />`
        : html`<div class="error">No page at "${hash}". <a href="#/">Go to the metrics page</a>.</div>`}
    </main>
  `;
}

// TenantPicker sets the tenant the UI reads as (multi-tenancy): shown once
// one is set or the server has asked for one; a change reloads the page.
function TenantPicker() {
  const [tenant] = useState(getTenant);
  const [draft, setDraft] = useState(tenant);
  const [needed, setNeeded] = useState(false);
  useEffect(() => {
    const on = () => setNeeded(true);
    addEventListener('weft-tenant-needed', on);
    return () => removeEventListener('weft-tenant-needed', on);
  }, []);
  if (!tenant && !needed) return null;
  const apply = (e) => {
    e.preventDefault();
    if (draft.trim() === tenant) return;
    setTenant(draft);
    location.reload();
  };
  return html`<form class="tenant" data-testid="tenant-picker" onSubmit=${apply} title="the tenant every request names (X-Scope-OrgID); a|b reads several where federation is on">
    <label>tenant <input aria-label="tenant" data-testid="tenant-input" size="12" value=${draft} onInput=${(e) => setDraft(e.target.value)} /></label>
    <button type="submit">set</button>
  </form>`;
}

render(html`<${App} />`, document.getElementById('app'));
