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
# versitygw is the S3-API server of the scale-out end-to-end test (a real S3
# gateway over a directory; Apache-2.0).
VERSITYGW_VERSION       := v1.8.0
# Alertmanager v0.31.1 is the newest that `go install`s: later versions embed
# a built UI that their module zip does not contain.
ALERTMANAGER_VERSION    := v0.31.1
# Jaeger v2 is the trace benchmark's peer. Its module has replace directives,
# so `go install ...@version` refuses it: bench/peers/jaeger is a module of
# its own that pins it as a tool (go.mod and go.sum), built from there.
JAEGER_VERSION          := v1.76.0

# Packages that need cgo (go-nvml) are still tested with CGO_ENABLED=1; the
# rest must also build without cgo (checked in `check`).
GOTEST_FLAGS ?= -race -timeout 15m

export WEFT_PEER_BIN := $(PEER_BIN)

# VERSION is stamped into weft (weft -version, status/buildinfo of the
# Prometheus and Loki APIs): the nearest v* tag without its "v", else
# 0.0.0-dev+<commit>. `go install ...@vX.Y.Z` builds report X.Y.Z from the
# module version instead; other builds 0.0.0-dev.
VERSION ?= $(shell v=$$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); \
	if [ -n "$$v" ]; then echo "$${v#v}"; else c=$$(git rev-parse --short HEAD 2>/dev/null); echo "0.0.0-dev$${c:++$$c}"; fi)
LDFLAGS ?= -X main.version=$(VERSION)

.PHONY: proto all build run test test-unit lint check peers bench-compare clean fuzz web web-check chromium

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

## run: build and start the weft server: data in $(DATA_DIR), HTTP on
## $(HTTP_ADDR) (Prometheus and Loki APIs, remote write, /metrics), OTLP on
## the same host at :4317 (gRPC) and :4318 (HTTP) unless OTLP_GRPC_ADDR /
## OTLP_HTTP_ADDR say otherwise (empty disables one). Ctrl-C stops it
## gracefully (the head is flushed).
##   make run HTTP_ADDR=127.0.0.1:9338   # everything on loopback only
DATA_DIR  ?= ./weft-data
HTTP_ADDR ?= :9338
HTTP_HOST  = $(shell echo '$(HTTP_ADDR)' | sed 's/:[^:]*$$//')
OTLP_GRPC_ADDR ?= $(HTTP_HOST):4317
OTLP_HTTP_ADDR ?= $(HTTP_HOST):4318
run:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/weft ./cmd/weft
	./$(BIN)/weft -data-dir '$(DATA_DIR)' -http-addr '$(HTTP_ADDR)' -otlp-grpc-addr '$(OTLP_GRPC_ADDR)' -otlp-http-addr '$(OTLP_HTTP_ADDR)'

## test: format, vet and import checks, then every test with -race.
## vet runs without -stdmethods: Prometheus' chunkenc.Iterator has Seek(int64) ValueType,
## which every storage iterator must implement and the stdmethods check rejects.
test: check peers web-check chromium
	$(GO) test $(GOTEST_FLAGS) ./...

## test-unit: every package's tests but the end-to-end ones: no peers, no browser.
test-unit: check
	$(GO) test $(GOTEST_FLAGS) $$($(GO) list ./... | grep -v '/e2e$$')

## lint: gofmt, go vet and the one import table (internal/lint).
lint: check

check:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -stdmethods=false ./...
	$(GO) test -count=1 ./internal/lint/

## fuzz: run every fuzz target in the repository (found with
## `go test -list '^Fuzz'`) for FUZZTIME each, one after another; stops at the
## first failure, whose input go test writes to the package's testdata/fuzz.
## Not part of `make test` (which runs each target's seed corpus only).
## FUZZ_PKGS narrows the packages, FUZZ_FLAGS adds go test flags (-parallel 1
## on a shared machine).
FUZZTIME   ?= 10s
FUZZ_PKGS  ?= ./...
FUZZ_FLAGS ?=

fuzz:
	@$(GO) test -list '^Fuzz' $(FUZZ_PKGS) | \
	awk '/^Fuzz/ { n[c++] = $$1 } /^ok / { for (i = 0; i < c; i++) print $$2, n[i]; c = 0 }' | \
	while read -r pkg target; do \
		echo "fuzz: $$pkg $$target ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $(FUZZ_FLAGS) $$pkg < /dev/null || exit 1; \
	done

## peers: pinned peer binaries for end-to-end tests, cached in $(BUILD_DIR)/bin.
peers: $(PEER_BIN)/prometheus $(PEER_BIN)/promtool $(PEER_BIN)/telemetrygen $(PEER_BIN)/alertmanager $(PEER_BIN)/versitygw

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

# versitygw serves the bucket of e2e/scaleout_test.go (docs/scale-out.md).
$(PEER_BIN)/versitygw:
	@mkdir -p $(PEER_BIN)
	GOBIN=$(PEER_BIN) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
# proto regenerates proto/tempopb from tempo.proto (needs protoc, e.g. Debian's
# protobuf-compiler; protoc-gen-go is pinned by go.mod's protobuf version).
PROTOC_GEN_GO := $(BUILD_DIR)/bin/protoc-gen-go
$(PROTOC_GEN_GO):
	GOBIN=$(abspath $(BUILD_DIR)/bin) go install google.golang.org/protobuf/cmd/protoc-gen-go
proto: $(PROTOC_GEN_GO)
	cd proto/tempopb && PATH="$(abspath $(BUILD_DIR)/bin):$$PATH" protoc -I . -I ../otlpstub \
		--go_out=. --go_opt=paths=source_relative tempo.proto

