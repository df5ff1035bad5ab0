import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  alertInvestigateHash, evidenceHash, formatOffset, graphedEvidence, investigateHash, investigateRequest, reportWindow, wherePairs,
} from '../src/lib/investigate.js';
import { parseHash } from '../src/lib/url.js';

const NOW = Date.parse('2026-01-01T12:00:00Z');

test('investigateRequest: no symptom shows the form', () => {
  assert.deepEqual(investigateRequest(new URLSearchParams(''), NOW), { empty: true });
  assert.deepEqual(investigateRequest(new URLSearchParams('selector=+&at=now'), NOW), { empty: true });
});

test('investigateRequest: fields and time', () => {
  const r = investigateRequest(new URLSearchParams('selector={run_id="r42"}&at=now-5m'), NOW);
  assert.deepEqual(r.req, { selector: '{run_id="r42"}', time: String((NOW - 300e3) / 1e3) + '.000' });
  assert.equal(r.at, 'now-5m');
  const d = investigateRequest(new URLSearchParams('query=up'), NOW);
  assert.equal(d.req.time, (NOW / 1e3).toFixed(3), 'at defaults to now');
  const abs = investigateRequest(new URLSearchParams('log_query={a="b"}&at=1767268800'), NOW);
  assert.deepEqual(abs.req, { log_query: '{a="b"}', time: '1767268800.000' });
});

test('investigateRequest: errors name the field', () => {
  assert.match(investigateRequest(new URLSearchParams('alert=nope'), NOW).error, /^alert: not a JSON object/);
  assert.match(investigateRequest(new URLSearchParams('alert=[1]'), NOW).error, /^alert: not a JSON object/);
  assert.match(investigateRequest(new URLSearchParams('selector={a="b"}&at=yesterday'), NOW).error, /^at: cannot read "yesterday"/);
});

test('investigateHash and alertInvestigateHash round-trip through the URL', () => {
  const h = investigateHash({ selector: '{run_id="r42"}', query: '' }, 'now');
  const { path, params } = parseHash(h);
  assert.deepEqual(path, ['investigate']);
  assert.equal(params.get('selector'), '{run_id="r42"}');
  assert.equal(params.get('at'), null, 'now is the default and is left out');
  const a = parseHash(alertInvestigateHash({ alertname: 'Stall', severity: 'critical', run_id: 'r42', host: 'node-6' }));
  assert.deepEqual(JSON.parse(a.params.get('alert')), { run_id: 'r42', host: 'node-6' });
  const r = investigateRequest(a.params, NOW);
  assert.deepEqual(JSON.parse(r.req.alert), { run_id: 'r42', host: 'node-6' });
});

test('wherePairs: canonical labels, lists expanded, empty fields dropped', () => {
  assert.deepEqual(
    wherePairs({ nodes: ['node-6'], gpu_uuids: ['GPU-1', 'GPU-2'], run_id: 'r42', version: 'v2', previous_version: 'v1', service: '' }),
    [['run_id', 'r42', ''], ['host', 'node-6', ''], ['gpu_uuid', 'GPU-1', ''], ['gpu_uuid', 'GPU-2', ''], ['model_version', 'v2', ''], ['model_version', 'v1', 'previous']],
  );
  assert.deepEqual(wherePairs(undefined), []);
});

test('reportWindow and evidenceHash', () => {
  const w = reportWindow({ start: '2026-01-01T11:00:00.500Z', end: '2026-01-01T12:00:00Z' });
  assert.deepEqual(w, { start: Date.parse('2026-01-01T11:00:00.500Z'), end: NOW, from: '1767265200', to: '1767268800' });
  const m = parseHash(evidenceHash({ signal: 'metrics', query: 'up{a="b"}' }, w));
  assert.deepEqual([m.path[0], m.params.get('q'), m.params.get('from'), m.params.get('to')], ['metrics', 'up{a="b"}', '1767265200', '1767268800']);
  assert.equal(parseHash(evidenceHash({ signal: 'logs', query: '{a="b"}' }, w)).path[0], 'logs');
});

test('formatOffset', () => {
  assert.equal(formatOffset(-41.2), '41 s before the symptom');
  assert.equal(formatOffset(300), '5 min after the symptom');
  assert.equal(formatOffset(0.2), 'with the symptom');
  assert.equal(formatOffset(NaN), '');
});

test('graphedEvidence: one graph per measure, strongest first', () => {
  const ev = [
    { signal: 'metrics', what: 'temp', query: 'a{g="1"}', z: 2 },
    { signal: 'logs', what: 'pattern', query: '{x="y"}', z: 50 },
    { signal: 'metrics', what: 'nvlink', query: 'b{g="1"}', z: -9 },
    { signal: 'metrics', what: 'nvlink', query: 'b{g="2"}', z: 7 },
    { signal: 'metrics', what: 'nvlink', query: 'b{g="2"}', z: 7 },
    { signal: 'metrics', what: 'empty', query: '', z: 99 },
    { signal: 'metrics', what: 'clock', query: 'c', z: 5 },
  ];
  assert.deepEqual(graphedEvidence(ev, 2), [
    { what: 'nvlink', z: 9, query: '(b{g="1"}) or (b{g="2"})' },
    { what: 'clock', z: 5, query: 'c' },
  ]);
  assert.equal(graphedEvidence(ev, 1, 1)[0].query, 'b{g="1"}', 'perGraph bounds the series of a graph');
  assert.deepEqual(graphedEvidence(null, 3), []);
});
