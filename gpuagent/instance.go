package gpuagent

import (
	"net"
	"net/netip"
)

// instanceLabel is the label a Prometheus scrape gives every series of a
// target (its address); pushed series carry it so dashboards built for a
// scraped dcgm-exporter (an $instance variable) work on pushed data.
const instanceLabel = "instance"

// defaultInstance is the instance label of pushed series when
// Options.Instance is empty: the address Prometheus would scrape this agent's
// /metrics at, host:port. The port is the listener's; the host is the
// listener's when it is bound to one specific, non-loopback address, else the
// hostname (a scrape config names the node, not 0.0.0.0 or 127.0.0.1). With
// the listener off nothing can scrape the agent, so the hostname alone.
func defaultInstance(listenAddr, hostname string) string {
	if listenAddr == "" {
		return hostname
	}
	host, port, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return hostname
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.IsUnspecified() || ip.IsLoopback() {
			host = ""
		}
	} else if host == "localhost" {
		host = ""
	}
	if host == "" {
		host = hostname
	}
	return net.JoinHostPort(host, port)
}
