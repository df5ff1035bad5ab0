import { test } from 'node:test';
import assert from 'node:assert/strict';
import { logqlTokenizer } from '../src/editor/logql.js';
import { traceqlTokenizer } from '../src/editor/traceql.js';

// Stream is the part of CodeMirror's StringStream the tokenizers use.
class Stream {
  constructor(s) {
    this.s = s;
    this.pos = 0;
    this.start = 0;
  }
  eatSpace() {
    const st = this.pos;
    while (this.s[this.pos] === ' ') this.pos++;
    return this.pos > st;
  }
  match(p) {
    if (typeof p === 'string') {
      if (!this.s.startsWith(p, this.pos)) return false;
      this.pos += p.length;
      return true;
    }
    const m = p.exec(this.s.slice(this.pos));
    if (!m || m.index !== 0) return null;
    this.pos += m[0].length;
    return m;
  }
  peek() {
    return this.s[this.pos];
  }
  next() {
    return this.pos < this.s.length ? this.s[this.pos++] : undefined;
  }
  skipToEnd() {
    this.pos = this.s.length;
  }
  current() {
    return this.s.slice(this.start, this.pos);
  }
}

function tokens(tk, text) {
  const st = new Stream(text);
  const out = [];
  while (st.pos < text.length) {
    st.start = st.pos;
    const t = tk.token(st);
    assert.ok(st.pos > st.start, `no progress at ${st.pos} of ${text}`);
    if (t) out.push(`${t}:${st.current()}`);
  }
  return out;
}

test('TraceQL tokens: attributes, intrinsics, strings with escapes, durations, aggregates', () => {
  assert.deepEqual(tokens(traceqlTokenizer, '{ resource.service.name = "a\\"b" && duration > 1.5s } | count() > 2'), [
    'operator:{', 'attributeName:resource.service.name', 'operator:=', 'string:"a\\"b"', 'operator:&&', 'propertyName:duration',
    'operator:>', 'number:1.5s', 'operator:}', 'operator:|', 'variableName.function:count', 'operator:(', 'operator:)', 'operator:>', 'number:2',
  ]);
  assert.deepEqual(tokens(traceqlTokenizer, '{ span:status = error && .x !~ `a.*` }').slice(1, 7), [
    'propertyName:span:status', 'operator:=', 'keyword:error', 'operator:&&', 'attributeName:.x', 'operator:!~',
  ]);
  // An unclosed string ends the line without looping.
  assert.deepEqual(tokens(traceqlTokenizer, '{ name = "abc'), ['operator:{', 'propertyName:name', 'operator:=', 'string:"abc']);
});

test('LogQL tokens: selectors, filters, raw strings, comments', () => {
  assert.deepEqual(tokens(logqlTokenizer, 'rate({a="b"} |= `x` [5m]) # c'), [
    'variableName.function:rate', 'labelName:a', 'operator:=', 'string:"b"', 'operator:|=', 'string:`x`', 'number:5m', 'comment:# c',
  ]);
});
