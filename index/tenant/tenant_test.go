package tenant

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func TestValidateID(t *testing.T) {
	for id, ok := range map[string]bool{
		"team-a": true, "A.b_c!*'()": true, strings.Repeat("x", MaxIDLength): true,
		"": false, ".": false, "..": false, "a/b": false, "a|b": false, "é": false, strings.Repeat("x", MaxIDLength+1): false,
	} {
		if err := ValidateID(id); (err == nil) != ok {
			t.Errorf("ValidateID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
	ids, err := ParseIDs("b|a|b")
	if err != nil || strings.Join(ids, ",") != "a,b" {
		t.Fatalf("ParseIDs = %v %v", ids, err)
	}
	if _, err := ParseIDs("a||b"); err == nil {
		t.Fatal("an empty tenant between separators was accepted")
	}
}

func TestMatcherAndWriteID(t *testing.T) {
	ctx := context.Background()
	if _, ok := FromContext(ctx); ok {
		t.Fatal("a bare context is restricted")
	}
	if id, err := WriteID(ctx); id != "" || err != nil {
		t.Fatalf("WriteID(bare) = %q %v", id, err)
	}
	for _, c := range []struct {
		ids              []string
		matches, refuses []string // label values ("" = no label)
		write            string
	}{
		{[]string{"a"}, []string{"a"}, []string{"", "b", "ab"}, "a"},
		{[]string{Anonymous}, []string{""}, []string{"a"}, ""},
		{[]string{"a.b", "c"}, []string{"a.b", "c"}, []string{"axb", "", "a"}, ""},
		{[]string{Anonymous, "c"}, []string{"", "c"}, []string{"a"}, ""},
	} {
		ctx := WithSet(ctx, NewSet(c.ids...))
		s, ok := FromContext(ctx)
		if !ok {
			t.Fatalf("%v: not restricted", c.ids)
		}
		for _, v := range c.matches {
			if !s.Matcher().Matches(v) {
				t.Errorf("%v: %q not matched", c.ids, v)
			}
		}
		for _, v := range c.refuses {
			if s.Matcher().Matches(v) {
				t.Errorf("%v: %q matched", c.ids, v)
			}
		}
		id, err := WriteID(ctx)
		if len(c.ids) > 1 && err == nil {
			t.Errorf("%v: a federated context may write", c.ids)
		}
		if len(c.ids) == 1 && (err != nil || id != c.write) {
			t.Errorf("%v: WriteID = %q %v, want %q", c.ids, id, err, c.write)
		}
	}
}

func TestLabels(t *testing.T) {
	for _, ls := range []labels.Labels{
		labels.FromStrings("__name__", "up", "job", "x"),
		labels.FromStrings("a", "1"),
		labels.FromStrings("A", "1", "__a", "2"),
		labels.FromStrings("__z", "1"),
	} {
		full := Add(ls, "t1")
		if full.Get(LabelName) != "t1" || full.Len() != ls.Len()+1 || Of(full) != "t1" {
			t.Errorf("Add(%s) = %s", ls, full)
		}
		if !labels.Equal(full, labels.NewBuilder(ls).Set(LabelName, "t1").Labels()) {
			t.Errorf("Add(%s) = %s: not sorted as labels are", ls, full)
		}
		if !labels.Equal(Strip(full), ls) || !labels.Equal(Add(ls, ""), ls) || Of(ls) != Anonymous {
			t.Errorf("Strip(Add(%s)) = %s", ls, Strip(full))
		}
		fed := Output(WithSet(context.Background(), NewSet("t1", "t2")), full)
		if fed.Get(FederatedLabelName) != "t1" || fed.Has(LabelName) {
			t.Errorf("federated output %s", fed)
		}
	}
	if id, name := SplitKey(ScopedKey("t", "m")); id != "t" || name != "m" {
		t.Errorf("SplitKey = %q %q", id, name)
	}
	if id, name := SplitKey(ScopedKey("", "m")); id != Anonymous || name != "m" {
		t.Errorf("SplitKey(unscoped) = %q %q", id, name)
	}
}

// TestSortsAfter agrees with string order for names around LabelName.
func TestSortsAfter(t *testing.T) {
	for _, n := range []string{"", "A", "Z", "_", "__", "__name__", "__tenant", LabelName, "__tenant__x", "__u", "_a", "`", "a", "job", "\x00", "\xff", "é", "0", "~"} {
		if got, want := SortsAfter(n), n > LabelName; got != want {
			t.Errorf("SortsAfter(%q) = %v, want %v", n, got, want)
		}
	}
}
