// A stream tokenizer for LogQL highlighting (TraceQL has its own, traceql.js):
// strings, numbers and durations, label names, operators and keywords.
// Not a parser: weft's API reports syntax errors.

const KEYWORDS = new Set([
  'json', 'logfmt', 'regexp', 'pattern', 'unpack', 'line_format', 'label_format', 'drop', 'keep', 'decolorize',
  'unwrap', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'and', 'or', 'unless',
  'ip', 'duration', 'duration_seconds', 'bytes',
]);

const FUNCTIONS = new Set([
  'rate', 'count_over_time', 'bytes_rate', 'bytes_over_time', 'absent_over_time', 'sum_over_time', 'avg_over_time',
  'max_over_time', 'min_over_time', 'first_over_time', 'last_over_time', 'stdvar_over_time', 'stddev_over_time',
  'quantile_over_time', 'rate_counter', 'sum', 'avg', 'min', 'max', 'count', 'stddev', 'stdvar', 'topk', 'bottomk',
  'sort', 'sort_desc', 'label_replace', 'vector', 'approx_topk',
]);

// eatString consumes a "double-quoted" (with \ escapes) or `raw` string
// at the stream's position, LogQL's and TraceQL's alike, and reports
// whether there was one. An unclosed string runs to the end of the line.
export function eatString(stream) {
  const ch = stream.peek();
  if (ch !== '"' && ch !== '`') return false;
  stream.next();
  let escaped = false;
  for (let c = stream.next(); c !== undefined; c = stream.next()) {
    if (c === ch && !escaped) break;
    escaped = ch === '"' && c === '\\' && !escaped;
  }
  return true;
}

export const logqlTokenizer = {
  name: 'logql',
  token(stream) {
    if (stream.eatSpace()) return null;
    if (stream.match('#')) {
      stream.skipToEnd();
      return 'comment';
    }
    if (eatString(stream)) return 'string';
    if (stream.match(/^\d+(\.\d+)?(ms|s|m|h|d|w|y|b|kb|mb|gb|kib|mib|gib)?/i)) return 'number';
    if (stream.match(/^(\|=|!=|\|~|!~|=~|==|>=|<=|\|>|!>|[|=<>+\-*/%^!])/)) return 'operator';
    if (stream.match(/^[a-zA-Z_][a-zA-Z0-9_.]*/)) {
      const w = stream.current();
      if (FUNCTIONS.has(w)) return 'variableName.function';
      if (KEYWORDS.has(w)) return 'keyword';
      return 'labelName';
    }
    stream.next();
    return null;
  },
};
