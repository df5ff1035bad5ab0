// A stream tokenizer for TraceQL highlighting: strings, numbers and
// durations, scoped attributes (span.x, resource.x, .x), intrinsics,
// aggregates and operators. Not a parser: weft's API reports syntax errors.
import { eatString } from './logql.js';

const INTRINSICS = new Set([
  'name', 'status', 'statusMessage', 'kind', 'duration', 'rootName', 'rootServiceName', 'traceDuration',
  'span:name', 'span:status', 'span:statusMessage', 'span:kind', 'span:duration', 'span:id', 'span:parentID', 'span:childCount',
  'trace:id', 'trace:rootName', 'trace:rootService', 'trace:duration', 'event:name', 'event:timeSinceStart',
  'link:traceID', 'link:spanID', 'instrumentation:name', 'instrumentation:version',
]);
const FUNCTIONS = new Set(['count', 'avg', 'min', 'max', 'sum', 'by', 'select', 'coalesce']);
const KEYWORDS = new Set([
  'true', 'false', 'nil', 'error', 'ok', 'unset', 'unspecified', 'internal', 'server', 'client', 'producer', 'consumer',
  'with', 'minInt', 'maxInt',
]);

export const traceqlTokenizer = {
  name: 'traceql',
  token(stream) {
    if (stream.eatSpace()) return null;
    if (stream.match('//')) {
      stream.skipToEnd();
      return 'comment';
    }
    if (eatString(stream)) return 'string';
    if (stream.match(/^-?\d+(\.\d+)?(e[+-]?\d+)?(ns|us|µs|ms|s|m|h)*/i)) return 'number';
    if (stream.match(/^(span|resource|event|link|instrumentation|parent)?\.[A-Za-z_][A-Za-z0-9_.\-/]*/)) return 'attributeName';
    if (stream.match(/^(&&|\|\||!=|=~|!~|>=|<=|>>|<<|!>>|!<<|&>>|&<<|&>|&<|&~|!>|!<|!~|[{}()|=<>~!+\-*/%^,])/)) return 'operator';
    if (stream.match(/^[A-Za-z_][A-Za-z0-9_]*(:[A-Za-z]+)?/)) {
      const w = stream.current();
      if (INTRINSICS.has(w)) return 'propertyName';
      if (FUNCTIONS.has(w)) return 'variableName.function';
      if (KEYWORDS.has(w)) return 'keyword';
      return null;
    }
    stream.next();
    return null;
  },
};
