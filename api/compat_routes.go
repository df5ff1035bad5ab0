package api

import "net/http"

// compatDefaults passes the server-wide registerer, build info and admin
// switch down to the receivers that count ingest (weft_ingest_*), report
// buildinfo or serve deletion, where their own options leave them unset.
func compatDefaults(opts Options) Options {
	if opts.OTLP.Registerer == nil {
		opts.OTLP.Registerer = opts.Registerer
	}
	if opts.OTLPLogs.Registerer == nil {
		opts.OTLPLogs.Registerer = opts.Registerer
	}
	if opts.Loki.Registerer == nil {
		opts.Loki.Registerer = opts.Registerer
	}
	if opts.Loki.BuildInfo == defaultBuildInfo() || opts.Loki.BuildInfo == (BuildInfo{}) {
		opts.Loki.BuildInfo = opts.BuildInfo
	}
	opts.Loki.EnableDelete = opts.Loki.EnableDelete || opts.EnableAdmin
	return opts
}

// compatRoutes are the endpoints other tools use to move data in and out:
// Prometheus' federation and VictoriaMetrics' JSON-lines import and export
// (docs/import-export.md).
func compatRoutes(opts Options) []route {
	fed := DefaultFederateOptions()
	fed.LookbackDelta = opts.LookbackDelta
	fed.Logger = opts.Logger
	rs := []route{
		{pattern: "GET /federate", name: "/federate", h: NewFederateHandler(opts.Storage, fed), ready: true},
		{pattern: "/api/v1/export", name: "/api/v1/export", h: NewVMExportHandler(opts.Storage, VMExportOptions{Logger: opts.Logger}), ready: true},
	}
	if opts.Appendable != nil {
		imp := DefaultVMImportOptions()
		imp.Ingest = opts.RemoteWrite.Ingest // remote write's validation and workload context
		imp.Logger, imp.Registerer = opts.Logger, opts.Registerer
		rs = append(rs, route{pattern: "POST /api/v1/import", name: "/api/v1/import", h: NewVMImportHandler(opts.Appendable, imp), ready: true})
	} else {
		rs = append(rs, route{pattern: "POST /api/v1/import", name: "/api/v1/import", h: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "import is not enabled", http.StatusNotFound)
		})})
	}
	return rs
}
