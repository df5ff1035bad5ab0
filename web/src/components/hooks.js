// Hooks shared by the pages: the URL's time range with auto-refresh, and
// cancellable async loads.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { rangeParams } from '../lib/url.js';
import { isRelative, parseDuration, resolveRange } from '../lib/time.js';

// useRange reads from/to/refresh from the URL params and resolves them to
// milliseconds. The range is resolved again on reload() and, for a range
// ending "now", every refresh interval; `tick` changes each time.
export function useRange(params, defaults) {
  const { from, to, refresh } = rangeParams(params, defaults);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ms = parseDuration(refresh);
    if (!ms || !isRelative(to) || !isRelative(from)) return undefined;
    const id = setInterval(() => setTick((t) => t + 1), Math.max(ms, 1000));
    return () => clearInterval(id);
  }, [refresh, from, to]);
  const range = useMemo(() => resolveRange(from, to, Date.now()), [from, to, tick]);
  return { from, to, refresh, range, tick, reload: () => setTick((t) => t + 1) };
}

// useAsync runs load(signal) whenever deps change, aborting the previous
// run. It returns {data, error, loading}; data stays the last success while
// a new run loads, so refreshes do not flicker.
export function useAsync(load, deps) {
  const [state, setState] = useState({ data: undefined, error: null, loading: true });
  const gen = useRef(0);
  useEffect(() => {
    const my = ++gen.current;
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    Promise.resolve()
      .then(() => load(ctl.signal))
      .then(
        (data) => my === gen.current && setState({ data, error: null, loading: false }),
        (error) => {
          if (error && error.name === 'AbortError') return;
          if (my === gen.current) setState({ data: undefined, error, loading: false });
        },
      );
    return () => ctl.abort();
  }, deps);
  return state;
}
