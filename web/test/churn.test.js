import { test } from 'node:test';
import assert from 'node:assert/strict';
import { churnSummary } from '../src/lib/churn.js';

test('churnSummary: totals, the busiest hour, bar heights and days', () => {
  const s = churnSummary({
    hours: [
      { start: 3600, created: 2 },
      { start: 7200, created: 8 },
      { start: 10800, created: 0 },
    ],
    partitions: [{ start: 0, end: 86400, active: 10, created: 10, ended: null }],
  });
  assert.equal(s.total, 10);
  assert.deepEqual(s.peak, { start: 7200e3, created: 8 });
  assert.deepEqual(
    s.hours.map((h) => h.height),
    [0.25, 1, 0],
  );
  assert.deepEqual(s.days, [{ start: 0, end: 86400e3, active: 10, created: 10, ended: null }]);
});

test('churnSummary: nothing created', () => {
  const s = churnSummary({ hours: [{ start: 0, created: 0 }], partitions: [] });
  assert.equal(s.total, 0);
  assert.equal(s.peak, null);
  assert.equal(s.hours[0].height, 0);
  assert.deepEqual(churnSummary(null), { total: 0, peak: null, hours: [], days: [] });
});
