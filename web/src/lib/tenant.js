// The tenant the UI reads as: with multi-tenancy on (-multi-tenant), every
// API request names one in X-Scope-OrgID (docs/tenancy.md). It is kept in
// the browser's localStorage, set from the top bar, and sent with every
// request the UI makes (lib/api.js, the PromQL editor's completion).

export const TENANT_HEADER = 'X-Scope-OrgID';
const KEY = 'weft.tenant';

function store() {
  try {
    return typeof localStorage !== 'undefined' ? localStorage : null;
  } catch {
    return null;
  }
}

export function getTenant() {
  const s = store();
  return (s && s.getItem(KEY)) || '';
}

export function setTenant(t) {
  const s = store();
  if (!s) return;
  const v = String(t || '').trim();
  if (v) s.setItem(KEY, v);
  else s.removeItem(KEY);
}

// withTenant returns headers (an object) with the tenant's header added
// when one is set.
export function withTenant(headers, tenant = getTenant()) {
  return tenant ? { ...(headers || {}), [TENANT_HEADER]: tenant } : headers || {};
}

// needsTenant reports whether an API error says a tenant is required: 401
// with the server's "no org id" message.
export function needsTenant(status, message) {
  return status === 401 && /no org id/i.test(message || '');
}
