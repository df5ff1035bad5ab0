package redact

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// TestBuiltins: each built-in redacts what it is for, keeps what says
// what was redacted, and leaves look-alikes alone.
func TestBuiltins(t *testing.T) {
	for _, tc := range []struct {
		builtin, in, want string
	}{
		{"email", "mail bob.smith+ml@corp.example.co.uk now", "mail <redacted:email> now"},
		{"email", "no address @ here, nor x@y", "no address @ here, nor x@y"},
		{"bearer_token", "Authorization: Bearer eyJhbGciOi.eyJzdWIi.sig-_x", "Authorization: Bearer <redacted:bearer_token>"},
		{"bearer_token", "the bearer of bad news", "the bearer of bad news"},
		{"bearer_token", "AUTHORIZATION: BEARER abcdefgh12345", "AUTHORIZATION: BEARER <redacted:bearer_token>"},
		{"aws_key", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY=<redacted:aws_key>"},
		{"api_key", "Client_Secret: s3cr3tvalue", "Client_Secret: <redacted:api_key>"},
		{"aws_key", "id=AKIAIOSFODNN7EXAMPLE ok", "id=<redacted:aws_key> ok"},
		{"aws_key", `aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"`, `aws_secret_access_key = "<redacted:aws_key>"`},
		{"aws_key", "AKIA is a prefix", "AKIA is a prefix"},
		{"api_key", "token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 used", "token <redacted:api_key> used"},
		{"api_key", "url?api_key=abcdef123456&x=1", "url?api_key=<redacted:api_key>&x=1"},
		{"api_key", `{"password": "hunter22"}`, `{"password": "<redacted:api_key>"}`},
		{"api_key", "OPENAI sk-proj-abcdefghijklmnopqrstuvwx", "OPENAI <redacted:api_key>"},
		{"api_key", "password reset requested", "password reset requested"},
	} {
		r, err := New(Options{Rules: []Rule{{Builtin: tc.builtin}}})
		if err != nil {
			t.Fatal(err)
		}
		got, changed := r.String(LogLines, tc.in)
		if got != tc.want || changed != (tc.in != tc.want) {
			t.Errorf("%s(%q) = %q, %v; want %q", tc.builtin, tc.in, got, changed, tc.want)
		}
	}
}

// TestRulesTargetsAndCounts: a rule applies to its targets only and counts
// every replaced match per target.
func TestRulesTargetsAndCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, err := New(Options{Registerer: reg, Rules: []Rule{
		{Name: "run", Regex: `secret-(\d+)`, Replacement: "hidden-$1", Targets: []Target{LogLines}},
		{Builtin: "email", Targets: []Target{StructuredMetadata, LabelValues, SpanAttributes}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	streams := []logstore.PushStream{{
		Labels: labels.FromStrings("__name__", "a@b.example", "owner", "a@b.example", "job", "x"),
		Entries: []logentry.Entry{{Line: "secret-1 and secret-22 for a@b.example",
			Metadata: labels.FromStrings("user", "a@b.example", "trace_id", "abc")}},
	}}
	r.Streams(streams)
	st := streams[0]
	if st.Entries[0].Line != "hidden-1 and hidden-22 for a@b.example" {
		t.Errorf("line %q", st.Entries[0].Line)
	}
	if st.Entries[0].Metadata.Get("user") != "<redacted:email>" || st.Entries[0].Metadata.Get("trace_id") != "abc" {
		t.Errorf("metadata %s", st.Entries[0].Metadata)
	}
	if st.Labels.Get("owner") != "<redacted:email>" || st.Labels.Get("__name__") != "a@b.example" {
		t.Errorf("labels %s", st.Labels)
	}
	res := &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "owner", Value: traceentry.StringValue("c@d.example")}}}
	batch := []tracestore.ResourceSpans{{Spans: []traceentry.Span{{
		Resource:      res,
		StatusMessage: "denied c@d.example",
		Attributes: traceentry.Attributes{
			{Key: "list", Value: traceentry.ArrayValue(traceentry.StringValue("e@f.example"), traceentry.IntValue(3))},
			{Key: "map", Value: traceentry.MapValue(traceentry.KeyValue{Key: "u", Value: traceentry.StringValue("g@h.example")})},
		},
	}, {Resource: res}}}}
	r.Spans(batch)
	sp := batch[0].Spans[0]
	if got := sp.Attributes[0].Value.String() + " " + sp.Attributes[1].Value.String() + " " + sp.StatusMessage + " " + res.Attributes[0].Value.Str(); strings.Count(got, "<redacted:email>") != 4 || strings.Contains(got, ".example") {
		t.Errorf("spans: %s", got)
	}
	for _, c := range []struct {
		rule, target string
		want         float64
	}{
		{"run", "log_lines", 2}, {"email", "structured_metadata", 1}, {"email", "label_values", 1}, {"email", "span_attributes", 4},
	} {
		got := counterValue(t, reg, c.rule, c.target)
		if got != c.want {
			t.Errorf("weft_redactions_total{rule=%q,target=%q} = %v, want %v", c.rule, c.target, got, c.want)
		}
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, rule, target string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			ls := map[string]string{}
			for _, l := range m.GetLabel() {
				ls[l.GetName()] = l.GetValue()
			}
			if ls["rule"] == rule && ls["target"] == target {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no counter for %s/%s", rule, target)
	return 0
}

// TestInvalidRules: what New refuses, with the reason.
func TestInvalidRules(t *testing.T) {
	for name, tc := range map[string]struct {
		rules []Rule
		want  string
	}{
		"no pattern":     {[]Rule{{Name: "x"}}, "builtin or regex is required"},
		"both":           {[]Rule{{Name: "x", Builtin: "email", Regex: "a"}}, "exclusive"},
		"unknown":        {[]Rule{{Builtin: "ssn"}}, "unknown builtin"},
		"bad regex":      {[]Rule{{Name: "x", Regex: "("}}, "regex"},
		"empty match":    {[]Rule{{Name: "x", Regex: "a*"}}, "empty string"},
		"unknown target": {[]Rule{{Name: "x", Regex: "a", Targets: []Target{"bodies"}}}, "unknown target"},
		"no name":        {[]Rule{{Regex: "a"}}, "name is required"},
		"duplicate":      {[]Rule{{Builtin: "email"}, {Name: "email", Regex: "a"}}, "used twice"},
	} {
		if _, err := New(Options{Rules: tc.rules}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	if r, err := New(Options{}); r != nil || err != nil {
		t.Errorf("no rules: %v %v", r, err)
	}
	var r *Redactor
	if s, ch := r.String(LogLines, "a@b.example"); ch || s != "a@b.example" {
		t.Error("a nil redactor changed a value")
	}
}
