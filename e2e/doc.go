// Package e2e holds weft's end-to-end tests: they build the real weft binary,
// start it on loopback ports in a temporary directory, feed it from a real
// Prometheus (installed by `make peers`, found through $WEFT_PEER_BIN) and
// compare answers. Every process is killed on cleanup.
package e2e
