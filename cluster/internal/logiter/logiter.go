// Package logiter holds what the cluster's log readers share: an iterator
// that yields several entry iterators one after another.
package logiter

import (
	"errors"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
)

// Concat yields its in order. Close closes every one of them and then
// calls onClose (nil: nothing) once. Used by one goroutine.
func Concat(its []logentry.Iterator, onClose func()) logentry.Iterator {
	return &concat{its: its, onClose: onClose}
}

type concat struct {
	its     []logentry.Iterator
	i       int
	err     error
	onClose func()
}

func (c *concat) Next() bool {
	for c.i < len(c.its) {
		if c.its[c.i].Next() {
			return true
		}
		if err := c.its[c.i].Err(); err != nil {
			c.err = err
			return false
		}
		c.i++
	}
	return false
}

func (c *concat) At() (labels.Labels, logentry.Entry) { return c.its[c.i].At() }
func (c *concat) Err() error                          { return c.err }

func (c *concat) Close() error {
	var errs []error
	for _, it := range c.its {
		errs = append(errs, it.Close())
	}
	c.its = nil
	if c.onClose != nil {
		c.onClose()
		c.onClose = nil
	}
	return errors.Join(errs...)
}
