package traceql

import (
	"encoding/binary"
	"math"
)

// aggregate computes a scalar filter's aggregate over one spanset. Values
// that are not numbers (strings, missing attributes) are skipped; with none
// left the aggregate is nil and the filter drops the spanset. min and max
// keep the type of the value they pick; sum keeps integers and durations
// integral unless a float takes part; avg is a float, or a duration when
// every value is one.
func (e *Evaluator) aggregate(st *scalarFilter, ss spanset) static {
	if st.agg == aggCount {
		return intValue(int64(len(ss.idx)))
	}
	c := &e.ctx
	var (
		n          int
		sumI       int64
		sumF       float64
		anyFloat   bool
		allDur     = true
		best       static
		haveResult bool
	)
	for _, i := range ss.idx {
		c.span, c.idx = &c.tr.Spans[i], i
		v := st.arg.eval(c)
		if !v.t.numeric() {
			continue
		}
		n++
		if v.t == vFloat {
			anyFloat = true
		} else {
			sumI += v.n
		}
		if v.t != vDuration {
			allDur = false
		}
		sumF += v.float()
		switch {
		case !haveResult:
			best, haveResult = v, true
		case st.agg == aggMin && compare(opLt, &v, &best):
			best = v
		case st.agg == aggMax && compare(opGt, &v, &best):
			best = v
		}
	}
	if n == 0 {
		return nilValue
	}
	switch st.agg {
	case aggMin, aggMax:
		return best
	case aggSum:
		switch {
		case anyFloat:
			return floatValue(sumF)
		case allDur:
			return durationValue(sumI)
		}
		return intValue(sumI)
	}
	avg := sumF / float64(n)
	if allDur && !math.IsInf(avg, 0) {
		return durationValue(int64(avg))
	}
	return floatValue(avg)
}

type group struct {
	idx  []int32
	vals []static
}

// groupBy splits each spanset by the values of the by() expressions, in the
// order the groups first appear. Spans for which a value is nil form their
// own group, as in Tempo.
func (e *Evaluator) groupBy(st *groupBy, in []spanset) []spanset {
	if e.group == nil {
		e.group = map[string]int{}
	}
	c := &e.ctx
	var out []spanset
	for _, ss := range in {
		clear(e.group)
		var groups []group
		for _, i := range ss.idx {
			c.span, c.idx = &c.tr.Spans[i], i
			e.key = e.key[:0]
			var vals [4]static
			vs := vals[:0]
			for _, x := range st.exprs {
				v := x.eval(c)
				vs = append(vs, v)
				e.key = appendGroupKey(e.key, v)
			}
			gi, ok := e.group[string(e.key)]
			if !ok {
				gi = len(groups)
				e.group[string(e.key)] = gi
				groups = append(groups, group{vals: append([]static(nil), vs...)})
			}
			groups[gi].idx = append(groups[gi].idx, i)
		}
		for _, g := range groups {
			attrs := make([]ssAttr, len(ss.attrs), len(ss.attrs)+len(g.vals))
			copy(attrs, ss.attrs)
			for k, v := range g.vals {
				attrs = append(attrs, ssAttr{key: st.keys[k], val: v})
			}
			out = append(out, spanset{idx: g.idx, attrs: attrs})
		}
	}
	return out
}

// appendGroupKey encodes a value so that equal values, and only those,
// encode equally.
func appendGroupKey(b []byte, v static) []byte {
	b = append(b, byte(v.t))
	switch v.t {
	case vString:
		b = binary.AppendUvarint(b, uint64(len(v.s)))
		return append(b, v.s...)
	case vFloat:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.f))
	case vID:
		return append(b, v.id[:v.n]...)
	case vArray:
		s := v.String()
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	return binary.LittleEndian.AppendUint64(b, uint64(v.n))
}
