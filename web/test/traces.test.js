import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addCondition, aliasesOf, anyValue, b64ToHex, formatNs, normTraceID, orderSpans, parseTrace, resourceContext,
  searchRows, spanMetricsQueries, spanWindow, tagCondition, traceLogsQuery, traceqlAttr, visibleSpans, workloadTraceQL,
} from '../src/lib/traces.js';

const hexToB64 = (h) => Buffer.from(h, 'hex').toString('base64');

// span builds a protojson span; times are ns offsets from T0.
const T0 = 1796177642137496504n;
function span(id, parent, name, startOff, dur, extra = {}) {
  return {
    traceId: hexToB64('e8c345e756c751c24ccd661be8bbfbe1'),
    spanId: hexToB64(id),
    ...(parent ? { parentSpanId: hexToB64(parent) } : {}),
    name,
    kind: 'SPAN_KIND_SERVER',
    startTimeUnixNano: String(T0 + BigInt(startOff)),
    endTimeUnixNano: String(T0 + BigInt(startOff + dur)),
    status: {},
    ...extra,
  };
}
const resource = (svc, more = []) => ({ attributes: [{ key: 'service.name', value: { stringValue: svc } }, ...more] });

test('parseTrace: tree order, depth, offsets exact beyond float precision, services and errors', () => {
  const resp = {
    trace: {
      resourceSpans: [
        {
          resource: resource('api', [{ key: 'ai.run.id', value: { stringValue: 'r42' } }]),
          scopeSpans: [{ scope: { name: 'sdk' }, spans: [
            span('00000000000000b2', '00000000000000a1', 'db', 300, 100),
            span('00000000000000a1', '', 'GET /', 0, 1000),
            span('00000000000000b1', '00000000000000a1', 'auth', 1, 200, { status: { code: 'STATUS_CODE_ERROR', message: 'denied' }, attributes: [{ key: 'http.status_code', value: { intValue: '403' } }] }),
          ] }],
        },
        {
          resource: resource('worker'),
          scopeSpans: [{ spans: [span('00000000000000c1', '00000000000000b1', 'check', 5, 50, { kind: 'SPAN_KIND_CLIENT' })] }],
        },
      ],
    },
  };
  const t = parseTrace(resp);
  assert.deepEqual(t.spans.map((s) => [s.name, s.depth]), [['GET /', 0], ['auth', 1], ['check', 2], ['db', 1]]);
  assert.equal(t.traceId, 'e8c345e756c751c24ccd661be8bbfbe1');
  assert.equal(t.durationNs, 1000);
  assert.deepEqual(t.spans.map((s) => s.offsetNs), [0, 1, 5, 300]);
  const auth = t.spans[1];
  assert.equal(auth.status, 'error');
  assert.equal(auth.statusMessage, 'denied');
  assert.equal(auth.attrs['http.status_code'], '403');
  assert.equal(auth.resource['ai.run.id'], 'r42');
  assert.equal(auth.scope, 'sdk');
  assert.equal(t.spans[2].kind, 'client');
  assert.equal(t.spans[0].childCount, 2);
  assert.deepEqual(t.services.map((s) => [s.name, s.spans, s.errors]), [['api', 3, 1], ['worker', 1, 0]]);
  assert.equal(t.errors, 1);
});

test('parseTrace: empty answers and v1 batches', () => {
  assert.equal(parseTrace({}).spans.length, 0);
  assert.equal(parseTrace(null).spans.length, 0);
  const t = parseTrace({ batches: [{ resource: resource('x'), scopeSpans: [{ spans: [span('01', '', 'a', 0, 5)] }] }] });
  assert.equal(t.spans.length, 1);
  assert.equal(t.spans[0].service, 'x');
});

test('orderSpans: missing parents become marked roots; cycles terminate', () => {
  const mk = (id, parentId, start) => ({ id, parentId, startNs: BigInt(start), name: id });
  const out = orderSpans([mk('b', 'zz', 2), mk('a', '', 1), mk('c', 'd', 3), mk('d', 'c', 4)]);
  assert.deepEqual(out.map((s) => s.id), ['a', 'b', 'c', 'd']);
  assert.equal(out[1].orphan, true);
  assert.equal(out[0].orphan, false);
  assert.equal(out.length, 4);
  assert.equal(out[3].depth, 1); // d under c, the cycle broken at c
});

test('visibleSpans folds a collapsed span\'s descendants only', () => {
  const s = [
    { id: 'a', depth: 0, childCount: 2 }, { id: 'b', depth: 1, childCount: 1 }, { id: 'c', depth: 2, childCount: 0 },
    { id: 'd', depth: 1, childCount: 0 }, { id: 'e', depth: 0, childCount: 0 },
  ];
  assert.deepEqual(visibleSpans(s, new Set(['b'])).map((x) => x.id), ['a', 'b', 'd', 'e']);
  assert.deepEqual(visibleSpans(s, new Set(['a'])).map((x) => x.id), ['a', 'e']);
  assert.equal(visibleSpans(s, new Set()).length, 5);
});

