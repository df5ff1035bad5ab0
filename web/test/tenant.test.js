import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TENANT_HEADER, needsTenant, withTenant } from '../src/lib/tenant.js';
import { loki } from '../src/lib/api.js';

test('withTenant adds the header only with a tenant', () => {
  assert.deepEqual(withTenant({ Accept: 'x' }, 'team-a'), { Accept: 'x', [TENANT_HEADER]: 'team-a' });
  assert.deepEqual(withTenant(undefined, 'a|b'), { 'X-Scope-OrgID': 'a|b' });
  assert.deepEqual(withTenant({ Accept: 'x' }, ''), { Accept: 'x' });
  assert.deepEqual(withTenant(undefined, ''), {});
});

test('needsTenant: the server asking for an org id', () => {
  assert.ok(needsTenant(401, 'no org id: multi-tenancy is on (-multi-tenant), send the tenant in the X-Scope-OrgID header\n'));
  assert.ok(!needsTenant(401, 'unauthorized'));
  assert.ok(!needsTenant(400, 'no org id'));
});

test('the live tail names the tenant in a parameter (no headers on a WebSocket)', () => {
  const u = new URL(loki.tailURL('{app="a"}', 1000, 10, 'team-a'));
  assert.equal(u.protocol, 'ws:');
  assert.equal(u.pathname, '/loki/api/v1/tail');
  assert.equal(u.searchParams.get(TENANT_HEADER), 'team-a');
  assert.equal(u.searchParams.get('query'), '{app="a"}');
  assert.equal(u.searchParams.get('start'), '1000000000');
  assert.ok(!new URL(loki.tailURL('{app="a"}', 1000, 10, '')).searchParams.has(TENANT_HEADER));
});