# alertmanager receives weft's alerts in e2e/alertmanager_test.go.
$(PEER_BIN)/alertmanager:
	@mkdir -p $(PEER_BIN)
	GOBIN=$(PEER_BIN) $(GO) install github.com/prometheus/alertmanager/cmd/alertmanager@$(ALERTMANAGER_VERSION)

clean:
	rm -rf $(BIN) $(BUILD_DIR)

## web: rebuild the web UI's bundle into web/dist from web/src (npm ci from the
## lockfile, then esbuild). The bundle is committed, so that `go build` alone
## embeds a working UI: run this and commit web/dist after changing web/.
web: web/node_modules/.package-lock.json
	cd web && node scripts/build.mjs

web/node_modules/.package-lock.json: web/package-lock.json web/package.json
	cd web && npm ci --no-audit --no-fund

## web-check: rebuild the UI into $(BUILD_DIR)/web-dist and fail if it differs
## from the committed web/dist (a stale bundle), then run the UI's JS unit tests
## (node's test runner). web/sources_test.go checks staleness without npm too.
web-check: web/node_modules/.package-lock.json
	cd web && node scripts/build.mjs --out ../$(BUILD_DIR)/web-dist >/dev/null
	@diff -r web/dist $(BUILD_DIR)/web-dist >/dev/null || { echo "web/dist is stale against web/src: run 'make web' and commit web/dist"; diff -rq web/dist $(BUILD_DIR)/web-dist; exit 1; }
	cd web && node --test test/

## chromium: the browser the UI tests (e2e/ui_*_test.go) drive, from Debian's
## packages when missing.
chromium:
	@bash web/scripts/install-chromium.sh

## bench-compare: weft, Prometheus and VictoriaMetrics side by side on one
## generated workload (SCALE=tiny|small|medium|large); see docs/benchmarks.md.
SCALE ?= small
BENCH_FLAGS ?=

bench-compare: $(PEER_BIN)/prometheus $(PEER_BIN)/victoria-metrics
	$(GO) build -o $(BIN)/ ./cmd/weft-bench
	@$(GO) build -o $(BIN)/ ./cmd/weft || { echo "bench-compare: cmd/weft does not build; weft is reported as failed"; rm -f $(BIN)/weft; }
	./$(BIN)/weft-bench -scale $(SCALE) -peer-bin $(PEER_BIN) -weft-bin $(BIN)/weft -out bench/results $(BENCH_FLAGS)

## bench-cluster: single-node weft beside a scale-out cluster on this machine
## (weft-kfake, distributor, 2 ingesters, block builder, a querier over the
## ingesters and one over the bucket only); see docs/scale-out.md#figures.
.PHONY: bench-cluster
bench-cluster:
	$(GO) build -o $(BIN)/ ./cmd/weft-bench ./cmd/weft ./cmd/weft-kfake
	./$(BIN)/weft-bench -scale $(SCALE) -systems weft,weft-cluster -weft-bin $(BIN)/weft -kfake-bin $(BIN)/weft-kfake -out bench/results $(BENCH_FLAGS)

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

## bench-traces: weft and Jaeger v2 (Badger on disk) side by side on the same
## generated AI-workload spans (TRACE_SPANS spans over 2 h, OTLP/HTTP
## protobuf); see docs/benchmarks.md.
TRACE_SPANS ?= 1000000

.PHONY: bench-traces jaeger
bench-traces: $(PEER_BIN)/jaeger
	$(GO) build -o $(BIN)/ ./cmd/weft-bench
	@$(GO) build -o $(BIN)/ ./cmd/weft || { echo "bench-traces: cmd/weft does not build; weft is reported as failed"; rm -f $(BIN)/weft; }
	./$(BIN)/weft-bench -mode traces -trace-spans $(TRACE_SPANS) -peer-bin $(PEER_BIN) -weft-bin $(BIN)/weft -out bench/results $(BENCH_FLAGS)

jaeger: $(PEER_BIN)/jaeger

$(PEER_BIN)/jaeger: bench/peers/jaeger/go.mod bench/peers/jaeger/go.sum
	@grep -qE 'github.com/jaegertracing/jaeger $(JAEGER_VERSION)( |$$)' bench/peers/jaeger/go.mod || \
		{ echo "bench/peers/jaeger/go.mod does not pin jaeger $(JAEGER_VERSION)"; exit 1; }
	@mkdir -p $(PEER_BIN)
	cd bench/peers/jaeger && $(GO) build -o $(PEER_BIN)/jaeger github.com/jaegertracing/jaeger/cmd/jaeger

## soak: one weft under mixed load on every ingest path (remote write, OTLP
## metrics/logs/traces HTTP, Loki push) at SOAK_RATE good requests/s per path
## for SOAK_DURATION, with bad inputs and stalled clients, under a memory budget
## (and a memory cgroup where /sys/fs/cgroup is writable); acknowledged vs
## stored per signal, 429s, p99 ack latency, peak RSS, query answers. Report in
## bench/results/soak-*.{json,md}. Not part of `make test`; see docs/benchmarks.md.
SOAK_DURATION ?= 10m
SOAK_RATE     ?= 20

.PHONY: soak
soak:
	$(GO) build -o $(BIN)/ ./cmd/weft-bench ./cmd/weft
	./$(BIN)/weft-bench -mode soak -soak-duration $(SOAK_DURATION) -soak-rate $(SOAK_RATE) -weft-bin $(BIN)/weft -out bench/results $(BENCH_FLAGS)
