import { test } from 'node:test';
import assert from 'node:assert/strict';
import { activeAlerts, matches, parseMatchers, queryHash, ruleGroups, since, workloadAlerts } from '../src/lib/alerts.js';

const all = {
  groups: [
    {
      name: 'gpu', file: '/r/gpu.yml', interval: 30, limit: 0, lastEvaluation: '2026-01-01T00:00:00Z', evaluationTime: 0.001,
      rules: [
        { type: 'alerting', name: 'GPUHot', query: 'DCGM_FI_DEV_GPU_TEMP > 85', health: 'ok', state: 'firing', alerts: [
          { labels: { alertname: 'GPUHot', severity: 'warning', Hostname: 'node-b', UUID: 'GPU-1' }, annotations: { summary: 's' }, state: 'firing', activeAt: '2026-01-01T00:00:00Z', value: '86' },
          { labels: { alertname: 'GPUHot', severity: 'critical', Hostname: 'node-c' }, annotations: {}, state: 'pending', activeAt: '2026-01-01T00:05:00Z', value: '90' },
        ] },
        { type: 'recording', name: 'x:y', query: 'sum(x)', health: 'ok' },
      ],
    },
    {
      name: 'logs', file: '/r/logs.yml', interval: 60,
      rules: [
        { type: 'alerting', name: 'NCCL', query: 'sum by (run_id) (count_over_time({run_id=~".+"} |= "NCCL" [5m])) > 0', health: 'err', lastError: 'boom', alerts: [
          { labels: { alertname: 'NCCL', run_id: 'r42', severity: 'critical' }, annotations: {}, state: 'firing', activeAt: '2026-01-01T00:01:00Z' },
        ] },
      ],
    },
  ],
};
const logql = { groups: [{ name: 'logs', file: '/r/logs.yml', rules: [] }] };

test('ruleGroups: languages, health and counts', () => {
  const g = ruleGroups(all, logql);
  assert.deepEqual(g.map((x) => [x.name, x.lang, x.health, x.firing, x.pending, x.errors]), [
    ['gpu', 'promql', 'ok', 1, 1, 0],
    ['logs', 'logql', 'err', 1, 0, 1],
  ]);
  assert.equal(g[0].rules[1].alerts.length, 0);
  assert.equal(g[1].rules[0].lastError, 'boom');
  assert.equal(ruleGroups(all, null)[1].lang, 'promql');
  assert.deepEqual(ruleGroups({}, null), []);
});

test('activeAlerts: firing first, then severity, then newest', () => {
  const a = activeAlerts(ruleGroups(all, logql));
  assert.deepEqual(a.map((x) => [x.labels.alertname, x.state, x.labels.severity]), [
    ['NCCL', 'firing', 'critical'], ['GPUHot', 'firing', 'warning'], ['GPUHot', 'pending', 'critical'],
  ]);
  assert.equal(a[0].rule.lang, 'logql');
  assert.equal(a[0].rule.group, 'logs');
  assert.equal(a[1].activeMs, Date.parse('2026-01-01T00:00:00Z'));
});

test('matchers: parse, match, reject', () => {
  const m = parseMatchers('{severity=~"crit.*", Hostname!="node-a", run_id=""}');
  assert.deepEqual(m.map((x) => [x.name, x.op, x.value]), [['severity', '=~', 'crit.*'], ['Hostname', '!=', 'node-a'], ['run_id', '=', '']]);
  assert.ok(matches({ severity: 'critical', Hostname: 'node-b' }, m));
  assert.ok(!matches({ severity: 'critical', Hostname: 'node-b', run_id: 'r1' }, m));
  assert.ok(!matches({ severity: 'xcritical' }, m)); // anchored
  assert.deepEqual(parseMatchers(''), []);
  assert.deepEqual(parseMatchers('a="b",').map((x) => x.value), ['b']);
  assert.equal(parseMatchers('a="q\\"x"')[0].value, 'q"x');
  assert.throws(() => parseMatchers('{a="b"'), /closing/);
  assert.throws(() => parseMatchers('a=b'), /bad matcher/);
  assert.throws(() => parseMatchers('a=~"("'), /regular expression/);
});

test('workloadAlerts: direct by key or a name for the same thing, related through hosts and GPUs', () => {
  const a = activeAlerts(ruleGroups(all, logql));
  let w = workloadAlerts(a, 'run_id', 'r42', new Map([['Hostname', new Set(['node-b'])], ['run_id', new Set(['r42'])]]));
  assert.deepEqual(w.direct.map((x) => x.labels.alertname), ['NCCL']);
  assert.deepEqual(w.related.map((x) => [x.labels.alertname, x.via]), [['GPUHot', 'Hostname']]);
  w = workloadAlerts(a, 'host', 'node-c', null);
  assert.deepEqual(w.direct.map((x) => x.labels.Hostname), ['node-c']);
  assert.deepEqual(w.related, []);
  w = workloadAlerts(a, 'gpu_uuid', 'GPU-1', new Map());
  assert.equal(w.direct.length, 1);
});

test('queryHash: PromQL to metrics, LogQL to logs, from an hour before the alert', () => {
  assert.equal(queryHash({ lang: 'promql', query: 'up > 0' }, 1700003600000), '#/metrics?q=up+%3E+0&from=1700000000&to=now');
  assert.match(queryHash({ lang: 'logql', query: '{a="b"}' }, NaN), /^#\/logs\?q=.*&from=now-1h&to=now$/);
});

test('since', () => {
  assert.equal(since(0, 45e3), '45s');
  assert.equal(since(0, 12 * 60e3), '12m');
  assert.equal(since(0, 3 * 3600e3 + 5 * 60e3), '3h5m');
  assert.equal(since(0, 2 * 86400e3 + 4 * 3600e3), '2d4h');
  assert.equal(since(NaN, 0), '—');
});
