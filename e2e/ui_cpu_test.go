package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's CPU times.
const clockTicks = 100

// treeCPUSeconds is the CPU time (user + system) that the process pid and
// all its descendants have used so far, from /proc (Linux; 0 elsewhere). It
// is what a loaded machine does not inflate, unlike wall time.
func treeCPUSeconds(pid int) float64 {
	type proc struct {
		ppid  int
		ticks int64
	}
	procs := map[int]proc{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')') // the command name may hold spaces
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		id, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		procs[id] = proc{ppid: ppid, ticks: ut + st}
	}
	children := map[int][]int{}
	for id, p := range procs {
		children[p.ppid] = append(children[p.ppid], id)
	}
	var total int64
	stack := []int{pid}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		total += procs[id].ticks
		stack = append(stack, children[id]...)
	}
	return float64(total) / clockTicks
}
