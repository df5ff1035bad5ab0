// Package diskspace guards the filesystem of a data directory against
// filling up. A Guard refuses writes (a *LowSpaceError, retryable) while the
// free space drops below a reserve, so that what is already accepted can
// still be flushed and compacted and the process can shut down; and it keeps
// a ballast file that it deletes when space runs out anyway (an ENOSPC seen
// by a store, or free space below half the reserve), giving the stores room
// to finish what they started. Writes resume by themselves once space is
// freed; the ballast is re-created when there is room for it again.
//
// The package knows nothing of HTTP: the API maps ErrLowSpace to 503.
package diskspace
