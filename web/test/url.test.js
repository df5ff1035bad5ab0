import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildHash, parseHash, rangeParams, withParams } from '../src/lib/url.js';
import { matchRoute, ROUTES } from '../src/routes.js';

test('parseHash and buildHash round-trip', () => {
  const h = buildHash(['workload', 'run_id', 'r/42 x'], { q: ['up{a="b"}', 'rate(x[5m])'], from: 'now-1h', empty: '', no: false, on: true });
  assert.equal(h, '#/workload/run_id/r%2F42%20x?q=up%7Ba%3D%22b%22%7D&q=rate%28x%5B5m%5D%29&from=now-1h&on=1');
  const { path, params } = parseHash(h);
  assert.deepEqual(path, ['workload', 'run_id', 'r/42 x']);
  assert.deepEqual(params.getAll('q'), ['up{a="b"}', 'rate(x[5m])']);
  assert.equal(params.get('from'), 'now-1h');
  assert.equal(params.get('empty'), null);
});

test('parseHash tolerates odd input', () => {
  assert.deepEqual(parseHash('').path, []);
  assert.deepEqual(parseHash('#').path, []);
  assert.deepEqual(parseHash('#/').path, []);
  assert.deepEqual(parseHash('#//metrics//').path, ['metrics']);
  assert.deepEqual(parseHash('#/bad%E0%A4%A').path, ['bad%E0%A4%A']);
  assert.equal(parseHash('#/logs?q=%7Ba%3D%22b%22%7D').params.get('q'), '{a="b"}');
});

test('withParams changes, replaces and deletes', () => {
  const h = withParams('#/metrics?q=a&q=b&from=now-1h', { q: ['c'], from: null, tab: 'table' });
  assert.equal(h, '#/metrics?q=c&tab=table');
});

test('rangeParams defaults', () => {
  assert.deepEqual(rangeParams(new URLSearchParams('')), { from: 'now-1h', to: 'now', refresh: '' });
  assert.deepEqual(rangeParams(new URLSearchParams('from=now-6h&refresh=30s')), { from: 'now-6h', to: 'now', refresh: '30s' });
});

test('routes: default, known, unknown', () => {
  assert.equal(matchRoute([]).name, 'metrics');
  assert.equal(matchRoute(['workload', 'run_id', 'r42']).name, 'workload');
  assert.equal(typeof matchRoute(['traces', 'abc']).load, 'function');
  assert.equal(typeof matchRoute(['investigate']).load, 'function');
  assert.equal(matchRoute(['nope']), null);
  for (const r of ROUTES) assert.equal(typeof r.load, 'function', r.name);
});
