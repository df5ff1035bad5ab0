// The route table. A page is a module whose default export is a Preact
// component taking {path, params, navigate}; adding one is a new file under
// pages/ and one entry here.

export const ROUTES = [
  { name: 'metrics', title: 'Metrics', load: () => import('./pages/metrics.js') },
  { name: 'logs', title: 'Logs', load: () => import('./pages/logs.js') },
  { name: 'traces', title: 'Traces', load: () => import('./pages/traces.js') },
  { name: 'workload', title: 'Workload', nav: false, load: () => import('./pages/workload.js') },
  { name: 'cardinality', title: 'Cardinality', load: () => import('./pages/cardinality.js') },
  { name: 'alerts', title: 'Alerts', load: () => import('./pages/alerts.js') },
  { name: 'investigate', title: 'Investigation', load: () => import('./pages/investigate.js') },
  { name: 'status', title: 'Status', load: () => import('./pages/status.js') },
];

export const DEFAULT_ROUTE = 'metrics';

// matchRoute finds the route of a parsed hash path; an empty path is the
// default route, an unknown one is null.
export function matchRoute(path, routes = ROUTES) {
  const name = path.length ? path[0] : DEFAULT_ROUTE;
  return routes.find((r) => r.name === name) || null;
}
