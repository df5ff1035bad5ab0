import { test } from 'node:test';
import assert from 'node:assert/strict';
import { alignMatrix, color, nearestIndex, nearestSeries, parseSample, stack } from '../src/lib/series.js';
import { formatBytes, formatValue, seriesName } from '../src/lib/format.js';
import { commonContext, contextOf, isContextKey, selector, workloadHash, logsHash } from '../src/lib/context.js';
import { parseMetricsText } from '../src/lib/promtext.js';

test('alignMatrix puts samples on the grid, gaps as null', () => {
  const start = 1000e3;
  const d = alignMatrix(
    [
      { query: 'a', result: [{ metric: { __name__: 'x' }, values: [[1000, '1'], [1030, '3']] }] },
      { query: 'b', result: [{ metric: { job: 'j' }, values: [[1015, 'NaN'], [1045, '+Inf'], [2000, '9']] }] },
    ],
    start, start + 30e3, 15e3,
  );
  assert.deepEqual([...d.xs], [1000, 1015, 1030]);
  assert.deepEqual(d.ys[0], [1, null, 3]);
  assert.ok(Number.isNaN(d.ys[1][1]));
  assert.equal(d.ys[1][0], null);
  assert.deepEqual(d.metas.map((m) => [m.query, m.queryIndex]), [['a', 0], ['b', 1]]);
});

test('parseSample', () => {
  assert.equal(parseSample('+Inf'), Infinity);
  assert.equal(parseSample('-Inf'), -Infinity);
  assert.equal(parseSample('1.5e3'), 1500);
});

test('stack sums in order and keeps own gaps', () => {
  assert.deepEqual(stack([[1, 2, null], [10, null, 30], [100, 200, 300]]), [[1, 2, null], [11, null, 30], [111, 202, 330]]);
  assert.deepEqual(stack([]), []);
});

test('nearestSeries and nearestIndex', () => {
  const ys = [[1, 5], [10, null], [4, 6]];
  assert.equal(nearestSeries(ys, 0, 3.9), 2);
  assert.equal(nearestSeries(ys, 0, 3.9, [true, true, false]), 0);
  assert.equal(nearestSeries(ys, 1, 100), 2);
  assert.equal(nearestSeries([[null]], 0, 1), -1);
  const xs = [0, 15, 30, 45];
  assert.equal(nearestIndex(xs, 7), 0);
  assert.equal(nearestIndex(xs, 8), 1);
  assert.equal(nearestIndex(xs, 100), 3);
  assert.equal(nearestIndex([], 1), -1);
});

test('colours are distinct for neighbours', () => {
  assert.notEqual(color(0), color(1));
  assert.match(color(3, 0.5), /^hsla\(.*, 0\.5\)$/);
});

test('seriesName and formatValue', () => {
  assert.equal(seriesName({ __name__: 'up', job: 'a', instance: 'b' }), 'up{instance="b", job="a"}');
  assert.equal(seriesName({}), '{}');
  assert.equal(seriesName({ __name__: 'up' }), 'up');
  const cases = [[0, '0'], [1, '1'], [0.5, '0.5'], [96.123, '96.12'], [1234.5, '1235'], [12345, '12.35k'], [2.5e6, '2.5M'], [0.0001234, '1.23e-4'], [-42, '-42'], [NaN, 'NaN'], [Infinity, '+Inf'], ['3', '3'], [null, '—']];
  for (const [v, s] of cases) assert.equal(formatValue(v), s, String(v));
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(1536), '1.5 KiB');
});

test('context keys, selectors and links', () => {
  assert.ok(isContextKey('run_id') && isContextKey('UUID') && !isContextKey('job'));
  assert.equal(selector([['run_id', 'r"4\\2'], ['team', 'a']]), '{run_id="r\\"4\\\\2", team="a"}');
  assert.deepEqual(contextOf({ job: 'x', team: 't', run_id: 'r' }), [['run_id', 'r'], ['team', 't']]);
  assert.deepEqual(commonContext([{ run_id: 'r', rank: '0' }, { run_id: 'r', rank: '1' }]), [['run_id', 'r']]);
  assert.deepEqual(commonContext([]), []);
  assert.equal(workloadHash('run_id', 'r42'), '#/workload/run_id/r42');
  assert.equal(logsHash([['run_id', 'r42']], 'now-1h', 'now'), '#/logs?q=%7Brun_id%3D%22r42%22%7D&from=now-1h&to=now');
});

test('parseMetricsText', () => {
  const got = parseMetricsText('# HELP x y\n# TYPE x counter\nx_total 5\ny{a="b",c="d \\"e\\" \\\\n"} 1.5e3 1700000000\nbad line\n\n');
  assert.deepEqual(got, [
    { name: 'x_total', labels: {}, value: 5 },
    { name: 'y', labels: { a: 'b', c: 'd "e" \\n' }, value: 1500 },
  ]);
});
