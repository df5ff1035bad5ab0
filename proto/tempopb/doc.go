// Package tempopb holds the Tempo HTTP API messages weft answers with,
// generated from tempo.proto (`make proto`): field names, numbers and types
// are Grafana Tempo's tempopb's, written from its published contract, so
// that Grafana's Tempo datasource decodes weft's answers (TraceByIDResponse
// with proto.Unmarshal, SearchResponse with strict jsonpb). Tempo's own
// module is AGPL and is not imported.
package tempopb
