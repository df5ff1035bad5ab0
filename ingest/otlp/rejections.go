package otlp

import (
	"fmt"
	"strings"
)

// maxMessages bounds the distinct reasons quoted in a partial-success
// message, so a request with a million bad points answers in a few lines.
const maxMessages = 3

// rejections accumulates rejected data points and the first few reasons.
type rejections struct {
	n      int64
	msgs   []string
	more   int
	warned []string
}

func (r *rejections) add(n int64, msg string) {
	r.n += n
	for _, m := range r.msgs {
		if m == msg {
			return
		}
	}
	if len(r.msgs) < maxMessages {
		r.msgs = append(r.msgs, msg)
	} else {
		r.more++
	}
}

// warn records a reason for something dropped that is not a data point.
func (r *rejections) warn(msg string) {
	if len(r.warned) < maxMessages {
		r.warned = append(r.warned, msg)
	}
}

func (r *rejections) message() string {
	if r.n == 0 && len(r.warned) == 0 {
		return ""
	}
	var b strings.Builder
	if r.n > 0 {
		fmt.Fprintf(&b, "rejected %d data points: %s", r.n, strings.Join(r.msgs, "; "))
		if r.more > 0 {
			fmt.Fprintf(&b, " (and %d more reasons)", r.more)
		}
	}
	if len(r.warned) > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString("dropped: ")
		b.WriteString(strings.Join(r.warned, "; "))
	}
	return b.String()
}
