package workload

import "testing"

func TestServiceJob(t *testing.T) {
	for _, c := range []struct {
		attrs map[string]string
		want  string
	}{
		{map[string]string{"service.name": "trainer"}, "trainer"},
		{map[string]string{"service.name": "trainer", "service.namespace": "ml"}, "ml/trainer"},
		{map[string]string{"service.name": "trainer", "service.namespace": ""}, "trainer"},
		{map[string]string{"service.namespace": "ml"}, ""},
		{map[string]string{"service.name": ""}, ""},
	} {
		got := ServiceJob(func(n string) (string, bool) { v, ok := c.attrs[n]; return v, ok })
		if got != c.want {
			t.Errorf("%v: job %q, want %q", c.attrs, got, c.want)
		}
	}
}
