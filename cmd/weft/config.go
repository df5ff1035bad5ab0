package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/weftdb/weft/cmd/weft/internal/app"
)

// fileConfig is the YAML file given with -config: what flags do not cover.
// Every field is optional; flags given on the command line win over the file.
type fileConfig struct {
	Storage struct {
		Retention        *duration `yaml:"retention"`
		OutOfOrderWindow *duration `yaml:"out_of_order_window"`
		// FutureWindow rejects samples further than this in the future.
		FutureWindow          *duration `yaml:"future_window"`
		MaxExemplarsPerSeries *int      `yaml:"max_exemplars_per_series"`
		BlockCacheBytes       *int64    `yaml:"block_cache_bytes"`
	} `yaml:"storage"`
	Query struct {
		Timeout        *duration `yaml:"timeout"`
		MaxSamples     *int      `yaml:"max_samples"`
		LookbackDelta  *duration `yaml:"lookback_delta"`
		MaxConcurrency *int      `yaml:"max_concurrency"`
	} `yaml:"query"`
	Limits struct {
		RemoteWrite struct {
			MaxBodyBytes       *int64    `yaml:"max_body_bytes"`
			MaxDecodedBytes    *int64    `yaml:"max_decoded_bytes"`
			MaxConcurrency     *int      `yaml:"max_concurrency"`
			MaxInFlightBytes   *int64    `yaml:"max_in_flight_bytes"`
			MaxLabelsPerSeries *int      `yaml:"max_labels_per_series"`
			MaxFutureSkew      *duration `yaml:"max_future_skew"`
		} `yaml:"remote_write"`
		Logs logLimits `yaml:"logs"`
	} `yaml:"limits"`
	OTLPLogs otlpLogsConfig `yaml:"otlp_logs"`
	HTTP     struct {
		EnableAdminAPI  *bool     `yaml:"enable_admin_api"`
		CORSOrigin      *string   `yaml:"cors_origin"`
		ShutdownTimeout *duration `yaml:"shutdown_timeout"`
	} `yaml:"http"`
	// OTLP is the OTLP receiver's ingest options (ingest/otlp.Options:
	// translation_strategy, workload_context, delta, ...), decoded over
	// the defaults so that the file only names what it changes.
	OTLP yaml.Node `yaml:"otlp"`
}

// duration is a YAML duration in Prometheus' syntax ("30d", "1h30m").
type duration time.Duration

func (d *duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: duration must be a string like 15m or 30d: %w", n.Line, err)
	}
	v, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = duration(v)
	return nil
}

// loadConfigFile reads a YAML config file strictly: unknown keys are errors.
func loadConfigFile(path string) (*fileConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var c fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parse config %s: %w", path, err)
	}
	return &c, nil
}

// apply copies the file's settings into opts.
func (c *fileConfig) apply(opts *app.Options) error {
	setDur := func(dst *time.Duration, src *duration) {
		if src != nil {
			*dst = time.Duration(*src)
		}
	}
	setDur(&opts.Storage.Retention, c.Storage.Retention)
	setDur(&opts.Storage.OutOfOrderWindow, c.Storage.OutOfOrderWindow)
	setDur(&opts.Storage.FutureWindow, c.Storage.FutureWindow)
	if c.Storage.MaxExemplarsPerSeries != nil {
		opts.Storage.MaxExemplarsPerSeries = *c.Storage.MaxExemplarsPerSeries
	}
	if c.Storage.BlockCacheBytes != nil {
		if *c.Storage.BlockCacheBytes <= 0 {
			return fmt.Errorf("storage.block_cache_bytes must be positive, got %d", *c.Storage.BlockCacheBytes)
		}
		opts.Storage.BlockCacheBytes = *c.Storage.BlockCacheBytes
	}
	setDur(&opts.Query.Timeout, c.Query.Timeout)
	setDur(&opts.Query.LookbackDelta, c.Query.LookbackDelta)
	if c.Query.MaxSamples != nil {
		opts.Query.MaxSamples = *c.Query.MaxSamples
	}
	if c.Query.MaxConcurrency != nil {
		opts.QueryMaxConcurrency = *c.Query.MaxConcurrency
	}
	rw := c.Limits.RemoteWrite
	if rw.MaxBodyBytes != nil {
		opts.RemoteWrite.MaxBodyBytes = *rw.MaxBodyBytes
	}
	if rw.MaxDecodedBytes != nil {
		opts.RemoteWrite.MaxDecodedBytes = *rw.MaxDecodedBytes
	}
	if rw.MaxConcurrency != nil {
		opts.RemoteWrite.MaxConcurrency = *rw.MaxConcurrency
	}
	if rw.MaxInFlightBytes != nil {
		opts.RemoteWrite.MaxInFlightBytes = *rw.MaxInFlightBytes
	}
	if rw.MaxLabelsPerSeries != nil {
		opts.RemoteWrite.Ingest.MaxLabelsPerSeries = *rw.MaxLabelsPerSeries
	}
	setDur(&opts.RemoteWrite.Ingest.MaxFutureSkew, rw.MaxFutureSkew)
	if err := c.Limits.Logs.apply(opts); err != nil {
		return err
	}
	c.OTLPLogs.apply(opts)
	if c.HTTP.EnableAdminAPI != nil {
		opts.EnableAdminAPI = *c.HTTP.EnableAdminAPI
	}
	if c.HTTP.CORSOrigin != nil {
		opts.CORSOrigin = *c.HTTP.CORSOrigin
	}
	setDur(&opts.ShutdownTimeout, c.HTTP.ShutdownTimeout)
	if !c.OTLP.IsZero() {
		// Node.Decode ignores unknown keys; round-trip through a strict
		// decoder so that a misspelt key is an error here too.
		b, err := yaml.Marshal(&c.OTLP)
		if err != nil {
			return fmt.Errorf("otlp: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&opts.OTLP.Ingest); err != nil {
			return fmt.Errorf("otlp: %w", err)
		}
	}
	return nil
}
