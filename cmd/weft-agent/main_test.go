package main

import "testing"

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"unknown flag", []string{"-no-such-flag"}, 2},
		{"bad log level", []string{"-log-level", "loud"}, 2},
		{"bad naming", []string{"-naming", "prom", "-once", "-pod-resources-socket", ""}, 1},
		{"bad output", []string{"-once", "-output", "xml", "-pod-resources-socket", ""}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.args); got != tc.want {
				t.Errorf("run(%v) = %d, want %d", tc.args, got, tc.want)
			}
		})
	}
}
