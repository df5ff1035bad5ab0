package gputelemetry

import (
	"cmp"
	"slices"
)

// MaxEventStreamLabels is Loki's default max_label_names_per_series, which
// weft-agent keeps an event's stream within: a stream with more label names
// is refused whole, and the event would be lost.
const MaxEventStreamLabels = 15

// eventMetadataLabels describe a GPU rather than select it, or name one
// container or pod incarnation: weft-agent sends them as an event's
// structured metadata (gpuagent/loki.go).
var eventMetadataLabels = map[string]bool{
	"UUID": true, "pci_bus_id": true, "device": true, "modelName": true, DriverVersionLabel: true,
	"hw.id": true, "hw.name": true, "hw.model": true, "hw.vendor": true, "hw.gpu.pci_bus_id": true,
	"container_id": true, "pod_uid": true,
}

// EventLabels are the labels of weft-agent's Loki line for an event of
// kind ("xid") with code on a GPU of the given identity (IdentityLabels)
// and workload context, in the agent's order: source, event, the code, the
// identity, then the context sorted by name.
func EventLabels(kind, codeName, code string, identity, context []Label) []Label {
	l := []Label{{"source", "weft-agent"}, {"event", kind}}
	if codeName != "" {
		l = append(l, Label{codeName, code})
	}
	l = append(l, identity...)
	ctx := slices.Clone(context)
	slices.SortStableFunc(ctx, func(a, b Label) int { return cmp.Compare(a.Name, b.Name) })
	for _, c := range ctx {
		if c.Value != "" {
			l = append(l, c)
		}
	}
	return l
}

// EventStream splits an event's labels (EventLabels) as weft-agent pushes
// them: the GPU's descriptors and whatever is past MaxEventStreamLabels
// become structured metadata, the rest, in order, the stream's labels.
// TestEventStreamIsTheAgents holds it to the agent's pusher.
func EventStream(labels []Label) (stream, meta []Label) {
	for _, l := range labels {
		if eventMetadataLabels[l.Name] || len(stream) >= MaxEventStreamLabels {
			meta = append(meta, l)
			continue
		}
		stream = append(stream, l)
	}
	return stream, meta
}
