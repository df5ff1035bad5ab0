import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildHeatmap, compareIdentity, gpuIdentity, markOutliers, median, rampColor } from '../src/lib/heatmap.js';

const START = 1_700_000_000_000;
const STEP = 15_000;

function series(host, gpu, values, extra = {}) {
  return {
    metric: { __name__: 'DCGM_FI_DEV_GPU_UTIL', Hostname: host, gpu: String(gpu), UUID: `GPU-${host}-${gpu}`, ...extra },
    values: values.map((v, i) => [(START + i * STEP) / 1e3, String(v)]),
  };
}

test('median', () => {
  assert.ok(Number.isNaN(median([])));
  assert.equal(median([3]), 3);
  assert.equal(median([5, 1, 3]), 3);
  assert.equal(median([4, 1, 3, 2]), 2.5);
});

test('gpuIdentity and ordering', () => {
  const a = gpuIdentity({ Hostname: 'n1', gpu: '10', UUID: 'GPU-x' });
  const b = gpuIdentity({ Hostname: 'n1', gpu: '2', UUID: 'GPU-y' });
  const c = gpuIdentity({ host: 'n0', gpu_uuid: 'GPU-z' });
  assert.equal(a.label, 'n1 gpu 10');
  assert.equal(a.hostKey, 'Hostname');
  assert.equal(c.uuidKey, 'gpu_uuid');
  assert.deepEqual([a, b, c].sort(compareIdentity).map((x) => x.label), ['n0 GPU-z', 'n1 gpu 2', 'n1 gpu 10']);
  assert.equal(gpuIdentity({ rank: '3' }).label, 'rank 3');
  assert.equal(gpuIdentity({}).label, '(unlabelled)');
});

test('buildHeatmap lays series on the grid and merges a GPU\'s series', () => {
  const res = [series('n1', 1, [10, 20, 30]), series('n1', 0, [1, 2]), series('n1', 0, [5, 0, 7], { extra: 'x' })];
  const hm = buildHeatmap(res, START, START + 2 * STEP, STEP);
  assert.equal(hm.rows.length, 2);
  assert.equal(hm.cols, 3);
  assert.deepEqual(hm.rows.map((r) => r.id.label), ['n1 gpu 0', 'n1 gpu 1']);
  assert.deepEqual([...hm.values], [5, 2, 7, 10, 20, 30]);
  assert.equal(hm.min, 2);
  assert.equal(hm.max, 30);
  const gap = buildHeatmap([series('n1', 0, [1])], START, START + 2 * STEP, STEP);
  assert.ok(Number.isNaN(gap.values[1]) && Number.isNaN(gap.values[2]));
});

function run(gpus, faulty, faultyValue, cols = 40) {
  const res = [];
  for (let g = 0; g < gpus; g++) {
    const vals = [];
    for (let c = 0; c < cols; c++) vals.push(g === faulty ? faultyValue : 95 + Math.sin(c + g * 3) * 2);
    res.push(series('n' + Math.floor(g / 8), g % 8, vals));
  }
  return buildHeatmap(res, START, START + (cols - 1) * STEP, STEP);
}

test('markOutliers finds the one slow GPU among 8, and only it', () => {
  const hm = run(8, 5, 35);
  const o = markOutliers(hm);
  assert.equal(o.marked.length, 1);
  assert.equal(hm.rows[o.marked[0].row].id.label, 'n0 gpu 5');
  assert.equal(o.marked[0].direction, 'low');
  assert.equal(o.marked[0].fraction, 1);
  assert.ok(o.z[5 * hm.cols] < -10);
});

test('markOutliers: a hot GPU is "high"', () => {
  const o = markOutliers(run(64, 42, 120));
  assert.deepEqual(o.marked.map((m) => [m.row, m.direction]), [[42, 'high']]);
});

test('markOutliers: identical GPUs are never outliers (MAD floor)', () => {
  const res = [];
  for (let g = 0; g < 8; g++) res.push(series('n', g, Array(10).fill(g === 3 ? 95.5 : 95)));
  const o = markOutliers(buildHeatmap(res, START, START + 9 * STEP, STEP));
  assert.equal(o.marked.length, 0, 'half a percent off is not an outlier');
});

test('markOutliers: too few GPUs are not judged', () => {
  const o = markOutliers(run(2, 1, 10));
  assert.equal(o.marked.length, 0);
  assert.ok(o.z.every((z) => Number.isNaN(z)));
});

test('markOutliers: a short blip does not mark a GPU', () => {
  const res = [];
  for (let g = 0; g < 8; g++) {
    const vals = Array.from({ length: 40 }, (_, c) => (g === 2 && c < 3 ? 10 : 95 + Math.sin(c + g) * 2));
    res.push(series('n', g, vals));
  }
  const hm = buildHeatmap(res, START, START + 39 * STEP, STEP);
  const o = markOutliers(hm);
  assert.equal(o.marked.length, 0);
  assert.ok(Math.abs(o.z[2 * hm.cols]) >= o.threshold, 'the blip cells are still outlier cells');
});

test('rampColor', () => {
  assert.deepEqual(rampColor(0), [68, 1, 84]);
  assert.deepEqual(rampColor(1), [253, 231, 37]);
  assert.deepEqual(rampColor(2), [253, 231, 37]);
  assert.deepEqual(rampColor(NaN), [68, 1, 84]);
});
