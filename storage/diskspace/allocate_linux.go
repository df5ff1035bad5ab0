package diskspace

import (
	"errors"
	"os"
	"syscall"
)

// allocate gives f n bytes of allocated blocks: fallocate(2), or zeros
// where the filesystem does not support it.
func allocate(f *os.File, n int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, n)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return writeZeros(f, n)
	}
	return err
}
