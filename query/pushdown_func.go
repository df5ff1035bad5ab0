package query

import (
	"math"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/util/kahansum"
)

// rangeFn is a range-vector function the pushdown evaluates over one
// series' float samples in a window, with the engine's arithmetic in the
// engine's order (promql/functions.go), so that its results are the
// engine's bit for bit.
type rangeFn struct {
	kind  fnKind
	param float64 // predict_linear's duration (s)
}

type fnKind uint8

const (
	fnRate fnKind = iota
	fnIncrease
	fnDelta
	fnIrate
	fnIdelta
	fnAvgOverTime
	fnSumOverTime
	fnMinOverTime
	fnMaxOverTime
	fnCountOverTime
	fnPresentOverTime
	fnStddevOverTime
	fnStdvarOverTime
	fnDeriv
	fnPredictLinear
)

// rangeFns are the functions the pushdown takes, by name. All drop the
// metric name; last_over_time and first_over_time, which keep it, and the
// functions whose engine code looks at more than the window's floats
// (changes and resets pick their first sample, quantile_over_time takes a
// per-step parameter) are left to the engine.
var rangeFns = map[string]fnKind{
	"rate": fnRate, "increase": fnIncrease, "delta": fnDelta, "irate": fnIrate, "idelta": fnIdelta,
	"avg_over_time": fnAvgOverTime, "sum_over_time": fnSumOverTime,
	"min_over_time": fnMinOverTime, "max_over_time": fnMaxOverTime,
	"count_over_time": fnCountOverTime, "present_over_time": fnPresentOverTime,
	"stddev_over_time": fnStddevOverTime, "stdvar_over_time": fnStdvarOverTime,
	"deriv": fnDeriv, "predict_linear": fnPredictLinear,
}

// usesStartTimestamps reports whether the engine's version of the function
// reads start timestamps when the query enables them.
func (k fnKind) usesStartTimestamps() bool {
	return k == fnRate || k == fnIncrease || k == fnIrate
}

// rangeCallOf returns the pushdown of a call of a function of rangeFns over
// a plain selector with the metric name as an equality matcher (so that the
// series stay distinct once the function drops the name), and false for any
// other call. With rates false (start timestamps in use) the functions that
// read them are left to the engine.
func rangeCallOf(n *parser.Call, rates bool) (pushdown, bool) {
	kind, ok := rangeFns[n.Func.Name]
	if !ok || (!rates && kind.usesStartTimestamps()) {
		return pushdown{}, false
	}
	want := 1
	if kind == fnPredictLinear {
		want = 2
	}
	if len(n.Args) != want {
		return pushdown{}, false
	}
	fn := rangeFn{kind: kind}
	if kind == fnPredictLinear {
		lit, ok := numberLiteral(n.Args[1])
		if !ok {
			return pushdown{}, false
		}
		fn.param = lit
	}
	ms, ok := n.Args[0].(*parser.MatrixSelector)
	if !ok {
		return pushdown{}, false
	}
	vs, ok := ms.VectorSelector.(*parser.VectorSelector)
	if !ok || !plainSelector(vs) || ms.Range <= 0 {
		return pushdown{}, false
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual && m.Value != "" {
			return pushdown{vs: vs, call: n, fn: &fn, rng: ms.Range, name: m.Value}, true
		}
	}
	return pushdown{}, false
}

// numberLiteral returns the value of a number literal, in parentheses,
// with a sign or marked step-invariant by the engine's preprocessing.
func numberLiteral(e parser.Expr) (float64, bool) {
	neg := false
	for {
		switch n := e.(type) {
		case *parser.NumberLiteral:
			if neg {
				return -n.Val, true // the engine negates, as here
			}
			return n.Val, true
		case *parser.UnaryExpr:
			neg = neg != (n.Op == parser.SUB)
			e = n.Expr
		case *parser.ParenExpr:
			e = n.Expr
		case *parser.StepInvariantExpr:
			e = n.Expr
		default:
			return 0, false
		}
	}
}

// eval returns the function's value over the window s (the float samples
// in (ts-rng, ts], at least one, stale markers dropped), or false where the
// engine has no output.
func (fn rangeFn) eval(s []fpoint, ts, rng int64) (float64, bool) {
	switch fn.kind {
	case fnRate, fnIncrease, fnDelta:
		if len(s) < 2 {
			return 0, false
		}
		return extrapolatedRate(s, ts-rng, ts, rng, fn.kind != fnDelta, fn.kind == fnRate), true
	case fnIrate, fnIdelta:
		return instantValue(s, fn.kind == fnIrate)
	case fnAvgOverTime:
		return avgOverTime(s), true
	case fnSumOverTime:
		var sum, c float64
		for _, p := range s {
			sum, c = kahansum.Inc(p.f, sum, c)
		}
		if math.IsInf(sum, 0) {
			return sum, true
		}
		return sum + c, true
	case fnMinOverTime:
		m := s[0].f
		for _, p := range s {
			if p.f < m || math.IsNaN(m) {
				m = p.f
			}
		}
		return m, true
	case fnMaxOverTime:
		m := s[0].f
		for _, p := range s {
			if p.f > m || math.IsNaN(m) {
				m = p.f
			}
		}
		return m, true
	case fnCountOverTime:
		return float64(len(s)), true
	case fnPresentOverTime:
		return 1, true
	case fnStddevOverTime:
		return math.Sqrt(varianceOverTime(s)), true
	case fnStdvarOverTime:
		return varianceOverTime(s), true
	case fnDeriv:
		if len(s) < 2 {
			return 0, false
		}
		slope, _ := linearRegression(s, s[0].t)
		return slope, true
	case fnPredictLinear:
		if len(s) < 2 {
			return 0, false
		}
		slope, intercept := linearRegression(s, ts)
		return slope*fn.param + intercept, true
	}
	return 0, false
}

