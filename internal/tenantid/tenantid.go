// Package tenantid holds the one rule of what a tenant ID may be: Mimir's,
// Loki's and Tempo's (dskit's ValidTenantID), so that weft, weft-agent and
// their peers accept the same IDs. It is a leaf: index/tenant, which owns
// tenancy, and gpuagent, which may import nothing of the server, both check
// IDs with it.
//
// It imports nothing of weft.
package tenantid

import (
	"errors"
	"fmt"
	"strings"
)

// MaxLength is the longest tenant ID accepted (dskit's limit).
const MaxLength = 150

// ErrInvalid is wrapped by every error about a malformed tenant ID.
var ErrInvalid = errors.New("invalid tenant ID")

// Validate checks one tenant ID: 1 to MaxLength characters among letters,
// digits and !-_.*'(), and not "." or "..".
func Validate(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalid)
	case len(id) > MaxLength:
		return fmt.Errorf("%w: %d characters, too long: the maximum is %d", ErrInvalid, len(id), MaxLength)
	case id == "." || id == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalid, id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!-_.*'()", c)) {
			return fmt.Errorf("%w: %q contains unsupported character %q", ErrInvalid, id, c)
		}
	}
	return nil
}
