package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryBudgetShare is the part of the memory limit weft's budget defaults
// to: the budget stops new streams, and the rest is headroom for what the
// budget does not stop at once (in-flight requests, queries, the garbage
// collector's slack at GOGC=50, Pebble's caches).
const (
	memoryBudgetNum, memoryBudgetDen = 2, 3
)

// unlimitedCgroup: cgroup v1 reports "no limit" as a number near 2^63.
const unlimitedCgroup = 1 << 60

// defaultMemoryBudget is 2/3 of the memory limit of weft's cgroup (v2
// memory.max, v1 memory.limit_in_bytes), else of the machine's memory; 0
// when neither is known.
func defaultMemoryBudget() int64 {
	return memoryLimit("/") * memoryBudgetNum / memoryBudgetDen
}

// memoryLimit returns the memory limit of the process's cgroup, else the
// machine's memory, read under root ("/" but for tests); 0 when unknown.
func memoryLimit(root string) int64 {
	if n := cgroupLimit(root); n > 0 {
		return n
	}
	return machineMemory(root)
}

// cgroupLimit reads the cgroup memory limit from /proc/self/cgroup's paths:
// the v2 unified hierarchy first, then the v1 memory controller. The
// cgroup's own file, else the hierarchy root's (a container whose cgroup
// namespace hides the path).
func cgroupLimit(root string) int64 {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var files []string
		switch {
		case parts[0] == "0" && parts[1] == "":
			files = []string{
				filepath.Join(root, "sys/fs/cgroup", parts[2], "memory.max"),
				filepath.Join(root, "sys/fs/cgroup/memory.max"),
			}
		case strings.Contains(","+parts[1]+",", ",memory,"):
			files = []string{
				filepath.Join(root, "sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes"),
				filepath.Join(root, "sys/fs/cgroup/memory/memory.limit_in_bytes"),
			}
		}
		for _, f := range files {
			if n := readLimit(f); n > 0 {
				return n
			}
		}
	}
	return 0
}

// readLimit parses a cgroup limit file: a byte count, or "max" (none).
func readLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= unlimitedCgroup {
		return 0
	}
	return n
}

// machineMemory is MemTotal of /proc/meminfo.
func machineMemory(root string) int64 {
	b, err := os.ReadFile(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// byteSizeFlag is a flag.Value for a size in bytes, with an optional unit
// (KiB, MiB, GiB, TiB; KB, MB, GB, TB; K, M, G, T as binary).
type byteSizeFlag int64

func (b *byteSizeFlag) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSizeFlag) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSizeFlag(n)
	return nil
}

func parseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
		{"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: want bytes with an optional unit (4GiB, 512MiB)", s)
	}
	return int64(n * float64(mult)), nil
}

// memoryLimitNum/Den place Go's soft memory limit between the budget and the
// memory limit it stands for (budget x 3/2 by default): at 5/4 of the budget
// the garbage collector works harder before the process gets near an OOM
// kill, and a WAL replay, which rebuilds the head the budget bounded while
// it allocates garbage at full speed, stays under it instead of peaking at
// GOGC's 1.5x of the live heap.
const memoryLimitNum, memoryLimitDen = 5, 4

// setMemoryLimit sets Go's soft memory limit from the budget unless the
// operator chose GOMEMLIMIT (or there is no budget).
func setMemoryLimit(env string, budget int64) {
	if env == "" && budget > 0 {
		debug.SetMemoryLimit(budget * memoryLimitNum / memoryLimitDen)
	}
}
