import { test } from 'node:test';
import assert from 'node:assert/strict';
import { autoStep, formatDuration, isRelative, parseDuration, parseTime, resolveRange } from '../src/lib/time.js';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);

test('parseDuration', () => {
  const cases = { '15s': 15e3, '1h30m': 5400e3, '2d': 2 * 864e5, '250ms': 250, '1w': 6048e5, '30': 30e3, '0.5': 500, '1.5h': 5400e3 };
  for (const [s, ms] of Object.entries(cases)) assert.equal(parseDuration(s), ms, s);
  for (const bad of ['', 'h', '1x', '-1h', '1h ', 'now', '1h-2m', undefined]) {
    if (bad === '1h ') assert.equal(parseDuration(bad), 3600e3, 'trims');
    else assert.ok(Number.isNaN(parseDuration(bad)), String(bad));
  }
});

test('formatDuration is the inverse for whole units', () => {
  for (const s of ['15s', '1h30m', '2d', '250ms', '1w2d', '5m']) assert.equal(formatDuration(parseDuration(s)), s);
  assert.equal(formatDuration(0), '0s');
  assert.equal(formatDuration(-5), '0s');
});

test('parseTime', () => {
  assert.equal(parseTime('now', NOW), NOW);
  assert.equal(parseTime('now-1h', NOW), NOW - 3600e3);
  assert.equal(parseTime('now - 15m', NOW), NOW - 900e3);
  assert.equal(parseTime('now+5m', NOW), NOW + 300e3);
  assert.equal(parseTime('1700000000', NOW), 1700000000e3);
  assert.equal(parseTime('1700000000.25', NOW), 1700000000250);
  assert.equal(parseTime('1700000000123', NOW), 1700000000123);
  assert.equal(parseTime('2026-12-01T11:00:00Z', NOW), NOW - 3600e3);
  for (const bad of ['yesterday', 'now-', 'now-x', '', '2026-13-45T99:00:00Z']) assert.ok(Number.isNaN(parseTime(bad, NOW)), bad);
});

test('resolveRange', () => {
  assert.deepEqual(resolveRange('now-1h', 'now', NOW), { start: NOW - 3600e3, end: NOW });
  assert.match(resolveRange('now', 'now-1h', NOW).error, /before/);
  assert.match(resolveRange('bad', 'now', NOW).error, /start/);
  assert.match(resolveRange('now-1h', 'bad', NOW).error, /end/);
});

test('isRelative', () => {
  assert.ok(isRelative('now-1h'));
  assert.ok(!isRelative('1700000000'));
});

test('autoStep picks round steps within the point budget', () => {
  assert.equal(autoStep(3600e3, 300), 15e3); // 12 s → 15 s: 240 points
  assert.equal(autoStep(6 * 3600e3, 720, 15e3), 30e3); // the 6 h heatmap: 720 buckets
  assert.equal(autoStep(3600e3, 720, 15e3), 15e3); // never below the minimum
  assert.equal(autoStep(60e3, 300), 1e3);
  assert.equal(autoStep(7 * 864e5, 300), 3600e3);
  for (const r of [1e3, 59e3, 3600e3, 864e5, 30 * 864e5, 400 * 864e5]) {
    const s = autoStep(r, 250);
    assert.ok(r / s <= 250, `range ${r}: step ${s} gives ${r / s} points`);
  }
});
