import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareNs, flattenStreams, isLogQuery, levelOf, mergeTail, nsToMs, traceIdOf, volumeQuery } from '../src/lib/logs.js';

test('flattenStreams: categorized entries, newest first', () => {
  const res = [
    { stream: { app: 'a' }, values: [['1700000000000000001', 'one', { structuredMetadata: { trace_id: 'abc' }, parsed: { lvl: 'warn' } }]] },
    { stream: { app: 'b' }, values: [['1700000000000000002', 'two'], ['999999999999999999', 'old']] },
  ];
  const e = flattenStreams(res);
  assert.deepEqual(e.map((x) => x.line), ['two', 'one', 'old']);
  assert.deepEqual(e[1].metadata, { trace_id: 'abc' });
  assert.deepEqual(e[0].metadata, {});
  assert.equal(e[1].stream.app, 'a');
});

test('nanosecond times keep their order beyond float precision', () => {
  assert.ok(compareNs('1700000000000000002', '1700000000000000001') > 0);
  assert.ok(compareNs('999', '1000') < 0);
  assert.equal(nsToMs('1700000000123456789'), 1700000000123.4568);
  assert.equal(nsToMs('5000000'), 5);
});

test('levelOf', () => {
  assert.equal(levelOf({ metadata: { detected_level: 'error' }, stream: { level: 'info' } }), 'error');
  assert.equal(levelOf({ metadata: {}, stream: { level: 'WARN' }, parsed: {} }), 'warn');
  assert.equal(levelOf({ metadata: {}, stream: {}, parsed: {} }), 'unknown');
});

test('traceIdOf: metadata, parsed fields, then the line', () => {
  assert.equal(traceIdOf({ metadata: { trace_id: 'm' }, parsed: { trace_id: 'p' }, stream: {}, line: '' }), 'm');
  assert.equal(traceIdOf({ metadata: {}, parsed: { traceID: 'p' }, stream: {}, line: '' }), 'p');
  assert.equal(traceIdOf({ metadata: {}, parsed: {}, stream: {}, line: 'x traceId="4BF92F3577B34DA6A3CE929D0E0E4736" y' }), '4bf92f3577b34da6a3ce929d0e0e4736');
  assert.equal(traceIdOf({ metadata: {}, parsed: {}, stream: {}, line: 'trace_id=123' }), '');
});

test('isLogQuery and volumeQuery', () => {
  assert.ok(isLogQuery(' {a="b"} |= "x"'));
  assert.ok(!isLogQuery('sum(rate({a="b"}[1m]))'));
  assert.equal(volumeQuery('{a="b"} |= "x" ', 60e3), 'sum by (detected_level) (count_over_time({a="b"} |= "x" [60s]))');
  assert.equal(volumeQuery('{a="b"}', 100), 'sum by (detected_level) (count_over_time({a="b"} [1s]))');
});

test('mergeTail keeps the newest max entries', () => {
  const mk = (ts) => ({ ts: String(ts) });
  const got = mergeTail([mk(5), mk(3)], [mk(6), mk(4)], 3);
  assert.deepEqual(got.map((e) => e.ts), ['6', '5', '4']);
});
