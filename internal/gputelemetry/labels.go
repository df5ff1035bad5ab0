package gputelemetry

import (
	"slices"
	"strconv"
	"strings"
)

// IdentityLabels returns the labels weft-agent puts on every series of d
// under its default (dcgm-exporter) naming, in the agent's order: gpu, UUID,
// pci_bus_id, device, modelName, Hostname, and weft's canonical gpu_uuid.
// Workload context labels (run_id, pod, ...) and, for a scraped agent, the
// scraper's job and instance come on top.
func (d *Device) IdentityLabels(host string) []Label {
	return []Label{
		{"gpu", strconv.Itoa(d.Index)},
		{"UUID", d.UUID},
		{"pci_bus_id", d.PCIBusID},
		{"device", "nvidia" + strconv.Itoa(d.Minor)},
		{"modelName", d.Model.Name},
		{"Hostname", host},
		{"gpu_uuid", d.UUID},
	}
}

// HostLabels are the labels of the agent's own series that carry the host.
func HostLabels(host string) []Label { return []Label{{"Hostname", host}} }

// SeriesLabels merges label groups into one sorted set, as the agent's
// renderer does: later groups win on a name clash and empty values are
// dropped. name, when not empty, is added as __name__.
func SeriesLabels(name string, groups ...[]Label) []Label {
	n := 1
	for _, g := range groups {
		n += len(g)
	}
	out := make([]Label, 0, n)
	if name != "" {
		out = append(out, Label{"__name__", name})
	}
	for _, g := range groups {
		for _, l := range g {
			if i := slices.IndexFunc(out, func(x Label) bool { return x.Name == l.Name }); i >= 0 {
				out[i].Value = l.Value
				continue
			}
			out = append(out, l)
		}
	}
	out = slices.DeleteFunc(out, func(l Label) bool { return l.Value == "" })
	slices.SortFunc(out, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return out
}
