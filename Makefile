# weft — build, run and test. Everything the tests need is installed by targets
# here, so `make test` works on a fresh machine with Go and gcc.

GO          ?= go
BUILD_DIR   := .build
PEER_BIN    := $(abspath $(BUILD_DIR)/bin)
BIN         := bin

# Pinned peer versions for end-to-end tests and benchmarks (Go module proxy).
PROMETHEUS_VERSION      := v0.316.0
VICTORIAMETRICS_VERSION := v1.151.0
VICTORIALOGS_VERSION    := v1.52.1
TELEMETRYGEN_VERSION    := v0.161.0
# Alertmanager v0.31.1 is the newest that `go install`s: later versions embed
# a built UI that their module zip does not contain.
ALERTMANAGER_VERSION    := v0.31.1

# Packages that need cgo (go-nvml) are still tested with CGO_ENABLED=1; the
# rest must also build without cgo (checked in `check`).
GOTEST_FLAGS ?= -race -timeout 15m

export WEFT_PEER_BIN := $(PEER_BIN)

.PHONY: all build run test check peers bench-compare clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

## run: build and start the weft server: data in ./weft-data, HTTP on :9338
## (Prometheus API, remote write at /api/v1/write, /metrics). Ctrl-C stops it
## gracefully (the head is flushed).
run:
	$(GO) build -o $(BIN)/weft ./cmd/weft
	./$(BIN)/weft -data-dir ./weft-data -http-addr :9338

## test: format and vet checks, then every test with -race.
## vet runs without -stdmethods: Prometheus' chunkenc.Iterator has Seek(int64) ValueType,
## which every storage iterator must implement and the stdmethods check rejects.
test: check peers
	$(GO) test $(GOTEST_FLAGS) ./...

check:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -stdmethods=false ./...

## peers: pinned peer binaries for end-to-end tests, cached in $(BUILD_DIR)/bin.
peers: $(PEER_BIN)/prometheus $(PEER_BIN)/promtool $(PEER_BIN)/telemetrygen $(PEER_BIN)/alertmanager

$(PEER_BIN)/prometheus:
	@mkdir -p $(PEER_BIN)
	GOBIN=$(PEER_BIN) $(GO) install github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION)

# promtool checks and tests the shipped rule pack beside weft's own runner
# (e2e/rules_promtool_test.go).
$(PEER_BIN)/promtool:
	@mkdir -p $(PEER_BIN)
	GOBIN=$(PEER_BIN) $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION)

# telemetrygen drives the OTLP receiver in e2e/otlp_telemetrygen_test.go.
$(PEER_BIN)/telemetrygen:
	@mkdir -p $(PEER_BIN)
	GOBIN=$(PEER_BIN) $(GO) install github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen@$(TELEMETRYGEN_VERSION)

# alertmanager receives weft's alerts in e2e/alertmanager_test.go.
$(PEER_BIN)/alertmanager:
	@mkdir -p $(PEER_BIN)
	GOBIN=$(PEER_BIN) $(GO) install github.com/prometheus/alertmanager/cmd/alertmanager@$(ALERTMANAGER_VERSION)

clean:
	rm -rf $(BIN) $(BUILD_DIR)

## bench-compare: weft, Prometheus and VictoriaMetrics side by side on one
## generated workload (SCALE=tiny|small|medium|large); see docs/benchmarks.md.
SCALE ?= small
BENCH_FLAGS ?=

bench-compare: $(PEER_BIN)/prometheus $(PEER_BIN)/victoria-metrics
	$(GO) build -o $(BIN)/ ./cmd/weft-bench
	@$(GO) build -o $(BIN)/ ./cmd/weft || { echo "bench-compare: cmd/weft does not build; weft is reported as failed"; rm -f $(BIN)/weft; }
	./$(BIN)/weft-bench -scale $(SCALE) -peer-bin $(PEER_BIN) -weft-bin $(BIN)/weft -out bench/results $(BENCH_FLAGS)

$(PEER_BIN)/victoria-metrics:
	@mkdir -p $(PEER_BIN)
	GOBIN=$(PEER_BIN) $(GO) install github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@$(VICTORIAMETRICS_VERSION)

## bench-logs: weft and VictoriaLogs side by side on one generated AI-workload
## log stream (LOG_LINES lines over 24 h, Loki JSON push); see docs/benchmarks.md.
LOG_LINES ?= 1000000

.PHONY: bench-logs
bench-logs: $(PEER_BIN)/victoria-logs
	$(GO) build -o $(BIN)/ ./cmd/weft-bench
	@$(GO) build -o $(BIN)/ ./cmd/weft || { echo "bench-logs: cmd/weft does not build; weft is reported as failed"; rm -f $(BIN)/weft; }
	./$(BIN)/weft-bench -mode logs -log-lines $(LOG_LINES) -peer-bin $(PEER_BIN) -weft-bin $(BIN)/weft -out bench/results $(BENCH_FLAGS)

$(PEER_BIN)/victoria-logs:
	@mkdir -p $(PEER_BIN)
	GOBIN=$(PEER_BIN) $(GO) install github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs@$(VICTORIALOGS_VERSION)
