//go:build !unix

package storage

import "errors"

// dirLock is a no-op where flock does not exist; Pebble's own lock still
// refuses a second process.
type dirLock struct{}

// ErrDirInUse is returned by OpenSubstrate when another process holds the
// data directory (never, on this platform).
var ErrDirInUse = errors.New("data directory in use")

func lockDir(string) (*dirLock, error) { return &dirLock{}, nil }

func (*dirLock) release() error { return nil }
