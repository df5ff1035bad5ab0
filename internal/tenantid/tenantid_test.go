package tenantid

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for id, ok := range map[string]bool{
		"team-a": true, "A.b_c!*'()": true, strings.Repeat("x", MaxLength): true, "...": true,
		"": false, ".": false, "..": false, "a/b": false, "a|b": false, "é": false, "a b": false,
		strings.Repeat("x", MaxLength+1): false,
	} {
		err := Validate(id)
		if (err == nil) != ok {
			t.Errorf("Validate(%q) = %v, want ok=%v", id, err, ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%q) = %v, not wrapping ErrInvalid", id, err)
		}
	}
}
