#!/usr/bin/env bash
# gpu-smoke.sh: one-command check of weft-agent against the real NVIDIA driver.
#
# Builds cmd/weft-agent (cgo), runs two one-shot collections and checks:
#   - NVML initialised (gpu_agent_nvml_up 1), no GPU reported failed;
#   - the GPU UUIDs equal those of `nvidia-smi -L`;
#   - every GPU has utilization, memory, temperature, power, energy and clocks,
#     with values in physical range;
#   - total energy is monotonic across the two collections;
#   - the NVML event set was registered on every GPU (XID/ECC events);
#   - on GPUs with NVML GPM (Hopper and newer) the DCGM_FI_PROF_* figures are
#     there, ratios in [0, 1] and byte rates non-negative;
#   - the OTel naming and the JSON output work.
# Exits non-zero with a "gpu-smoke: FAIL:" line on the first failed check.
#
# Usage: gpuagent/scripts/gpu-smoke.sh            (from anywhere in the repo)
# Env:   WEFT_SMOKE_AGENT=path  use this binary instead of building
#        NVIDIA_SMI=cmd         nvidia-smi to compare with (default nvidia-smi)
#        WEFT_SMOKE_PAUSE=s     seconds between the two collections (default 2)
set -euo pipefail

fail() { echo "gpu-smoke: FAIL: $*" >&2; exit 1; }
note() { echo "gpu-smoke: $*"; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
smi=${NVIDIA_SMI:-nvidia-smi}

command -v "${smi%% *}" >/dev/null 2>&1 || fail "nvidia-smi not found: is the NVIDIA driver installed?"
$smi -L >"$work/smi.txt" 2>&1 || fail "nvidia-smi -L failed: $(cat "$work/smi.txt")"

agent=${WEFT_SMOKE_AGENT:-}
if [[ -z "$agent" ]]; then
	command -v go >/dev/null 2>&1 || fail "go not found"
	note "building weft-agent (cgo)"
	(cd "$repo" && CGO_ENABLED=1 go build -o "$work/weft-agent" ./cmd/weft-agent) >"$work/build.log" 2>&1 ||
		fail "build failed: $(tail -20 "$work/build.log")"
	agent="$work/weft-agent"
fi

collect() { # collect <out> <log> [flags...]
	local out=$1 log=$2
	shift 2
	"$agent" -once -pod-resources-socket "" -log-level info "$@" >"$out" 2>"$log" ||
		fail "weft-agent -once $* exited non-zero: $(tail -5 "$log")"
}

note "collection 1"
collect "$work/a.prom" "$work/a.log" -output text
sleep "${WEFT_SMOKE_PAUSE:-2}"
note "collection 2"
collect "$work/b.prom" "$work/b.log" -output text

grep -qE '^gpu_agent_nvml_up(\{[^}]*\})? 1$' "$work/a.prom" ||
	fail "NVML not up: $(grep -h nvml "$work/a.log" | head -3)"

# UUIDs: nvidia-smi -L prints "GPU 0: NAME (UUID: GPU-...)"; MIG lines are indented.
sed -n 's/^GPU [0-9]*:.*(UUID: \(GPU-[^)]*\)).*/\1/p' "$work/smi.txt" | sort >"$work/smi_uuids"
grep '^DCGM_FI_DEV_GPU_UTIL{' "$work/a.prom" | sed 's/.*[{,]UUID="\([^"]*\)".*/\1/' | sort -u >"$work/agent_uuids"
ngpu=$(wc -l <"$work/smi_uuids")
[[ $ngpu -gt 0 ]] || fail "nvidia-smi -L lists no GPU"
diff "$work/smi_uuids" "$work/agent_uuids" >"$work/uuid.diff" ||
	fail "UUIDs differ from nvidia-smi -L (< nvidia-smi, > agent): $(cat "$work/uuid.diff")"
note "$ngpu GPU(s), UUIDs match nvidia-smi -L"

if grep -q '^gpu_agent_gpu_failed{.*} 1$' "$work/a.prom"; then
	fail "GPU reported failed: $(grep '^gpu_agent_gpu_failed{.*} 1$' "$work/a.prom")"
fi

# Range checks: metric, min, max (inclusive) [, series expected]; by default
# every GPU must have the metric.
check_range() {
	local metric=$1 lo=$2 hi=$3 want=${4:-$ngpu} n
	n=$(grep -c "^$metric{" "$work/a.prom" || true)
	[[ $n -eq $want ]] || fail "$metric: $n series for $want GPU(s)"
	awk -v m="$metric" -v lo="$lo" -v hi="$hi" '
		index($0, m "{") == 1 { v = $NF + 0; if (v < lo || v > hi) { print m " = " v " outside [" lo ", " hi "]: " $0; bad = 1 } }
		END { exit bad }' "$work/a.prom" >"$work/range.txt" || fail "$(cat "$work/range.txt")"
}
check_range DCGM_FI_DEV_GPU_UTIL 0 100
check_range DCGM_FI_DEV_MEM_COPY_UTIL 0 100
check_range DCGM_FI_DEV_GPU_TEMP 1 125
check_range DCGM_FI_DEV_SLOWDOWN_TEMP 40 150
check_range DCGM_FI_DEV_POWER_USAGE 1 2000
check_range DCGM_FI_DEV_POWER_MGMT_LIMIT 10 2000
check_range DCGM_FI_DEV_SM_CLOCK 0 5000
check_range DCGM_FI_DEV_MEM_CLOCK 0 20000
check_range DCGM_FI_DEV_FB_TOTAL 1024 1048576
check_range DCGM_FI_DEV_FB_USED 0 1048576
check_range DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION 0 1e18

# Used + free never exceeds total (v2 memory info keeps reserved apart).
awk '
	/^DCGM_FI_DEV_FB_(USED|FREE|TOTAL)\{/ {
		match($0, /UUID="[^"]*"/); u = substr($0, RSTART, RLENGTH)
		split($1, a, "{"); v[a[1], u] = $NF + 0; us[u] = 1 }
	END { for (u in us) if (v["DCGM_FI_DEV_FB_USED", u] + v["DCGM_FI_DEV_FB_FREE", u] > v["DCGM_FI_DEV_FB_TOTAL", u] + 1) { print "FB used+free > total for " u; bad = 1 }
	      exit bad }' "$work/a.prom" >"$work/fb.txt" || fail "$(cat "$work/fb.txt")"
note "values in range"

# Profiling figures from NVML GPM: every GPU reporting gpu_agent_gpm_supported 1
# has them (-once waits one GPM window for them).
ngpm=$(grep -c '^gpu_agent_gpm_supported{.*} 1$' "$work/a.prom" || true)
if [[ $ngpm -gt 0 ]]; then
	for m in DCGM_FI_PROF_GR_ENGINE_ACTIVE DCGM_FI_PROF_SM_ACTIVE DCGM_FI_PROF_SM_OCCUPANCY \
		DCGM_FI_PROF_PIPE_TENSOR_ACTIVE DCGM_FI_PROF_DRAM_ACTIVE; do
		check_range "$m" 0 1 "$ngpm"
	done
	check_range DCGM_FI_PROF_PCIE_TX_BYTES 0 1e12 "$ngpm"
	check_range DCGM_FI_PROF_PCIE_RX_BYTES 0 1e12 "$ngpm"
	note "GPM profiling figures on $ngpm GPU(s)"
else
	note "no GPU with NVML GPM (before Hopper or driver before R520): no DCGM_FI_PROF_* expected"
fi

# Energy is a counter: never lower in the second collection.
energy() { grep '^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{' "$1" | sed 's/.*[{,]UUID="\([^"]*\)".*} \(.*\)$/\1 \2/' | sort; }
join <(energy "$work/a.prom") <(energy "$work/b.prom") >"$work/energy.txt"
[[ $(wc -l <"$work/energy.txt") -eq $ngpu ]] || fail "energy missing in one collection: $(cat "$work/energy.txt")"
awk '{ if ($3 + 0 < $2 + 0) { print "energy decreased on " $1 ": " $2 " -> " $3; bad = 1 } } END { exit bad }' \
	"$work/energy.txt" >"$work/mono.txt" || fail "$(cat "$work/mono.txt")"
note "energy monotonic over two collections"

# Event set: the collector logs how many GPUs it registered for XID/ECC events.
reg=$(sed -n 's/.*msg=nvml_events_registered gpus=\([0-9]*\).*/\1/p' "$work/a.log" | tail -1)
[[ -n "$reg" ]] || fail "no nvml_events_registered line in the agent log: $(tail -5 "$work/a.log")"
[[ $reg -eq $ngpu ]] || fail "event set registered on $reg of $ngpu GPU(s)"
note "event set registered on all $reg GPU(s)"

collect "$work/otel.prom" "$work/otel.log" -naming otel
grep -q '^hw_gpu_utilization{.*hw_gpu_task="general"' "$work/otel.prom" || fail "OTel naming: no hw_gpu_utilization series"
collect "$work/c.json" "$work/c.log" -output json
head -1 "$work/c.json" | grep -q '^{"name":' || fail "JSON output malformed: $(head -1 "$work/c.json")"

if grep -q '^gpu_agent_nvml_errors_total' "$work/a.prom"; then
	note "warning: NVML calls failed (metrics omitted, not fatal):"
	grep '^gpu_agent_nvml_errors_total' "$work/a.prom" | sed 's/^/gpu-smoke:   /'
fi
note "OK"
