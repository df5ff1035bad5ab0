package api

import (
	"net/http"

	"github.com/prometheus/prometheus/config"
)

// statusConfigHandler answers GET /api/v1/status/config as Prometheus does,
// {"yaml": "..."}, with weft's effective configuration (Options.ConfigYAML),
// or Prometheus' default configuration when weft was given none.
func statusConfigHandler(opts Options) http.Handler {
	yaml := opts.ConfigYAML
	if yaml == "" {
		yaml = config.DefaultConfig.String()
	}
	data := map[string]string{"yaml": yaml}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		respond(w, opts.Logger, data)
	})
}
