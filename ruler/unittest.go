package ruler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/regexp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"go.yaml.in/yaml/v3"
)

// Rule unit tests in the `promtool test rules` format
// (https://prometheus.io/docs/prometheus/latest/configuration/unit_testing_rules/),
// evaluated by weft: the input series go into a private weft store, the
// rule files load into weft's rules manager (this package's loader, query
// functions and engines) and every group is evaluated at each step, as
// promtool does over Prometheus' TSDB. Two keys extend the format for LogQL
// rules: logql_rule_files at the top, input_logs in a test group.

// testFile is one unit test file.
type testFile struct {
	RuleFiles          []string       `yaml:"rule_files"`
	LogQLRuleFiles     []string       `yaml:"logql_rule_files"`
	EvaluationInterval model.Duration `yaml:"evaluation_interval"`
	GroupEvalOrder     []string       `yaml:"group_eval_order"`
	Tests              []testGroup    `yaml:"tests"`
	FuzzyCompare       bool           `yaml:"fuzzy_compare"`
}

// testGroup is one test: its input and what to expect.
type testGroup struct {
	Interval        model.Duration    `yaml:"interval"`
	InputSeries     []testSeries      `yaml:"input_series"`
	InputLogs       []testLogStream   `yaml:"input_logs"`
	AlertRuleTests  []alertTestCase   `yaml:"alert_rule_test"`
	PromqlExprTests []exprTestCase    `yaml:"promql_expr_test"`
	ExternalLabels  map[string]string `yaml:"external_labels"`
	ExternalURL     string            `yaml:"external_url"`
	Name            string            `yaml:"name"`
	StartTimestamp  testTimestamp     `yaml:"start_timestamp"`
}

// testSeries is one input series in the expanding notation of promql
// tests: `1+2x3 _ stale 5x2`.
type testSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

// testLogStream is one input log stream (weft's extension).
type testLogStream struct {
	Stream  string         `yaml:"stream"`
	Entries []testLogEntry `yaml:"entries"`
}

// testLogEntry is a line at a time after the test's start. With Every and
// Until it repeats: at At, At+Every, ... up to Until included.
type testLogEntry struct {
	At    model.Duration `yaml:"at"`
	Every model.Duration `yaml:"every"`
	Until model.Duration `yaml:"until"`
	Line  string         `yaml:"line"`
}

type alertTestCase struct {
	EvalTime  model.Duration `yaml:"eval_time"`
	Alertname string         `yaml:"alertname"`
	ExpAlerts []expAlert     `yaml:"exp_alerts"`
}

type expAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}

type exprTestCase struct {
	Expr       string         `yaml:"expr"`
	EvalTime   model.Duration `yaml:"eval_time"`
	ExpSamples []expSample    `yaml:"exp_samples"`
}

type expSample struct {
	Labels    string  `yaml:"labels"`
	Value     float64 `yaml:"value"`
	Histogram string  `yaml:"histogram"`
}

// testTimestamp is start_timestamp: RFC 3339 or Unix seconds.
type testTimestamp struct{ time.Time }

func (t *testTimestamp) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		sec, frac := int64(f), f-float64(int64(f))
		t.Time = time.Unix(sec, int64(frac*1e9)).UTC()
		return nil
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("line %d: start_timestamp %q is neither RFC 3339 nor Unix seconds", n.Line, s)
	}
	t.Time = v.UTC()
	return nil
}

// TestOptions configure RunTestFile.
type TestOptions struct {
	// Run selects test groups by name; nil runs every group.
	Run *regexp.Regexp
	// TempDir holds each test group's store while it runs; default
	// os.TempDir().
	TempDir string
}

// RunTestFile runs the rule unit tests of one file and returns every
// failure; none means the file passed. Rule file paths in it are relative
// to its directory. Each test group gets a fresh store under
// opts.TempDir, removed when the group is done.
func RunTestFile(ctx context.Context, file string, opts TestOptions) []error {
	tf, err := readTestFile(file)
	if err != nil {
		return []error{err}
	}
	order := map[string]int{}
	for i, g := range tf.GroupEvalOrder {
		if _, dup := order[g]; dup {
			return []error{fmt.Errorf("%s: group name repeated in evaluation order: %s", file, g)}
		}
		order[g] = i
	}
	var errs []error
	for i := range tf.Tests {
		tg := &tf.Tests[i]
		name := tg.Name
		if name == "" {
			name = fmt.Sprintf("unnamed#%d", i)
		}
		if opts.Run != nil && !opts.Run.MatchString(tg.Name) {
			continue
		}
		if tg.Interval == 0 {
			tg.Interval = tf.EvaluationInterval
		}
		for _, e := range runTestGroup(ctx, tf, tg, order, opts.TempDir) {
			errs = append(errs, fmt.Errorf("%s: test %s:\n%w", file, name, e))
		}
	}
	return errs
}

// readTestFile decodes a test file strictly and resolves its rule files
// against its directory.
func readTestFile(file string) (*testFile, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var tf testFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&tf); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if tf.EvaluationInterval == 0 {
		tf.EvaluationInterval = model.Duration(DefaultEvaluationInterval)
	}
	dir := filepath.Dir(file)
	resolve := func(globs []string) ([]string, error) {
		var out []string
		for _, g := range globs {
			if !filepath.IsAbs(g) {
				g = filepath.Join(dir, g)
			}
			m, err := filepath.Glob(g)
			if err != nil {
				return nil, fmt.Errorf("%s: rule file pattern %q: %w", file, g, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("%s: no rule file matches %q", file, g)
			}
			out = append(out, m...)
		}
		return out, nil
	}
	if tf.RuleFiles, err = resolve(tf.RuleFiles); err != nil {
		return nil, err
	}
	if tf.LogQLRuleFiles, err = resolve(tf.LogQLRuleFiles); err != nil {
		return nil, err
	}
	return &tf, nil
}

// maxEvalTime is the latest eval_time of the group's tests.
func (tg *testGroup) maxEvalTime() time.Duration {
	var m model.Duration
	for _, a := range tg.AlertRuleTests {
		m = max(m, a.EvalTime)
	}
	for _, e := range tg.PromqlExprTests {
		m = max(m, e.EvalTime)
	}
	return time.Duration(m)
}

// alertSet is the firing alerts of one rule at one time, or the expected
// ones, comparable in any order.
type alertSet []labelsAndAnnotations

type labelsAndAnnotations struct{ labels, annotations labels.Labels }

func (s alertSet) sorted() alertSet {
	out := slices.Clone(s)
	slices.SortFunc(out, func(a, b labelsAndAnnotations) int {
		if c := labels.Compare(a.labels, b.labels); c != 0 {
			return c
		}
		return labels.Compare(a.annotations, b.annotations)
	})
	return out
}

func (s alertSet) equal(o alertSet) bool {
	if len(s) != len(o) {
		return false
	}
	a, b := s.sorted(), o.sorted()
	for i := range a {
		if !labels.Equal(a[i].labels, b[i].labels) || !labels.Equal(a[i].annotations, b[i].annotations) {
			return false
		}
	}
	return true
}

func (s alertSet) String() string {
	if len(s) == 0 {
		return "[]"
	}
	var b strings.Builder
	b.WriteString("[")
	for i, a := range s.sorted() {
		fmt.Fprintf(&b, "\n      %d: labels:%s\n         annotations:%s", i, a.labels, a.annotations)
	}
	b.WriteString("\n    ]")
	return b.String()
}
