// Churn over time (/weft/api/v1/cardinality/churn): series created per
// hour and, per index partition (a day), active, created and ended. The
// API's times are unix seconds; these helpers shape its answer for the
// cardinality page.

// churnSummary returns the hours (with ms times and a 0..1 height against
// the busiest hour), the total created, the busiest hour and the days.
export function churnSummary(data) {
  const hours = (data && data.hours) || [];
  let total = 0;
  let peak = null;
  for (const h of hours) {
    total += h.created;
    if (!peak || h.created > peak.created) peak = h;
  }
  const max = Math.max(1, peak ? peak.created : 0);
  return {
    total,
    peak: peak && peak.created > 0 ? { start: peak.start * 1e3, created: peak.created } : null,
    hours: hours.map((h) => ({ start: h.start * 1e3, created: h.created, height: h.created / max })),
    days: ((data && data.partitions) || []).map((p) => ({
      start: p.start * 1e3,
      end: p.end * 1e3,
      active: p.active,
      created: p.created,
      ended: p.ended,
    })),
  };
}
