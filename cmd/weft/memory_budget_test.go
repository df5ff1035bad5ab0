package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMemoryLimit(t *testing.T) {
	meminfo := "MemTotal:       16384000 kB\nMemFree:         1000 kB\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"cgroup v2", map[string]string{
			"proc/self/cgroup":                       "0::/kubepods/pod1\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max": "3221225472\n",
			"proc/meminfo":                           meminfo,
		}, 3 << 30},
		{"cgroup v2 namespaced", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
			"proc/meminfo":             meminfo,
		}, 1 << 30},
		{"cgroup v2 without a limit", map[string]string{
			"proc/self/cgroup":         "0::/user.slice\n",
			"sys/fs/cgroup/memory.max": "max\n",
			"proc/meminfo":             meminfo,
		}, 16384000 << 10},
		{"cgroup v1", map[string]string{
			"proc/self/cgroup": "12:cpu,cpuacct:/docker/x\n11:memory:/docker/x\n",
			"sys/fs/cgroup/memory/docker/x/memory.limit_in_bytes": "2147483648\n",
			"proc/meminfo": meminfo,
		}, 2 << 30},
		{"cgroup v1 unlimited", map[string]string{
			"proc/self/cgroup":                           "11:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
			"proc/meminfo":                               meminfo,
		}, 16384000 << 10},
		{"nothing known", map[string]string{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tc.files)
			if got := memoryLimit(root); got != tc.want {
				t.Fatalf("memoryLimit = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1024": 1024, "4GiB": 4 << 30, "512MiB": 512 << 20, "1.5G": 3 << 29, "2GB": 2e9, "-1": -1, "0": 0, "64 KiB": 64 << 10,
	} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "4XB"} {
		if _, err := parseByteSize(bad); err == nil {
			t.Errorf("parseByteSize(%q) accepted", bad)
		}
	}
}

func TestSetMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	setMemoryLimit("", 400<<20)
	if got := debug.SetMemoryLimit(-1); got != 500<<20 {
		t.Fatalf("memory limit %d, want 5/4 of the budget", got)
	}
	debug.SetMemoryLimit(before)
	setMemoryLimit("1GiB", 400<<20) // the operator's GOMEMLIMIT wins
	setMemoryLimit("", -1)          // no budget: no limit
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("memory limit changed to %d", got)
	}
}
