package gpuagent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSmokeScriptLogic runs scripts/gpu-smoke.sh against a fake agent that
// replays the golden dgxh100 exposition and a fake nvidia-smi, so the
// script's checks are exercised on machines without a GPU. The real-driver
// run happens on GPU machines.
func TestSmokeScriptLogic(t *testing.T) {
	for _, tool := range []string{"bash", "awk", "join", "sed", "diff"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required by gpu-smoke.sh: %v", tool, err)
		}
	}
	golden, err := os.ReadFile("testdata/dgxh100.prom")
	if err != nil {
		t.Fatal(err)
	}
	var uuids []string
	for _, m := range regexp.MustCompile(`DCGM_FI_DEV_GPU_UTIL\{.*UUID="([^"]+)"`).FindAllStringSubmatch(string(golden), -1) {
		uuids = append(uuids, m[1])
	}
	if len(uuids) != 8 {
		t.Fatalf("golden has %d GPUs", len(uuids))
	}
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	tests := []struct {
		name      string
		smiUUIDs  []string
		mutate    string // sed expression applied to the replayed exposition
		registers int
		second    string // sed expression applied from the second run on
		wantErr   string
	}{
		{name: "all checks pass", smiUUIDs: uuids, registers: 8},
		{name: "uuid mismatch", smiUUIDs: append(append([]string(nil), uuids[:7]...), "GPU-ffffffff-0000-4000-8000-000000000000"), registers: 8, wantErr: "UUIDs differ"},
		{name: "temperature out of range", smiUUIDs: uuids, mutate: `s/^\(DCGM_FI_DEV_GPU_TEMP{.*gpu="3".*}\) .*/\1 400/`, registers: 8, wantErr: "DCGM_FI_DEV_GPU_TEMP = 400 outside"},
		{name: "missing metric on one gpu", smiUUIDs: uuids, mutate: `/^DCGM_FI_DEV_SM_CLOCK{.*gpu="5"/d`, registers: 8, wantErr: "DCGM_FI_DEV_SM_CLOCK: 7 series for 8"},
		{name: "nvml down", smiUUIDs: uuids, mutate: `s/^\(gpu_agent_nvml_up[^ ]*\) 1/\1 0/`, registers: 8, wantErr: "NVML not up"},
		{name: "event set partial", smiUUIDs: uuids, registers: 6, wantErr: "event set registered on 6 of 8"},
		{name: "energy decreased", smiUUIDs: uuids, second: `s/^\(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{.*gpu="4".*}\) .*/\1 1/`, registers: 8, wantErr: "energy decreased on " + uuids[4]},
		{name: "failed gpu", smiUUIDs: uuids, mutate: `s/^\(gpu_agent_gpu_failed{.*gpu="2".*}\) 0/\1 1/`, registers: 8, wantErr: "GPU reported failed"},
		{name: "gpm ratio out of range", smiUUIDs: uuids, mutate: `s/^\(DCGM_FI_PROF_SM_ACTIVE{.*gpu="1".*}\) .*/\1 1.5/`, registers: 8, wantErr: "DCGM_FI_PROF_SM_ACTIVE = 1.5 outside"},
		{name: "gpm figure missing on a gpm gpu", smiUUIDs: uuids, mutate: `/^DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{.*gpu="6"/d`, registers: 8, wantErr: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: 7 series for 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var smi strings.Builder
			for i, u := range tc.smiUUIDs {
				fmt.Fprintf(&smi, "GPU %d: NVIDIA H100 80GB HBM3 (UUID: %s)\n", i, u)
			}
			os.WriteFile(filepath.Join(dir, "smi.txt"), []byte(smi.String()), 0o644)
			writeExec(t, filepath.Join(dir, "nvidia-smi"), "#!/bin/sh\ncat "+filepath.Join(dir, "smi.txt")+"\n")
			mutate := tc.mutate
			if mutate == "" {
				mutate = "s/^//" // identity
			}
			second := tc.second
			if second == "" {
				second = "s/^//"
			}
			marker := filepath.Join(dir, "ran")
			agent := fmt.Sprintf(`#!/bin/bash
echo "time=x level=INFO msg=nvml_events_registered gpus=%d" >&2
case " $* " in
*" -naming otel "*) cat %q ;;
*" -output json "*) echo '{"name":"gpu_agent_nvml_up","type":"gauge","labels":{},"value":1}' ;;
*) if [ -e %q ]; then sed -e '%s' -e '%s' %q; else touch %q; sed -e '%s' %q; fi ;;
esac
`, tc.registers, abs("testdata/dgxh100_otel.prom"), marker, mutate, second, abs("testdata/dgxh100.prom"), marker, mutate, abs("testdata/dgxh100.prom"))
			writeExec(t, filepath.Join(dir, "agent"), agent)
			cmd := exec.Command("bash", "scripts/gpu-smoke.sh")
			cmd.Env = append(os.Environ(), "WEFT_SMOKE_AGENT="+filepath.Join(dir, "agent"), "NVIDIA_SMI="+filepath.Join(dir, "nvidia-smi"), "WEFT_SMOKE_PAUSE=0")
			out, err := cmd.CombinedOutput()
			if tc.wantErr == "" {
				if err != nil || !strings.Contains(string(out), "gpu-smoke: OK") {
					t.Fatalf("smoke failed: %v\n%s", err, out)
				}
				if !strings.Contains(string(out), "GPM profiling figures on 8 GPU(s)") {
					t.Errorf("GPM figures not checked:\n%s", out)
				}
				return
			}
			if err == nil {
				t.Fatalf("smoke passed, want failure %q:\n%s", tc.wantErr, out)
			}
			if !strings.Contains(string(out), "gpu-smoke: FAIL: ") || !strings.Contains(string(out), tc.wantErr) {
				t.Errorf("output lacks %q:\n%s", tc.wantErr, out)
			}
		})
	}
}

func writeExec(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		tb.Fatal(err)
	}
}