// extrapolatedRate is the engine's rate, increase (isCounter) and delta of
// float samples s (at least two) in the window (rangeStart, rangeEnd] of
// length rng ms, without start timestamps; the operations are the
// engine's, in its order.
func extrapolatedRate(s []fpoint, rangeStart, rangeEnd, rng int64, isCounter, isRate bool) float64 {
	first, lastp := s[0], s[len(s)-1]
	result := lastp.f - first.f
	if isCounter {
		for i := 1; i < len(s); i++ {
			if s[i].f < s[i-1].f {
				result += s[i-1].f
			}
		}
	}
	numSamplesMinusOne := len(s) - 1
	durationToStart := float64(first.t-rangeStart) / 1000
	durationToEnd := float64(rangeEnd-lastp.t) / 1000
	sampledInterval := float64(lastp.t-first.t) / 1000
	averageDurationBetweenSamples := sampledInterval / float64(numSamplesMinusOne)
	extrapolationThreshold := averageDurationBetweenSamples * 1.1
	if durationToStart >= extrapolationThreshold {
		durationToStart = averageDurationBetweenSamples / 2
	}
	if isCounter {
		durationToZero := durationToStart
		if result > 0 && first.f >= 0 {
			durationToZero = sampledInterval * (first.f / result)
		}
		if durationToZero < durationToStart {
			durationToStart = durationToZero
		}
	}
	if durationToEnd >= extrapolationThreshold {
		durationToEnd = averageDurationBetweenSamples / 2
	}
	factor := 1.0
	if sampledInterval != 0 {
		factor = (sampledInterval + durationToStart + durationToEnd) / sampledInterval
	}
	if isRate {
		factor /= (time.Duration(rng) * time.Millisecond).Seconds()
	}
	return result * factor
}

// instantValue is the engine's irate (isRate) and idelta of float samples:
// from the window's last two.
func instantValue(s []fpoint, isRate bool) (float64, bool) {
	if len(s) < 2 {
		return 0, false
	}
	prev, last := s[len(s)-2], s[len(s)-1]
	sampledInterval := last.t - prev.t
	if sampledInterval == 0 {
		return 0, false
	}
	f := last.f
	if !isRate || !(last.f < prev.f) { // in a counter reset the value is the increase
		f = last.f - prev.f
	}
	if isRate {
		f /= float64(sampledInterval) / 1000
	}
	return f, true
}

// avgOverTime is the engine's avg_over_time of floats: the Kahan sum's mean
// until the sum overflows, the incremental mean from then on.
func avgOverTime(s []fpoint) float64 {
	var (
		sum, count      = s[0].f, 1.
		mean, kahanC    float64
		incrementalMean bool
	)
	for i, p := range s[1:] {
		count = float64(i + 2)
		if !incrementalMean {
			newSum, newC := kahansum.Inc(p.f, sum, kahanC)
			if !math.IsInf(newSum, 0) {
				sum, kahanC = newSum, newC
				continue
			}
			incrementalMean = true
			mean = sum / (count - 1)
			kahanC /= (count - 1)
		}
		q := (count - 1) / count
		mean, kahanC = kahansum.Inc(p.f/count, q*mean, q*kahanC)
	}
	if incrementalMean {
		return mean + kahanC
	}
	return sum/count + kahanC/count
}

// varianceOverTime is the engine's population variance of floats (Welford
// with Kahan-compensated sums).
func varianceOverTime(s []fpoint) float64 {
	var count, mean, cMean, aux, cAux float64
	for _, p := range s {
		count++
		delta := p.f - (mean + cMean)
		mean, cMean = kahansum.Inc(delta/count, mean, cMean)
		aux, cAux = kahansum.Inc(delta*(p.f-(mean+cMean)), aux, cAux)
	}
	return (aux + cAux) / count
}

// linearRegression is the engine's least-squares fit of s: the slope and
// the intercept at interceptTime.
func linearRegression(s []fpoint, interceptTime int64) (slope, intercept float64) {
	var (
		n          float64
		sumX, cX   float64
		sumY, cY   float64
		sumXY, cXY float64
		sumX2, cX2 float64
	)
	initY := s[0].f
	constY := true
	for i, p := range s {
		if constY && i > 0 && p.f != initY {
			constY = false
		}
		n += 1.0
		x := float64(p.t-interceptTime) / 1e3
		sumX, cX = kahansum.Inc(x, sumX, cX)
		sumY, cY = kahansum.Inc(p.f, sumY, cY)
		sumXY, cXY = kahansum.Inc(x*p.f, sumXY, cXY)
		sumX2, cX2 = kahansum.Inc(x*x, sumX2, cX2)
	}
	if constY {
		if math.IsInf(initY, 0) {
			return math.NaN(), math.NaN()
		}
		return 0, initY
	}
	sumX += cX
	sumY += cY
	sumXY += cXY
	sumX2 += cX2

	covXY := sumXY - sumX*sumY/n
	varX := sumX2 - sumX*sumX/n

	slope = covXY / varX
	intercept = sumY/n - slope*sumX/n
	return slope, intercept
}
