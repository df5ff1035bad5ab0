package query

import (
	"math"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/util/kahansum"
)

// cell is one group's aggregation state at one step; its arithmetic is
// the engine's (promql's aggregation of float samples), so that values
// added in the engine's order give the engine's result bit for bit.
type cell struct {
	seen    bool
	incMean bool // avg switched to the incremental mean (the sum overflowed)
	v       float64
	mean    float64
	c       float64 // Kahan compensation
	count   float64
}

func (c *cell) add(op parser.ItemType, f float64) {
	if !c.seen {
		*c = cell{seen: true, v: f, mean: f, count: 1}
		if op == parser.GROUP {
			c.v = 1
		}
		return
	}
	switch op {
	case parser.SUM:
		c.v, c.c = kahansum.Inc(f, c.v, c.c)
	case parser.AVG:
		c.count++
		if !c.incMean {
			nv, nc := kahansum.Inc(f, c.v, c.c)
			if !math.IsInf(nv, 0) {
				c.v, c.c = nv, nc
				break
			}
			c.incMean = true
			c.mean = c.v / (c.count - 1)
			c.c /= c.count - 1
		}
		q := (c.count - 1) / c.count
		c.mean, c.c = kahansum.Inc(f/c.count, q*c.mean, q*c.c)
	case parser.MAX:
		if c.v < f || math.IsNaN(c.v) {
			c.v = f
		}
	case parser.MIN:
		if c.v > f || math.IsNaN(c.v) {
			c.v = f
		}
	case parser.COUNT:
		c.count++
	}
}

func (c *cell) value(op parser.ItemType) float64 {
	switch op {
	case parser.SUM:
		return c.v + c.c
	case parser.AVG:
		if c.incMean {
			return c.mean + c.c
		}
		return c.v/c.count + c.c/c.count
	case parser.COUNT:
		return c.count
	}
	return c.v
}

// aggregator holds the cells of every group, steps per group.
type aggregator struct {
	op    parser.ItemType
	steps int
	cells []cell
}

// series returns a series per group with a value at some step: its value
// at each step from the first one it has, and a stale marker at the steps
// it has none, so that a selector over it (with any lookback) reads
// exactly the aggregation's values.
func (a *aggregator) series(groups []labels.Labels, start, interval int64) []promql.Series {
	var out []promql.Series
	stale := math.Float64frombits(value.StaleNaN)
	for gi, ls := range groups {
		g := a.cells[gi*a.steps : (gi+1)*a.steps]
		var pts []promql.FPoint
		for k := range g {
			t := start + int64(k)*interval
			switch {
			case g[k].seen:
				if pts == nil {
					pts = make([]promql.FPoint, 0, a.steps-k)
				}
				pts = append(pts, promql.FPoint{T: t, F: g[k].value(a.op)})
			case pts != nil:
				pts = append(pts, promql.FPoint{T: t, F: stale})
			}
		}
		if pts != nil {
			out = append(out, promql.Series{Metric: ls, Floats: pts})
		}
	}
	return out
}
