// Formatting of series names and values.

// seriesName writes a metric as Prometheus does: name{a="b", c="d"}.
export function seriesName(metric) {
  const name = metric.__name__ || '';
  const rest = Object.keys(metric).filter((k) => k !== '__name__').sort();
  if (!rest.length) return name || '{}';
  return name + '{' + rest.map((k) => `${k}="${metric[k]}"`).join(', ') + '}';
}

// labelKeys lists a metric's label names without __name__, sorted.
export function labelKeys(metric) {
  return Object.keys(metric).filter((k) => k !== '__name__').sort();
}

const SI = [
  [1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'],
];

// formatValue writes a sample value for legends and tables: at most four
// significant digits, SI prefixes from 10k on, exponent below 0.001.
export function formatValue(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') v = Number(v);
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e4) {
    for (const [n, p] of SI) if (a >= n) return trim((v / n).toPrecision(4)) + p;
  }
  if (a < 1e-3) return v.toExponential(2);
  return trim(v.toPrecision(4));
}

function trim(s) {
  if (!s.includes('.') || s.includes('e')) return s;
  return s.replace(/0+$/, '').replace(/\.$/, '');
}

// formatBytes writes a byte count with binary prefixes.
export function formatBytes(n) {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < u.length - 1) {
    n /= 1024;
    i++;
  }
  return (i === 0 ? String(n) : trim(n.toPrecision(3))) + ' ' + u[i];
}

// formatCount writes an integer with thin grouping: 1234567 → "1,234,567".
export function formatCount(n) {
  return Number(n).toLocaleString('en-US');
}
