//go:build slicelabels || dedupelabels

package ingest

// unsafeString copies: with these label builds, labels.ScratchBuilder keeps the
// strings it is given, so they must not point into the pooled request buffer.
func unsafeString(b []byte) string { return string(b) }
