//go:build !(linux || darwin || freebsd)

package diskspace

func statFS(string) (free, total int64, err error) { return 0, 0, errUnsupported }