test('IDs, values and durations', () => {
  assert.equal(b64ToHex('ctOHtmKRu2g='), '72d387b66291bb68');
  assert.equal(b64ToHex('!!'), '');
  assert.equal(normTraceID('AD803BF00E6FCBD24AAE2C4F5564C90'), '0ad803bf00e6fcbd24aae2c4f5564c90');
  assert.equal(anyValue({ arrayValue: { values: [{ intValue: '1' }, { boolValue: true }] } }).length, 2);
  assert.deepEqual(anyValue({ kvlistValue: { values: [{ key: 'a', value: { doubleValue: 1.5 } }] } }), { a: 1.5 });
  assert.equal(formatNs(850), '850ns');
  assert.equal(formatNs(12345), '12.3µs');
  assert.equal(formatNs(45_600_000), '45.6ms');
  assert.equal(formatNs(1_230_000_000), '1.23s');
  assert.equal(formatNs(123e9), '2m3s');
  assert.equal(formatNs(3723e9), '1h2m3s');
});

test('workload context from resource attributes, and the TraceQL of a workload', () => {
  assert.deepEqual(resourceContext({ 'ai.run.id': 'r42', 'k8s.pod.name': 'p-0', 'host.name': 'n1', run_id: 'other', 'service.name': 'x' }), [
    ['run_id', 'r42'], ['pod', 'p-0'], ['host', 'n1'],
  ]);
  assert.deepEqual(aliasesOf('run_id'), ['ai.run.id', 'ai_run_id', 'run_id']);
  assert.deepEqual(aliasesOf('Hostname'), ['host.name', 'host_name', 'Hostname', 'hostname', 'host']);
  assert.deepEqual(aliasesOf('UUID'), ['gpu.uuid', 'hw.id', 'UUID', 'gpu_uuid']);
  assert.equal(workloadTraceQL('run_id', 'r42', ['service.name', 'ai.run.id']), '{ resource.ai.run.id = "r42" }');
  assert.equal(workloadTraceQL('run_id', 'r"4', null), '{ resource.ai.run.id = "r\\"4" || resource.ai_run_id = "r\\"4" || resource.run_id = "r\\"4" }');
  assert.equal(workloadTraceQL('run_id', 'r42', ['service.name']), '');
  assert.equal(traceqlAttr('span', 'a b'), 'span."a b"');
});

test('links from a span: its logs, its trace\'s logs, its span metrics, its window', () => {
  const id = 'e8c345e756c751c24ccd661be8bbfbe1';
  assert.equal(traceLogsQuery(['api'], id, 'ab12'), `{service_name="api"} | trace_id="${id}" | span_id="ab12"`);
  assert.equal(traceLogsQuery(['api', 'a.b'], id), `{service_name=~"api|a\\\\.b"} | trace_id="${id}"`);
  assert.equal(traceLogsQuery([], 'abc'), `{service_name=~".+"} | trace_id="00000000000000000000000000000abc"`);
  const [rate, p90] = spanMetricsQueries({ service: 'api', name: 'GET "/"' });
  assert.equal(rate, 'sum by (status_code) (rate(traces_spanmetrics_calls_total{service="api", span_name="GET \\"/\\""}[1m]))');
  assert.match(p90, /^histogram_quantile\(0\.9, sum by \(le\) \(rate\(traces_spanmetrics_latency_bucket\{service="api"/);
  assert.deepEqual(spanWindow({ startNs: 1700000000500000000n, endNs: 1700000001000000000n }, 60e3), { from: '1699999940', to: '1700000061' });
});

test('searchRows: newest first, IDs padded, stats summed', () => {
  const rows = searchRows({
    traces: [
      { traceID: 'ad803bf00e6fcbd24aae2c4f5564c90', rootServiceName: 'tgen', rootTraceName: 'lets-go', startTimeUnixNano: '1796177649201296733',
        spanSets: [{ spans: [{ spanID: '0c26635f7ab6d394', name: 'okey', startTimeUnixNano: '1796177649201296733', durationNanos: '123000' }], matched: 4 }],
        serviceStats: { tgen: { spanCount: 4, errorCount: 4 }, db: { spanCount: 1 } } },
      { traceID: 'b', startTimeUnixNano: '1796177650000000000', durationMs: 12 },
    ],
  });
  assert.deepEqual(rows.map((r) => r.traceId), ['0000000000000000000000000000000b', '0ad803bf00e6fcbd24aae2c4f5564c90']);
  const r = rows[1];
  assert.equal(r.spans, 5);
  assert.equal(r.errors, 4);
  assert.equal(r.durationMs, 0);
  assert.equal(r.matchedCount, 4);
  assert.equal(r.matched[0].durationNs, 123000);
  assert.deepEqual(r.services.map((s) => s.name), ['tgen', 'db']);
  assert.equal(rows[0].rootService, '');
  assert.deepEqual(searchRows({}), []);
});

test('tag conditions and adding them to a query', () => {
  assert.equal(tagCondition('resource', 'service.name', { type: 'string', value: 'api' }), 'resource.service.name = "api"');
  assert.equal(tagCondition('intrinsic', 'status', { type: 'keyword', value: 'error' }), 'status = error');
  assert.equal(tagCondition('span', 'http.status_code', { type: 'int', value: 500 }), 'span.http.status_code = 500');
  assert.equal(addCondition('', 'a = 1'), '{ a = 1 }');
  assert.equal(addCondition('{ }', 'a = 1'), '{ a = 1 }');
  assert.equal(addCondition('{ b = "x" }', 'a = 1'), '{ b = "x" && a = 1 }');
  assert.equal(addCondition('{ b = 1 || c = 2 }', 'a = 1'), '{ (b = 1 || c = 2) && a = 1 }');
  assert.equal(addCondition('{ b = 1 } | count() > 2', 'a = 1'), '({ b = 1 } | count() > 2) && { a = 1 }');
});
